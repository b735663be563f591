// Prompts for `nuvec run` and `nuvec profile`, which have no tokenizer:
// token ids given on the command line, or a synthetic prompt of a length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace nuvec::tool {

// "1,2,3" -> {1, 2, 3}. InvalidArgument for anything but comma-separated
// non-negative integers below 2^31, or an empty list.
std::vector<std::int32_t> parse_token_ids(std::string_view text);

// `length` token ids, fixed for a length and vocabulary (a scrambled
// sequence over [0, vocab)), so that runs are repeatable.
std::vector<std::int32_t> synthetic_prompt(std::size_t length, std::size_t vocab);

}  // namespace nuvec::tool
