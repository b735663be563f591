// What the layer's entry points check before they launch: that an element
// type is one the kernels are built for, and that a size fits the ints the
// kernels index with.
#pragma once

#include <cstddef>
#include <string_view>

#include "lm_cuda/launch.h"
#include "nuvec/lm/tensor.h"

namespace nuvec::lm::gpu {

// The kernels' Element for f16 and bf16; InvalidArgument for any other
// dtype (`what` names the call).
Element element_of(DType dtype, std::string_view what);

// InvalidArgument unless `value` (named `name`) is at most `limit`.
void require_at_most(std::size_t value, std::size_t limit, std::string_view name, std::string_view what);

}  // namespace nuvec::lm::gpu
