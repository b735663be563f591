// linear() for bf16 weights on CPUs with AMX (Sapphire Rapids and later
// Xeons): prompt-sized products on the tile unit, which multiplies a 16 x 32
// bf16 tile by a 32 x 16 one into a 16 x 16 f32 tile in one instruction
// (tdpbf16ps: 16 times the multiply-adds of one vdpbf16ps).
//
// The weights are never copied. The product is computed transposed,
// yᵀ = W · xᵀ, so that W is the instruction's A operand, whose layout is
// plain rows: a 16 x 32 tile of W is 16 rows of 64 bytes at W's own row
// stride, loaded by tileloadd straight from the mapped checkpoint. The
// activations take the B operand's layout (pairs of k interleaved across
// 16 rows of x) while they are rounded to bf16: x is packed once per block
// of rows, into the workspace. Each 16 x 16 result tile is yᵀ; it is
// transposed in AVX-512 registers on its way to y.
//
// Blocking: a micro-block is 32 rows of W by 32 rows of x (2 x 2 tiles, the
// four accumulators, two A and two B tiles: all 8 tile registers), summed
// over the whole of k inside the tiles, and written once. A task runs one
// 32-row strip of W against a range of x blocks, so the strip (32 * k * 2
// bytes, 128 KiB at k = 2048) is read from memory once and then from L2.
// Where a tile would reach past W (the last strip when n is not a multiple
// of 32, the last 32-column step when k is not), that tile is copied, zero-
// padded, into a 1 KiB buffer on the stack first.
//
// Workspace (sized by linear_workspace.cc, from linear_blocking.h's
// numbers): the packed block of x, at most 4 MiB (for k up to 65536; 64 * k
// bytes beyond), plus what linear_avx512() needs for the other calls
// (Precision::exact shares the session's buffer). Nothing per thread, no
// copy of W. Numbers: as linear_avx512bf16()'s fast path (x rounded to bf16
// to nearest even, products exact, sums in f32); Precision::exact, few rows
// and other weight types are linear_avx512bf16()'s.
//
// Measured alternatives, none faster, so none kept: W packed per task into
// 1 KiB tiles with k in chunks and the sums continued through y
// (bench/results/2026-12-01-amx-table.md, 0.71x on the 1.1B shape at 4
// threads); W packed per chunk of outputs into shared tiles, panels of up to
// 8 strips per task, software prefetch of the next tiles into L1
// (bench/results/2026-12-02-amx-table.md: level at 4 threads, 0.29-1.15x of
// this kernel at 16; prefetch made every pattern slower). What bounds it
// there: with all 8 tile registers in a 2 x 2 micro-block, each step loads 4
// tiles for 4 products, and on that machine even tiles in L1 leave 56-65%
// of the tile unit's peak, tiles in L2 51-53%, beyond L2 21-23%.
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
constexpr std::size_t kStep = kAmxStep;    // bf16 of k per A tile row
constexpr std::size_t kBlock = kAmxBlock;  // rows of W and of x per micro-block
constexpr std::size_t kTileWords = 256;    // 32-bit words of one 1 KiB tile
static_assert(kStep == 2 * kTile && kBlock == 2 * kTile, "a micro-block is 2 x 2 tiles");

std::size_t up(std::size_t a, std::size_t b) { return (a + b - 1) / b * b; }

__mmask16 first16(std::size_t n) { return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1); }

// Packs rows [0, rows) of x (row stride k; rows <= 16, the rest zeros) into
// B tiles, one per step of 32 k: tile s holds at word [q][i] the pair (x[i][32s + 2q], x[i][32s + 2q + 1]) rounded to
// bf16, zeros past k.
void pack_x_tiles(const float* x, std::size_t k, std::size_t rows, std::uint32_t* dst) {
  const std::size_t steps = amx_steps(k);
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

// A 16 x 32 tile of W (rows [row, row + rows), rows <= 16, from element p,
// `count` <= 32 of them) copied with zeros around it, for the edges.
void copy_w_tile(const std::uint16_t* w, std::size_t k, std::size_t rows, std::size_t p, std::size_t count,
                 std::uint16_t (&dst)[16][32]) {
  std::memset(dst, 0, sizeof(dst));
  for (std::size_t r = 0; r < rows; ++r) std::memcpy(dst[r], w + r * k + p, count * 2);
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
  const std::uint16_t* w;  // row j0 of W
  std::size_t k, n;
  std::size_t w_rows;      // rows of W in this strip (<= 32)
  const std::uint32_t* x;  // the two packed x tiles' first step (the second follows `x_tile_words` later)
  std::size_t x_tile_words;
  float* y;                // y[i0][j0]
  std::size_t x_rows;      // rows of x in this block (<= 32)
};

// One 32 x 32 micro-block over the whole of k: C0 = W0·X0, C1 = W0·X1,
// C2 = W1·X0, C3 = W1·X1 (tiles 0-3), W in tiles 4-5, x in 6-7. A step
// whose W tiles lie wholly inside W loads them from W's rows; the others
// (the last strip when n is not a multiple of 32, the last step when k is
// not) from zero-padded copies on the stack.
template <class Tiles>
void micro_block(const Block& b) {
  Tiles::template zero<0>();
  Tiles::template zero<1>();
  Tiles::template zero<2>();
  Tiles::template zero<3>();
  const std::size_t steps = amx_steps(b.k);
  const std::size_t direct = b.w_rows == kBlock ? b.k / kStep : 0;
  const std::size_t rows0 = std::min(b.w_rows, kTile), rows1 = b.w_rows > kTile ? b.w_rows - kTile : 0;
  const std::uint16_t* w1 = b.w + kTile * b.k;
  const std::uint32_t* x0 = b.x;
  const std::uint32_t* x1 = b.x + b.x_tile_words;
  alignas(64) std::uint16_t a0[16][32], a1[16][32];
  for (std::size_t s = 0; s < steps; ++s) {
    const std::size_t p = s * kStep;
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
    Tiles::template load<6>(x0 + s * kTileWords, 64);
    Tiles::template load<7>(x1 + s * kTileWords, 64);
    Tiles::template dot<0, 4, 6>();
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

template <class Tiles>
void amx_gemm(const LinearCall& c) {
  const auto* w = static_cast<const std::uint16_t*>(c.w);
  auto* packed = static_cast<std::uint32_t*>(c.workspace);
  const std::size_t steps = amx_steps(c.k);
  const std::size_t tile_words = steps * kTileWords;  // one x tile of 16 rows, all of k
  const std::size_t mc = amx_x_block_rows(c.m, c.k);  // as linear_workspace.cc sizes the block
  const std::size_t strips = (c.n + kBlock - 1) / kBlock;
  const std::size_t want = 4 * static_cast<std::size_t>(threads());
  for (std::size_t m0 = 0; m0 < c.m; m0 += mc) {
    const std::size_t rows = std::min(mc, c.m - m0);
    const std::size_t x_tiles = up(rows, kBlock) / kTile;
    parallel_for(x_tiles, [&](std::size_t t) {
      const std::size_t r0 = t * kTile;
      pack_x_tiles(c.x + (m0 + r0) * c.k, c.k, r0 < rows ? std::min(kTile, rows - r0) : 0,
                   packed + t * tile_words);
    });
    // Tasks: one strip of W against a group of x blocks; the x blocks are
    // split only as far as it takes to give every thread a few tasks.
    const std::size_t x_blocks = x_tiles / 2;
    const std::size_t groups = std::clamp<std::size_t>((want + strips - 1) / strips, 1, x_blocks);
    const std::size_t per_group = (x_blocks + groups - 1) / groups;
    const std::size_t group_count = (x_blocks + per_group - 1) / per_group;
    parallel_for(strips * group_count, [&](std::size_t task) {
      const std::size_t strip = task / group_count, g = task % group_count;
      const std::size_t j0 = strip * kBlock;
      Tiles::configure();
      for (std::size_t xb = g * per_group; xb < std::min(x_blocks, (g + 1) * per_group); ++xb) {
        const std::size_t i0 = xb * kBlock;
        micro_block<Tiles>({w + j0 * c.k, c.k, c.n, std::min(kBlock, c.n - j0), packed + 2 * xb * tile_words,
                            tile_words, c.y + (m0 + i0) * c.n + j0, std::min(kBlock, rows - i0)});
      }
      Tiles::release();
    });
  }
}

bool takes_tiles(const LinearCall& c) {
  return c.type == WeightType::bf16 && c.precision == Precision::fast && c.m > kStreamingRows;
}

}  // namespace

void linear_amx(const LinearCall& call) {
  if (!takes_tiles(call)) return linear_avx512bf16(call);
  amx_gemm<HardwareTiles>(call);
}

void linear_amx_software(const LinearCall& call) {
  if (!takes_tiles(call)) return linear_avx512bf16(call);
  amx_gemm<SoftwareTiles>(call);
}

}  // namespace nuvec::lm::kernels::detail

#include "lm/kernels/isa_target_end.inc"
