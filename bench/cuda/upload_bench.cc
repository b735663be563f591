// Loading a safetensors checkpoint onto the GPU, side by side in one run:
//  1. the ceilings: plain cudaMemcpy host-to-device of 1 GiB from pinned and
//     from pageable memory, and the file's size in 16 MiB copies from a
//     128 MiB pinned ring over 8 streams (DMA alone, chunked as uploads are);
//  2. the host side alone (no GPU): the file read into one buffer per thread
//     by T threads, buffers of several sizes, with pread and with memcpy from
//     a fresh mapping (munmap included): how fast staging can be filled;
//  3. nuvec's upload (load_safetensors + cuda::upload + dropping the host
//     checkpoint) in several shapes, three rounds. For each: seconds, GB/s
//     (10^9 B/s) over the total, share of the pinned rate, and the host
//     memory it added: peaks of RssAnon (private) and of RssFile + RssShmem
//     (the file's page-cache pages mapped in), sampled every millisecond,
//     over the run's baseline.
//
// The file is written first and stays in the page cache (a warm start: the
// disk is not measured). With `keep`, it stays for the safetensors
// comparison (bench/cuda/safetensors_load.py) and its path is printed.
// Usage: nuvec_cuda_upload_bench [GiB=4] [dir=/tmp] [keep]
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "nuvec/cuda_upload.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/nuvec.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGiB = kMiB << 10;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// kB of /proc/self/status fields, in the order asked.
std::vector<std::size_t> status_kb(std::initializer_list<const char*> fields) {
  std::ifstream in("/proc/self/status");
  std::vector<std::size_t> out(fields.size(), 0);
  std::string line;
  while (std::getline(in, line)) {
    std::size_t i = 0;
    for (const char* field : fields) {
      const std::size_t n = std::strlen(field);
      if (line.compare(0, n, field) == 0) out[i] = std::strtoull(line.c_str() + n + 1, nullptr, 10);
      ++i;
    }
  }
  return out;
}

// Peaks of RssAnon and of RssFile + RssShmem over the sampler's life, in bytes.
class RssSampler {
 public:
  RssSampler() : thread_([this] {
      while (!stop_.load()) {
        const auto kb = status_kb({"RssAnon:", "RssFile:", "RssShmem:"});
        anon_ = std::max(anon_.load(), kb[0] * 1024);
        file_ = std::max(file_.load(), (kb[1] + kb[2]) * 1024);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }) {}
  ~RssSampler() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::size_t anon() const { return anon_; }
  std::size_t file() const { return file_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> anon_{0}, file_{0};
  std::thread thread_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median GB/s of five 1 GiB host-to-device copies from `host`.
double copy_rate(const void* host, void* device) {
  std::vector<double> rates;
  for (int i = 0; i < 6; ++i) {
    const double t = now();
    check(cudaMemcpy(device, host, kGiB, cudaMemcpyHostToDevice), "cudaMemcpy");
    if (i > 0) rates.push_back(kGiB / (now() - t) / 1e9);
  }
  return median(rates);
}

// Median GB/s of copying `total` bytes in 16 MiB pieces from a 128 MiB pinned
// ring, round robin over 8 streams, into `device` (at least `total` bytes).
double chunked_rate(std::size_t total, void* device) {
  constexpr std::size_t chunk = 16 * kMiB, ring = 128 * kMiB;
  constexpr int streams = 8;
  void* pinned = nullptr;
  check(cudaHostAlloc(&pinned, ring, 0), "cudaHostAlloc");
  std::memset(pinned, 1, ring);
  cudaStream_t s[streams];
  for (cudaStream_t& x : s) check(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<double> rates;
  for (int round = 0; round < 4; ++round) {
    const double t = now();
    for (std::size_t done = 0, i = 0; done < total; done += chunk, ++i) {
      const std::size_t n = std::min(chunk, total - done);
      check(cudaMemcpyAsync(static_cast<std::byte*>(device) + done, static_cast<std::byte*>(pinned) + done % ring, n,
                            cudaMemcpyHostToDevice, s[i % streams]),
            "cudaMemcpyAsync");
    }
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    if (round > 0) rates.push_back(total / (now() - t) / 1e9);
  }
  for (cudaStream_t x : s) cudaStreamDestroy(x);
  check(cudaFreeHost(pinned), "cudaFreeHost");
  return median(rates);
}

// GB/s of reading the whole file into `chunk`-byte buffers (one per thread,
// faulted in beforehand) by `threads` threads, chunk i by thread i % threads:
// with pread, or with memcpy from a mapping made for it (and unmapped in the
// time).
double fill_rate(const std::filesystem::path& path, std::size_t bytes, unsigned threads, std::size_t chunk,
                 bool through_mapping) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) std::exit(1);
  std::vector<std::vector<std::byte>> buffers(threads, std::vector<std::byte>(chunk, std::byte{1}));
  const double t = now();
  const std::byte* map = nullptr;
  if (through_mapping) map = static_cast<const std::byte*>(mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0));
  {
    std::vector<std::jthread> pool;
    for (unsigned k = 0; k < threads; ++k) {
      pool.emplace_back([&, k] {
        for (std::size_t at = k * chunk; at < bytes; at += threads * chunk) {
          const std::size_t n = std::min(chunk, bytes - at);
          if (map != nullptr) {
            std::memcpy(buffers[k].data(), map + at, n);
          } else if (pread(fd, buffers[k].data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) {
            std::exit(1);
          }
        }
      });
    }
  }
  if (map != nullptr) munmap(const_cast<std::byte*>(map), bytes);
  const double seconds = now() - t;
  close(fd);
  return bytes / seconds / 1e9;
}

struct Row {
  std::string what;
  double seconds, setup_seconds, upload_seconds, gbps;
  std::size_t anon, file, staging, read;
};

std::string filesystem_of(const std::filesystem::path& dir) {
  struct statfs s {};
  if (statfs(dir.c_str(), &s) != 0) return "?";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0x01021994: return "tmpfs";
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x794c7630: return "overlayfs";
    default: {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(s.f_type));
      return hex;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double gib = argc > 1 ? std::atof(argv[1]) : 4.0;
  const std::filesystem::path dir = argc > 2 ? argv[2] : "/tmp";
  const bool keep = argc > 3 && std::string(argv[3]) == "keep";
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "context");

  // The checkpoint: 64 MiB tensors and a few small ones, like a model's.
  const std::size_t total = static_cast<std::size_t>(gib * kGiB);
  const std::filesystem::path path = dir / "nuvec-upload-bench.safetensors";
  {
    std::vector<std::vector<std::byte>> data;
    std::vector<nuvec::io::TensorView> views;
    std::uint64_t x = 88172645463325252ull;
    for (std::size_t done = 0, i = 0; done < total; ++i) {
      const std::size_t n = i % 8 == 7 ? 4096 * 2 : std::min(64 * kMiB, total - done);
      data.emplace_back(n);
      auto* words = reinterpret_cast<std::uint64_t*>(data.back().data());
      for (std::size_t w = 0; w < n / 8; ++w) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        words[w] = x;
      }
      std::string name = "t";
      name += std::to_string(i);
      views.push_back({std::move(name), nuvec::io::DType::U8, {n}, data.back(), nullptr});
      done += n;
    }
    nuvec::io::save_safetensors(path, views);
  }
  const std::size_t file_bytes = std::filesystem::file_size(path);

  // 1. Ceilings.
  void* device = nullptr;
  void* pinned = nullptr;
  check(cudaMalloc(&device, file_bytes), "cudaMalloc");
  check(cudaHostAlloc(&pinned, kGiB, 0), "cudaHostAlloc");
  std::memset(pinned, 1, kGiB);
  std::vector<std::byte> pageable(kGiB, std::byte{1});
  const double pinned_rate = copy_rate(pinned, device);
  const double pageable_rate = copy_rate(pageable.data(), device);
  check(cudaFreeHost(pinned), "cudaFreeHost");
  pageable = {};
  pageable.shrink_to_fit();
  const double chunked = chunked_rate(file_bytes, device);
  check(cudaFree(device), "cudaFree");

  // 2. The host side alone.
  std::vector<std::string> fills;
  const auto fill = [&](unsigned threads, std::size_t chunk, bool mapping) {
    std::vector<double> r;
    for (int i = 0; i < 3; ++i) r.push_back(fill_rate(path, file_bytes, threads, chunk, mapping));
    char line[160];
    std::snprintf(line, sizeof line, "| %u | %zu MiB | %s | %.1f |", threads, chunk / kMiB,
                  mapping ? "memcpy from a fresh mapping" : "pread", median(r));
    fills.push_back(line);
  };
  for (const unsigned threads : {8u, 16u, 32u}) {
    for (const std::size_t chunk : {kMiB, 2 * kMiB, 4 * kMiB, 16 * kMiB}) fill(threads, chunk, false);
  }
  fill(16, 2 * kMiB, true);
  fill(16, 16 * kMiB, true);

  // 3. Uploads.
  std::vector<Row> rows;
  std::vector<std::string> order;
  const auto run = [&](const std::string& what, const nuvec::cuda::UploadOptions& options, bool wired) {
    if (std::find(order.begin(), order.end(), what) == order.end()) order.push_back(what);
    auto gpu = nuvec::Device::create_cuda(0);
    if (wired) gpu->set_wired_limit(nuvec::mapping_size(file_bytes));
    const auto base = status_kb({"RssAnon:", "RssFile:", "RssShmem:"});
    const std::size_t anon0 = base[0] * 1024, file0 = (base[1] + base[2]) * 1024;
    RssSampler sampler;
    const double t = now();
    nuvec::cuda::DeviceCheckpoint uploaded;
    {
      const auto host = nuvec::io::load_safetensors(*gpu, path);
      uploaded = nuvec::cuda::upload(*gpu, host, options);
    }
    const double seconds = now() - t;
    sampler.stop();
    const auto& r = uploaded.report();
    rows.push_back({what, seconds, r.setup_seconds, r.seconds, r.bytes / seconds / 1e9,
                    sampler.anon() - std::min(anon0, sampler.anon()), sampler.file() - std::min(file0, sampler.file()),
                    r.staging_bytes, r.read_bytes});
  };
  // Staged shapes: `pipelines` threads and streams, `slots` slots of
  // `slot_mib` each per pipeline; waits asleep (blocking) or spinning.
  const auto staged = [&](unsigned pipelines, unsigned slots, std::size_t slot_mib, bool blocking, bool read_files) {
    const nuvec::cuda::UploadOptions options{.staging_bytes = pipelines * slots * slot_mib * kMiB,
                                             .pipelines = pipelines,
                                             .slots = slots,
                                             .blocking_wait = blocking,
                                             .read_files = read_files};
    const nuvec::cuda::UploadOptions d;
    const bool is_default = options.staging_bytes == d.staging_bytes && pipelines == d.pipelines &&
                            slots == d.slots && blocking == d.blocking_wait && read_files == d.read_files;
    char what[200];
    std::snprintf(what, sizeof what, "%s, %u x %u x %zu MiB (%zu MiB), %s%s",
                  read_files ? "read file" : "memcpy via mapping", pipelines, slots, slot_mib,
                  pipelines * slots * slot_mib, blocking ? "blocking" : "spin", is_default ? " (default)" : "");
    run(what, options, false);
  };
  for (int repeat = 0; repeat < 5; ++repeat) {
    staged(16, 2, 1, true, true);
    staged(16, 2, 1, false, true);
    staged(16, 1, 2, true, true);
    staged(16, 1, 2, false, true);
    staged(16, 2, 2, true, true);
    staged(16, 2, 4, true, true);
    staged(8, 2, 2, true, true);
    staged(24, 2, 1, true, true);
    staged(32, 2, 1, true, true);
    staged(16, 1, 4, false, true);
    staged(8, 1, 16, false, true);
    staged(16, 2, 1, true, false);
  }
  run("wired mapping (cudaHostRegister), no staging", {}, true);
  run("pin source, 64 MiB window, 4 pipelines", {.staging_bytes = 64 * kMiB, .pipelines = 4, .pin_source = true},
      false);

  std::printf("file: %.2f GiB (%zu B) on %s (%s), page cache warm; %u host threads\n", file_bytes / double(kGiB),
              file_bytes, dir.c_str(), filesystem_of(dir).c_str(), std::thread::hardware_concurrency());
  std::printf("pinned cudaMemcpy H2D: %.1f GB/s; pageable: %.1f GB/s (median of 5, 1 GiB)\n", pinned_rate,
              pageable_rate);
  std::printf("pinned, the file's size in 16 MiB copies over 8 streams: %.1f GB/s (median of 3)\n\n", chunked);
  std::printf("host side alone: the file into one buffer per thread (median of 3)\n\n"
              "| threads | buffer | how | GB/s |\n|---:|---:|---|---:|\n");
  for (const std::string& f : fills) std::printf("%s\n", f.c_str());
  std::printf("\nevery upload\n\n");
  std::printf(
      "| upload | total s | setup s | copy s | GB/s | of pinned | RssAnon peak + | RssFile+Shmem peak + | staging "
      "| read from file |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %.3f | %.3f | %.3f | %.1f | %.0f%% | %.0f MiB | %.0f MiB | %.0f MiB | %.0f MiB |\n",
                r.what.c_str(), r.seconds, r.setup_seconds, r.upload_seconds, r.gbps, 100 * r.gbps / pinned_rate,
                r.anon / double(kMiB), r.file / double(kMiB), r.staging / double(kMiB), r.read / double(kMiB));
  }
  std::printf("\nmedians of the rounds (by total time)\n\n");
  std::printf(
      "| upload | total s | GB/s | of pinned | of chunked pinned | RssAnon peak + (max) "
      "| RssFile+Shmem peak + (max) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  for (const std::string& what : order) {
    std::vector<double> seconds;
    std::size_t anon = 0, file = 0, bytes = 0;
    for (const Row& r : rows) {
      if (r.what != what) continue;
      seconds.push_back(r.seconds);
      anon = std::max(anon, r.anon);
      file = std::max(file, r.file);
      bytes = static_cast<std::size_t>(r.gbps * r.seconds * 1e9 + 0.5);
    }
    const double s = median(seconds), rate = bytes / s / 1e9;
    std::printf("| %s | %.3f | %.1f | %.0f%% | %.0f%% | %.0f MiB | %.0f MiB |\n", what.c_str(), s, rate,
                100 * rate / pinned_rate, 100 * rate / chunked, anon / double(kMiB), file / double(kMiB));
  }
  if (keep) {
    std::printf("\nkept: %s\n", path.c_str());
  } else {
    std::filesystem::remove(path);
  }
  return 0;
}
