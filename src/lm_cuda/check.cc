#include "lm_cuda/check.h"

#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "cuda/cuda_error.h"
#include "nuvec/error.h"

namespace nuvec::lm::gpu {

Element element_of(DType dtype, std::string_view what) {
  if (dtype == DType::f16) return Element::f16;
  if (dtype == DType::bf16) return Element::bf16;
  throw InvalidArgument(fmt::format("{}: the GPU kernels take f16 or bf16 elements, not {}", what, dtype_name(dtype)));
}

void require_at_most(std::size_t value, std::size_t limit, std::string_view name, std::string_view what) {
  if (value <= limit) return;
  throw InvalidArgument(fmt::format("{}: {} is {}, above the {} the GPU kernels are built for", what, name, value, limit));
}

void check_launch(const char* kernel) {
  cuda::check(cudaGetLastError(), fmt::format("{}<<<>>>", kernel), fmt::format("launch {}", kernel));
}

}  // namespace nuvec::lm::gpu
