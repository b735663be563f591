// The tags open on each thread, as a list threaded through the Tag objects
// themselves (innermost first): opening and closing one allocate nothing
// beyond its name, and the recorder walks the list only when it records.
#include "nuvec/trace_tag.h"

namespace nuvec {
namespace {

thread_local Tag* innermost = nullptr;

}  // namespace

Tag::Tag(const Device& device, std::string_view name) : device_(&device), name_(name), outer_(innermost) {
  innermost = this;
}

Tag::~Tag() {
  // Scopes end innermost first; a Python `with` left out of order (a
  // generator closed late) still unlinks only itself.
  if (innermost == this) {
    innermost = outer_;
    return;
  }
  for (Tag* t = innermost; t != nullptr; t = t->outer_) {
    if (t->outer_ == this) {
      t->outer_ = outer_;
      return;
    }
  }
}

std::string_view Tag::current(const Device& device) {
  for (const Tag* t = innermost; t != nullptr; t = t->outer_) {
    if (t->device_ == &device) return t->name_;
  }
  return {};
}

}  // namespace nuvec
