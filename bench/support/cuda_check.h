// The CUDA benchmarks' one error check: a failed runtime call ends the
// benchmark with the call and the runtime's message (a benchmark has no
// caller to hand an error to).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace nuvec_bench {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

}  // namespace nuvec_bench
