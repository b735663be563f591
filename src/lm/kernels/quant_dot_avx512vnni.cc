// quant_linear()'s integer path on AVX-512 VNNI: the activations rounded to
// int8 per 32 values (one f32 scale each), the weights unpacked to int8 as
// the f32 path does (quant_unpack.inc), and each 64 products summed in
// integers by one vpdpbusd, 4 per 32-bit lane, before any float work.
// Prefill (kPanelMinRows or more x rows per pass) goes through panels for
// every type (quant_dot_panel.inc); with fewer rows, Q8_0 and Q4_0 have a
// path of their own, described in quant_dot_signed.inc, and what follows
// is the other types'.
//
// vpdpbusd multiplies unsigned bytes by signed ones. The activations are
// stored unsigned, u = xq + 128, so sum u*q = sum xq*q + 128 * sum q; the
// weights' 128 * sum q per lane is computed once per 64 weights (shared by
// every x row of the tile) and starts each row's sum negated. Then per 64
// weights and x row: one vpdpbusd, one conversion to f32, and one multiply
// by the runs' weight scales times the row's activation scale, added in.
// A block's offsets (q4_1, q5_1, q2_k, q4_k, q5_k) meet the sums of the
// rounded activations per run of 16: both terms then see the same
// activations, whose error meets the weight (scale * q + offset), not the
// larger scale * q alone (with exact sums for the offsets, llama.cpp's
// fixtures of those types were 10% further off).
//
// What that means for the numbers: each activation is off by at most half
// its block's step (max |x| / 254 over its 32), as llama.cpp's Q8_0
// activations are (one scale per 64 took nuvec's Q8_0 logits as far from
// llama.cpp's as the weights' own rounding).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "lm/kernels/quant_dot.h"
#include "lm/kernels/quant_paths.h"
#include "lm/kernels/thread_pool.h"

#define NUVEC_ISA_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"
#include "lm/kernels/isa_target_begin.inc"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns about the deliberately undefined vectors inside its own
// intrinsics (_mm512_undefined_*); nothing of ours is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "lm/kernels/avx512_transpose.inc"

namespace nuvec::lm::kernels::detail {
namespace {

#include "lm/kernels/quant_unpack.inc"
#include "lm/kernels/quant_unpack_avx512.inc"
#include "lm/kernels/quant_dot_signed.inc"

constexpr std::size_t kRowsPerTask = 16;  // weight rows per parallel task
constexpr int kMaxRows = 8;               // x rows per tile
constexpr int kPrefetchAhead = 1024;      // bytes of weights asked for ahead of their use

// One pass's activations, quantized (layout in quant_dot.h).
struct Acts {
  const std::uint8_t* u;  // [rows][k]: xq + 128
  const float* scale;     // [rows][k / 32]: each block's activation scale
  const float* sum;       // [rows][k / 16]: each run of 16's sum of rounded activations
  std::size_t k;
  // The same pass from its row i on.
  Acts from_row(std::size_t i) const { return {u + i * k, scale + i * k / 32, sum + i * k / 16, k}; }
};

// Rounds rows of x to int8 per 32 values and fills a pass's Acts.
void quantize_rows(const float* x, std::size_t rows, std::size_t k, std::uint8_t* u, float* scale, float* sum) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  for (std::size_t b = 0; b < rows * k; b += 32) {
    const __m512 v[2] = {_mm512_loadu_ps(x + b), _mm512_loadu_ps(x + b + 16)};
    const float m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v[0]), _mm512_abs_ps(v[1]))), d = m / 127.0f;
    const __m512 inv = _mm512_set1_ps(m > 0 ? 127.0f / m : 0.0f);
    scale[b / 32] = d;
    for (int r = 0; r < 2; ++r) {
      // Round to nearest (the default MXCSR mode), then narrow: |xq| <= 127.
      const __m512i xq = _mm512_cvtps_epi32(_mm512_mul_ps(v[r], inv));
      sum[b / 16 + r] = d * static_cast<float>(_mm512_reduce_add_epi32(xq));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(u + b + 16 * r), _mm_xor_si128(_mm512_cvtepi32_epi8(xq), flip));
    }
  }
}

// The unpackers store quants 16 bytes and scales 4 bytes at a time; a wider
// load of what was just stored cannot be forwarded from the stores and
// stalls the load (by more than the rest of the work on 64 weights), so
// both are read back in the pieces they were written in.
inline __m512i load64(const std::int8_t* q) {
  const auto at = [&](int i) { return _mm_load_si128(reinterpret_cast<const __m128i*>(q + 16 * i)); };
  const __m512i lo = _mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(at(0)), at(1), 1));
  return _mm512_inserti64x4(lo, _mm256_inserti128_si256(_mm256_castsi128_si256(at(2)), at(3), 1), 1);
}

// Lanes 4r..4r+3 (the 16 weights of run r) get scale[r], r < 4.
inline __m512 lane_scales(const float* scale) {
  __m512 v = _mm512_set1_ps(scale[0]);
  v = _mm512_mask_mov_ps(v, 0x00F0, _mm512_set1_ps(scale[1]));
  v = _mm512_mask_mov_ps(v, 0x0F00, _mm512_set1_ps(scale[2]));
  return _mm512_mask_mov_ps(v, 0xF000, _mm512_set1_ps(scale[3]));
}

// Lanes 0..7 (the first 32 of 64 values) get s[0], lanes 8..15 s[1].
inline __m512 pair(__m512i halves, const float* s) {
  double two;
  std::memcpy(&two, s, 8);
  return _mm512_permutexvar_ps(halves, _mm512_castpd_ps(_mm512_set1_pd(two)));
}

template <class U, int M>
void dot_tile(const Acts& a, const U& src, std::size_t j0, std::size_t j1, float* y, std::size_t ldy) {
  constexpr std::size_t G = U::kBlock >= 64 ? U::kBlock : 64;  // weights unpacked at once
  constexpr std::size_t kPer = G / U::kBlock, kRuns = G / 16;
  constexpr __mmask16 kRunMask = static_cast<__mmask16>((1u << kRuns) - 1);
  using Regs = RegisterUnpack<U>;
  const std::size_t k = a.k, groups = k / G;
  alignas(64) std::int8_t q[G];
  alignas(64) float scale[kRuns], offset[kRuns];
  const __m512i k128 = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  for (std::size_t j = j0; j < j1; ++j) {
    const auto row = src.row(j);
    __m512 acc[M], off[M];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) acc[i] = off[i] = _mm512_setzero_ps();
    for (std::size_t g = 0; g < groups; ++g) {
      __m512i regs[G / 64];
      __m512 reg_scales[G / 64], reg_offsets = _mm512_setzero_ps();
      if constexpr (Regs::kOn) {
        // The weights stream from memory once per tile; ask for them a few
        // groups ahead (a row follows the row before it, so past its end
        // is the next row's start).
        _mm_prefetch(reinterpret_cast<const char*>(Regs::at(row, g)) + kPrefetchAhead, _MM_HINT_T0);
        Regs::group(row, g, regs, reg_scales, reg_offsets);
      } else {
        // The same for the stack path's ggml blocks: Q8_0's decode on the
        // H200 machine's Xeon went from 17.5 to 23.6 tokens/s at 4 threads
        // with it when Q8_0 took this path
        // (bench/results/2026-12-02-gguf-registers-vs-llama-cpp.md).
        if constexpr (requires { U::kBytes; }) {
          _mm_prefetch(reinterpret_cast<const char*>(row) + g * kPer * U::kBytes + kPrefetchAhead, _MM_HINT_T0);
        }
#pragma GCC unroll 2
        for (std::size_t t = 0; t < kPer; ++t) {
          U::unpack(row, g * kPer + t, q + t * U::kBlock, scale + t * (U::kBlock / 16),
                    offset + t * (U::kBlock / 16));
        }
      }
#pragma GCC unroll 4
      for (std::size_t c = 0; c < G / 64; ++c) {
        const std::size_t p = g * G + c * 64;
        __m512i wq;
        __m512 ws;
        if constexpr (Regs::kOn) {
          wq = regs[c];
          ws = reg_scales[c];
        } else {
          wq = load64(q + c * 64);
          ws = lane_scales(scale + 4 * c);
        }
        if constexpr (M == 1 && U::kNonNegative) {
          // Decode, quants never negative (U::kNonNegative: Q4_1, Q5_1, Q2_K,
          // Q4_K, Q5_K, MLX's 4-bit): they are vpdpbusd's unsigned side
          // as they are, against the activations made signed again (one
          // xor), so no correction (a vpdpbusd and a subtraction) is needed.
          const __m512i x = _mm512_xor_si512(_mm512_loadu_si512(a.u + p), k128);
          const __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, x);
          acc[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(ws, pair(halves, a.scale + p / 32)), acc[0]);
        } else {
          const __m512i start =
              _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), k128, wq));
#pragma GCC unroll 8
          for (int i = 0; i < M; ++i) {
            const __m512i d = _mm512_dpbusd_epi32(start, _mm512_loadu_si512(a.u + i * k + p), wq);
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d),
                                     _mm512_mul_ps(ws, pair(halves, a.scale + (i * k + p) / 32)), acc[i]);
          }
        }
      }
      if constexpr (U::kOffset) {
        __m512 ov;
        if constexpr (Regs::kOn) {
          ov = reg_offsets;
        } else {
          ov = _mm512_maskz_loadu_ps(kRunMask, offset);
        }
#pragma GCC unroll 8
        for (int i = 0; i < M; ++i) {
          off[i] = _mm512_fmadd_ps(ov, _mm512_maskz_loadu_ps(kRunMask, a.sum + (i * k) / 16 + g * kRuns), off[i]);
        }
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) y[i * ldy + j] = _mm512_reduce_add_ps(_mm512_add_ps(acc[i], off[i]));
  }
}

// Decode (one x row) of the K-quants whose groups unpack in registers
// (Q4_K, Q6_K: what Q4_K_M files are made of), R weight rows at a time, rows
// j + r * stride: as decode_rows does for Q8_0 and Q4_0 (quant_dot_signed.inc),
// a task's rows split into R runs, each a stream of its own from memory, so
// one core has R times the lines in flight of dot_tile's one row at a time;
// each 256 activations are loaded and made signed once for the R rows. Every
// line of a group is prefetched `ahead` bytes on (dot_tile asks for one line
// per group: less than half of a Q4_K group's 144 bytes). The sums are
// dot_tile<U, 1>'s, in the same order, so the values are bit for bit the same.
// On the 2-core Xeon VM (AVX-512, no AMX; bench/results/2026-12-03-decode-
// bandwidth-dev.md, medians of 4 alternated rounds) one thread's decode of
// the 1.1B shape went from 10.6 to 15.6 tokens/s for Q4_K_M and from 7.2 to
// 12.5 for Q6_K with 4 streams (1 stream, every line prefetched: 11.7 / 8.9;
// 2 streams: 15.1 / 12.0; 2048 bytes ahead instead of 1024: 15.5 / 12.4).
constexpr int kKquantStreams = 4;

template <class U>
constexpr bool kquant_streams() {
  if constexpr (requires { U::kBytes; }) {
    return RegisterUnpack<U>::kOn && U::kBlock == 256;
  } else {
    return false;
  }
}

template <class U, int R>
void decode_kquant_rows(const Acts& a, const U& src, std::size_t j, std::size_t stride, float* y, std::size_t ahead) {
  using Regs = RegisterUnpack<U>;
  constexpr std::size_t G = 256, kRuns = G / 16;
  constexpr __mmask16 kRunMask = static_cast<__mmask16>((1u << kRuns) - 1);
  const std::size_t groups = a.k / G;
  const __m512i k128 = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  const std::uint8_t* row[R];
  __m512 acc[R], off[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    row[r] = src.row(j + r * stride);
    acc[r] = off[r] = _mm512_setzero_ps();
  }
  for (std::size_t g = 0; g < groups; ++g) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const char* at = reinterpret_cast<const char*>(Regs::at(row[r], g));
      if (ahead != 0) {
#pragma GCC unroll 4
        for (std::size_t line = 0; line < U::kBytes; line += 64) _mm_prefetch(at + ahead + line, _MM_HINT_T0);
      }
      __m512i regs[4];
      __m512 reg_scales[4], reg_offsets = _mm512_setzero_ps();
      Regs::group(row[r], g, regs, reg_scales, reg_offsets);
#pragma GCC unroll 4
      for (std::size_t c = 0; c < 4; ++c) {
        const std::size_t p = g * G + c * 64;
        const __m512 xs = pair(halves, a.scale + p / 32);
        __m512i d;
        if constexpr (U::kNonNegative) {
          d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), regs[c], _mm512_xor_si512(_mm512_loadu_si512(a.u + p), k128));
        } else {
          const __m512i start =
              _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), k128, regs[c]));
          d = _mm512_dpbusd_epi32(start, _mm512_loadu_si512(a.u + p), regs[c]);
        }
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(reg_scales[c], xs), acc[r]);
      }
      if constexpr (U::kOffset) {
        off[r] = _mm512_fmadd_ps(reg_offsets, _mm512_maskz_loadu_ps(kRunMask, a.sum + g * kRuns), off[r]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) y[j + r * stride] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r], off[r]));
}

template <class U>
void dot_rows(const Acts& a, std::size_t rows, const U& src, std::size_t j0, std::size_t j1, float* y,
              std::size_t ldy) {
  const auto at = [&](std::size_t i) { return a.from_row(i); };
  if constexpr (kquant_streams<U>()) {
    if (rows == 1) {
      const std::size_t run = (j1 - j0) / kKquantStreams;
      for (std::size_t t = 0; t < run; ++t) {
        decode_kquant_rows<U, kKquantStreams>(a, src, j0 + t, run, y, kPrefetchAhead);
      }
      for (std::size_t j = j0 + kKquantStreams * run; j < j1; ++j) decode_kquant_rows<U, 1>(a, src, j, 0, y, kPrefetchAhead);
      return;
    }
  }
  std::size_t i = 0;
  for (; i + kMaxRows <= rows; i += kMaxRows) dot_tile<U, kMaxRows>(at(i), src, j0, j1, y + i * ldy, ldy);
  for (; i + 4 <= rows; i += 4) dot_tile<U, 4>(at(i), src, j0, j1, y + i * ldy, ldy);
  for (; i + 2 <= rows; i += 2) dot_tile<U, 2>(at(i), src, j0, j1, y + i * ldy, ldy);
  for (; i < rows; ++i) dot_tile<U, 1>(at(i), src, j0, j1, y + i * ldy, ldy);
}

#include "lm/kernels/quant_dot_panel.inc"

}  // namespace

void quant_dot_avx512vnni(const QuantCall& c, void* workspace) {
  const QuantDotLayout layout = quant_dot_layout(c.k, c.m);
  auto* base = static_cast<std::uint8_t*>(workspace);
  std::uint8_t* u = base;
  auto* scale = reinterpret_cast<float*>(base + layout.scale_at);
  auto* sum = reinterpret_cast<float*>(base + layout.sum_at);
  // Where the x rows make one tile (decode), about four tasks per thread:
  // each thread then reads a few long runs of the weights (which the
  // hardware prefetchers follow) rather than many short ones, and the last
  // tasks still even out the threads. With more x rows a task's weights are
  // read once per tile, so they stay kRowsPerTask rows (which stay in L2).
  const std::size_t quarter = (c.n + 4 * static_cast<std::size_t>(threads()) - 1) / (4 * threads());
  const std::size_t per_task = c.m > static_cast<std::size_t>(kMaxRows)
                                   ? kRowsPerTask
                                   : std::max(kRowsPerTask, (quarter + kRowsPerTask - 1) / kRowsPerTask * kRowsPerTask);
  const std::size_t tasks = (c.n + per_task - 1) / per_task;
  with_rows(c, [&]<class U>(const U& src) {
    for (std::size_t i0 = 0; i0 < c.m; i0 += kQuantDotRowsPerPass) {
      const std::size_t rows = std::min(kQuantDotRowsPerPass, c.m - i0);
      float* y = c.y + i0 * c.n;
      const auto quantize_pass = [&] {
        parallel_for(rows, [&](std::size_t i) {
          quantize_rows(c.x + (i0 + i) * c.k, 1, c.k, u + i * c.k, scale + i * c.k / 32, sum + i * c.k / 16);
        });
      };
      if (rows >= kPanelMinRows) {
        // Prefill, every type: quant_dot_panel.inc.
        quantize_pass();
        panel_pass<U>(Acts{u, scale, sum, c.k}, rows, src, c.n, y, c.n);
      } else if constexpr (SignedUnpack<U>::kOn) {
        // Q8_0 and Q4_0: quant_dot_signed.inc.
        auto* corr = reinterpret_cast<std::int32_t*>(base + layout.corr_at);
        if (rows == 1) {
          quantize_signed<false>(c.x + i0 * c.k, c.k, SignedUnpack<U>::kBias, u, corr, scale);
          if constexpr (paired<SignedUnpack<U>>()) pair_activations(c.k, u, corr);
        } else {
          parallel_for(rows, [&](std::size_t i) {
            quantize_signed<true>(c.x + (i0 + i) * c.k, c.k, 0, u + i * c.k, nullptr, scale + i * c.k / 32);
          });
        }
        const SignedActs a{u, corr, scale, c.k};
        parallel_for(tasks, [&](std::size_t t) {
          const std::size_t j0 = t * per_task, j1 = std::min(c.n, j0 + per_task);
          signed_rows<U>(a, rows, src, j0, j1, y, c.n);
        });
      } else {
        if (rows == 1) {
          quantize_rows(c.x + i0 * c.k, 1, c.k, u, scale, sum);
        } else {
          quantize_pass();
        }
        const Acts a{u, scale, sum, c.k};
        parallel_for(tasks, [&](std::size_t t) {
          const std::size_t j0 = t * per_task, j1 = std::min(c.n, j0 + per_task);
          dot_rows<U>(a, rows, src, j0, j1, y, c.n);
        });
      }
    }
  });
}

}  // namespace nuvec::lm::kernels::detail

#include "lm/kernels/isa_target_end.inc"
