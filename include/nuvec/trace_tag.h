// Tags: what the memory a scope allocates is for ("weights", "kv_cache").
//
//   {
//     nuvec::Tag scope(device, "kv_cache");
//     ... every event the device traces on this thread now carries "kv_cache"
//   }
//
// Tags nest: the innermost one open on the calling thread for that device is
// the event's tag, and closing it brings back the one outside. A tag costs
// a string copy (none for names of up to 15 bytes) and two thread-local
// stores whether or not the device is tracing; it is looked up only when an
// event is recorded. A Tag belongs to the thread that made it and must end
// there (a scope object does).
#pragma once

#include <string>
#include <string_view>

namespace nuvec {

class Device;

class Tag {
 public:
  Tag(const Device& device, std::string_view name);
  ~Tag();
  Tag(const Tag&) = delete;
  Tag& operator=(const Tag&) = delete;

  // The innermost tag open on this thread for `device`; empty when none.
  static std::string_view current(const Device& device);

 private:
  const Device* device_;
  std::string name_;
  Tag* outer_;  // the tag open on this thread before this one (any device)
};

}  // namespace nuvec
