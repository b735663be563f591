#include "text/sentencepiece_model.h"

#include <fmt/format.h>

#include "nuvec/error.h"

#ifndef NUVEC_WITH_SENTENCEPIECE
// Built without libsentencepiece (NUVEC_WITH_SENTENCEPIECE=OFF): every
// tokenizer.model is refused when loaded, so nothing below ever runs.
namespace sentencepiece {
class SentencePieceProcessor {};
}  // namespace sentencepiece

namespace nuvec::text {

SentencePieceModel::SentencePieceModel(std::string_view, const std::filesystem::path& name) : name_(name) {
  throw FormatError(fmt::format("{}: this nuvec was built without libsentencepiece (NUVEC_WITH_SENTENCEPIECE=OFF), "
                                "so it cannot read tokenizer.model files; use the model's tokenizer.json or a "
                                "build with libsentencepiece-dev installed",
                                name.string()),
                    name, 0);
}
SentencePieceModel::~SentencePieceModel() = default;
void SentencePieceModel::encode(std::string_view, std::vector<TokenId>&) const {}
std::string SentencePieceModel::decode(std::span<const TokenId>) const { return {}; }
std::size_t SentencePieceModel::size() const { return 0; }
std::string SentencePieceModel::piece(TokenId) const { return {}; }
bool SentencePieceModel::is_control(TokenId) const { return false; }
bool SentencePieceModel::is_unknown(TokenId) const { return false; }
TokenId SentencePieceModel::bos_id() const { return -1; }
TokenId SentencePieceModel::eos_id() const { return -1; }

}  // namespace nuvec::text
#else
#include <sentencepiece_processor.h>

namespace nuvec::text {

SentencePieceModel::SentencePieceModel(std::string_view serialized, const std::filesystem::path& name)
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()), name_(name) {
  const auto status = processor_->LoadFromSerializedProto(serialized);
  if (!status.ok()) {
    throw FormatError(fmt::format("{}: not a SentencePiece model libsentencepiece can load ({})", name.string(),
                                  status.ToString()),
                      name, 0);
  }
  if (processor_->GetPieceSize() <= 0 || processor_->GetPieceSize() >= (1 << 24)) {
    throw FormatError(fmt::format("{}: a SentencePiece model of {} pieces (nuvec takes 1 to 2^24)", name.string(),
                                  processor_->GetPieceSize()),
                      name, 0);
  }
}

SentencePieceModel::~SentencePieceModel() = default;

void SentencePieceModel::encode(std::string_view text, std::vector<TokenId>& out) const {
  if (text.empty()) return;
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  if (!status.ok()) {
    throw InvalidArgument(fmt::format("{}: libsentencepiece could not encode {} bytes of text ({})", name_.string(),
                                      text.size(), status.ToString()));
  }
  out.insert(out.end(), ids.begin(), ids.end());
}

std::string SentencePieceModel::decode(std::span<const TokenId> ids) const {
  if (ids.empty()) return {};
  std::string text;
  const auto status = processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  if (!status.ok()) {
    throw InvalidArgument(fmt::format("{}: libsentencepiece could not decode {} ids ({})", name_.string(), ids.size(),
                                      status.ToString()));
  }
  return text;
}

std::size_t SentencePieceModel::size() const { return static_cast<std::size_t>(processor_->GetPieceSize()); }
std::string SentencePieceModel::piece(TokenId id) const { return processor_->IdToPiece(id); }
bool SentencePieceModel::is_control(TokenId id) const { return processor_->IsControl(id); }
bool SentencePieceModel::is_unknown(TokenId id) const { return processor_->IsUnknown(id); }
TokenId SentencePieceModel::bos_id() const { return processor_->bos_id(); }
TokenId SentencePieceModel::eos_id() const { return processor_->eos_id(); }

}  // namespace nuvec::text
#endif  // NUVEC_WITH_SENTENCEPIECE
