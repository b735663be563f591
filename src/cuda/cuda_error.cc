#include "cuda/cuda_error.h"

#include <cerrno>

#include <fmt/format.h>

#include "nuvec/error.h"

namespace nuvec::cuda {

std::string error_text(std::string_view call, cudaError_t error) {
  return fmt::format("{}: {} ({})", call, cudaGetErrorString(error), cudaGetErrorName(error));
}

void check(cudaError_t error, std::string_view call, std::string_view what) {
  if (error == cudaSuccess) return;
  (void)cudaGetLastError();  // a non-sticky error must not resurface in an unrelated call
  throw IoError(fmt::format("cannot {}: {}", what, error_text(call, error)), {}, EIO);
}

}  // namespace nuvec::cuda
