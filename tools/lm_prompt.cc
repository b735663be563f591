#include "lm_prompt.h"

#include <charconv>
#include <string>

#include <fmt/format.h>

#include "nuvec/lm/splitmix64.h"
#include "nuvec/error.h"

namespace nuvec::tool {

std::vector<std::int32_t> parse_token_ids(std::string_view text) {
  std::vector<std::int32_t> ids;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    std::int32_t id = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || ec != std::errc{} || end != item.data() + item.size() || id < 0) {
      throw InvalidArgument(fmt::format("token ids must be comma-separated integers in [0, 2^31): '{}' in '{}'",
                                        item, text));
    }
    ids.push_back(id);
    start = comma + 1;
  }
  return ids;
}

std::vector<std::int32_t> synthetic_prompt(std::size_t length, std::size_t vocab) {
  std::vector<std::int32_t> ids(length);
  std::uint64_t state = 0x6e75766563ull;  // "nuvec"
  for (std::int32_t& id : ids) {
    id = static_cast<std::int32_t>(lm::splitmix64_next(state) % vocab);
  }
  return ids;
}

}  // namespace nuvec::tool
