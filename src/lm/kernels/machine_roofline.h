// What this machine can do, measured in the calling process, so that a run
// can state its speed as a fraction of the machine's bounds in the same run
// ("decode at 85% of the bandwidth bound"): the read bandwidth of main memory
// (the bound of a decode step, which streams every weight once) and the
// GFLOP/s of linear() on a prefill-sized product (the matmul roofline that
// linear() reaches; bench/lm/roofline.cc compares it with OpenBLAS).
//
// Both allocate their buffers with mmap, outside nuvec's allocator, and free
// them before returning; the bandwidth buffer (1 GiB by default) does raise
// the process's OS peak resident size (VmHWM), so measure in a process, or a
// phase, whose peak is not being reported.
#pragma once

#include <cstddef>

#include "lm/kernels/linear.h"
#include "nuvec/lm/kernels.h"

namespace nuvec::lm::kernels {

// Pages, ReadBandwidth and measure_read_bandwidth(): nuvec/lm/kernels.h.

// The decode bound: the larger of measure_read_bandwidth() with normal and
// with huge pages, all threads (threads()), 1 GiB, 5 passes each (~1 s).
ReadBandwidth measure_read_bandwidth_bound();

struct MatmulRate {
  double flops_per_second;  // 2*m*k*n per call, median over the calls
  std::size_t m, k, n;
  WeightType type;
  Precision precision;
  int calls;
};

// Times linear() with threads() threads on random data of this shape (one
// untimed call first). Throws InvalidArgument for an empty shape or calls < 1.
MatmulRate measure_linear_rate(std::size_t m, std::size_t k, std::size_t n, WeightType type,
                               Precision precision = Precision::fast, int calls = 5);

// The matmul roofline of the kernel for a weight type: every pool thread at
// once runs linear() alone (single-threaded) on its own 480 x 256 x 512
// product, whose packed panels stay in L1/L2, `calls` times; the sum of
// their rates. This is what the micro-kernel sustains with all cores busy
// when memory is no obstacle: an upper bound for linear() at any shape.
// Call it from outside any parallel_for (nested, the threads would not run
// at once; after a second of waiting for each other they go on alone and the
// figure is low).
MatmulRate measure_matmul_ceiling(WeightType type, Precision precision = Precision::fast, int calls = 50);

// The AMX tile unit's own bf16 ceiling: every pool thread at once runs
// 2^18 tdpbf16ps (16 x 32 x 16 each, into four independent accumulators) on
// tiles already loaded, `calls` times (~2 ms each); the sum of the threads'
// median rates. No memory operand, so no kernel can pass it. flops_per_second
// is 0 where the kernels may not use AMX (isa_allowed(Isa::amx) is false: the
// CPU lacks it, or NUVEC_KERNEL_ISA caps below it). The shape fields give one
// instruction's m, k, n. Call it from outside any parallel_for.
MatmulRate measure_amx_tile_peak(int calls = 20);

// The same four products a step, each step first loading its two A and two
// B tiles from memory, as linear_amx()'s micro-block does: what the tile
// loads leave of the peak, by where the tiles come from. Each thread walks
// its own two regions of `region_bytes` (A and B; 1 KiB tiles one after the
// other, or, with strided_a, A's tiles taken from 32 rows of region_bytes /
// 32 bytes each, as tiles loaded straight from W's rows are), round and
// round; prefetch 1 asks for the B tiles two steps ahead into L1, 2 for the
// A tiles too. All threads at once, `calls` calls of 2^14 steps; the sum of
// their median rates (0 without AMX). Throws InvalidArgument for regions
// under 4 KiB or not a multiple of 4 KiB.
struct TileLoadPattern {
  std::size_t region_bytes;
  bool strided_a = false;
  int prefetch = 0;
};
double measure_amx_tile_load_rate(TileLoadPattern pattern, int calls = 9);

}  // namespace nuvec::lm::kernels
