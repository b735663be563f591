// linear() for bf16 weights on CPUs with AMX (Sapphire Rapids and later
// Xeons): prompt-sized products on the tile unit, which multiplies a 16 x 32
// bf16 tile by a 32 x 16 one into a 16 x 16 f32 tile in one instruction
// (tdpbf16ps: 16 times the multiply-adds of one vdpbf16ps).
//
// Operands. The product is computed transposed, yᵀ = W · xᵀ, so that W is
// the instruction's A operand, whose layout is plain rows (16 rows of 32
// bf16): a tile of W is 16 row segments of 64 bytes, taken as they are.
// The activations take the B operand's layout (pairs of k interleaved
// across 16 rows of x) while they are rounded to bf16, packed once per block
// of rows. Each 16 x 16 result tile is yᵀ; it is transposed in AVX-512
// registers on its way to y. A micro-block is 32 outputs by 32 rows of x
// (2 x 2 C tiles, two A and two B tiles: all 8 tile registers), summed over
// the whole of k inside the tiles and written once.
//
// Why W is packed (AmxBlocking::pack_w, the default): straight from W's rows
// a tile's 16 rows lie k * 2 bytes apart, 4 KiB at k = 2048, so all 16 land
// in one set of the 12-way L1 (and in 16 pages): the strip cannot stay in
// L1 and every tile load goes to L2 or beyond. So a chunk of W's outputs
// (as many as fit in 4 MiB, all of k) is first copied, by all threads, into
// contiguous 1 KiB tiles in the workspace, zero-padded at the edges; the
// tasks then read only packed tiles. The chunk is scratch: the next chunk
// overwrites it, and W itself is never copied whole.
//
// Blocking. A task runs a panel of `panel_strips` strips of 32 outputs
// against a group of x blocks, x block by x block: the panel (at most about
// 1 MiB) stays in L2 across the group, each x block's tiles come from L3 once
// and then serve every strip of the panel from L2. With `prefetch`, the
// tiles of the step after next are asked into L1 while the current step
// multiplies (1: the x tiles; 2: the W tiles too).
//
// Workspace: the packed block of x (at most 4 MiB, for k up to 65536; 64 * k
// bytes beyond) and the packed chunk of W (at most 4 MiB; 32 outputs' worth,
// 64 * k bytes, beyond k = 65536), or what linear_avx512() needs for the other
// calls if that is more (Precision::exact shares the session's buffer).
// Nothing per thread, nothing that grows with n. Numbers: as
// linear_avx512bf16()'s fast path (x rounded to bf16 to nearest even,
// products exact, sums in f32), in the same order whatever the blocking;
// Precision::exact, few rows and other weight types are linear_avx512bf16()'s.
#include <new>

#define NUVEC_ISA_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile,amx-bf16"
#include "lm/kernels/linear_isa_begin.inc"

#include "lm/kernels/amx_tiles.inc"
#include "lm/kernels/avx512_transpose.inc"

#if defined(__GNUC__) && !defined(__clang__)
// The buffer a C tile is stored into is written by tilestored, inline
// assembly that GCC's analysis does not see into (it has a memory clobber).
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace nuvec::lm::kernels::detail {
namespace {

constexpr std::size_t kTile = 16;          // rows of a tile; f32 or bf16 pairs per row
constexpr std::size_t kStep = 32;          // bf16 of k per A tile row
constexpr std::size_t kBlock = 32;         // outputs and rows of x per micro-block
constexpr std::size_t kTileWords = 256;    // 32-bit words of one 1 KiB tile
constexpr std::size_t kTileBytes = 1024;
constexpr std::size_t kXBlockBytes = std::size_t{4} << 20;  // bound of the packed x block
constexpr std::size_t kWChunkBytes = std::size_t{4} << 20;  // bound of the packed chunk of W
constexpr std::size_t kPanelBytes = std::size_t{1} << 20;   // what an automatic panel keeps in L2
constexpr std::size_t kMaxPanelStrips = 8;
constexpr std::size_t kPrefetchSteps = 2;  // how far ahead `prefetch` asks for tiles

std::size_t steps_of(std::size_t k) { return (k + kStep - 1) / kStep; }
std::size_t up(std::size_t a, std::size_t b) { return (a + b - 1) / b * b; }
std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Rows (of x) or outputs (of W) per packed block: as many as keep `per_row`
// bytes each within `bound`, in whole micro-blocks, at least one, at most
// what there is.
std::size_t rows_within(std::size_t count, std::size_t per_row, std::size_t bound) {
  const std::size_t fit = std::max<std::size_t>(kBlock, bound / per_row / kBlock * kBlock);
  return std::min(up(count, kBlock), fit);
}
std::size_t block_rows(std::size_t m, std::size_t k) { return rows_within(m, steps_of(k) * kStep * 2, kXBlockBytes); }
std::size_t chunk_outputs(std::size_t n, std::size_t k) {
  return rows_within(n, steps_of(k) * kStep * 2, kWChunkBytes);
}
std::size_t panel_strips(std::size_t k, AmxBlocking b) {
  if (b.panel_strips != 0) return b.panel_strips;
  const std::size_t strip = kBlock * steps_of(k) * kStep * 2;
  return std::clamp<std::size_t>(kPanelBytes / strip, 1, kMaxPanelStrips);
}

__mmask16 first16(std::size_t n) { return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1); }
__mmask32 first32(std::size_t n) { return n >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << n) - 1); }

// Packs rows [0, rows) of x (row stride k; rows <= 16, the rest zeros) into
// B tiles, one per step of 32 k: tile s holds at word [q][i] the pair
// (x[i][32s + 2q], x[i][32s + 2q + 1]) rounded to bf16, zeros past k.
void pack_x_tiles(const float* x, std::size_t k, std::size_t rows, std::uint32_t* dst) {
  const std::size_t steps = steps_of(k);
  for (std::size_t s = 0; s < steps; ++s) {
    const std::size_t p = s * kStep;
    const std::size_t left = k - p;
    __m512i r[16];
#pragma GCC unroll 16
    for (std::size_t i = 0; i < 16; ++i) {
      if (i >= rows) {
        r[i] = _mm512_setzero_si512();
        continue;
      }
      const float* in = x + i * k + p;
      __m512 lo, hi;
      if (left >= 32) {
        lo = _mm512_loadu_ps(in);
        hi = _mm512_loadu_ps(in + 16);
      } else {
        lo = _mm512_maskz_loadu_ps(first16(left), in);
        hi = left > 16 ? _mm512_maskz_loadu_ps(first16(left - 16), in + 16) : _mm512_setzero_ps();
      }
      r[i] = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
    }
    transpose16x16(r);
    std::uint32_t* tile = dst + s * kTileWords;
#pragma GCC unroll 16
    for (std::size_t q = 0; q < 16; ++q) _mm512_store_si512(tile + q * 16, r[q]);
  }
}

// Outputs [0, rows) of W (row stride k; rows <= 16, the rest zeros) as A
// tiles, one per step of 32 k at dst + 512 s: row r of tile s is W[r][32s ..
// 32s + 32), zeros past k. A plain copy of 64-byte segments.
void pack_w_tiles(const std::uint16_t* w, std::size_t k, std::size_t rows, std::uint16_t* dst) {
  const std::size_t steps = steps_of(k);
  for (std::size_t s = 0; s < steps; ++s) {
    const std::size_t p = s * kStep;
    const __mmask32 mask = first32(k - p);
    std::uint16_t* tile = dst + s * kTileWords * 2;
    for (std::size_t r = 0; r < kTile; ++r) {
      const __m512i v = r < rows ? _mm512_maskz_loadu_epi16(mask, w + r * k + p) : _mm512_setzero_si512();
      _mm512_store_si512(tile + r * kStep, v);
    }
  }
}

// A 16 x 32 tile of W (rows [row, row + rows), rows <= 16, from element p,
// `count` <= 32 of them) copied with zeros around it, for the edges of the
// unpacked variant.
void copy_w_tile(const std::uint16_t* w, std::size_t k, std::size_t rows, std::size_t p, std::size_t count,
                 std::uint16_t (&dst)[16][32]) {
  std::memset(dst, 0, sizeof(dst));
  for (std::size_t r = 0; r < rows; ++r) std::memcpy(dst[r], w + r * k + p, count * 2);
}

void prefetch_tile(const void* tile) {
  const char* p = static_cast<const char*>(tile);
#pragma GCC unroll 16
  for (std::size_t line = 0; line < 16; ++line) _mm_prefetch(p + 64 * line, _MM_HINT_T0);
}
void prefetch_rows(const std::uint16_t* w, std::size_t stride, std::size_t rows) {
  for (std::size_t r = 0; r < rows; ++r) _mm_prefetch(reinterpret_cast<const char*>(w + r * stride), _MM_HINT_T0);
}

// Writes C tile T (yᵀ: rows are outputs j0.., columns rows i0.. of x) into
// y: transposed through registers, `rows_i` rows of x and `cols_j` outputs.
template <class Tiles, int T>
void store_transposed(float* y, std::size_t n, std::size_t rows_i, std::size_t cols_j) {
  alignas(64) float tile[16][16];
  Tiles::template store<T>(tile, 64);
  __m512i r[16];
#pragma GCC unroll 16
  for (int q = 0; q < 16; ++q) r[q] = _mm512_load_si512(tile[q]);
  transpose16x16(r);
  const __mmask16 mask = first16(cols_j);
  for (std::size_t i = 0; i < rows_i; ++i) _mm512_mask_storeu_ps(y + i * n, mask, _mm512_castsi512_ps(r[i]));
}

struct Block {
  // Packed W: the strip's A tiles of outputs 0-15, step 0 (outputs 16-31
  // follow `w_next` elements later, steps 512 elements apart). Unpacked:
  // row j0 of W itself.
  const std::uint16_t* w;
  std::size_t w_next;
  std::size_t k, n;
  std::size_t w_rows;      // outputs in this strip (<= 32)
  const std::uint32_t* x;  // the two packed x tiles' first step (the second follows `x_tile_words` later)
  std::size_t x_tile_words;
  float* y;                // y[i0][j0]
  std::size_t x_rows;      // rows of x in this block (<= 32)
};

// The A tiles of step s, into tiles 4 and 5: from the packed chunk, or from
// W's rows where the step lies wholly inside W, else from zero-padded copies.
template <class Tiles, bool kPacked>
void load_w(const Block& b, std::size_t s, std::size_t direct, std::size_t rows0, std::size_t rows1,
            std::uint16_t (&a0)[16][32], std::uint16_t (&a1)[16][32]) {
  if constexpr (kPacked) {
    Tiles::template load<4>(b.w + s * kTileWords * 2, 64);
    Tiles::template load<5>(b.w + b.w_next + s * kTileWords * 2, 64);
  } else {
    const std::size_t p = s * kStep;
    const std::uint16_t* w1 = b.w + kTile * b.k;
    if (s < direct) {
      Tiles::template load<4>(b.w + p, b.k * 2);
      Tiles::template load<5>(w1 + p, b.k * 2);
    } else {
      const std::size_t count = std::min(kStep, b.k - p);
      copy_w_tile(b.w, b.k, rows0, p, count, a0);
      copy_w_tile(w1, b.k, rows1, p, count, a1);
      Tiles::template load<4>(a0, 64);
      Tiles::template load<5>(a1, 64);
    }
  }
}

// One 32 x 32 micro-block over the whole of k: C0 = W0·X0, C1 = W0·X1,
// C2 = W1·X0, C3 = W1·X1 (tiles 0-3), W in tiles 4-5, x in 6-7.
template <class Tiles, bool kPacked, int kPrefetch>
void micro_block(const Block& b) {
  Tiles::template zero<0>();
  Tiles::template zero<1>();
  Tiles::template zero<2>();
  Tiles::template zero<3>();
  const std::size_t steps = steps_of(b.k);
  const std::size_t direct = b.w_rows == kBlock ? b.k / kStep : 0;
  const std::size_t rows0 = std::min(b.w_rows, kTile), rows1 = b.w_rows > kTile ? b.w_rows - kTile : 0;
  const std::uint32_t* x0 = b.x;
  const std::uint32_t* x1 = b.x + b.x_tile_words;
  alignas(64) std::uint16_t a0[16][32], a1[16][32];
  for (std::size_t s = 0; s < steps; ++s) {
    if constexpr (kPrefetch >= 1) {
      // Past the last step these name the next tiles in the buffer (or
      // nothing): a prefetch never faults.
      prefetch_tile(x0 + (s + kPrefetchSteps) * kTileWords);
      prefetch_tile(x1 + (s + kPrefetchSteps) * kTileWords);
    }
    if constexpr (kPrefetch >= 2) {
      if constexpr (kPacked) {
        prefetch_tile(b.w + (s + kPrefetchSteps) * kTileWords * 2);
        prefetch_tile(b.w + b.w_next + (s + kPrefetchSteps) * kTileWords * 2);
      } else if (s + kPrefetchSteps < direct) {
        prefetch_rows(b.w + (s + kPrefetchSteps) * kStep, b.k, kBlock);
      }
    }
    load_w<Tiles, kPacked>(b, s, direct, rows0, rows1, a0, a1);
    Tiles::template load<6>(x0 + s * kTileWords, 64);
    Tiles::template dot<0, 4, 6>();
    Tiles::template load<7>(x1 + s * kTileWords, 64);
    Tiles::template dot<1, 4, 7>();
    Tiles::template dot<2, 5, 6>();
    Tiles::template dot<3, 5, 7>();
  }
  const std::size_t i0 = std::min(b.x_rows, kTile), i1 = b.x_rows > kTile ? b.x_rows - kTile : 0;
  store_transposed<Tiles, 0>(b.y, b.n, i0, rows0);
  if (i1) store_transposed<Tiles, 1>(b.y + kTile * b.n, b.n, i1, rows0);
  if (rows1) store_transposed<Tiles, 2>(b.y + kTile, b.n, i0, rows1);
  if (i1 && rows1) store_transposed<Tiles, 3>(b.y + kTile * b.n + kTile, b.n, i1, rows1);
}

using MicroBlock = void (*)(const Block&);

template <class Tiles>
MicroBlock micro_block_for(AmxBlocking b) {
  const int prefetch = std::clamp(b.prefetch, 0, 2);
  if (b.pack_w) {
    if (prefetch == 0) return micro_block<Tiles, true, 0>;
    if (prefetch == 1) return micro_block<Tiles, true, 1>;
    return micro_block<Tiles, true, 2>;
  }
  if (prefetch == 0) return micro_block<Tiles, false, 0>;
  if (prefetch == 1) return micro_block<Tiles, false, 1>;
  return micro_block<Tiles, false, 2>;
}

template <class Tiles>
void amx_gemm(const LinearCall& c, AmxBlocking blocking) {
  const auto* w = static_cast<const std::uint16_t*>(c.w);
  auto* packed_x = static_cast<std::uint32_t*>(c.workspace);
  const std::size_t steps = steps_of(c.k);
  const std::size_t tile_words = steps * kTileWords;  // one x tile row of 16 rows, all of k
  const std::size_t mc = block_rows(c.m, c.k);
  auto* packed_w = reinterpret_cast<std::uint16_t*>(packed_x + up(mc / kTile * tile_words, 16));
  const std::size_t w_tile_elems = steps * kTileWords * 2;  // 16 outputs' tiles, all of k
  const std::size_t nc = blocking.pack_w ? chunk_outputs(c.n, c.k) : up(c.n, kBlock);
  const std::size_t per_panel = panel_strips(c.k, blocking);
  const std::size_t want = 2 * static_cast<std::size_t>(threads());
  const MicroBlock micro = micro_block_for<Tiles>(blocking);
  for (std::size_t m0 = 0; m0 < c.m; m0 += mc) {
    const std::size_t rows = std::min(mc, c.m - m0);
    const std::size_t x_tiles = up(rows, kBlock) / kTile;
    parallel_for(x_tiles, [&](std::size_t t) {
      const std::size_t r0 = t * kTile;
      pack_x_tiles(c.x + (m0 + r0) * c.k, c.k, r0 < rows ? std::min(kTile, rows - r0) : 0,
                   packed_x + t * tile_words);
    });
    const std::size_t x_blocks = x_tiles / 2;
    for (std::size_t n0 = 0; n0 < c.n; n0 += nc) {
      const std::size_t outputs = std::min(nc, c.n - n0);
      const std::size_t strips = ceil_div(outputs, kBlock);
      if (blocking.pack_w) {
        parallel_for(2 * strips, [&](std::size_t t) {
          const std::size_t j = n0 + t * kTile;
          pack_w_tiles(w + std::min(j, c.n) * c.k, c.k, j < c.n ? std::min(kTile, c.n - j) : 0,
                       packed_w + t * w_tile_elems);
        });
      }
      // Tasks: a panel of strips against a group of x blocks; the x blocks
      // are split only as far as it takes to give every thread a few tasks.
      const std::size_t panels = ceil_div(strips, per_panel);
      const std::size_t groups = std::clamp<std::size_t>(ceil_div(want, panels), 1, x_blocks);
      const std::size_t per_group = ceil_div(x_blocks, groups);
      const std::size_t group_count = ceil_div(x_blocks, per_group);
      parallel_for(panels * group_count, [&](std::size_t task) {
        const std::size_t panel = task / group_count, g = task % group_count;
        const std::size_t s_end = std::min(strips, (panel + 1) * per_panel);
        Tiles::configure();
        for (std::size_t xb = g * per_group; xb < std::min(x_blocks, (g + 1) * per_group); ++xb) {
          const std::size_t i0 = xb * kBlock;
          for (std::size_t s = panel * per_panel; s < s_end; ++s) {
            const std::size_t j0 = n0 + s * kBlock;
            const std::uint16_t* strip_w = blocking.pack_w ? packed_w + 2 * s * w_tile_elems : w + j0 * c.k;
            micro({strip_w, w_tile_elems, c.k, c.n, std::min(kBlock, c.n - j0), packed_x + 2 * xb * tile_words,
                   tile_words, c.y + (m0 + i0) * c.n + j0, std::min(kBlock, rows - i0)});
          }
        }
        Tiles::release();
      });
    }
  }
}

bool takes_tiles(const LinearCall& c) {
  return c.type == WeightType::bf16 && c.precision == Precision::fast && c.m > kStreamingRows;
}

}  // namespace

void linear_amx(const LinearCall& call) { linear_amx_with(call, AmxBlocking{}); }

void linear_amx_with(const LinearCall& call, AmxBlocking blocking) {
  if (!takes_tiles(call)) return linear_avx512bf16(call);
  amx_gemm<HardwareTiles>(call, blocking);
}

void linear_amx_software(const LinearCall& call, AmxBlocking blocking) {
  if (!takes_tiles(call)) return linear_avx512bf16(call);
  amx_gemm<SoftwareTiles>(call, blocking);
}

std::size_t workspace_amx(std::size_t m, std::size_t k, std::size_t n, WeightType type) {
  if (type != WeightType::bf16 || m <= kStreamingRows) return workspace_avx512bf16(m, k, n, type);
  // Precision::exact runs linear_avx512()'s f32 GEMM in the same buffer.
  return std::max(workspace_avx512(m, k, n, type), amx_x_block_bytes(m, k) + amx_w_chunk_bytes(n, k));
}

std::size_t amx_x_block_bytes(std::size_t m, std::size_t k) {
  return up(block_rows(m, k) * steps_of(k) * kStep * 2, 64);
}

std::size_t amx_w_chunk_bytes(std::size_t n, std::size_t k) { return chunk_outputs(n, k) * steps_of(k) * kStep * 2; }

}  // namespace nuvec::lm::kernels::detail

#include "lm/kernels/isa_target_end.inc"
