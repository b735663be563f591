// The settings of the LM runtime's CPU kernels that a program may choose or
// report: how many threads they use, and which instruction set runs the
// matrix products. (The kernels themselves are the runtime's own.)
#pragma once

#include <cstddef>

namespace nuvec::lm::kernels {

// How many threads the kernels use, the caller included (default: the CPUs
// this process may run on, from its affinity mask). set_threads(n) with n < 1
// means 1; it must not be called while a parallel_for is running.
void set_threads(int threads);
int threads();

// Which instruction set the matrix products (linear) use on this CPU:
// "amx", "avx512bf16", "avx512", "avx2" or "portable".
const char* linear_isa();

// The read bandwidth of main memory, the bound of a decode step (which reads
// every weight once per token), measured in the calling process: `nuvec
// roofline` prints it per thread count, and `nuvec profile` states decode's
// weight bytes per second as a fraction of it.
//
// The pages of the measured buffer: the normal 4 KiB pages that mapped
// checkpoint files get, or transparent huge pages (MADV_HUGEPAGE, where the
// kernel allows them), which spare the TLB misses and read faster (on the
// 2-core Zen 4 VM: ~33 against ~29 GB/s with two threads).
enum class Pages { normal, huge };

struct ReadBandwidth {
  double bytes_per_second;  // median over the passes
  int threads;
  std::size_t bytes;  // the buffer read in each pass
  int passes;
  Pages pages;
};

// Sums a buffer of `bytes` (to be far larger than the last-level cache) with
// `threads` threads of its own (not the kernels' pool), each reading a
// contiguous share, `passes` times after one untimed pass; the time of a pass
// runs from the common start to the last thread's end. threads < 1 means
// threads(). The buffer is mapped outside nuvec's allocator and unmapped
// before returning (it does raise the process's peak resident size).
// Throws InvalidArgument for bytes < 1 MiB or passes < 1, and std::bad_alloc
// when the buffer cannot be mapped.
ReadBandwidth measure_read_bandwidth(int threads, std::size_t bytes = std::size_t{1} << 30, int passes = 5,
                                     Pages pages = Pages::normal);

// The size of this CPU's last-level cache in bytes (sysfs), 0 where unknown:
// what a bandwidth buffer must be far larger than.
std::size_t last_level_cache_bytes();

}  // namespace nuvec::lm::kernels
