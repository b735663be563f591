// nlohmann's SAX parser over text whose file offset is known, so that a
// handler can say where in the file each event happened: nlohmann reports
// positions only for syntax errors, and a hostile header's other flaws
// (a bad dtype, a duplicate name) deserve a byte offset too. Parsing with
// events also sees every key, where a DOM silently keeps the last duplicate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nuvec::io::safetensors_detail {

// An input iterator over chars that records how far it has been advanced.
// nlohmann copies it into its input adapter and advances it one char at a
// time, so the record is the lexer's read position.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator() = default;
  CountingIterator(const char* at, const char** read_to) : at_(at), read_to_(read_to) {}

  reference operator*() const { return *at_; }
  CountingIterator& operator++() {
    ++at_;
    *read_to_ = at_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator before = *this;
    ++*this;
    return before;
  }
  friend bool operator==(const CountingIterator& a, const CountingIterator& b) { return a.at_ == b.at_; }

 private:
  const char* at_ = nullptr;
  const char** read_to_ = nullptr;
};

// JSON text that starts at `file_offset` of `file`.
class JsonText {
 public:
  JsonText(std::string_view text, std::uint64_t file_offset, std::filesystem::path file)
      : text_(text), file_offset_(file_offset), file_(std::move(file)), read_to_(text.data()) {}

  // Runs `sax` over the text (strict: nothing but whitespace may follow the
  // value). The handler raises FormatError itself; see syntax_error.
  template <class Sax>
  void parse(Sax& sax) {
    const CountingIterator first(text_.data(), &read_to_);
    const CountingIterator last(text_.data() + text_.size(), &read_to_);
    nlohmann::json::sax_parse(first, last, &sax);
  }

  const std::filesystem::path& file() const { return file_; }
  // The file offset just past what the lexer has read. In a handler's key()
  // or string() that is just past the closing quote; in start_object() or
  // start_array() just past the bracket.
  std::uint64_t read_to() const { return file_offset_ + static_cast<std::uint64_t>(read_to_ - text_.data()); }
  // The file offset of the opening quote of the string the lexer just read
  // (call from key() or string()).
  std::uint64_t string_start() const;
  // The file offset of the first byte that is not JSON whitespace.
  std::uint64_t value_start() const;

  // Raises FormatError for nlohmann's parse error at `position` (its count
  // of chars read, so the offending char is the one before).
  [[noreturn]] void syntax_error(std::size_t position, const nlohmann::json::exception& error) const;

 private:
  std::string_view text_;
  std::uint64_t file_offset_;
  std::filesystem::path file_;
  const char* read_to_;
};

// A quoted, escaped rendering of `text` for messages (at most `limit`
// bytes of it), safe for any bytes.
std::string in_quotes(std::string_view text, std::size_t limit = 80);

}  // namespace nuvec::io::safetensors_detail
