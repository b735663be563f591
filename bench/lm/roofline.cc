// nuvec_roofline: the machine's bounds and the linear kernels against them,
// in one run (issue 5's decode and prefill targets are ratios to bounds
// measured in the same run).
//
//   1. Read bandwidth: a streaming sum over 1 GiB (32x this CPU's L3), with
//      1 thread and with all threads.
//   2. Decode-shaped products (m = 1, GEMV) of Llama-like shapes, bf16/f16/
//      f32 weights: effective weight bandwidth = weight bytes / time, over a
//      set of matrices much larger than the L3 (as a decode step cycles
//      through its layers), and its ratio to the all-thread read bandwidth.
//   3. Prefill-shaped products (m = 512): GFLOP/s of linear() per weight
//      dtype, of OpenBLAS's cblas_sbgemm (bf16 x bf16 -> f32, x converted
//      before the clock starts) and cblas_sgemm (f32), and of linear() on a
//      cache-resident product (the kernel's own ceiling). The roofline of a
//      dtype is the best GEMM measured for it; the ratio is linear() / that.
//   4. AMX, where the CPU has it: the tile unit's peak, and the prompt
//      products of two model shapes on the AVX-512 BF16 and AMX paths.
//
// Every figure is the median of several timed repetitions after an untimed
// one. Usage: nuvec_roofline [--quick] [--threads N]
// [--only bandwidth|decode|prefill|amx] [--scratch DIR]. Decode includes the
// bandwidth it is compared with; the file-mapped decode writes ~770 MB to
// DIR (default: the current directory) and deletes it.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/linear.h"
#include "lm/kernels/linear_kernels.h"
#include "lm/kernels/machine_roofline.h"
#include "lm/kernels/measurement.h"

#ifdef NUVEC_HAVE_OPENBLAS
#include <cblas.h>
#include <dlfcn.h>
#endif

namespace {

using namespace nuvec::lm::kernels;

struct Options {
  bool quick = false;
  std::string only;  // one section: bandwidth, decode or prefill
  std::string scratch = ".";  // where the file-mapped decode writes its weights
  int threads = 0;  // 0: the pool's default
};

std::size_t element_size(WeightType t) { return t == WeightType::f32 ? 4 : 2; }
const char* name(WeightType t) { return t == WeightType::f32 ? "f32" : t == WeightType::f16 ? "f16" : "bf16"; }

std::uint32_t g_state = 2463534242u;
float next_value() {  // in [-1, 1)
  g_state ^= g_state << 13;
  g_state ^= g_state >> 17;
  g_state ^= g_state << 5;
  return static_cast<float>(g_state >> 8) / 8388608.0f - 1.0f;
}
std::uint16_t bf16_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return static_cast<std::uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}
std::uint16_t f16_of(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
void fill_weights(void* w, WeightType t, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const float v = next_value() * 0.05f;
    if (t == WeightType::f32) static_cast<float*>(w)[i] = v;
    if (t == WeightType::bf16) static_cast<std::uint16_t*>(w)[i] = bf16_of(v);
    if (t == WeightType::f16) static_cast<std::uint16_t*>(w)[i] = f16_of(v);
  }
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// How much of the machine other processes used while a section ran: the
// busy time of all CPUs (/proc/stat) minus this process's own CPU time.
// On a shared machine, a section with a large share is not comparable.
class OtherLoad {
 public:
  OtherLoad() : start_(sample()) {}
  void report() const {
    const Sample end = sample();
    const double total = end.total - start_.total;
    const double others = (end.busy - start_.busy) - (end.self - start_.self);
    std::printf("\n(other processes used %.0f%% of the CPUs during this section)\n",
                total > 0 ? std::max(0.0, 100.0 * others / total) : 0.0);
  }

 private:
  struct Sample {
    double total = 0, busy = 0, self = 0;  // seconds
  };
  static Sample sample() {
    Sample s;
    std::ifstream in("/proc/stat");
    std::string cpu;
    double v[8] = {};
    in >> cpu >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5] >> v[6] >> v[7];
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    for (double x : v) s.total += x / tick;
    s.busy = s.total - (v[3] + v[4]) / tick;  // less idle and iowait
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    s.self = double(u.ru_utime.tv_sec) + double(u.ru_utime.tv_usec) / 1e6 + double(u.ru_stime.tv_sec) +
             double(u.ru_stime.tv_usec) / 1e6;
    return s;
  }
  Sample start_;
};

// --- 1. bandwidth -----------------------------------------------------------

double g_bandwidth_all = 0;  // the decode bound: all threads, the better page size

void bandwidth(const Options& o) {
  const int passes = o.quick ? 3 : 7;
  const std::size_t bytes = std::size_t{1} << 30;
  std::printf("\n## Read bandwidth (streaming sum over %zu MiB, median of %d passes)\n\n", bytes >> 20, passes);
  std::printf("| threads | 4 KiB pages, GB/s | huge pages (MADV_HUGEPAGE), GB/s |\n|---:|---:|---:|\n");
  for (int t : {1, threads()}) {
    if (t == 1 && threads() == 1 && g_bandwidth_all > 0) break;
    const ReadBandwidth normal = measure_read_bandwidth(t, bytes, passes, Pages::normal);
    const ReadBandwidth huge = measure_read_bandwidth(t, bytes, passes, Pages::huge);
    std::printf("| %d | %.1f | %.1f |\n", t, normal.bytes_per_second / 1e9, huge.bytes_per_second / 1e9);
    if (t == threads()) g_bandwidth_all = std::max(normal.bytes_per_second, huge.bytes_per_second);
  }
  std::printf("\nDecode bound: %.1f GB/s (all %d threads, the better of the two).\n", g_bandwidth_all / 1e9,
              threads());
}

// --- 2. decode (m = 1) ------------------------------------------------------

void decode(const Options& o) {
  struct Shape {
    std::size_t k, n;
    const char* what;
  };
  const Shape shapes[] = {{2048, 5632, "MLP gate/up (k=2048, n=5632)"},
                          {5632, 2048, "MLP down (k=5632, n=2048)"},
                          {2048, 2048, "attention q/o (k=2048, n=2048)"}};
  const int repeats = o.quick ? 5 : 15;
  std::printf("\n## Decode: m = 1 (GEMV), weights cycled through a set of ~768 MiB, median of %d passes\n\n",
              repeats);
  std::printf("| weights | shape | threads | ms per matrix | GB/s | of the decode bound |\n");
  std::printf("|---|---|---:|---:|---:|---:|\n");
  const int all = threads();
  for (WeightType t : {WeightType::bf16, WeightType::f16, WeightType::f32}) {
    for (const Shape& s : shapes) {
      if (o.quick && s.k != 2048) continue;
      const std::size_t bytes = s.k * s.n * element_size(t);
      const std::size_t count = std::max<std::size_t>(2, ((std::size_t{768} << 20) + bytes - 1) / bytes);
      AnonymousMapping weights(bytes * count);
      fill_weights(weights.as<void>(), t, s.k * s.n * count);
      std::vector<float> x(s.k), y(s.n);
      for (auto& v : x) v = next_value();
      for (int th : {1, all}) {
        if (th == 1 && all == 1) continue;
        set_threads(th);
        const double sec = median_seconds(repeats, [&] {
          for (std::size_t i = 0; i < count; ++i)
            linear(x.data(), 1, s.k, weights.as<char>() + i * bytes, t, s.n, y.data(), nullptr);
        });
        const double gbs = double(bytes * count) / sec;
        if (th == all)
          std::printf("| %s | %s | %d | %.3f | %.1f | %.0f%% |\n", name(t), s.what, th, sec / double(count) * 1e3,
                      gbs / 1e9, 100.0 * gbs / g_bandwidth_all);
        else
          std::printf("| %s | %s | %d | %.3f | %.1f | |\n", name(t), s.what, th, sec / double(count) * 1e3,
                      gbs / 1e9);
      }
      set_threads(all);
    }
  }
}

// The runtime reads weights from a mapped checkpoint: page-cache pages,
// 4 KiB each. The same GEMV on a read-only shared mapping of a file (written
// here, so in the page cache; deleted at the end).
void decode_mapped(const Options& o) {
  const std::size_t k = 2048, n = 5632, bytes = k * n * 2;
  const std::size_t count = ((std::size_t{768} << 20) + bytes - 1) / bytes;
  const std::string path = o.scratch + "/nuvec_roofline_weights.bin";
  {
    AnonymousMapping one(bytes);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) {
      std::printf("\n(file-mapped decode skipped: cannot write %s)\n", path.c_str());
      return;
    }
    for (std::size_t i = 0; i < count; ++i) {
      fill_weights(one.as<void>(), WeightType::bf16, k * n);
      if (std::fwrite(one.as<char>(), 1, bytes, f) != bytes) {
        std::fclose(f);
        std::remove(path.c_str());
        std::printf("\n(file-mapped decode skipped: cannot write %s)\n", path.c_str());
        return;
      }
    }
    std::fclose(f);
  }
  const int fd = open(path.c_str(), O_RDONLY);
  void* map = mmap(nullptr, bytes * count, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  std::remove(path.c_str());  // the mapping keeps the pages
  if (map == MAP_FAILED) {
    std::printf("\n(file-mapped decode skipped: mmap failed)\n");
    return;
  }
  std::vector<float> x(k), y(n);
  for (auto& v : x) v = next_value();
  const int repeats = o.quick ? 5 : 15;
  const double sec = median_seconds(repeats, [&] {
    for (std::size_t i = 0; i < count; ++i)
      linear(x.data(), 1, k, static_cast<const char*>(map) + i * bytes, WeightType::bf16, n, y.data(), nullptr);
  });
  munmap(map, bytes * count);
  const double gbs = double(bytes * count) / sec;
  std::printf("| bf16, file-mapped (MAP_SHARED, page cache) | MLP gate/up (k=2048, n=5632) | %d | %.3f | %.1f | %.0f%% |\n",
              threads(), sec / double(count) * 1e3, gbs / 1e9, 100.0 * gbs / g_bandwidth_all);
}

// --- 3. prefill (m = 512) ---------------------------------------------------

struct GemmShape {
  std::size_t m, k, n;
};

double nuvec_gflops(const GemmShape& s, WeightType t, Precision p, int repeats) {
  return measure_linear_rate(s.m, s.k, s.n, t, p, repeats).flops_per_second / 1e9;
}

#ifdef NUVEC_HAVE_OPENBLAS
// cblas_sbgemm exists only in OpenBLAS built with BUILD_BFLOAT16 (Debian 12's
// 0.3.21 is not), so look it up at run time.
using Sbgemm = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                        const bfloat16*, blasint, const bfloat16*, blasint, float, float*, blasint);
Sbgemm find_sbgemm() { return reinterpret_cast<Sbgemm>(dlsym(RTLD_DEFAULT, "cblas_sbgemm")); }

// GFLOP/s of OpenBLAS (0 where it has no such GEMM).
double openblas_gflops(const GemmShape& s, bool bf16, int repeats) {
  const double flops = 2.0 * double(s.m) * double(s.k) * double(s.n);
  AnonymousMapping y(s.m * s.n * 4);
  if (bf16) {
    const Sbgemm sbgemm = find_sbgemm();
    if (sbgemm == nullptr) return 0;
    AnonymousMapping x(s.m * s.k * 2), w(s.n * s.k * 2);
    fill_weights(x.as<void>(), WeightType::bf16, s.m * s.k);
    fill_weights(w.as<void>(), WeightType::bf16, s.n * s.k);
    // y = x . w^T: row-major x [m][k] times w [n][k] transposed.
    return flops / median_seconds(repeats, [&] {
             sbgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(s.m), int(s.n), int(s.k), 1.0f,
                          x.as<bfloat16>(), int(s.k), w.as<bfloat16>(), int(s.k), 0.0f, y.as<float>(), int(s.n));
           }) / 1e9;
  }
  AnonymousMapping x(s.m * s.k * 4), w(s.n * s.k * 4);
  fill_weights(x.as<void>(), WeightType::f32, s.m * s.k);
  fill_weights(w.as<void>(), WeightType::f32, s.n * s.k);
  return flops / median_seconds(repeats, [&] {
           cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(s.m), int(s.n), int(s.k), 1.0f, x.as<float>(),
                       int(s.k), w.as<float>(), int(s.k), 0.0f, y.as<float>(), int(s.n));
         }) / 1e9;
}
#endif

void prefill(const Options& o) {
  const int repeats = o.quick ? 3 : 9;
  std::vector<GemmShape> shapes = {{512, 2048, 2048}, {512, 2048, 5632}, {512, 5632, 2048}};
  if (o.quick) shapes.resize(1);
  const int all = threads();
  std::printf("\n## Prefill: m = 512 (GEMM), GFLOP/s (2mkn / time), median of %d calls, %d threads\n\n", repeats,
              all);

  struct Row {
    std::string what;
    double bf16 = 0, f16 = 0, f32 = 0;
    double of(WeightType t) const { return t == WeightType::bf16 ? bf16 : t == WeightType::f16 ? f16 : f32; }
  };
  std::vector<std::pair<GemmShape, std::vector<Row>>> table;
  // nuvec first: OpenBLAS's threads spin for a while after each call and
  // would steal the cores from whatever runs next.
  for (const GemmShape& s : shapes) {
    std::vector<Row> rows;
    rows.push_back({"nuvec linear()", nuvec_gflops(s, WeightType::bf16, Precision::fast, repeats),
                    nuvec_gflops(s, WeightType::f16, Precision::fast, repeats),
                    nuvec_gflops(s, WeightType::f32, Precision::fast, repeats)});
    rows.push_back({"nuvec linear(), Precision::exact", nuvec_gflops(s, WeightType::bf16, Precision::exact, repeats),
                    0, 0});
    table.push_back({s, rows});
  }
  // The micro-kernel's own ceiling (measure_matmul_ceiling): every thread
  // at once on its own 480x256x512 product, whose panels stay in L1/L2.
  const auto ceiling_of = [&](WeightType t) {
    return measure_matmul_ceiling(t, Precision::fast, repeats * 10).flops_per_second / 1e9;
  };
  const Row ceiling{"kernel ceiling: " + std::to_string(all) + " threads, each alone on 480x256x512",
                    ceiling_of(WeightType::bf16), ceiling_of(WeightType::f16), ceiling_of(WeightType::f32)};
#ifdef NUVEC_HAVE_OPENBLAS
  openblas_set_num_threads(all);
  for (auto& [s, rows] : table) {
    const double sb = openblas_gflops(s, true, repeats);
    const double sg = openblas_gflops(s, false, repeats);
    if (sb > 0) rows.push_back({"OpenBLAS sbgemm (bf16 x, bf16 W)", sb, 0, 0});
    rows.push_back({"OpenBLAS sgemm (f32 x, f32 W)", 0, 0, sg});
  }
  std::printf("OpenBLAS: %s, core %s; cblas_sbgemm: %s\n\n", openblas_get_config(), openblas_get_corename(),
              find_sbgemm() ? "present" : "absent (built without BUILD_BFLOAT16)");
#else
  std::printf("OpenBLAS: not built in (libopenblas-dev missing at configure time)\n\n");
#endif

  const auto cell = [](double v) { return v > 0 ? std::to_string(static_cast<int>(v + 0.5)) : std::string(); };
  std::printf("| shape m x k x n | GEMM | bf16 W | f16 W | f32 W |\n|---|---|---:|---:|---:|\n");
  for (const auto& [s, rows] : table)
    for (const Row& r : rows)
      std::printf("| %zux%zux%zu | %s | %s | %s | %s |\n", s.m, s.k, s.n, r.what.c_str(), cell(r.bf16).c_str(),
                  cell(r.f16).c_str(), cell(r.f32).c_str());
  std::printf("| | %s | %s | %s | %s |\n", ceiling.what.c_str(), cell(ceiling.bf16).c_str(),
              cell(ceiling.f16).c_str(), cell(ceiling.f32).c_str());

  // The roofline of a dtype: the best of every GEMM measured for it at that
  // shape and the kernel ceiling. OpenBLAS has no f16 GEMM; linear() widens
  // f16 to f32, so f32's GEMMs count for f16 too.
  std::printf("\n| shape | weights | linear() GFLOP/s | roofline GFLOP/s | from | linear() / roofline |\n");
  std::printf("|---|---|---:|---:|---|---:|\n");
  for (const auto& [s, rows] : table) {
    for (WeightType t : {WeightType::bf16, WeightType::f16, WeightType::f32}) {
      double best = ceiling.of(t);
      std::string from = "kernel ceiling";
      for (const Row& r : rows) {
        const double v = std::max(r.of(t), t == WeightType::f16 ? r.f32 : 0.0);
        if (v > best) {
          best = v;
          from = r.what;
        }
      }
      const double ours = rows[0].of(t);
      std::printf("| %zux%zux%zu | %s | %.0f | %.0f | %s | %.0f%% |\n", s.m, s.k, s.n, name(t), ours, best,
                  from.c_str(), 100.0 * ours / best);
    }
  }
}

// --- 4. AMX (where the CPU has it) ----------------------------------------

// GFLOP/s of one linear() entry point on random data of this shape (x, W
// and y mapped outside the allocator, the workspace `workspace_bytes`),
// median of `repeats` after one.
template <class F>
double entry_gflops(const GemmShape& s, int repeats, std::size_t workspace_bytes, F&& entry) {
  namespace d = nuvec::lm::kernels::detail;
  AnonymousMapping x(s.m * s.k * 4), w(s.n * s.k * 2), y(s.m * s.n * 4);
  AnonymousMapping ws(workspace_bytes);
  for (std::size_t i = 0; i < s.m * s.k; ++i) x.as<float>()[i] = next_value();
  fill_weights(w.as<void>(), WeightType::bf16, s.n * s.k);
  const d::LinearCall call{x.as<float>(), s.m, s.k, w.as<void>(), WeightType::bf16,
                           s.n, y.as<float>(), ws.as<void>(), Precision::fast};
  return 2.0 * double(s.m) * double(s.k) * double(s.n) / median_seconds(repeats, [&] { entry(call); }) / 1e9;
}

// The prefill products of the two models measured (the built-in one:
// hidden 1024, MLP 2816, 4 KV heads of 64; the 1.1B shape: hidden 2048, MLP
// 5632, 4 KV heads of 64) on the AVX-512 BF16 path and the AMX path, side by
// side, against the tile unit's peak (nothing but tdpbf16ps on loaded tiles)
// and what its loads leave of it (measure_amx_tile_load_rate: the
// micro-block's four tile loads a step, from L1, L2 or beyond, W's rows 4
// KiB apart as linear_amx() loads them, with and without prefetch).
void amx(const Options& o) {
  namespace d = nuvec::lm::kernels::detail;
  if (!isa_allowed(Isa::amx)) {
    std::printf("\n## AMX\n\nThis CPU has no AMX-BF16 (or Linux refused the tile data): section skipped.\n");
    return;
  }
  const int repeats = o.quick ? 3 : 9;
  const double peak = measure_amx_tile_peak().flops_per_second / 1e9;
  std::printf("\n## AMX: bf16 W, GFLOP/s, median of %d calls, %d threads\n\n", repeats, threads());
  std::printf("Tile unit peak (tdpbf16ps on loaded tiles, all threads at once): %.0f GFLOP/s\n\n", peak);

  struct Loads {
    const char* what;
    TileLoadPattern pattern;
  };
  const Loads loads[] = {
      {"16 KiB each (L1)", {16u << 10}},
      {"128 KiB each (L2), contiguous", {128u << 10}},
      {"128 KiB each (L2), contiguous, prefetch B", {128u << 10, false, 1}},
      {"128 KiB each (L2), contiguous, prefetch A and B", {128u << 10, false, 2}},
      {"128 KiB each (L2), A in rows 4 KiB apart", {128u << 10, true}},
      {"128 KiB each (L2), A in rows 4 KiB apart, prefetch A and B", {128u << 10, true, 2}},
      {"8 MiB each (beyond L2), contiguous", {8u << 20}},
      {"8 MiB each (beyond L2), contiguous, prefetch A and B", {8u << 20, false, 2}},
  };
  std::printf("| tiles loaded each step (2 A + 2 B, 4 products) from | GFLOP/s | of the tile peak |\n|---|---:|---:|\n");
  for (const Loads& l : loads) {
    if (o.quick && l.pattern.region_bytes > (1u << 20)) continue;
    const double v = measure_amx_tile_load_rate(l.pattern, repeats) / 1e9;
    std::printf("| %s | %.0f | %.0f%% |\n", l.what, v, 100.0 * v / peak);
  }

  std::printf("\n| shape m x k x n | AVX-512 BF16 | AMX (linear) | AMX / AVX-512 BF16 | AMX / tile peak |\n"
              "|---|---:|---:|---:|---:|\n");
  const std::vector<GemmShape> shapes = {{512, 1024, 1024}, {512, 1024, 256},  {512, 1024, 2816}, {512, 2816, 1024},
                                         {512, 2048, 2048}, {512, 2048, 256},  {512, 2048, 5632}, {512, 5632, 2048},
                                         {2048, 2048, 5632}};
  for (const GemmShape& s : shapes) {
    if (o.quick && s.k != 2048) continue;
    const std::size_t ws = d::workspace_amx(s.m, s.k, s.n, WeightType::bf16);
    const double avx =
        entry_gflops(s, repeats, ws, [](const d::LinearCall& c) { d::linear_with(Isa::avx512bf16, c); });
    const double tiles = entry_gflops(s, repeats, ws, [](const d::LinearCall& c) { d::linear_with(Isa::amx, c); });
    std::printf("| %zux%zux%zu | %.0f | %.0f | %.2f | %.0f%% |\n", s.m, s.k, s.n, avx, tiles, tiles / avx,
                100.0 * tiles / peak);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--only" && i + 1 < argc) {
      o.only = argv[++i];
    } else if (a == "--scratch" && i + 1 < argc) {
      o.scratch = argv[++i];
    } else if (a == "--threads" && i + 1 < argc) {
      o.threads = std::stoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--threads N] [--only bandwidth|decode|prefill|amx] [--scratch DIR]\n", argv[0]);
      return 2;
    }
  }
  if (o.threads > 0) set_threads(o.threads);
  std::printf("# nuvec_roofline\n\n%s; %d threads; linear() instruction set: %s\n", cpu_model().c_str(), threads(),
              linear_isa());
  if (o.only.empty() || o.only == "bandwidth" || o.only == "decode") {
    const OtherLoad load;
    bandwidth(o);
    load.report();
  }
  if (o.only.empty() || o.only == "decode") {
    const OtherLoad load;
    decode(o);
    decode_mapped(o);
    load.report();
  }
  if (o.only.empty() || o.only == "prefill") {
    const OtherLoad load;
    prefill(o);
    load.report();
  }
  if (o.only.empty() || o.only == "amx") {
    const OtherLoad load;
    amx(o);
    load.report();
  }
  return 0;
}
