// linear() for bf16 weights on CPUs with AVX512_BF16 (Cooper Lake, Sapphire
// Rapids, Zen 4): the activations are rounded to bf16 while they are packed
// and multiplied with vdpbf16ps, which multiplies pairs of bf16 and adds
// both products to an f32 lane: 32 multiply-adds per instruction, twice what
// f32 FMA does. Everything else (few rows, Precision::exact, f32 and f16
// weights) is linear_avx512().
#define NUVEC_ISA_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16"
#include "lm/kernels/linear_isa_begin.inc"

#include "lm/kernels/avx512_transpose.inc"
#include "lm/kernels/linear_simd.inc"

namespace nuvec::lm::kernels::detail {
namespace {

__mmask16 first16(std::size_t n) { return static_cast<__mmask16>((1u << n) - 1); }
__mmask32 first32(std::size_t n) { return n >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << n) - 1); }

// x rows as bf16 [MR][KC] (k padded with a zero to an even count); W columns
// as bf16 pairs [KC/2][NR][2]: lane j of a B vector holds w[j][p], w[j][p+1].
// The micro-kernel broadcasts x's pair (x[i][p], x[i][p+1]) to all lanes and
// vdpbf16ps adds x[i][p]*w[j][p] + x[i][p+1]*w[j][p+1] to lane j.
// The blocking is linear_blocking.h's, NR whole vectors of 16 lanes.
template <GemmBlocking B>
struct Bf16Kernel {
  static constexpr GemmBlocking kBlocking = B;
  static constexpr std::size_t MR = B.mr, NR = B.nr, NV = B.nr / 16, KC = B.kc, MC = B.mc, NB = B.nb, NC = B.nc;
  static_assert(NR % 16 == 0 && KC % 2 == 0 && MC % MR == 0 && NB % NR == 0 && NC % NR == 0);
  static_assert(B.a_elem == sizeof(std::uint16_t) && B.b_elem == sizeof(std::uint16_t));
  using AElem = std::uint16_t;
  using BElem = std::uint16_t;
  static constexpr std::size_t kAPanelBytes = B.a_panel_bytes();
  static constexpr std::size_t kBPanelBytes = B.b_panel_bytes();

  static void pack_a(const float* x, std::size_t ldx, std::size_t rows, std::size_t kl, std::uint16_t* dst) {
    const std::size_t padded = round_up(kl, 2);
    for (std::size_t r = 0; r < MR; ++r) {
      std::uint16_t* out = dst + r * KC;
      if (r >= rows) {
        std::memset(out, 0, padded * sizeof(std::uint16_t));
        continue;
      }
      const float* in = x + r * ldx;
      std::size_t p = 0;
      for (; p + 32 <= kl; p += 32) {
        const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(in + p + 16), _mm512_loadu_ps(in + p));
        _mm512_storeu_si512(out + p, (__m512i)v);
      }
      if (p < kl) {
        const std::size_t rest = kl - p;
        const __m512 lo = _mm512_maskz_loadu_ps(first16(std::min<std::size_t>(rest, 16)), in + p);
        const __m512 hi = rest > 16 ? _mm512_maskz_loadu_ps(first16(rest - 16), in + p + 16) : _mm512_setzero_ps();
        const __m512bh v = _mm512_cvtne2ps_pbh(hi, lo);
        _mm512_mask_storeu_epi16(out + p, first32(padded - p), (__m512i)v);
      }
    }
  }

  // Packs `cols` (<= NR) rows of W, k slice of kl, as pairs: 16 rows x 16
  // pairs per load-transpose-store round. Rows past `cols` and the pair
  // partner of an odd k's last element are zeros.
  template <WeightType T>
  static void pack_b(const std::uint16_t* w, std::size_t ldw, std::size_t cols, std::size_t kl, std::uint16_t* dst) {
    static_assert(T == WeightType::bf16);
    auto* pairs = reinterpret_cast<std::uint32_t*>(dst);
    const std::size_t all = ceil_div(kl, 2);
    for (std::size_t g = 0; g < NR; g += 16) {
      for (std::size_t q0 = 0; q0 < all; q0 += 16) {
        const __mmask32 load = first32(std::min<std::size_t>(kl - 2 * q0, 32));
        __m512i r[16];
#pragma GCC unroll 16
        for (std::size_t c = 0; c < 16; ++c)
          r[c] = g + c < cols ? _mm512_maskz_loadu_epi16(load, w + (g + c) * ldw + 2 * q0) : _mm512_setzero_si512();
        transpose16x16(r);
        const std::size_t count = std::min<std::size_t>(all - q0, 16);
        for (std::size_t q = 0; q < count; ++q) _mm512_storeu_si512(pairs + (q0 + q) * NR + g, r[q]);
      }
    }
  }

  static void micro(const std::uint16_t* a, const std::uint16_t* b, std::size_t kl, float* c, std::size_t ldc,
                    bool accumulate, std::size_t rows, std::size_t cols) {
    // The C tile is read (accumulate) or written after the k loop; ask for
    // its lines now so that they arrive while the loop runs. Without this,
    // the 24 line misses at the end (rows n floats apart, in L3 or memory)
    // stall the stores: -25% at m = 512, n = 2048.
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t l = 0; l < NR; l += 16) _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + l), _MM_HINT_T0);
    __m512 acc[MR][NV];
#pragma GCC unroll 32
    for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 8
      for (std::size_t v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
    const std::size_t pairs = ceil_div(kl, 2);
    for (std::size_t q = 0; q < pairs; ++q) {
      __m512bh bv[NV];
#pragma GCC unroll 8
      for (std::size_t v = 0; v < NV; ++v) {
        bv[v] = (__m512bh)_mm512_loadu_si512(b + (q * NR + v * 16) * 2);
      }
#pragma GCC unroll 32
      for (std::size_t i = 0; i < MR; ++i) {
        std::int32_t pair;
        std::memcpy(&pair, a + i * KC + 2 * q, 4);
        const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 8
        for (std::size_t v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], av, bv[v]);
      }
    }
    if (rows == MR && cols == NR) {
#pragma GCC unroll 32
      for (std::size_t i = 0; i < MR; ++i)
#pragma GCC unroll 8
        for (std::size_t v = 0; v < NV; ++v) {
          float* out = c + i * ldc + v * 16;
          _mm512_storeu_ps(out, accumulate ? _mm512_add_ps(_mm512_loadu_ps(out), acc[i][v]) : acc[i][v]);
        }
      return;
    }
    alignas(64) float tile[MR][NR];
    for (std::size_t i = 0; i < MR; ++i)
      for (std::size_t v = 0; v < NV; ++v) _mm512_store_ps(&tile[i][v * 16], acc[i][v]);
    store_partial_tile<MR, NR>(tile, c, ldc, accumulate, rows, cols);
  }
};

using Bf16Gemm = Bf16Kernel<kAvx512Bf16Gemm>;  // linear_blocking.h says why this blocking

}  // namespace

void linear_avx512bf16(const LinearCall& call) {
  if (call.type == WeightType::bf16 && call.precision == Precision::fast && call.m > kStreamingRows) {
    gemm<Bf16Gemm, WeightType::bf16>(call);
    return;
  }
  linear_avx512(call);
}

}  // namespace nuvec::lm::kernels::detail

#include "lm/kernels/isa_target_end.inc"
