#include "io/gguf/gguf_cursor.h"

#include <algorithm>

#include <fmt/format.h>

#include "nuvec/input_file.h"
#include "nuvec/io/gguf.h"

namespace nuvec::io {

GgufCursor::GgufCursor(std::span<const std::byte> prefix, std::uint64_t file_size, const std::filesystem::path& name)
    : prefix_(prefix.first(static_cast<std::size_t>(std::min<std::uint64_t>(prefix.size(), file_size)))),
      file_size_(file_size),
      name_(name) {}

void GgufCursor::fail(std::uint64_t offset, std::string_view reason) const { format_error(name_, offset, reason); }

void GgufCursor::need(std::uint64_t n, std::string_view what) {
  if (n > file_size_ - pos_) {
    fail(pos_, fmt::format("{} ({} bytes) runs past the end of the file ({} bytes)", what, n, file_size_));
  }
  if (n > kGgufMaxHeaderSize - std::min(pos_, kGgufMaxHeaderSize)) {
    fail(pos_, fmt::format("{} ({} bytes) would make the header longer than nuvec's cap of {} bytes", what, n,
                           kGgufMaxHeaderSize));
  }
  if (n > prefix_.size() - pos_) throw GgufPrefixTooShort{pos_ + n};
}

void GgufCursor::check_count(std::uint64_t count, std::uint64_t min_size, std::string_view what) const {
  const std::uint64_t left = std::min(file_size_, kGgufMaxHeaderSize) - std::min({pos_, file_size_, kGgufMaxHeaderSize});
  if (count > left / min_size) {
    fail(pos_, fmt::format("{} {} cannot fit in the {} bytes left of the file and header (each takes at least {})",
                           count, what, left, min_size));
  }
}

void GgufCursor::copy_out(void* out, std::size_t bytes, std::size_t element_size) {
  std::memcpy(out, prefix_.data() + pos_, bytes);
  if constexpr (std::endian::native == std::endian::big) {
    auto* p = static_cast<std::byte*>(out);
    for (std::size_t i = 0; i + element_size <= bytes; i += element_size) std::reverse(p + i, p + i + element_size);
  }
  pos_ += bytes;
}

void GgufCursor::read_array(void* out, std::size_t count, std::size_t size, std::string_view what) {
  check_count(count, size, what);
  need(count * size, what);
  if (count != 0) copy_out(out, count * size, size);
}

std::string GgufCursor::read_string(std::string_view what) {
  const std::uint64_t at = pos_;
  const auto length = read<std::uint64_t>(what);
  if (length > file_size_ - pos_) {
    fail(at, fmt::format("{}: a string of {} bytes runs past the end of the file ({} bytes)", what, length,
                         file_size_));
  }
  need(length, what);
  std::string s(reinterpret_cast<const char*>(prefix_.data() + pos_), static_cast<std::size_t>(length));
  pos_ += length;
  return s;
}

}  // namespace nuvec::io
