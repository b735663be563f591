// Attention tiles on the AMX tile unit, for prefill (attention::attend() takes
// it for chunks of at least kQueryRows rows, head dimensions that are a
// multiple of 32, and not with exact numbers asked for). Long prompts
// without grouped queries spend most of their time here: each query row
// meets every earlier key, so the products grow with the square of the
// prompt while the weights' do not.
//
// Per task (one key/value head, one tile of query rows, as attention.cc
// splits them) and tile of 64 keys: the keys and values are rounded to bf16
// and laid out as B tiles (pairs of the summed dimension interleaved) in the
// thread's scratch; then, 16 query vectors at a time, the scores Q·Kᵀ (four
// 16 x 16 tiles, the head dimension summed in steps of 32) are stored to f32,
// folded into the running softmax by attention_tile.inc's AVX-512 code
// (exp, maximum, sum, the masks), the probabilities rounded to bf16 as two A
// tiles of 32 keys, and P·V (16 dimensions per C tile) added to the running
// weighted sums, which stay f32 in the scratch. Keys past the last position
// any row of the task sees are zero in the tiles (the cache may hold
// anything there, NaN included, and 0 · NaN would spoil a sum).
//
// Numbers: q (scaled), the keys, the values and the probabilities are
// rounded to bf16 to nearest even; the products are exact and summed in f32,
// as in bf16 linear(). Elsewhere (decode, --exact) attention is f32
// throughout (attention_avx512.cc).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "lm/attention_kernels.h"

#define NUVEC_ISA_TARGET "avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile,amx-bf16"
#include "lm/kernels/isa_target_begin.inc"

#include "lm/kernels/amx_tiles.inc"

#if defined(__GNUC__) && !defined(__clang__)
// Buffers written by tilestored (inline assembly with a memory clobber)
// look uninitialised to GCC; GCC 12 also warns inside its own intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define NUVEC_LANES 16
namespace nuvec::lm::attention::detail {
#include "lm/attention_tile.inc"

namespace {

using kernels::detail::HardwareTiles;
using kernels::detail::SoftwareTiles;

constexpr std::size_t kTileWords = 256;  // 32-bit words of one 1 KiB tile
constexpr std::size_t kGroup = 16;       // query vectors, keys or dimensions per tile row/column

__mmask16 first16(std::size_t n) { return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1); }

// 16 words: the low half of word j is a[j] as bf16, the high half b[j].
inline __m512i pairs(__m512 a, __m512 b) {
  const __m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(a));
  const __m512i hi = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(b));
  return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

// The tile's keys as B tiles of the scores: tile (c, d), c a group of 16
// keys, d a step of 32 dimensions, row q, word j = (K[16c + j][32d + 2q],
// K[16c + j][32d + 2q + 1]). Keys from `valid` on are zero.
void pack_keys(const float* keys_t, std::size_t stride, std::size_t hd, std::size_t valid, std::uint32_t* kt) {
  const std::size_t steps = hd / 32;
  for (std::size_t c = 0; c < kKeys / kGroup; ++c) {
    const __mmask16 mask = first16(valid > c * kGroup ? valid - c * kGroup : 0);
    for (std::size_t d = 0; d < steps; ++d) {
      std::uint32_t* tile = kt + (c * steps + d) * kTileWords;
      for (std::size_t q = 0; q < 16; ++q) {
        const float* row = keys_t + (32 * d + 2 * q) * stride + c * kGroup;
        _mm512_storeu_si512(tile + 16 * q,
                            pairs(_mm512_maskz_loadu_ps(mask, row), _mm512_maskz_loadu_ps(mask, row + stride)));
      }
    }
  }
}

// The tile's values as B tiles of P·V: tile (t, c), t a step of 32 keys, c a
// group of 16 dimensions, row q, word j = (V[32t + 2q][16c + j], V[32t + 2q +
// 1][16c + j]). Keys from `valid` on are zero (and not read).
void pack_values(const float* values, std::size_t hd, std::size_t valid, std::uint32_t* vt) {
  const std::size_t blocks = hd / kGroup;
  for (std::size_t t = 0; t < kKeys / 32; ++t) {
    for (std::size_t c = 0; c < blocks; ++c) {
      std::uint32_t* tile = vt + (t * blocks + c) * kTileWords;
      for (std::size_t q = 0; q < 16; ++q) {
        const std::size_t j0 = 32 * t + 2 * q;
        const __m512 a = j0 < valid ? _mm512_loadu_ps(values + j0 * hd + c * kGroup) : _mm512_setzero_ps();
        const __m512 b = j0 + 1 < valid ? _mm512_loadu_ps(values + (j0 + 1) * hd + c * kGroup) : _mm512_setzero_ps();
        _mm512_storeu_si512(tile + 16 * q, pairs(a, b));
      }
    }
  }
}

// The four score tiles of 16 query vectors (A: rows of qb, `steps` steps of
// 32 dimensions, row stride hd bf16) against the packed keys, stored f32 into
// scores (row stride kKeys).
template <class Tiles>
void score_tiles(const std::uint16_t* qb, std::size_t hd, const std::uint32_t* kt, float* scores) {
  const std::size_t steps = hd / 32;
  Tiles::template zero<0>();
  Tiles::template zero<1>();
  Tiles::template zero<2>();
  Tiles::template zero<3>();
  for (std::size_t d = 0; d < steps; ++d) {
    Tiles::template load<4>(qb + 32 * d, hd * 2);
    Tiles::template load<5>(kt + (0 * steps + d) * kTileWords, 64);
    Tiles::template load<6>(kt + (1 * steps + d) * kTileWords, 64);
    Tiles::template dot<0, 4, 5>();
    Tiles::template load<7>(kt + (2 * steps + d) * kTileWords, 64);
    Tiles::template dot<1, 4, 6>();
    Tiles::template load<5>(kt + (3 * steps + d) * kTileWords, 64);
    Tiles::template dot<2, 4, 7>();
    Tiles::template dot<3, 4, 5>();
  }
  Tiles::template store<0>(scores, kKeys * 4);
  Tiles::template store<1>(scores + 16, kKeys * 4);
  Tiles::template store<2>(scores + 32, kKeys * 4);
  Tiles::template store<3>(scores + 48, kKeys * 4);
}

template <class Tiles, int T>
void value_tile(std::size_t c, std::size_t blocks, const std::uint32_t* vt, const std::uint16_t* pb, float* pv,
                std::size_t hd) {
  Tiles::template zero<T>();
  for (std::size_t t = 0; t < kKeys / 32; ++t) {
    Tiles::template load<4>(pb + t * 512, 64);
    Tiles::template load<5>(vt + (t * blocks + c) * kTileWords, 64);
    Tiles::template dot<T, 4, 5>();
  }
  Tiles::template store<T>(pv + c * kGroup, hd * 4);
}

// pv[16][hd] = P · V: P as two A tiles of 32 keys (pb), the packed values.
template <class Tiles>
void value_tiles(const std::uint16_t* pb, const std::uint32_t* vt, std::size_t hd, float* pv) {
  const std::size_t blocks = hd / kGroup;
  for (std::size_t c = 0; c < blocks; c += 2) {
    value_tile<Tiles, 0>(c, blocks, vt, pb, pv, hd);
    if (c + 1 < blocks) value_tile<Tiles, 1>(c + 1, blocks, vt, pb, pv, hd);
  }
}

template <class Tiles>
void attend_tile_tiles(const TileTask& t) {
  const std::size_t hd = t.head_dim, group = t.group;
  const std::size_t vectors = (t.r1 - t.r0) * group;
  // attend_tile()'s layout first (scratch_floats() counts both).
  float* q = t.scratch;
  float* scores = q + t.max_vectors * hd;
  float* acc = scores + t.max_vectors * kKeys;
  float* run_max = acc + t.max_vectors * hd;
  float* run_sum = run_max + t.max_vectors;
  float* correction = run_sum + t.max_vectors;
  std::uint32_t* begins = reinterpret_cast<std::uint32_t*>(correction + t.max_vectors);
  std::uint32_t* ends = begins + t.max_vectors;
  auto* qb = reinterpret_cast<std::uint16_t*>(ends + t.max_vectors);  // [max_vectors][hd] bf16
  std::uint32_t* kt = reinterpret_cast<std::uint32_t*>(qb + t.max_vectors * hd);  // 32 * hd words
  std::uint32_t* vt = kt + 32 * hd;                                              // 32 * hd words
  auto* pb = reinterpret_cast<std::uint16_t*>(vt + 32 * hd);                   // 2 A tiles
  float* pv = reinterpret_cast<float*>(pb + 1024);                              // [16][hd]

  for (std::size_t r = t.r0; r < t.r1; ++r) {
    for (std::size_t h = 0; h < group; ++h) {
      const std::size_t a = (r - t.r0) * group + h;
      const float* src = t.q + r * t.q_stride + (t.g * group + h) * hd;
      for (std::size_t d = 0; d < hd; d += 32) {
        const __m512 lo = _mm512_loadu_ps(src + d) * _mm512_set1_ps(t.scale);
        const __m512 hi = _mm512_loadu_ps(src + d + 16) * _mm512_set1_ps(t.scale);
        _mm512_storeu_si512(qb + a * hd + d, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
      }
      std::fill(acc + a * hd, acc + (a + 1) * hd, 0.0f);
      run_max[a] = -std::numeric_limits<float>::infinity();
      run_sum[a] = 0;
    }
  }
  // Rows of the last group of 16 past `vectors` are multiplied too (their
  // scores are never read): give them zeros rather than stale bits.
  const std::size_t padded = std::min(t.max_vectors, (vectors + kGroup - 1) / kGroup * kGroup);
  std::fill(qb + vectors * hd, qb + padded * hd, std::uint16_t{0});

  Tiles::configure();
  const std::size_t highest = t.first + t.r1 - 1;
  const std::size_t lowest = t.window == 0 || t.first + t.r0 < t.window ? 0 : t.first + t.r0 + 1 - t.window;
  for (std::size_t k0 = lowest - lowest % kKeys; k0 <= highest; k0 += kKeys) {
    const std::size_t valid = std::min<std::size_t>(kKeys, highest + 1 - k0);
    pack_keys(t.keys_t + k0, t.key_stride, hd, valid, kt);
    pack_values(t.values + k0 * hd, hd, valid, vt);
    for (std::size_t r = t.r0; r < t.r1; ++r) {
      const std::size_t position = t.first + r;
      const std::size_t end = position + 1 > k0 ? std::min<std::size_t>(kKeys, position + 1 - k0) : 0;
      std::size_t begin = 0;
      if (t.window != 0 && position + 1 > t.window) {
        const std::size_t oldest = position + 1 - t.window;
        begin = oldest > k0 ? std::min<std::size_t>(kKeys, oldest - k0) : 0;
      }
      for (std::size_t h = 0; h < group; ++h) {
        const std::size_t v = (r - t.r0) * group + h;
        begins[v] = static_cast<std::uint32_t>(begin);
        ends[v] = static_cast<std::uint32_t>(std::max(begin, end));
      }
    }
    for (std::size_t v0 = 0; v0 < vectors; v0 += kGroup) {
      const std::size_t count = std::min(kGroup, vectors - v0);
      score_tiles<Tiles>(qb + v0 * hd, hd, kt, scores + v0 * kKeys);
      for (std::size_t i = 0; i < kGroup; ++i) {
        const std::size_t v = v0 + i;
        if (i < count) correction[v] = fold_scores(scores + v * kKeys, begins[v], ends[v], run_max[v], run_sum[v]);
        for (std::size_t half = 0; half < 2; ++half) {
          const __m512i p = i < count ? (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(scores + v * kKeys + 32 * half + 16),
                                                                     _mm512_loadu_ps(scores + v * kKeys + 32 * half))
                                      : _mm512_setzero_si512();
          _mm512_storeu_si512(pb + half * 512 + i * 32, p);
        }
      }
      value_tiles<Tiles>(pb, vt, hd, pv);
      for (std::size_t i = 0; i < count; ++i) {
        float* out = acc + (v0 + i) * hd;
        const __m512 f = _mm512_set1_ps(correction[v0 + i]);
        for (std::size_t d = 0; d < hd; d += 16)
          _mm512_storeu_ps(out + d, _mm512_fmadd_ps(_mm512_loadu_ps(out + d), f, _mm512_loadu_ps(pv + i * hd + d)));
      }
    }
  }
  Tiles::release();

  for (std::size_t r = t.r0; r < t.r1; ++r) {
    for (std::size_t h = 0; h < group; ++h) {
      const std::size_t a = (r - t.r0) * group + h;
      float* dst = t.out + r * t.q_stride + (t.g * group + h) * hd;
      const float inv = 1.0f / run_sum[a];
      for (std::size_t d = 0; d < hd; ++d) dst[d] = acc[a * hd + d] * inv;
    }
  }
}

}  // namespace

void attend_tile_amx(const TileTask& task) {
  if (task.head_dim % 32 != 0) return attend_tile(task);
  attend_tile_tiles<HardwareTiles>(task);
}

void attend_tile_amx_software(const TileTask& task) {
  if (task.head_dim % 32 != 0) return attend_tile(task);
  attend_tile_tiles<SoftwareTiles>(task);
}

}  // namespace nuvec::lm::attention::detail

#include "lm/kernels/isa_target_end.inc"
