// Encoding: added tokens matched in the raw text first (leftmost, longest
// at a position), each stretch between them normalized, pre-tokenized and
// run through BPE, then the post-processor's special tokens around it all.
#include "text/string_ops.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

#include <algorithm>

namespace nuvec::text {
namespace {

bool is_word_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

}  // namespace

void TokenizerImpl::finish() {
  added_by_first_byte_.assign(256, {});
  for (std::size_t i = 0; i < added.size(); ++i) {
    if (added[i].content.empty()) continue;
    added_by_first_byte_[static_cast<unsigned char>(added[i].content[0])].push_back(i);
  }
  for (auto& list : added_by_first_byte_) {
    std::stable_sort(list.begin(), list.end(),
                     [&](std::size_t a, std::size_t b) { return added[a].content.size() > added[b].content.size(); });
  }
}

std::vector<TokenId> TokenizerImpl::encode(std::string_view raw, bool add_special) const {
  std::string repaired;
  if (!utf8_valid(raw)) {
    repaired = utf8_lossy(raw);
    raw = repaired;
  }
  std::vector<TokenId> out;
  out.reserve(raw.size() / 3 + prefix.size() + suffix.size() + 4);
  if (add_special) out.insert(out.end(), prefix.begin(), prefix.end());
  std::size_t section_start = 0;
  for (std::size_t pos = 0; pos < raw.size(); ++pos) {
    const auto& candidates = added_by_first_byte_[static_cast<unsigned char>(raw[pos])];
    const AddedToken* hit = nullptr;
    for (std::size_t i : candidates) {
      const AddedToken& t = added[i];
      if (raw.compare(pos, t.content.size(), t.content) != 0) continue;
      if (t.single_word && ((pos > 0 && is_word_byte(raw[pos - 1])) ||
                            (pos + t.content.size() < raw.size() && is_word_byte(raw[pos + t.content.size()])))) {
        continue;
      }
      hit = &t;
      break;
    }
    if (hit == nullptr) continue;
    std::size_t section_end = pos, after = pos + hit->content.size();
    if (hit->lstrip) while (section_end > section_start && is_space(raw[section_end - 1])) --section_end;
    if (hit->rstrip) while (after < raw.size() && is_space(raw[after])) ++after;
    encode_section(raw.substr(section_start, section_end - section_start), section_start == 0, out);
    out.push_back(hit->id);
    section_start = after;
    pos = after - 1;
  }
  encode_section(raw.substr(section_start), section_start == 0, out);
  if (add_special) out.insert(out.end(), suffix.begin(), suffix.end());
  return out;
}

}  // namespace nuvec::text
