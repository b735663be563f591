// Reading a GGUF header from the start of a file held in memory, as hostile
// input: every read is checked against the file's end, the header cap and
// the bytes at hand, and every count against the bytes left before it
// sizes anything.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace nuvec::io {

// Thrown when the bytes at hand end before the header does but the file does
// not: whoever holds the file reads at least `needed` bytes and parses again.
struct GgufPrefixTooShort {
  std::uint64_t needed;
};

class GgufCursor {
 public:
  GgufCursor(std::span<const std::byte> prefix, std::uint64_t file_size, const std::filesystem::path& name);

  std::uint64_t offset() const { return pos_; }
  std::uint64_t file_size() const { return file_size_; }
  const std::filesystem::path& name() const { return name_; }

  // FormatError: "<file>: at byte <offset>: <reason>".
  [[noreturn]] void fail(std::uint64_t offset, std::string_view reason) const;

  // Makes sure `n` more bytes can be read: FormatError naming `what` if they
  // pass the end of the file or the header cap, GgufPrefixTooShort if only
  // the bytes at hand end first.
  void need(std::uint64_t n, std::string_view what);

  // Makes sure `count` items of at least `min_size` bytes each can fit in
  // what is left of the file and the header cap (FormatError otherwise), so
  // that `count` may bound a reservation.
  void check_count(std::uint64_t count, std::uint64_t min_size, std::string_view what) const;

  // A little-endian scalar.
  template <class T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T value;
    copy_out(&value, sizeof(T), sizeof(T));
    return value;
  }

  // `count` little-endian scalars of `size` bytes into `out`.
  void read_array(void* out, std::size_t count, std::size_t size, std::string_view what);

  // A GGUF string: a uint64 length and that many bytes.
  std::string read_string(std::string_view what);

 private:
  void copy_out(void* out, std::size_t bytes, std::size_t element_size);

  std::span<const std::byte> prefix_;  // no longer than the file
  std::uint64_t file_size_;
  const std::filesystem::path& name_;
  std::uint64_t pos_ = 0;
};

}  // namespace nuvec::io
