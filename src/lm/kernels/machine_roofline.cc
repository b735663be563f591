#include "lm/kernels/machine_roofline.h"

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/measurement.h"
#include "nuvec/error.h"

namespace nuvec::lm::kernels {
namespace {

using Clock = std::chrono::steady_clock;

// Sums 64-bit words with eight independent chains (plain x86-64 code reads
// 16 bytes a cycle this way, several times what one core's memory path
// delivers); the AVX2 version reads 32-byte vectors.
std::uint64_t sum_words(const std::uint64_t* p, std::size_t words) {
  std::uint64_t s[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= words; i += 8)
    for (int l = 0; l < 8; ++l) s[l] += p[i + l];
  for (; i < words; ++i) s[0] += p[i];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) std::uint64_t sum_words_avx2(const std::uint64_t* p, std::size_t words) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  std::size_t i = 0;
  for (; i + 16 <= words; i += 16) {
    a = _mm256_add_epi64(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    b = _mm256_add_epi64(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    c = _mm256_add_epi64(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    d = _mm256_add_epi64(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  alignas(32) std::uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + sum_words(p + i, words - i);
}
#endif

std::uint64_t sum_any(const std::uint64_t* p, std::size_t words) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (isa_allowed(Isa::avx2)) return sum_words_avx2(p, words);
#endif
  return sum_words(p, words);
}

}  // namespace

ReadBandwidth measure_read_bandwidth(int threads_n, std::size_t bytes, int passes, Pages pages) {
  if (threads_n < 1) threads_n = threads();
  if (bytes < (std::size_t{1} << 20) || passes < 1)
    throw InvalidArgument("measure_read_bandwidth: needs at least 1 MiB and 1 pass (got " + std::to_string(bytes) +
                          " bytes, " + std::to_string(passes) + " passes)");
  const std::size_t words = bytes / 8;
  AnonymousMapping buffer(words * 8);
  auto* data = buffer.as<std::uint64_t>();
  if (pages == Pages::huge) madvise(data, words * 8, MADV_HUGEPAGE);  // a hint; no error if refused
  for (std::size_t i = 0; i < words; ++i) data[i] = i;  // fault every page in before timing

  // One thread per share; each pass starts when the main thread opens the
  // gate and ends when the last share is summed.
  const auto share = [&](int t) {
    const std::size_t begin = words * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads_n);
    const std::size_t end = words * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(threads_n);
    return std::pair{begin, end};
  };
  std::atomic<int> gate{0}, done{0};
  std::atomic<std::uint64_t> sink{0};
  std::vector<std::thread> helpers;
  const int total = passes + 1;
  for (int t = 1; t < threads_n; ++t)
    helpers.emplace_back([&, t] {
      for (int pass = 1; pass <= total; ++pass) {
        while (gate.load(std::memory_order_acquire) < pass) std::this_thread::yield();
        const auto [b, e] = share(t);
        sink.fetch_add(sum_any(data + b, e - b), std::memory_order_relaxed);
        done.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  std::vector<double> seconds;
  for (int pass = 1; pass <= total; ++pass) {
    const auto start = Clock::now();
    gate.store(pass, std::memory_order_release);
    const auto [b, e] = share(0);
    sink.fetch_add(sum_any(data + b, e - b), std::memory_order_relaxed);
    while (done.load(std::memory_order_acquire) < pass * (threads_n - 1)) std::this_thread::yield();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (pass > 1) seconds.push_back(s);
  }
  for (auto& h : helpers) h.join();
  const std::uint64_t expected = (words - 1) * words / 2 * static_cast<std::uint64_t>(total);
  if (sink.load() != expected) throw std::logic_error("measure_read_bandwidth: the sums are wrong");
  return {static_cast<double>(words * 8) / median(seconds), threads_n, words * 8, passes, pages};
}

std::size_t last_level_cache_bytes() {
  // index0..: each cache of cpu0, its level and its size ("260M", "4096K").
  std::size_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_file(dir + "level"), size_file(dir + "size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size) || size.empty()) continue;
    std::size_t unit = 1;
    if (size.back() == 'K') unit = std::size_t{1} << 10;
    if (size.back() == 'M') unit = std::size_t{1} << 20;
    if (size.back() == 'G') unit = std::size_t{1} << 30;
    std::size_t value = 0;
    for (const char c : size) {
      if (c < '0' || c > '9') break;
      value = value * 10 + static_cast<std::size_t>(c - '0');
    }
    if (level >= best_level) best_level = level, best = value * unit;
  }
  return best;
}

ReadBandwidth measure_read_bandwidth_bound() {
  const ReadBandwidth normal = measure_read_bandwidth(threads(), std::size_t{1} << 30, 5, Pages::normal);
  const ReadBandwidth huge = measure_read_bandwidth(threads(), std::size_t{1} << 30, 5, Pages::huge);
  return huge.bytes_per_second > normal.bytes_per_second ? huge : normal;
}

namespace {

// Inputs of one product, random, in their own mappings.
struct Product {
  Product(std::size_t m, std::size_t k, std::size_t n, WeightType type)
      : m(m), k(k), n(n), type(type), x(m * k * 4), w(n * k * (type == WeightType::f32 ? 4 : 2)), y(m * n * 4),
        ws(linear_workspace_bytes(m, k, n, type)) {
    fill();
  }
  void run(Precision precision) const {
    linear(x.as<float>(), m, k, w.as<void>(), type, n, y.as<float>(), ws.as<void>(), precision);
  }
  std::size_t m, k, n;
  WeightType type;
  AnonymousMapping x, w, y, ws;

 private:
  void fill();
};

void Product::fill() {
  // Values in [-1, 1): f32 bits, or their top halves for f16/bf16 (which,
  // read as f16, is a finite number of magnitude below 2).
  std::uint32_t state = 12345;
  const auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
  };
  for (std::size_t i = 0; i < m * k; ++i) x.as<float>()[i] = next();
  for (std::size_t i = 0; i < n * k; ++i) {
    const float v = next();
    if (type == WeightType::f32) {
      w.as<float>()[i] = v;
    } else {
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      w.as<std::uint16_t>()[i] = static_cast<std::uint16_t>(bits >> 16);
    }
  }
}

// Median seconds of `calls` runs after an untimed one.
double median_call_seconds(const Product& p, Precision precision, int calls) {
  return median_seconds(calls, [&] { p.run(precision); });
}

}  // namespace

MatmulRate measure_linear_rate(std::size_t m, std::size_t k, std::size_t n, WeightType type, Precision precision,
                               int calls) {
  if (m == 0 || k == 0 || n == 0 || calls < 1)
    throw InvalidArgument("measure_linear_rate: needs a non-empty shape and at least one call");
  const Product p(m, k, n, type);
  return {2.0 * double(m) * double(k) * double(n) / median_call_seconds(p, precision, calls), m, k, n, type,
          precision, calls};
}

MatmulRate measure_matmul_ceiling(WeightType type, Precision precision, int calls) {
  if (calls < 1) throw InvalidArgument("measure_matmul_ceiling: needs at least one call");
  constexpr std::size_t m = 480, k = 256, n = 512;
  const int count = threads();
  std::vector<double> rates(static_cast<std::size_t>(count), 0.0);
  std::atomic<int> arrived{0};
  // One index per thread: each waits for the others before timing, so all
  // run at once (and an index cannot go to a thread that is still waiting).
  // Inside the loop body linear() runs on its calling thread alone.
  parallel_for(static_cast<std::size_t>(count), [&](std::size_t i) {
    const Product p(m, k, n, type);
    arrived.fetch_add(1);
    const auto give_up = Clock::now() + std::chrono::seconds(1);
    while (arrived.load() < count && Clock::now() < give_up) std::this_thread::yield();
    rates[i] = 2.0 * double(m) * double(k) * double(n) / median_call_seconds(p, precision, calls);
  });
  double total = 0;
  for (double r : rates) total += r;
  return {total, m, k, n, type, precision, calls};
}

}  // namespace nuvec::lm::kernels
