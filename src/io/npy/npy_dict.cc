#include "io/npy/npy_dict.h"

#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "nuvec/input_file.h"
#include "nuvec/io/npy.h"

namespace nuvec::io {
namespace {

// numpy's dimensions are npy_intp: anything larger cannot be an array.
constexpr std::uint64_t kMaxDimension = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// A recursive-descent reader over the header text; every error names the
// byte it stopped at.
class DictParser {
 public:
  DictParser(std::string_view text, std::uint64_t base, const std::filesystem::path& file)
      : text_(text), base_(base), file_(file) {}

  NpyDict parse() {
    NpyDict dict;
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_space();
    expect('{', "the header must be a dict literal, starting with '{'");
    skip_space();
    while (!at('}')) {
      const std::uint64_t key_at = here();
      const std::string key = parse_string("a dict key");
      skip_space();
      expect(':', "expected ':' after a dict key");
      skip_space();
      if (key == "descr") {
        if (have_descr) fail_at(key_at, "the key 'descr' appears twice");
        have_descr = true;
        dict.descr_offset = here();
        if (at('[')) fail("descr is a list: structured dtypes are not supported");
        dict.descr = parse_string("descr (a dtype string such as '<f4')");
      } else if (key == "fortran_order") {
        if (have_fortran) fail_at(key_at, "the key 'fortran_order' appears twice");
        have_fortran = true;
        dict.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (have_shape) fail_at(key_at, "the key 'shape' appears twice");
        have_shape = true;
        dict.shape_offset = here();
        dict.shape = parse_shape();
      } else {
        fail_at(key_at, fmt::format("unexpected key '{}' (an npy header has exactly 'descr', 'fortran_order' "
                                    "and 'shape')",
                                    printable(key)));
      }
      skip_space();
      if (at(',')) {
        ++pos_;
        skip_space();
      } else if (!at('}')) {
        fail("expected ',' or '}' after a dict value");
      }
    }
    ++pos_;  // '}'
    skip_space();
    if (pos_ != text_.size()) fail("unexpected bytes after the header dict (only spaces and '\\n' may follow it)");
    if (!have_descr) fail_at(base_, "the header has no 'descr' key");
    if (!have_fortran) fail_at(base_, "the header has no 'fortran_order' key");
    if (!have_shape) fail_at(base_, "the header has no 'shape' key");
    return dict;
  }

 private:
  std::uint64_t here() const { return base_ + pos_; }
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  [[noreturn]] void fail_at(std::uint64_t offset, std::string_view reason) const {
    format_error(file_, offset, fmt::format("malformed npy header: {}", reason));
  }
  [[noreturn]] void fail(std::string_view reason) const {
    if (pos_ >= text_.size()) fail_at(here(), fmt::format("{} (the header ends here)", reason));
    fail_at(here(), reason);
  }

  void expect(char c, std::string_view reason) {
    if (!at(c)) fail(reason);
    ++pos_;
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  // A Python string literal without escapes: 'text' or "text".
  std::string parse_string(std::string_view what) {
    if (!at('\'') && !at('"')) fail(fmt::format("expected {} in quotes", what));
    const char quote = text_[pos_++];
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '\\') fail("escapes in strings are not supported");
      if (c < 0x20 || c > 0x7e) fail(fmt::format("byte 0x{:02x} in a string (only printable ASCII is read)", c));
      ++pos_;
    }
    if (pos_ == text_.size()) fail("unterminated string");
    std::string value(text_.substr(start, pos_ - start));
    ++pos_;  // closing quote
    return value;
  }

  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("fortran_order must be True or False");
  }

  // A tuple of integers as Python writes it: (), (3,), (3, 4).
  std::vector<std::uint64_t> parse_shape() {
    expect('(', "shape must be a tuple such as (3, 4)");
    std::vector<std::uint64_t> shape;
    skip_space();
    bool trailing_comma = false;
    while (!at(')')) {
      // numpy's own limit (NPY_MAXDIMS): numpy.load refuses more, so such a
      // file is not one numpy wrote or can read.
      if (shape.size() == kNpyMaxDimensions) {
        fail(fmt::format("more than {} dimensions in shape, numpy's limit (numpy.load refuses it too)",
                         kNpyMaxDimensions));
      }
      shape.push_back(parse_dimension());
      skip_space();
      trailing_comma = at(',');
      if (trailing_comma) {
        ++pos_;
        skip_space();
      } else if (!at(')')) {
        fail("expected ',' or ')' in shape");
      }
    }
    if (shape.size() == 1 && !trailing_comma) fail("shape (n) is an integer, not a tuple: numpy writes (n,)");
    ++pos_;  // ')'
    return shape;
  }

  std::uint64_t parse_dimension() {
    if (at('-')) fail("negative dimension in shape");
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') fail("expected a dimension (an integer)");
    const std::uint64_t start = here();
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9') {
      fail("a dimension with a leading zero is not a Python integer");
    }
    std::uint64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto digit = static_cast<std::uint64_t>(text_[pos_] - '0');
      if (value > (kMaxDimension - digit) / 10) {
        fail_at(start, fmt::format("dimension overflows: larger than {}", kMaxDimension));
      }
      value = value * 10 + digit;
      ++pos_;
    }
    return value;
  }

  // A key as it may be shown in a message: at most 64 characters.
  static std::string printable(std::string_view s) {
    return s.size() <= 64 ? std::string(s) : std::string(s.substr(0, 64)) + "...";
  }

  std::string_view text_;
  std::uint64_t base_;
  const std::filesystem::path& file_;
  std::size_t pos_ = 0;
};

}  // namespace

NpyDict parse_npy_dict(std::string_view text, std::uint64_t base, const std::filesystem::path& file) {
  return DictParser(text, base, file).parse();
}

}  // namespace nuvec::io
