#include "trace/pickle_writer.h"

namespace nuvec::detail {
namespace {

// The pickle opcodes used (CPython's Lib/pickletools.py documents each).
constexpr std::uint8_t kProto = 0x80, kStop = '.', kMark = '(', kEmptyDict = '}', kSetItems = 'u',
                       kEmptyList = ']', kAppends = 'e', kBinUnicode = 'X', kBinInt = 'J', kLong1 = 0x8a,
                       kNone = 'N', kTrue = 0x88, kFalse = 0x89;

// The length of the UTF-8 sequence starting at text[i], or 0 if it is not one
// (overlong forms, surrogates and code points past U+10FFFF included).
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  std::size_t n = 0;
  std::uint32_t cp = 0;
  if ((b & 0xe0) == 0xc0) n = 2, cp = b & 0x1f;
  else if ((b & 0xf0) == 0xe0) n = 3, cp = b & 0x0f;
  else if ((b & 0xf8) == 0xf0) n = 4, cp = b & 0x07;
  else return 0;
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

}  // namespace

PickleWriter::PickleWriter(std::string& out) : out_(out) {
  put(kProto);
  put(2);
}

void PickleWriter::put_le(std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) put(static_cast<std::uint8_t>(value >> (8 * i)));
}

void PickleWriter::begin_dict() {
  put(kEmptyDict);
  put(kMark);
}
void PickleWriter::end_dict() { put(kSetItems); }
void PickleWriter::begin_list() {
  put(kEmptyList);
  put(kMark);
}
void PickleWriter::end_list() { put(kAppends); }

void PickleWriter::string(std::string_view text) {
  std::string valid;
  valid.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (const std::size_t n = utf8_sequence(text, i); n != 0) {
      valid.append(text.substr(i, n));
      i += n;
    } else {
      valid.append("\xef\xbf\xbd");  // U+FFFD
      ++i;
    }
  }
  put(kBinUnicode);
  put_le(valid.size(), 4);
  out_.append(valid);
}

void PickleWriter::integer(std::int64_t value) {
  if (value >= INT32_MIN && value <= INT32_MAX) {
    put(kBinInt);
    put_le(static_cast<std::uint32_t>(static_cast<std::int32_t>(value)), 4);
    return;
  }
  put(kLong1);  // little-endian two's complement, 8 bytes
  put(8);
  put_le(static_cast<std::uint64_t>(value), 8);
}

void PickleWriter::unsigned_integer(std::uint64_t value) {
  if (value <= static_cast<std::uint64_t>(INT64_MAX)) return integer(static_cast<std::int64_t>(value));
  put(kLong1);  // a ninth byte, 0, keeps it positive
  put(9);
  put_le(value, 8);
  put(0);
}

void PickleWriter::boolean(bool value) { put(value ? kTrue : kFalse); }
void PickleWriter::none() { put(kNone); }
void PickleWriter::finish() { put(kStop); }

}  // namespace nuvec::detail
