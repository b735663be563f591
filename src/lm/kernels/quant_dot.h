// quant_linear()'s integer path (quant_dot_avx512vnni.cc): the activations
// are rounded to int8 in a workspace the caller provides, so that what the
// product holds is counted by the allocator like any other scratch.
#pragma once

#include <cstddef>

#include "lm/kernels/quant_kernels.h"

namespace nuvec::lm::kernels::detail {

// x rows quantized at once: the workspace holds this many rows. 256, not
// 64: prefill's panels (quant_dot_panel.inc) are unpacked once per pass,
// and with 64 rows per pass their unpacking cost a 512-token prompt through
// a 2048 x 2048 layer a quarter of its speed (Q8_0 95 against 132 GMAC/s
// per core on the development machine's EPYC); the workspace is then at
// most 1.4 bytes per activation of 256 rows (2 MB at k = 5632).
constexpr std::size_t kQuantDotRowsPerPass = 256;

// Where each part of one pass's quantized activations starts in the
// workspace, for `rows` (at most kQuantDotRowsPerPass) of k values (k a
// multiple of 64): the quants [rows][k] (as uint8 xq + 128, or as int8 xq
// on Q8_0's and Q4_0's path: quant_dot_signed.inc), then the scales f32
// [rows][k/32] and the run sums f32 [rows][k/16] (of the rounded
// activations), then, for Q8_0's and Q4_0's decode, one row's int32
// correction per 4 activations (one vpdpbusd lane) [k/4]; each part 64-byte
// aligned.
struct QuantDotLayout {
  std::size_t scale_at, sum_at, corr_at, bytes;
};

inline QuantDotLayout quant_dot_layout(std::size_t k, std::size_t rows) {
  const std::size_t R = rows < kQuantDotRowsPerPass ? rows : kQuantDotRowsPerPass;
  const auto up = [](std::size_t v) { return (v + 63) / 64 * 64; };
  QuantDotLayout l{};
  l.scale_at = up(R * k);
  l.sum_at = l.scale_at + up(R * k / 8);   // k/32 f32 per row
  l.corr_at = l.sum_at + up(R * k / 4);    // k/16 f32 per row
  l.bytes = l.corr_at + up(k);             // k/4 int32, one row
  return l;
}

// The integer path's settings from the environment, read and checked on
// the first call (quant_dot_supported() makes it, before any product);
// a value not understood throws InvalidArgument naming the variable.
// NUVEC_QUANT_DOT=off turns the path off (to measure the f32 one);
// NUVEC_QUANT_PREFETCH=BYTES sets how far ahead the Q8_0/Q4_0 products
// prefetch their weights (0: none), to measure other distances.
inline constexpr std::size_t kQuantPrefetch = 2048;
inline constexpr std::size_t kMaxQuantPrefetch = 65536;
struct QuantDotSettings {
  bool on = true;
  std::size_t prefetch_bytes = kQuantPrefetch;
};
const QuantDotSettings& quant_dot_settings();

// Whether this process runs the integer path (the CPU has AVX-512 VNNI,
// NUVEC_KERNEL_ISA allows AVX-512 and NUVEC_QUANT_DOT is not off; asked on
// any CPU, so it lives in quant_dot_settings.cc, not in the AVX-512 file),
// and whether a product of rows of k weights can take it (k whole groups of
// 64). The product itself: quant_paths.h's quant_dot_avx512vnni.
bool quant_dot_supported();
inline bool quant_dot_fits(std::size_t k) { return k % 64 == 0; }

}  // namespace nuvec::lm::kernels::detail
