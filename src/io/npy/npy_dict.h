// The header of an .npy file is the repr of a Python dict. numpy reads it
// with ast.literal_eval; nuvec reads only what numpy writes: string keys,
// a string, True/False and a tuple of non-negative integers, in any order,
// with any whitespace between tokens.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace nuvec::io {

// The dict's three entries, each with the file offset of its value (for
// errors found later).
struct NpyDict {
  std::string descr;
  std::uint64_t descr_offset = 0;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
  std::uint64_t shape_offset = 0;
};

// Parses `text`, the header that starts at byte `base` of `file`.
// FormatError at the offending byte for anything else: other keys, a
// missing or repeated key, values of the wrong type (a list for descr is a
// structured dtype), negative or over-large dimensions, bytes after the dict
// other than whitespace.
NpyDict parse_npy_dict(std::string_view text, std::uint64_t base, const std::filesystem::path& file);

}  // namespace nuvec::io
