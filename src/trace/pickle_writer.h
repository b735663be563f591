// PickleWriter: Python pickle data (protocol 2) of plain values — dicts,
// lists, strings, integers, booleans, None — written as a stream, for
// files that Python tools read with pickle.load (PyTorch's memory snapshot,
// include/nuvec/trace/torch_snapshot.h). No memo, no classes: what it writes loads
// with any unpickler, however restricted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace nuvec::detail {

class PickleWriter {
 public:
  // Appends to `out`; the pickle is complete after finish().
  explicit PickleWriter(std::string& out);

  // A dict's items are key, value, key, value, ... between begin and end.
  void begin_dict();
  void end_dict();
  void begin_list();
  void end_list();
  // Bytes that are not UTF-8 become U+FFFD (Python's pickle refuses them).
  void string(std::string_view text);
  void integer(std::int64_t value);
  void unsigned_integer(std::uint64_t value);
  void boolean(bool value);
  void none();
  void finish();

 private:
  void put(std::uint8_t byte) { out_.push_back(static_cast<char>(byte)); }
  void put_le(std::uint64_t value, int bytes);
  std::string& out_;
};

}  // namespace nuvec::detail
