// CUDA runtime errors as nuvec exceptions and messages.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

namespace nuvec::cuda {

// "cudaMalloc: out of memory (cudaErrorMemoryAllocation)".
std::string error_text(std::string_view call, cudaError_t error);

// Raises IoError for a failed call (after clearing the runtime's last error,
// so that one failure is not reported again by the next call). `what` says
// what nuvec was doing.
void check(cudaError_t error, std::string_view call, std::string_view what);

}  // namespace nuvec::cuda
