#include "nuvec/text/tokenizer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "nuvec/error.h"
#include "nuvec/io/gguf.h"
#include "text/tokenizer_impl.h"

namespace nuvec::text {

std::unique_ptr<TokenizerImpl> tokenizer_from_json(std::string_view text, std::string_view config_text,
                                                   const std::filesystem::path& name);
std::unique_ptr<TokenizerImpl> tokenizer_from_gguf(const io::GgufFile& file, const std::filesystem::path& name);
std::unique_ptr<TokenizerImpl> tokenizer_from_sentencepiece(std::string_view model_bytes, std::string_view config_text,
                                                            const std::filesystem::path& name);

namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw IoError(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)), path, errno);
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Real tokenizer.model files are a few MiB (Gemma's 4 MiB); a file far
// larger is not one, and is not read whole into memory.
constexpr std::uintmax_t kMaxSentencePieceBytes = 256u << 20;

std::string read_config_beside(const std::filesystem::path& file) {
  const auto config = file.parent_path() / "tokenizer_config.json";
  return std::filesystem::exists(config) ? read_text(config) : std::string{};
}

Tokenizer load_sentencepiece(const std::filesystem::path& path);

// The tokens that end a turn: EOS and the chat models' end-of-turn tokens.
void collect_stop_ids(TokenizerImpl& t) {
  if (t.eos) t.stop_ids.push_back(*t.eos);
  for (const AddedToken& a : t.added) {
    for (const char* end : {"<|eot_id|>", "<|im_end|>", "<|end_of_text|>", "<|endoftext|>", "<|eom_id|>", "</s>"}) {
      if (a.special && a.content == end &&
          std::find(t.stop_ids.begin(), t.stop_ids.end(), a.id) == t.stop_ids.end()) {
        t.stop_ids.push_back(a.id);
      }
    }
  }
}

// The GGUF header, parsed from a read-only mapping of the file (only the
// header's pages are touched; the tensors stay on disk).
io::GgufFile read_gguf_header(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(fmt::format("cannot read {}: {}", path.string(), ec.message()), path, ec.value());
  if (size == 0) throw FormatError(fmt::format("{}: empty file", path.string()), path, 0);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw IoError(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)), path, errno);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fileno(f), 0);
  const int err = errno;
  std::fclose(f);
  if (p == MAP_FAILED) throw IoError(fmt::format("cannot map {}: {}", path.string(), std::strerror(err)), path, err);
  struct Unmap {
    void* p;
    std::size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{p, size};
  return io::parse_gguf({static_cast<const std::byte*>(p), size}, size, path);
}

Tokenizer load_sentencepiece(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(fmt::format("cannot read {}: {}", path.string(), ec.message()), path, ec.value());
  if (size > kMaxSentencePieceBytes) {
    throw FormatError(fmt::format("{}: {} bytes is more than a SentencePiece model holds (nuvec reads up to {} MiB)",
                                  path.string(), size, kMaxSentencePieceBytes >> 20),
                      path, 0);
  }
  return Tokenizer::from_sentencepiece(read_text(path), read_config_beside(path), path);
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<TokenizerImpl> impl) : impl_(std::move(impl)) {
  collect_stop_ids(*impl_);
  impl_->finish();
}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json,
                               const std::filesystem::path& name) {
  return Tokenizer(tokenizer_from_json(tokenizer_json, config_json, name));
}

Tokenizer Tokenizer::from_gguf(const io::GgufFile& file, const std::filesystem::path& name) {
  return Tokenizer(tokenizer_from_gguf(file, name));
}

Tokenizer Tokenizer::from_sentencepiece(std::string_view model_bytes, std::string_view config_json,
                                         const std::filesystem::path& name) {
  return Tokenizer(tokenizer_from_sentencepiece(model_bytes, config_json, name));
}

Tokenizer Tokenizer::load(const std::filesystem::path& path) {
  if (std::filesystem::is_directory(path)) {
    const auto json = path / "tokenizer.json";
    if (!std::filesystem::exists(json)) {
      if (std::filesystem::exists(path / "tokenizer.model")) return load_sentencepiece(path / "tokenizer.model");
      throw FormatError(fmt::format("{} has no tokenizer.json or tokenizer.model (nuvec reads those and the "
                                    "vocabulary inside GGUF files; give the tokenizer with --tokenizer)",
                                    path.string()),
                        path, 0);
    }
    const auto config = path / "tokenizer_config.json";
    return from_json(read_text(json), std::filesystem::exists(config) ? read_text(config) : std::string{}, json);
  }
  if (path.extension() == ".gguf") return from_gguf(read_gguf_header(path), path);
  if (path.extension() == ".model") return load_sentencepiece(path);
  const auto config = path.parent_path() / "tokenizer_config.json";
  return from_json(read_text(path), std::filesystem::exists(config) ? read_text(config) : std::string{}, path);
}

std::optional<Tokenizer> find_tokenizer(const std::filesystem::path& model) {
  if (std::filesystem::is_directory(model)) {
    if (!std::filesystem::exists(model / "tokenizer.json") && !std::filesystem::exists(model / "tokenizer.model")) {
      return std::nullopt;
    }
    return Tokenizer::load(model);
  }
  if (model.extension() == ".gguf") {
    io::GgufFile header = read_gguf_header(model);
    if (header.find("tokenizer.ggml.tokens") == nullptr) return std::nullopt;
    return Tokenizer::from_gguf(header, model);
  }
  return Tokenizer::load(model);
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special) const {
  return impl_->encode(text, add_special);
}
std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special) const {
  return impl_->decode(ids, skip_special);
}
std::size_t Tokenizer::vocab_size() const { return impl_->tokens.size(); }
std::string_view Tokenizer::token_text(TokenId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= impl_->tokens.size()) return {};
  return impl_->tokens[id];
}
std::optional<TokenId> Tokenizer::token_id(std::string_view text) const {
  for (const AddedToken& a : impl_->added) {
    if (a.content == text) return a.id;
  }
  for (std::size_t i = 0; i < impl_->tokens.size(); ++i) {
    if (impl_->tokens[i] == text) return static_cast<TokenId>(i);
  }
  return std::nullopt;
}
bool Tokenizer::is_special(TokenId id) const {
  return id >= 0 && static_cast<std::size_t>(id) < impl_->special.size() && impl_->special[id];
}
std::optional<TokenId> Tokenizer::bos() const { return impl_->bos; }
std::optional<TokenId> Tokenizer::eos() const { return impl_->eos; }
const std::vector<TokenId>& Tokenizer::stop_ids() const { return impl_->stop_ids; }
const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }
std::string_view Tokenizer::source() const { return impl_->source; }

}  // namespace nuvec::text
