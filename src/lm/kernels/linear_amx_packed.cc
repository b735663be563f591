// The measured alternative to linear_amx.cc's AMX product, with the
// weights packed into tiles per task: the same numbers (tested bit for bit
// against each other's blockings, and against the reference), not used by
// linear() because on the H200 machine's Xeon it was not faster
// (bench/results/2026-12-01-amx-table.md: equal within the noise at 16
// threads, 0.71x on the 1.1B shape at 4 threads). Kept for the roofline,
// which measures it beside linear_amx() under several blockings, so that a
// change to either can be weighed on the next machine.
//
// Operands. x is the instruction's A operand (16 rows of 32 bf16, plain
// rows), W the B operand (16 columns of pairs of k: row q of a B tile holds,
// for each of 16 outputs j, the pair W[j][2q], W[j][2q + 1]), so that a C
// tile is 16 x 16 of y itself: tilestored writes it to y, tileloadd reads
// it back for the next chunk of k. Both operands are repacked into whole
// 1 KiB tiles so every tileloadd reads 1 KiB in a row (W's own rows are
// k * 2 bytes apart, 4 KiB at k = 2048, which puts all 16 rows of a tile in
// one L1 set):
// - x is rounded to bf16 and packed once per block of rows, into the
//   workspace (at most 4 MiB, 64 * k bytes beyond k = 65536);
// - W is packed per task, one strip of 32 rows by one chunk of k at a time
//   (the panel), into its thread's slot of the workspace: 32 KiB with 16
//   steps a chunk, one slot per thread. W itself stays in the mapping;
//   no copy of it outlives the chunk.
//
// Blocking. A micro-block is 32 rows of x by 32 outputs (2 x 2 C tiles,
// two A and two B tiles: all 8 tile registers) over one chunk of k
// (AmxBlocking::chunk_steps steps of 32). A task owns a range of W's strips
// and a range of x's 32-row blocks. For each chunk of k, and in it each
// strip, it packs the panel (which then stays in L1) and runs it against
// every x block of its range, whose tiles stream from L2: the chunk of x
// (its rows by 512 k, 512 KiB for 512 rows) stays in L2 across the task's
// strips. The part of y a task sums into (its rows x its outputs x 4
// bytes) is read and written once per chunk and stays in L2 only while a
// task's outputs are few: at 4 threads on the 1.1B shape's MLP it is 2.8
// MiB, a likely cause of the 0.71x measured there (bounding it, by running
// the chunks over a few strips at a time, is the next thing to measure).
// Tasks split the outputs first and the rows only where there are fewer
// strips than threads, as a small cost model (task_split) says.
//
// Numbers: as linear_amx(); Precision::exact, few rows and other weight
// types are linear_avx512bf16()'s.
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
constexpr std::size_t kStep = 32;          // bf16 of k per tile row
constexpr std::size_t kBlock = 32;         // rows of x and outputs per micro-block
constexpr std::size_t kTileElems = 512;    // bf16 in one 1 KiB tile
constexpr std::size_t kXBlockBytes = std::size_t{4} << 20;  // bound of the packed x block

std::size_t steps_of(std::size_t k) { return (k + kStep - 1) / kStep; }
std::size_t up(std::size_t a, std::size_t b) { return (a + b - 1) / b * b; }
std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Rows of x per block: as many as keep the packed block within 4 MiB, in
// whole micro-blocks, at least one.
std::size_t block_rows(std::size_t m, std::size_t k) {
  const std::size_t per_row = steps_of(k) * kStep * 2;
  const std::size_t fit = std::max<std::size_t>(kBlock, kXBlockBytes / per_row / kBlock * kBlock);
  return std::min(up(m, kBlock), fit);
}

std::size_t chunk_steps(std::size_t k, AmxBlocking b) {
  const std::size_t steps = steps_of(k);
  return b.chunk_steps == 0 ? steps : std::min(b.chunk_steps, steps);
}

// One thread's panel: panel_strips strips of 32 outputs by one chunk of k.
std::size_t panel_bytes(std::size_t k, AmxBlocking b) {
  return std::max<std::size_t>(b.panel_strips, 1) * kBlock * chunk_steps(k, b) * kStep * 2;
}

__mmask16 first16(std::size_t n) { return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1); }
__mmask32 first32(std::size_t n) { return n >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << n) - 1); }

// Rows [0, rows) of x (row stride k; rows <= 16, the rest zeros) as A tiles,
// one per step of 32 k, at dst + 512 s: row i of tile s is x[i][32s ..
// 32s + 32) rounded to bf16, zeros past k.
void pack_x_tiles(const float* x, std::size_t k, std::size_t rows, std::uint16_t* dst) {
  const std::size_t steps = steps_of(k);
  for (std::size_t s = 0; s < steps; ++s) {
    const std::size_t p = s * kStep, left = k - p;
    std::uint16_t* tile = dst + s * kTileElems;
    for (std::size_t i = 0; i < kTile; ++i) {
      __m512i v = _mm512_setzero_si512();
      if (i < rows) {
        const float* in = x + i * k + p;
        const __m512 lo = left >= 16 ? _mm512_loadu_ps(in) : _mm512_maskz_loadu_ps(first16(left), in);
        const __m512 hi = left >= 32   ? _mm512_loadu_ps(in + 16)
                          : left > 16 ? _mm512_maskz_loadu_ps(first16(left - 16), in + 16)
                                      : _mm512_setzero_ps();
        v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
      }
      _mm512_store_si512(tile + i * kStep, v);
    }
  }
}

// Outputs [0, rows) of W (row stride k; rows <= 16, the rest zeros), steps
// [s0, s0 + count) of k, as B tiles at dst + 512 (s - s0): word j of row q
// is the pair W[j][32s + 2q], W[j][32s + 2q + 1]; zeros past k. Loading the
// 16 rows' 64 bytes and transposing them as 16 x 16 words is exactly that.
void pack_w_tiles(const std::uint16_t* w, std::size_t k, std::size_t rows, std::size_t s0, std::size_t count,
                  std::uint16_t* dst) {
  for (std::size_t s = 0; s < count; ++s) {
    const std::size_t p = (s0 + s) * kStep;
    const __mmask32 mask = first32(k - p);
    __m512i r[16];
#pragma GCC unroll 16
    for (std::size_t j = 0; j < 16; ++j)
      r[j] = j < rows ? _mm512_maskz_loadu_epi16(mask, w + j * k + p) : _mm512_setzero_si512();
    transpose16x16(r);
    std::uint16_t* tile = dst + s * kTileElems;
#pragma GCC unroll 16
    for (std::size_t q = 0; q < 16; ++q) _mm512_store_si512(tile + q * kStep, r[q]);
  }
}

// C tile T to and from y[i0..][j0..] (row stride n): straight from y where
// the tile lies wholly inside it, through a zero-padded copy at the edges.
template <class Tiles, int T>
void load_c(const float* y, std::size_t n, std::size_t rows, std::size_t cols) {
  if (rows == kTile && cols == kTile) return Tiles::template load<T>(y, n * 4);
  alignas(64) float tile[16][16] = {};
  for (std::size_t i = 0; i < rows; ++i) std::memcpy(tile[i], y + i * n, cols * 4);
  Tiles::template load<T>(tile, 64);
}
template <class Tiles, int T>
void store_c(float* y, std::size_t n, std::size_t rows, std::size_t cols) {
  if (rows == 0 || cols == 0) return;
  if (rows == kTile && cols == kTile) return Tiles::template store<T>(y, n * 4);
  alignas(64) float tile[16][16];
  Tiles::template store<T>(tile, 64);
  for (std::size_t i = 0; i < rows; ++i) std::memcpy(y + i * n, tile[i], cols * 4);
}

struct MicroBlock {
  const std::uint16_t* x0;  // A tiles of rows 0-15, this chunk's first step; rows 16-31 follow x_next later
  std::size_t x_next;
  const std::uint16_t* w0;  // B tiles of outputs 0-15, first step; outputs 16-31 follow w_next later
  std::size_t w_next;
  std::size_t steps;        // of this chunk
  float* y;                 // y[i0][j0]
  std::size_t n;
  std::size_t rows, cols;   // of x and of outputs in this block (<= 32 each)
  bool first;               // the chunk that starts the sums (else they continue from y)
};

// C0 = y[0:16][0:16], C1 = [0:16][16:32], C2 = [16:32][0:16], C3 =
// [16:32][16:32] in tiles 0-3; x in tiles 4-5, W in 6-7. The loads are
// interleaved with the products that wait for them.
template <class Tiles>
void micro_block(const MicroBlock& b) {
  const std::size_t r0 = std::min(b.rows, kTile), r1 = b.rows - r0;
  const std::size_t c0 = std::min(b.cols, kTile), c1 = b.cols - c0;
  float* y1 = b.y + kTile * b.n;
  if (b.first) {
    Tiles::template zero<0>();
    Tiles::template zero<1>();
    Tiles::template zero<2>();
    Tiles::template zero<3>();
  } else {
    load_c<Tiles, 0>(b.y, b.n, r0, c0);
    load_c<Tiles, 1>(b.y + kTile, b.n, r0, c1);
    load_c<Tiles, 2>(y1, b.n, r1, c0);
    load_c<Tiles, 3>(y1 + kTile, b.n, r1, c1);
  }
  const std::uint16_t* x1 = b.x0 + b.x_next;
  const std::uint16_t* w1 = b.w0 + b.w_next;
  for (std::size_t s = 0; s < b.steps; ++s) {
    const std::size_t at = s * kTileElems;
    Tiles::template load<4>(b.x0 + at, 64);
    Tiles::template load<6>(b.w0 + at, 64);
    Tiles::template dot<0, 4, 6>();
    Tiles::template load<7>(w1 + at, 64);
    Tiles::template dot<1, 4, 7>();
    Tiles::template load<5>(x1 + at, 64);
    Tiles::template dot<2, 5, 6>();
    Tiles::template dot<3, 5, 7>();
  }
  store_c<Tiles, 0>(b.y, b.n, r0, c0);
  store_c<Tiles, 1>(b.y + kTile, b.n, r0, c1);
  store_c<Tiles, 2>(y1, b.n, r1, c0);
  store_c<Tiles, 3>(y1 + kTile, b.n, r1, c1);
}

// How tasks split `strips` strips of outputs and `blocks` x blocks among
// `threads`: parts of the strips times groups of the blocks. The cost of a
// split is its slowest thread's micro-blocks, plus a quarter of one for
// each strip a task packs (a group repacks the strips its task shares), and
// fewer groups win ties.
struct Split {
  std::size_t parts = 1, groups = 1;
};
Split task_split(std::size_t strips, std::size_t blocks, std::size_t threads) {
  Split best;
  double best_cost = -1;
  for (std::size_t g = 1; g <= std::min(blocks, threads); ++g) {
    const std::size_t fill = ceil_div(threads, g);
    for (std::size_t p : {std::min(strips, fill), std::min(strips, 2 * fill)}) {
      const double rounds = double(ceil_div(g * p, threads));
      const double cost = rounds * double(ceil_div(strips, p)) * (double(ceil_div(blocks, g)) + 0.25);
      if (best_cost < 0 || cost < best_cost) {
        best_cost = cost;
        best = {p, g};
      }
    }
  }
  return best;
}

template <class Tiles>
void amx_gemm(const LinearCall& c, AmxBlocking blocking) {
  const auto* w = static_cast<const std::uint16_t*>(c.w);
  const std::size_t steps = steps_of(c.k);
  const std::size_t x_tile_row = steps * kTileElems;  // one row of A tiles: 16 rows of x, all of k
  const std::size_t mc = block_rows(c.m, c.k);
  auto* packed_x = static_cast<std::uint16_t*>(c.workspace);
  std::uint16_t* panels = packed_x + up(mc * steps * kStep, 32);
  const std::size_t panel_elems = panel_bytes(c.k, blocking) / 2;
  const std::size_t kc = chunk_steps(c.k, blocking);
  const std::size_t panel_strips = std::max<std::size_t>(blocking.panel_strips, 1);
  const std::size_t strips = ceil_div(c.n, kBlock);
  for (std::size_t m0 = 0; m0 < c.m; m0 += mc) {
    const std::size_t rows = std::min(mc, c.m - m0);
    const std::size_t x_tiles = up(rows, kBlock) / kTile;
    parallel_for(x_tiles, [&](std::size_t t) {
      const std::size_t r0 = t * kTile;
      pack_x_tiles(c.x + (m0 + r0) * c.k, c.k, r0 < rows ? std::min(kTile, rows - r0) : 0, packed_x + t * x_tile_row);
    });
    const std::size_t blocks = x_tiles / 2;
    const Split split = task_split(strips, blocks, static_cast<std::size_t>(threads()));
    const std::size_t per_part = ceil_div(strips, split.parts), per_group = ceil_div(blocks, split.groups);
    parallel_for(split.parts * split.groups, [&](std::size_t task, int slot) {
      const std::size_t part = task / split.groups, group = task % split.groups;
      const std::size_t strip_end = std::min(strips, (part + 1) * per_part);
      const std::size_t block_begin = group * per_group, block_end = std::min(blocks, block_begin + per_group);
      std::uint16_t* panel = panels + static_cast<std::size_t>(slot) * panel_elems;
      Tiles::configure();
      for (std::size_t k0 = 0; k0 < steps; k0 += kc) {
        const std::size_t count = std::min(kc, steps - k0);
        const std::size_t tile_col = count * kTileElems;  // one 16-output column of B tiles, this chunk
        for (std::size_t s0 = part * per_part; s0 < strip_end; s0 += panel_strips) {
          const std::size_t s1 = std::min(strip_end, s0 + panel_strips);
          for (std::size_t t = 0; t < 2 * (s1 - s0); ++t) {
            const std::size_t j = s0 * kBlock + t * kTile;
            pack_w_tiles(w + std::min(j, c.n) * c.k, c.k, j < c.n ? std::min(kTile, c.n - j) : 0, k0, count,
                         panel + t * tile_col);
          }
          for (std::size_t xb = block_begin; xb < block_end; ++xb) {
            const std::size_t i0 = xb * kBlock;
            for (std::size_t s = s0; s < s1; ++s) {
              const std::size_t j0 = s * kBlock;
              micro_block<Tiles>({packed_x + 2 * xb * x_tile_row + k0 * kTileElems, x_tile_row,
                                  panel + 2 * (s - s0) * tile_col, tile_col, count, c.y + (m0 + i0) * c.n + j0, c.n,
                                  std::min(kBlock, rows - i0), std::min(kBlock, c.n - j0), k0 == 0});
            }
          }
        }
      }
      Tiles::release();
    });
  }
}

std::size_t x_block_bytes(std::size_t m, std::size_t k) { return up(block_rows(m, k) * steps_of(k) * kStep * 2, 64); }

bool takes_tiles(const LinearCall& c) {
  return c.type == WeightType::bf16 && c.precision == Precision::fast && c.m > kStreamingRows;
}

}  // namespace

void linear_amx_packed(const LinearCall& call, AmxBlocking blocking) {
  if (!takes_tiles(call)) return linear_avx512bf16(call);
  amx_gemm<HardwareTiles>(call, blocking);
}

void linear_amx_packed_software(const LinearCall& call, AmxBlocking blocking) {
  if (!takes_tiles(call)) return linear_avx512bf16(call);
  amx_gemm<SoftwareTiles>(call, blocking);
}

std::size_t workspace_amx_packed(std::size_t m, std::size_t k, std::size_t n, WeightType type,
                                 AmxBlocking blocking) {
  if (type != WeightType::bf16 || m <= kStreamingRows) return workspace_avx512bf16(m, k, n, type);
  return std::max(workspace_avx512(m, k, n, type), x_block_bytes(m, k) + amx_panel_bytes(k, blocking));
}

std::size_t amx_panel_bytes(std::size_t k, AmxBlocking blocking) {
  return static_cast<std::size_t>(threads()) * panel_bytes(k, blocking);
}

}  // namespace nuvec::lm::kernels::detail

#include "lm/kernels/isa_target_end.inc"
