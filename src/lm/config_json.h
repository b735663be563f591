// config.json parsed into a DOM that remembers where each member's value
// starts in the text, so that an error can name the real byte offset of the
// offending value (nlohmann's DOM keeps no positions). Numbers out of range
// (1e400) and syntax errors are FormatErrors naming the file, the key being
// read and the offset.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nuvec::lm::detail {

struct PositionedJson {
  nlohmann::json root;
  // "key" or "outer.key" (object members only) -> offset of its value's
  // first byte; the root object itself is "".
  std::map<std::string, std::uint64_t> offsets;

  // The offset of `path`'s value, or of the nearest enclosing object that
  // has one (a missing key points at the object that lacks it).
  std::uint64_t offset_of(std::string_view path) const;
};

PositionedJson parse_positioned_json(std::string_view text, const std::filesystem::path& file);

}  // namespace nuvec::lm::detail
