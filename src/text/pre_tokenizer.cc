// Pre-tokenization: the normalized text cut into the words BPE runs on, by
// the steps of tokenizer.json's pre_tokenizer (Split, ByteLevel, Metaspace).
// Pieces are views into the section or into strings a step made.
#include <deque>

#include "text/sentencepiece_model.h"
#include "text/tokenizer_impl.h"

namespace nuvec::text {
namespace {

using Pieces = std::vector<std::string_view>;
using Behavior = PreTokenizerStep::Behavior;

// Cuts `piece` at the matches, as `tokenizers`' SplitDelimiterBehavior does.
void split(std::string_view piece, const std::vector<std::pair<std::size_t, std::size_t>>& matches, Behavior behavior,
           Pieces& out) {
  std::size_t last = 0;
  std::size_t pending_start = std::string_view::npos;  // merged_with_next: a delimiter waiting for what follows
  bool last_was_match = false;
  const auto emit = [&](std::size_t s, std::size_t e) {
    if (e > s) out.push_back(piece.substr(s, e - s));
  };
  for (const auto& [s, e] : matches) {
    switch (behavior) {
      case Behavior::isolated:
        emit(last, s);
        emit(s, e);
        break;
      case Behavior::removed: emit(last, s); break;
      case Behavior::merged_with_previous: emit(last, e); break;
      case Behavior::merged_with_next:
        emit(pending_start == std::string_view::npos ? last : pending_start, s);
        pending_start = s;
        break;
      case Behavior::contiguous:
        if (last_was_match && s == last && !out.empty()) {
          out.back() = piece.substr(out.back().data() - piece.data(), e - (out.back().data() - piece.data()));
        } else {
          emit(last, s);
          emit(s, e);
        }
        break;
    }
    last_was_match = true;
    last = e;
    if (behavior == Behavior::contiguous) last_was_match = true;
  }
  if (behavior == Behavior::merged_with_next && pending_start != std::string_view::npos) {
    emit(pending_start, piece.size());
  } else {
    emit(last, piece.size());
  }
}

const std::shared_ptr<const Regex>& gpt2_regex() {
  static const auto regex = std::make_shared<const Regex>(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  return regex;
}

}  // namespace

void TokenizerImpl::encode_section(std::string_view section, bool first, std::vector<TokenId>& out) const {
  if (sentencepiece) {
    sentencepiece->encode(section, out);
    return;
  }
  const std::string normalized = normalize(section);
  if (normalized.empty()) return;
  thread_local std::vector<std::pair<std::size_t, std::size_t>> matches;
  std::deque<std::string> storage;  // texts that steps made; pieces point into them
  Pieces pieces{normalized}, next;
  for (const PreTokenizerStep& step : pre_tokenizer) {
    next.clear();
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      std::string_view piece = pieces[k];
      switch (step.kind) {
        case PreTokenizerStep::Kind::split:
          matches.clear();
          step.regex->find_all(piece, matches);
          split(piece, matches, step.behavior, next);
          break;
        case PreTokenizerStep::Kind::byte_level:
          if (step.add_prefix_space && !piece.starts_with(' ')) piece = storage.emplace_back(" " + std::string(piece));
          if (step.regex) {
            matches.clear();
            step.regex->find_all(piece, matches);
            split(piece, matches, Behavior::isolated, next);
          } else {
            next.push_back(piece);
          }
          break;
        case PreTokenizerStep::Kind::metaspace: {
          std::string s;
          s.reserve(piece.size() + step.replacement.size());
          const bool prepend = step.prepend == PreTokenizerStep::Prepend::always ||
                               (step.prepend == PreTokenizerStep::Prepend::first && first && k == 0);
          if (prepend && !piece.starts_with(step.replacement) && !piece.starts_with(' ')) s += step.replacement;
          for (char c : piece) {
            if (c == ' ') s += step.replacement;
            else s.push_back(c);
          }
          const std::string_view text = storage.emplace_back(std::move(s));
          if (step.split) {
            matches.clear();
            for (std::size_t at = text.find(step.replacement); at != std::string_view::npos;
                 at = text.find(step.replacement, at + step.replacement.size())) {
              matches.emplace_back(at, at + step.replacement.size());
            }
            split(text, matches, Behavior::merged_with_next, next);
          } else {
            next.push_back(text);
          }
          break;
        }
      }
    }
    pieces.swap(next);
  }
  for (std::string_view piece : pieces) model->encode_word(piece, out);
}

std::shared_ptr<const Regex> gpt2_pre_tokenizer_regex() { return gpt2_regex(); }

}  // namespace nuvec::text
