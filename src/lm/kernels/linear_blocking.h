// The blocking of each linear() GEMM, as plain numbers: the instruction-set
// files (linear_avx2.cc, linear_avx512.cc, linear_avx512bf16.cc,
// linear_amx.cc) build their kernels from these, and linear_workspace.cc
// computes the scratch those kernels need from the same numbers, in a file
// compiled for any x86-64 (cpu_isa.h says why that matters).
#pragma once

#include <cstddef>

namespace nuvec::lm::kernels::detail {

// Goto/BLIS blocking (linear_simd.inc): an MR x NR micro-tile, k in slices
// of KC, x in blocks of MC rows, W in chunks of NB columns, at most NC
// columns per task; a packed x element takes a_elem bytes, a W one b_elem.
struct GemmBlocking {
  std::size_t mr, nr, kc, mc, nb, nc;
  std::size_t a_elem, b_elem;

  constexpr std::size_t a_panel_bytes() const { return mr * kc * a_elem; }
  constexpr std::size_t b_panel_bytes() const { return kc * nr * b_elem; }
};

// AVX2 f32: a 6 x 16 tile, 12 accumulators + 2 B vectors + 1 broadcast of
// the 16 registers; a B panel (256 x 16 f32 = 16 KiB) stays in L1.
inline constexpr GemmBlocking kAvx2F32Gemm{6, 16, 256, 192, 2048, 128, 4, 4};

// AVX-512 f32: a 12 x 32 tile, 24 accumulators + 2 W vectors of the 32
// registers. An x panel (12 x 512 f32 = 24 KiB) stays in L1 while a task's
// W panels (256 columns x 512 = 512 KiB) come from L2. KC = 512 measured
// best of 128-512 on Zen 4 (m = 512, k = n = 2048: 101 GFLOP/s on one core
// against 93 at 128).
inline constexpr GemmBlocking kAvx512F32Gemm{12, 32, 512, 768, 2048, 256, 4, 4};

// AVX512_BF16 (vdpbf16ps): a 12 x 32 tile (24 accumulators) of bf16 pairs.
// An x panel (12 x 1024 bf16 = 24 KiB) stays in L1 while a task's W panels
// (256 columns x 1024 = 512 KiB) come from L2. KC = 1024 measured best of
// 256-1024 on Zen 4 with two threads (m = 512, k = n = 2048: ~375 GFLOP/s
// against ~340 at 256).
inline constexpr GemmBlocking kAvx512Bf16Gemm{12, 32, 1024, 768, 2048, 256, 2, 2};

// AMX (linear_amx.cc): k in steps of 32 bf16 (one A tile row), micro-blocks
// of 32 rows of W by 32 rows of x, and x packed a block of rows at a time,
// the block at most 4 MiB (whole micro-blocks, at least one).
inline constexpr std::size_t kAmxStep = 32;
inline constexpr std::size_t kAmxBlock = 32;
inline constexpr std::size_t kAmxXBlockBytes = std::size_t{4} << 20;

}  // namespace nuvec::lm::kernels::detail
