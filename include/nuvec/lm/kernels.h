// The settings of the LM runtime's CPU kernels that a program may choose or
// report: how many threads they use, and which instruction set runs the
// matrix products. (The kernels themselves are the runtime's own.)
#pragma once

namespace nuvec::lm::kernels {

// How many threads the kernels use, the caller included (default: the CPUs
// this process may run on, from its affinity mask). set_threads(n) with n < 1
// means 1; it must not be called while a parallel_for is running.
void set_threads(int threads);
int threads();

// Which instruction set the matrix products (linear) use on this CPU:
// "amx", "avx512bf16", "avx512", "avx2" or "portable".
const char* linear_isa();

}  // namespace nuvec::lm::kernels
