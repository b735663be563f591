#include "nuvec/io/footprint.h"

namespace nuvec::io {

TensorFilter::TensorFilter(std::set<std::string> names)
    : names_(std::make_shared<const std::set<std::string, std::less<>>>(names.begin(), names.end())) {}

TensorFilter::TensorFilter(std::function<bool(std::string_view name)> predicate) : predicate_(std::move(predicate)) {}

bool TensorFilter::selects(std::string_view name) const {
  if (names_) return names_->contains(name);
  if (predicate_) return predicate_(name);
  return true;
}

}  // namespace nuvec::io
