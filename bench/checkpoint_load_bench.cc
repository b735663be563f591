// How fast a checkpoint is ready, and what private memory it costs, side by
// side in one run (issue 3's scenario):
//   aligned file:   load_safetensors (map + parse)  vs  reading the whole file with parallel pread
//   unaligned file: load_safetensors (one buffer)   vs  a plain sequential read (cat FILE >/dev/null)
// Page cache warm. Repetitions interleave the four, medians are reported.
//
// Usage: nuvec_checkpoint_load_bench [--dir DIR] [--layers N] [--repetitions R]
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "llama_checkpoint.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/nuvec.h"
#include "support/median.h"

namespace {

using nuvec_bench::median;

using Clock = std::chrono::steady_clock;

// Anonymous (private) resident bytes of this process: what a copy costs.
std::size_t rss_anon() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "RssAnon:") {
      std::size_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    in.ignore(1 << 16, '\n');
  }
  return 0;
}

struct Sample {
  double ms = 0;
  std::int64_t anon_added = 0;
  std::size_t peak_with_mapped = 0;
};

// Runs `load` (which returns something holding the loaded bytes), measuring
// the time to ready and the private memory held while it is alive.
template <class Load>
Sample measure(Load load) {
  const std::size_t before = rss_anon();
  const auto t0 = Clock::now();
  [[maybe_unused]] auto held = load();  // alive until measured
  const auto t1 = Clock::now();
  Sample s;
  s.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  s.anon_added = static_cast<std::int64_t>(rss_anon()) - static_cast<std::int64_t>(before);
  return s;
}

// The whole file into fresh anonymous memory with one pread stream per core.
struct WholeFile {
  void* data = nullptr;
  std::size_t size = 0;
  ~WholeFile() {
    if (data) munmap(data, size);
  }
};
std::unique_ptr<WholeFile> pread_whole(const std::filesystem::path& path) {
  auto out = std::make_unique<WholeFile>();
  out->size = std::filesystem::file_size(path);
  out->data = mmap(nullptr, out->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const int fd = open(path.c_str(), O_RDONLY);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t chunk = (out->size + threads - 1) / threads;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const std::size_t begin = std::min(out->size, t * chunk), end = std::min(out->size, begin + chunk);
      for (std::size_t at = begin; at < end;) {
        const ssize_t n = pread(fd, static_cast<char*>(out->data) + at, std::min<std::size_t>(end - at, 8 << 20), at);
        if (n <= 0) std::abort();
        at += static_cast<std::size_t>(n);
      }
    });
  }
  for (auto& w : workers) w.join();
  close(fd);
  return out;
}

// `cat FILE >/dev/null`: read() through one reused 1 MiB buffer.
int sequential_read(const std::filesystem::path& path) {
  static std::vector<char> buffer(1 << 20);
  const int fd = open(path.c_str(), O_RDONLY);
  while (read(fd, buffer.data(), buffer.size()) > 0) {
  }
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir = "build/bench-data";
  int layers = 16;
  int repetitions = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir") dir = argv[i + 1];
    else if (flag == "--layers") layers = std::atoi(argv[i + 1]);
    else if (flag == "--repetitions") repetitions = std::atoi(argv[i + 1]);
  }
  std::filesystem::create_directories(dir);
  const auto aligned = dir / fmt::format("llama-{}l-aligned.safetensors", layers);
  const auto unaligned = dir / fmt::format("llama-{}l-unaligned.safetensors", layers);
  nuvec::bench::write_llama_checkpoints(aligned, unaligned, layers);
  sequential_read(aligned);  // warm the page cache
  sequential_read(unaligned);

  const std::size_t tensors = nuvec::io::read_safetensors_header(aligned).tensors.size();
  fmt::print("checkpoint: {} tensors, aligned {} ({}), unaligned {} ({})\n", tensors, aligned.string(),
             nuvec::format_bytes(std::filesystem::file_size(aligned)), unaligned.string(), nuvec::format_bytes(std::filesystem::file_size(unaligned)));

  std::vector<Sample> map_s, pread_s, read_s, cat_s;
  const auto load_aligned = [&] {
    auto device = nuvec::Device::create_cpu();
    Sample s = measure([&] {
      auto f = nuvec::io::load_safetensors(*device, aligned);
      if (f.sources().front().load_path != nuvec::io::LoadPath::mapped) std::abort();
      return f;
    });
    s.peak_with_mapped = device->memory().peak_with_mapped;
    map_s.push_back(s);
  };
  const auto load_unaligned = [&] {
    auto device = nuvec::Device::create_cpu();
    Sample s = measure([&] {
      auto f = nuvec::io::load_safetensors(*device, unaligned);
      if (f.sources().front().load_path != nuvec::io::LoadPath::read) std::abort();
      return f;
    });
    s.peak_with_mapped = device->memory().peak_with_mapped;
    read_s.push_back(s);
  };
  const auto read_whole = [&] { pread_s.push_back(measure([&] { return pread_whole(aligned); })); };
  const auto cat = [&] { cat_s.push_back(measure([&] { return sequential_read(unaligned); })); };
  // Two pairs, each side by side, alternating which goes first. The
  // unaligned pair runs first: the naive pread baseline fills memory with
  // small pages, and a huge-page buffer allocated right after it pays for
  // compaction (see bench/README.md), which would measure the baseline's
  // after-effects rather than the loader.
  for (int r = 0; r < repetitions; ++r) {
    if (r % 2) { cat(); load_unaligned(); } else { load_unaligned(); cat(); }
  }
  for (int r = 0; r < repetitions; ++r) {
    if (r % 2) { read_whole(); load_aligned(); } else { load_aligned(); read_whole(); }
  }

  const auto ms = [](const std::vector<Sample>& v) {
    std::vector<double> x;
    for (const Sample& s : v) x.push_back(s.ms);
    return median(x);
  };
  const auto anon = [](const std::vector<Sample>& v) {
    std::vector<double> x;
    for (const Sample& s : v) x.push_back(static_cast<double>(s.anon_added));
    return median(x);
  };
  const double aligned_bytes = static_cast<double>(std::filesystem::file_size(aligned));
  const double unaligned_bytes = static_cast<double>(std::filesystem::file_size(unaligned));
  fmt::print("\n| what | median ms | private memory added (RssAnon) | of the file |\n|---|---:|---:|---:|\n");
  const auto row = [&](const char* what, const std::vector<Sample>& v, double bytes) {
    fmt::print("| {} | {:.2f} | {} | {:.3f}% |\n", what, ms(v), nuvec::format_bytes(static_cast<std::uint64_t>(std::max(0.0, anon(v)))),
               100.0 * anon(v) / bytes);
  };
  row("aligned: load_safetensors (map + parse)", map_s, aligned_bytes);
  row("aligned: parallel pread of the whole file", pread_s, aligned_bytes);
  row("unaligned: load_safetensors (read into one buffer)", read_s, unaligned_bytes);
  row("unaligned: sequential read, 1 MiB buffer (cat)", cat_s, unaligned_bytes);
  fmt::print("\nratios (medians, same run): map+parse / pread = {:.4f}; unaligned load / sequential read = {:.2f}\n",
             ms(map_s) / ms(pread_s), ms(read_s) / ms(cat_s));
  fmt::print("unaligned load: peak_with_mapped {} = {:.3f}x the tensor bytes' file size (one copy at its peak)\n",
             nuvec::format_bytes(read_s.front().peak_with_mapped), read_s.front().peak_with_mapped / unaligned_bytes);
  fmt::print("aligned load: peak_with_mapped {} (the mapping)\n", nuvec::format_bytes(map_s.front().peak_with_mapped));
  fmt::print("repetitions: {}\n", repetitions);
  const auto samples = [](const char* what, const std::vector<Sample>& v) {
    std::vector<std::string> x;
    for (const Sample& s : v) x.push_back(fmt::format("{:.1f}", s.ms));
    fmt::print("samples, ms, in run order: {}: {}\n", what, fmt::join(x, " "));
  };
  samples("map+parse", map_s);
  samples("pread", pread_s);
  samples("unaligned load", read_s);
  samples("sequential read", cat_s);
  return 0;
}
