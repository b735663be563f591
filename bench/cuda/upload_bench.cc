// Loading a safetensors checkpoint onto the GPU, side by side in one run.
//
// Modes (any of them, in this order):
//  bench        the ceilings (plain cudaMemcpy host-to-device of 1 GiB from
//               pinned and from pageable memory; the file's size in 4 MiB
//               copies from a pinned ring over 2 streams) and nuvec's upload
//               with default options (load_safetensors + cuda::upload +
//               dropping the host checkpoint), `rounds` times, each on a
//               fresh device: seconds, GB/s (10^9 B/s), share of the pinned
//               rate, the host memory it added (peaks, sampled every
//               millisecond, of RssAnon, private, and of RssFile + RssShmem,
//               the file's page-cache pages mapped in) and the peak of the
//               device's `wired` (its staging);
//  micro        where the time goes: DMA alone from pinned memory (ring in
//               cache or not, chunk size, streams); the host's copy rate;
//               pread alone into page-locked slots by T threads; both at once
//               on unrelated memory; cudaHostRegister's cost on anonymous
//               memory and on the file's mapping (whole, in chunks, from
//               several threads) and DMA straight from the registered file;
//  shapes       device buffers alone (the arena and whole blocks), then
//               uploads in many shapes (staged, pinned, both);
//  cold         the page cache dropped (echo 3 > /proc/sys/vm/drop_caches,
//               root only) before a pread of the file and before an upload.
//
// The file is written first and stays in the page cache (a warm start: the
// disk is not measured) except in `cold`. With `keep`, it stays for the
// safetensors comparison (bench/cuda/safetensors_load.py).
//  sweep        uploads in several shapes (pipelines, slots, streams, how the
//               staging is made, pinning the file's own pages), each shape
//               once per round in turn, `rounds` rounds: where each upload's
//               time goes (first copy, staging faulted in and page-locked,
//               buffers made) and the copy phase's rate;
//  sweep-staging  the same for how the staging is made (huge pages or not)
//               beside the best shapes of `sweep`;
//  sweep-default  the same table for the default options alone (what the
//               Python module's upload is compared with);
//  direct       O_DIRECT reads of the file into page-locked slots beside
//               buffered reads of it (page cache warm).
// `reuse` takes the file a run with `keep` left, if there.
// Usage: nuvec_cuda_upload_bench [GiB=4] [dir=/tmp] [bench] [sweep] [sweep-staging] [sweep-default] [direct] [micro] [shapes] [cold] [keep]
//        [reuse] [rounds=N]
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
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nuvec/cuda.h"
#include "nuvec/cuda_upload.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/nuvec.h"
#include "support/median.h"
#include "support/cuda_check.h"

namespace {

using nuvec_bench::median;
using nuvec_bench::check;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGiB = kMiB << 10;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Median of `n` calls of `f` (each returns a figure).
double median_of(int n, const std::function<double()>& f) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(f());
  return median(v);
}

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

// Peaks of RssAnon, of RssFile + RssShmem and of a device's `wired` over the
// sampler's life, in bytes.
class Sampler {
 public:
  explicit Sampler(const nuvec::Device& gpu)
      : thread_([this, &gpu] {
          while (!stop_.load()) {
            const auto kb = status_kb({"RssAnon:", "RssFile:", "RssShmem:"});
            anon_ = std::max(anon_.load(), kb[0] * 1024);
            file_ = std::max(file_.load(), (kb[1] + kb[2]) * 1024);
            wired_ = std::max(wired_.load(), gpu.memory().wired);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        }) {}
  ~Sampler() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::size_t anon() const { return anon_; }
  std::size_t file() const { return file_; }
  std::size_t wired() const { return wired_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> anon_{0}, file_{0}, wired_{0};
  std::thread thread_;
};

// Page-locked anonymous memory, as upload staging is made.
struct Pinned {
  explicit Pinned(std::size_t n) : bytes(n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) std::exit(1);
    madvise(p, n, MADV_HUGEPAGE);
    std::memset(p, 1, n);
    check(cudaHostRegister(p, n, cudaHostRegisterPortable), "cudaHostRegister");
    data = static_cast<std::byte*>(p);
  }
  ~Pinned() {
    cudaHostUnregister(data);
    munmap(data, bytes);
  }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  std::byte* data = nullptr;
  std::size_t bytes = 0;
};

// GB/s of `total` bytes copied host to device in `chunk`-byte copies from
// `ring` (cycled through), over `streams` streams in turn.
double dma_rate(const std::byte* ring, std::size_t ring_bytes, std::size_t chunk, int streams, std::size_t total,
                void* device) {
  std::vector<cudaStream_t> s(streams);
  for (cudaStream_t& x : s) check(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking), "cudaStreamCreate");
  const double t = now();
  for (std::size_t done = 0, i = 0; done < total; done += chunk, ++i) {
    const std::size_t n = std::min(chunk, total - done);
    check(cudaMemcpyAsync(static_cast<std::byte*>(device) + done, ring + done % (ring_bytes - chunk + 1), n,
                          cudaMemcpyHostToDevice, s[i % s.size()]),
          "cudaMemcpyAsync");
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const double rate = total / (now() - t) / 1e9;
  for (cudaStream_t x : s) cudaStreamDestroy(x);
  return rate;
}

// Median GB/s of five 1 GiB host-to-device cudaMemcpy from `host`.
double copy_rate(const void* host, void* device) {
  std::vector<double> rates;
  for (int i = 0; i < 6; ++i) {
    const double t = now();
    check(cudaMemcpy(device, host, kGiB, cudaMemcpyHostToDevice), "cudaMemcpy");
    if (i > 0) rates.push_back(kGiB / (now() - t) / 1e9);
  }
  return median(rates);
}

// Runs `work(k, stop)` on `threads` threads until told to stop; returns
// what they counted (bytes) and for how long they ran.
class Background {
 public:
  Background(unsigned threads, std::function<std::size_t(unsigned, const std::atomic<bool>&)> work) {
    start_ = now();
    for (unsigned k = 0; k < threads; ++k) {
      pool_.emplace_back([this, k, work] { bytes_ += work(k, stop_); });
    }
  }
  // GB/s over the run.
  double stop() {
    stop_ = true;
    pool_.clear();
    return bytes_ / (now() - start_) / 1e9;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> bytes_{0};
  double start_;
  std::vector<std::jthread> pool_;
};

// Reads the file into page-locked slots (two per thread, `chunk` each), chunk
// i by thread i % threads, round after round until `stop` (or once, when
// `once`). Returns the bytes read.
std::size_t read_into_slots(int fd, std::size_t file_bytes, unsigned k, unsigned threads, std::size_t chunk,
                            Pinned& slots, const std::atomic<bool>& stop, bool once) {
  std::size_t read = 0;
  int turn = 0;
  do {
    for (std::size_t at = k * chunk; at < file_bytes && !stop.load(std::memory_order_relaxed); at += threads * chunk) {
      const std::size_t n = std::min(chunk, file_bytes - at);
      std::byte* to = slots.data + (turn++ % 2) * chunk;
      if (pread(fd, to, n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) std::exit(1);
      read += n;
    }
  } while (!once && !stop.load());
  return read;
}

// GB/s of reading the whole file once by `threads` threads into their own
// page-locked slots.
double pread_rate(const std::filesystem::path& path, std::size_t file_bytes, unsigned threads, std::size_t chunk,
                  bool through_mapping = false) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  std::vector<std::unique_ptr<Pinned>> slots;
  for (unsigned k = 0; k < threads; ++k) slots.push_back(std::make_unique<Pinned>(2 * chunk));
  std::atomic<bool> stop{false};
  const double t = now();
  const std::byte* map = nullptr;
  if (through_mapping) map = static_cast<const std::byte*>(mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0));
  {
    std::vector<std::jthread> pool;
    for (unsigned k = 0; k < threads; ++k) {
      pool.emplace_back([&, k] {
        if (map == nullptr) {
          read_into_slots(fd, file_bytes, k, threads, chunk, *slots[k], stop, true);
          return;
        }
        int turn = 0;
        for (std::size_t at = k * chunk; at < file_bytes; at += threads * chunk) {
          std::memcpy(slots[k]->data + (turn++ % 2) * chunk, map + at, std::min(chunk, file_bytes - at));
        }
      });
    }
  }
  if (map != nullptr) munmap(const_cast<std::byte*>(map), file_bytes);
  const double rate = file_bytes / (now() - t) / 1e9;
  close(fd);
  return rate;
}

// GB/s of memcpy between two anonymous buffers of `bytes` split over `threads`.
double host_copy_rate(std::byte* from, std::byte* to, std::size_t bytes, unsigned threads) {
  const double t = now();
  {
    std::vector<std::jthread> pool;
    const std::size_t part = bytes / threads;
    for (unsigned k = 0; k < threads; ++k) {
      pool.emplace_back([=] { std::memcpy(to + k * part, from + k * part, part); });
    }
  }
  return bytes / (now() - t) / 1e9;
}

bool drop_caches() {
  sync();
  std::ofstream out("/proc/sys/vm/drop_caches");
  out << "3\n";
  out.close();
  return static_cast<bool>(out);
}

std::string filesystem_of(const std::filesystem::path& dir) {
  struct statfs s {};
  if (statfs(dir.c_str(), &s) != 0) return "?";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0x01021994: return "tmpfs";
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x794c7630: return "overlayfs";
    default: {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(s.f_type));
      return hex;
    }
  }
}

std::filesystem::path write_checkpoint(const std::filesystem::path& dir, std::size_t total) {
  // 64 MiB tensors and a few small ones, like a model's; random bytes.
  const std::filesystem::path path = dir / "nuvec-upload-bench.safetensors";
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
  return path;
}

struct Upload {
  double seconds, load, plan, setup, staging_ready, buffers, gbps;
  std::size_t anon, file, wired, staging, bytes;
  double faulted = 0, lock = 0;  // the staging: faulted in (from the upload's call), page-locking it took
};

// One upload on a fresh device: load + upload + drop the host checkpoint.
// Without `sample`, nothing watches it (the memory columns are then 0).
Upload upload_once(const std::filesystem::path& path, const nuvec::cuda::UploadOptions& options,
                   std::size_t wired_limit = 0, bool sample = true) {
  auto gpu = nuvec::Device::create_cuda(0);
  if (wired_limit != 0) gpu->set_wired_limit(wired_limit);
  const auto base = status_kb({"RssAnon:", "RssFile:", "RssShmem:"});
  const std::size_t anon0 = base[0] * 1024, file0 = (base[1] + base[2]) * 1024;
  std::optional<Sampler> sampler;
  if (sample) sampler.emplace(*gpu);
  const double t = now();
  double load = 0;
  nuvec::cuda::DeviceCheckpoint uploaded;
  {
    const auto host = nuvec::io::load_safetensors(*gpu, path);
    load = now() - t;
    uploaded = nuvec::cuda::upload(*gpu, host, options);
  }
  const double seconds = now() - t;
  if (sampler) sampler->stop();
  const std::size_t anon = sampler ? sampler->anon() : anon0, file = sampler ? sampler->file() : file0;
  const std::size_t wired = sampler ? sampler->wired() : 0;
  const auto& r = uploaded.report();
  return {seconds,
          load,
          r.plan_seconds,
          r.setup_seconds,
          r.staging_seconds,
          r.buffers_seconds,
          r.bytes / seconds / 1e9,
          anon - std::min(anon0, anon),
          file - std::min(file0, file),
          wired,
          r.staging_bytes,
          r.bytes,
          r.staging_faulted_seconds,
          r.staging_lock_seconds};
}

// Columns: total = load_safetensors + upload + dropping the host checkpoint;
// then, medians: the load; from the upload's call, its first copy, its
// staging ready, its last device buffer made.
void print_upload_header() {
  std::printf("| upload | rounds | total s, median (min-max) | load ms | plan ms | first copy ms | staging ready ms | "
              "buffers made ms | GB/s | of pinned | RssAnon peak + (max) | RssFile+Shmem peak + (max) | wired peak | "
              "staging |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
}

// Median of `rounds` uploads in one shape, as a table row.
void upload_row(const std::string& what, const std::filesystem::path& path, const nuvec::cuda::UploadOptions& options,
                int rounds, double pinned, std::size_t wired_limit = 0) {
  std::vector<double> seconds, loads, plans, setups, staging_ready, buffers;
  std::size_t anon = 0, file = 0, wired = 0, staging = 0, bytes = 0;
  for (int i = 0; i < rounds; ++i) {
    const Upload u = upload_once(path, options, wired_limit);
    seconds.push_back(u.seconds);
    loads.push_back(u.load);
    plans.push_back(u.plan);
    setups.push_back(u.setup);
    staging_ready.push_back(u.staging_ready);
    buffers.push_back(u.buffers);
    anon = std::max(anon, u.anon);
    file = std::max(file, u.file);
    wired = std::max(wired, u.wired);
    staging = u.staging;
    bytes = u.bytes;
  }
  const double s = median(seconds), rate = bytes / s / 1e9;
  std::printf("| %s | %d | %.3f (%.3f-%.3f) | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f%% | %.0f MiB | %.0f MiB | "
              "%.0f MiB | %.0f MiB |\n",
              what.c_str(), rounds, s, *std::min_element(seconds.begin(), seconds.end()),
              *std::max_element(seconds.begin(), seconds.end()), 1e3 * median(loads), 1e3 * median(plans),
              1e3 * median(setups),
              1e3 * median(staging_ready), 1e3 * median(buffers), rate, 100 * rate / pinned, anon / double(kMiB),
              file / double(kMiB), wired / double(kMiB), staging / double(kMiB));
  std::fflush(stdout);
}

// An upload's shape: staging pipelines, staging (slot and total), pinning
// (chunk and window), streams.
struct Shape {
  unsigned pipelines;
  std::size_t slot_mib, staging_mib, chunk_mib, pinned_mib;
  unsigned streams = 2;
  bool arena = false;  // device buffers from the arena (NUVEC_CUDA_ARENA=1) or whole cudaMalloc blocks

  nuvec::cuda::UploadOptions options() const {
    return {.staging_bytes = staging_mib * kMiB,
            .slot_bytes = (slot_mib != 0 ? slot_mib : 4) * kMiB,
            .pinned_bytes = pinned_mib * kMiB,
            .chunk_bytes = (chunk_mib != 0 ? chunk_mib : 32) * kMiB,
            .pipelines = pipelines,
            .streams = streams};
  }
  std::string name() const {
    char s[240];
    const char* buffers = arena ? "arena" : "blocks";
    if (pinned_mib == 0) {
      std::snprintf(s, sizeof s, "%s; staged only: %u pipelines, %zu x %zu MiB slots, %u streams", buffers, pipelines,
                    staging_mib / slot_mib, slot_mib, streams);
    } else if (staging_mib == 0) {
      std::snprintf(s, sizeof s, "%s; pinned only: %zu x %zu MiB chunks, %u streams", buffers, pinned_mib / chunk_mib,
                    chunk_mib, streams);
    } else {
      std::snprintf(s, sizeof s, "%s; both: %u pipelines, %zu x %zu MiB slots; %zu x %zu MiB chunks; %u streams",
                    buffers, pipelines, staging_mib / slot_mib, slot_mib, pinned_mib / chunk_mib, chunk_mib, streams);
    }
    return s;
  }
};

void set_arena(bool on) { setenv("NUVEC_CUDA_ARENA", on ? "1" : "0", 1); }

// GB/s of copying the file straight from its mapping, page-locked 32 MiB at a
// time on this thread, with at most three chunks locked: each chunk's copy is
// queued as soon as it is locked; before a fourth is locked the oldest is
// waited for and unlocked (`unlock_as_we_go`), or every chunk stays locked
// until the end (then unlocked, in the time).
double pin_window_rate(const std::filesystem::path& path, std::size_t file_bytes, void* device, bool unlock_as_we_go) {
  constexpr std::size_t chunk = 32 * kMiB;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  auto* map = static_cast<std::byte*>(mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0));
  cudaStream_t s[2];
  for (cudaStream_t& x : s) check(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<cudaEvent_t> done;
  std::vector<std::byte*> locked;
  const double t = now();
  for (std::size_t at = 0, i = 0; at + chunk <= file_bytes; at += chunk, ++i) {
    if (unlock_as_we_go && i >= 3) {
      check(cudaEventSynchronize(done[i - 3]), "cudaEventSynchronize");
      check(cudaHostUnregister(locked[i - 3]), "cudaHostUnregister");
    }
    check(cudaHostRegister(map + at, chunk, cudaHostRegisterPortable | cudaHostRegisterReadOnly), "cudaHostRegister");
    locked.push_back(map + at);
    check(cudaMemcpyAsync(static_cast<std::byte*>(device) + at, map + at, chunk, cudaMemcpyHostToDevice, s[i % 2]),
          "cudaMemcpyAsync");
    done.emplace_back();
    check(cudaEventCreateWithFlags(&done.back(), cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventRecord(done.back(), s[i % 2]), "cudaEventRecord");
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  for (std::size_t i = unlock_as_we_go ? locked.size() - std::min<std::size_t>(3, locked.size()) : 0; i < locked.size(); ++i) {
    check(cudaHostUnregister(locked[i]), "cudaHostUnregister");
  }
  const double rate = locked.size() * chunk / (now() - t) / 1e9;
  for (cudaEvent_t e : done) cudaEventDestroy(e);
  for (cudaStream_t x : s) cudaStreamDestroy(x);
  munmap(map, file_bytes);
  close(fd);
  return rate;
}

void shapes(const std::filesystem::path& path, std::size_t file_bytes, double pinned) {
  if (std::getenv("NUVEC_BENCH_SKIP_PIN_WINDOW") == nullptr) {
    void* device = nullptr;
    check(cudaMalloc(&device, file_bytes), "cudaMalloc");
    std::printf("\n## E5b. Pinning in 32 MiB chunks on one thread, each copy queued as soon as its chunk is locked "
                "(fresh mapping each time; median of 3)\n\n| unlock | GB/s |\n|---|---:|\n");
    std::printf("| the oldest before a fourth is locked (at most 3 locked) | %.1f |\n",
                median_of(3, [&] { return pin_window_rate(path, file_bytes, device, true); }));
    std::printf("| all at the end (the whole file locked) | %.1f |\n",
                median_of(3, [&] { return pin_window_rate(path, file_bytes, device, false); }));
    check(cudaFree(device), "cudaFree");
    std::fflush(stdout);
  }
  std::printf("\n## E6. Device buffers alone (one per tensor, fresh device; median of 3)\n\n"
              "| what | seconds |\n|---|---:|\n");
  for (const bool arena : {true, false}) {
    if (std::getenv("NUVEC_BENCH_SHAPES_ONLY") != nullptr) break;
    set_arena(arena);
    std::vector<double> buffers;
    std::size_t n = 0;
    for (int i = 0; i < 3; ++i) {
      auto gpu = nuvec::Device::create_cuda(0);
      const auto host = nuvec::io::load_safetensors(*gpu, path);
      const double t = now();
      std::vector<nuvec::Buffer> out;
      for (const auto& v : host.tensors()) out.push_back(gpu->new_buffer(v.bytes.size()));
      buffers.push_back(now() - t);
      n = out.size();
    }
    std::printf("| %zu device buffers, %s | %.4f |\n", n,
                arena ? "the arena (NUVEC_CUDA_ARENA=1, the default)" : "whole blocks (NUVEC_CUDA_ARENA=0: cudaMalloc)",
                median(buffers));
  }
  set_arena(true);
  std::fflush(stdout);

  std::printf("\n## E7. Uploads in many shapes (fresh device each; median of 3)\n\n");
  print_upload_header();
  const std::vector<Shape> all = {
      {8, 2, 32, 0, 0, 1},  {10, 2, 32, 0, 0, 1}, {12, 2, 32, 0, 0, 1}, {8, 2, 48, 0, 0, 1},
      {8, 4, 32, 0, 0, 1},  {8, 2, 32, 0, 0, 2},
  };
  for (const Shape& s : all) {
    set_arena(s.arena);
    upload_row(s.name(), path, s.options(), 5, pinned);
  }
  if (std::getenv("NUVEC_BENCH_SHAPES_ONLY") != nullptr) return;
  for (const bool arena : {true, false}) {
    set_arena(arena);
    upload_row(arena ? "defaults, the arena" : "defaults, whole blocks (NUVEC_CUDA_ARENA=0)", path, {}, 3, pinned);
  }
  set_arena(true);
  upload_row("defaults but memcpy through the mapping (read_files = false)", path, {.read_files = false}, 3, pinned);
  upload_row("wired mapping (whole file cudaHostRegister'ed at load), no staging", path, {}, 3, pinned,
             nuvec::mapping_size(file_bytes) + 256 * kMiB);
}

// One shape of the sweep: options, and the environment the library reads
// (NUVEC_CUDA_ARENA, NUVEC_CUDA_STAGING) set for its uploads.
struct SweepShape {
  std::string name;
  nuvec::cuda::UploadOptions options;
  bool arena = true;
  const char* staging = "huge-pages";
  bool sampled = false;  // the memory sampler runs during the timed uploads too
};

// Every shape once per round, in turn, each on a fresh device, so that the
// machine's drift over the run falls on all of them alike; medians over the
// rounds. Columns as upload_row's, plus when the staging was faulted in and
// how long page-locking it took.
enum class SweepSet { all, staging, defaults };

void sweep(const std::filesystem::path& path, double pinned, int rounds, SweepSet set) {
  // The base of every shape: the default options as they were when these
  // shapes ran (8 pipelines on 16 cores; since, five eighths of the cores).
  nuvec::cuda::UploadOptions d;
  d.pipelines = 8;
  const auto with = [&](auto change) {
    nuvec::cuda::UploadOptions o = d;
    change(o);
    return o;
  };
  const std::vector<SweepShape> staging_shapes = {
      {"8 pipelines, 16 x 2 MiB, 1 stream, staging in huge pages, arena", d},
      {"8 pipelines, staging in small pages (NUVEC_CUDA_STAGING=small-pages)", d, true, "small-pages"},
      {"10 pipelines", with([](auto& o) { o.pipelines = 10; })},
      {"10 pipelines, staging in small pages", with([](auto& o) { o.pipelines = 10; }), true, "small-pages"},
      {"memcpy through the mapping (read_files = false)", with([](auto& o) { o.read_files = false; })},
  };
  const std::vector<SweepShape> all_shapes = {
      {"8 pipelines, 16 x 2 MiB, 1 stream, arena", d},
      {"8 pipelines, sampled (RssAnon, RssFile and wired read every 1 ms during the timed uploads)", d, true,
       "huge-pages", true},
      {"8 pipelines, whole blocks (NUVEC_CUDA_ARENA=0)", d, false},
      {"8 pipelines, staging from cudaHostAlloc (NUVEC_CUDA_STAGING=hostalloc)", d, true, "hostalloc"},
      {"10 pipelines", with([](auto& o) { o.pipelines = 10; })},
      {"12 pipelines", with([](auto& o) { o.pipelines = 12; })},
      {"24 x 2 MiB slots (48 MiB)", with([](auto& o) { o.staging_bytes = 48 * kMiB; })},
      {"16 x 4 MiB slots (64 MiB)", with([](auto& o) { o.staging_bytes = 64 * kMiB; o.slot_bytes = 4 * kMiB; })},
      {"32 x 1 MiB slots (32 MiB)", with([](auto& o) { o.slot_bytes = kMiB; })},
      {"2 streams", with([](auto& o) { o.streams = 2; })},
      {"memcpy through the mapping (read_files = false)", with([](auto& o) { o.read_files = false; })},
      {"staged + the file's own pages registered, 4 x 32 MiB chunks (pinned_bytes = 128 MiB)",
       with([](auto& o) { o.pinned_bytes = 128 * kMiB; })},
  };
  const std::vector<SweepShape> default_shapes = {{"the default options", nuvec::cuda::UploadOptions{}}};
  const std::vector<SweepShape>& shapes =
      set == SweepSet::staging ? staging_shapes : set == SweepSet::defaults ? default_shapes : all_shapes;
  struct Figures {
    std::vector<double> seconds, setup, staging_ready, buffers, faulted, lock;
    std::size_t anon = 0, wired = 0, staging = 0, bytes = 0;
  };
  std::vector<Figures> figures(shapes.size());
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      set_arena(shapes[i].arena);
      setenv("NUVEC_CUDA_STAGING", shapes[i].staging, 1);
      const Upload u = upload_once(path, shapes[i].options, 0, shapes[i].sampled);
      Figures& f = figures[i];
      f.seconds.push_back(u.seconds);
      f.setup.push_back(u.setup);
      f.staging_ready.push_back(u.staging_ready);
      f.buffers.push_back(u.buffers);
      f.faulted.push_back(u.faulted);
      f.lock.push_back(u.lock);
      f.staging = u.staging;
      f.bytes = u.bytes;
    }
  }
  // The host memory each shape adds: one more upload, sampled, not timed.
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    set_arena(shapes[i].arena);
    setenv("NUVEC_CUDA_STAGING", shapes[i].staging, 1);
    const Upload u = upload_once(path, shapes[i].options, 0, true);
    figures[i].anon = u.anon;
    figures[i].wired = u.wired;
  }
  set_arena(true);
  unsetenv("NUVEC_CUDA_STAGING");
  std::printf("\n## Sweep: every shape once per round, in turn, %d rounds (fresh device each; medians)\n\n"
              "| shape | total s, median (min-max) | GB/s | of pinned | first copy ms | staging faulted ms | "
              "page-locking it ms | staging ready ms | buffers made ms | copy phase GB/s | RssAnon peak + | "
              "wired peak | staging |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
              rounds);
  std::printf("(RssAnon and wired: from one more upload per shape, sampled every 1 ms, not timed)\n\n");
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const Figures& f = figures[i];
    const double s = median(f.seconds), rate = f.bytes / s / 1e9, setup = median(f.setup);
    std::printf("| %s | %.4f (%.4f-%.4f) | %.1f | %.1f%% | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f MiB | %.0f MiB | "
                "%.0f MiB |\n",
                shapes[i].name.c_str(), s, *std::min_element(f.seconds.begin(), f.seconds.end()),
                *std::max_element(f.seconds.begin(), f.seconds.end()), rate, 100 * rate / pinned, 1e3 * setup,
                1e3 * median(f.faulted), 1e3 * median(f.lock), 1e3 * median(f.staging_ready), 1e3 * median(f.buffers),
                f.bytes / (s - setup) / 1e9, f.anon / double(kMiB), f.wired / double(kMiB), f.staging / double(kMiB));
  }
  std::fflush(stdout);
}

// GB/s of reading the file's first `bytes` (a multiple of 4 MiB) with
// O_DIRECT (past the page cache, from the disk) by `threads` threads into
// their own page-locked 4 MiB slots; 0 if the file system refuses O_DIRECT.
double direct_read_rate(const std::filesystem::path& path, std::size_t bytes, unsigned threads) {
  constexpr std::size_t chunk = 4 * kMiB;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd < 0) return 0;
  std::vector<std::unique_ptr<Pinned>> slots;
  for (unsigned k = 0; k < threads; ++k) slots.push_back(std::make_unique<Pinned>(2 * chunk));
  std::atomic<bool> failed{false};
  const double t = now();
  {
    std::vector<std::jthread> pool;
    for (unsigned k = 0; k < threads; ++k) {
      pool.emplace_back([&, k] {
        int turn = 0;
        for (std::size_t at = k * chunk; at + chunk <= bytes && !failed; at += threads * chunk) {
          if (pread(fd, slots[k]->data + (turn++ % 2) * chunk, chunk, static_cast<off_t>(at)) !=
              static_cast<ssize_t>(chunk)) {
            failed = true;
          }
        }
      });
    }
  }
  const double rate = bytes / (now() - t) / 1e9;
  close(fd);
  return failed ? 0 : rate;
}

void micro(const std::filesystem::path& path, std::size_t file_bytes) {
  void* device = nullptr;
  check(cudaMalloc(&device, file_bytes), "cudaMalloc");
  const unsigned cores = std::thread::hardware_concurrency();
  const unsigned readers = std::min(cores - 1, 16u);

  std::printf("\n## E1. DMA alone: the file's size from a pinned ring (median of 3)\n\n"
              "| ring | chunk | streams | GB/s |\n|---:|---:|---:|---:|\n");
  {
    Pinned ring(kGiB);
    for (const std::size_t ring_bytes : {32 * kMiB, kGiB}) {
      for (const std::size_t chunk : {2 * kMiB, 4 * kMiB, 16 * kMiB}) {
        for (const int streams : {1, 2, 4}) {
          const double r = median_of(3, [&] { return dma_rate(ring.data, ring_bytes, chunk, streams, file_bytes, device); });
          std::printf("| %zu MiB | %zu MiB | %d | %.1f |\n", ring_bytes / kMiB, chunk / kMiB, streams, r);
        }
      }
    }
  }
  std::fflush(stdout);

  std::printf("\n## E2. The host's copy rate: memcpy of 1 GiB between anonymous buffers (median of 3)\n\n"
              "| threads | GB/s copied |\n|---:|---:|\n");
  {
    std::vector<std::byte> a(kGiB, std::byte{1}), b(kGiB, std::byte{2});
    for (const unsigned t : {1u, 4u, 8u, readers}) {
      std::printf("| %u | %.1f |\n", t, median_of(3, [&] { return host_copy_rate(a.data(), b.data(), kGiB, t); }));
    }
  }
  std::fflush(stdout);

  std::printf("\n## E3. pread alone: the file into two page-locked slots per thread (median of 3)\n\n"
              "| threads | slot | how | GB/s |\n|---:|---:|---|---:|\n");
  for (const unsigned t : {4u, 8u, readers}) {
    for (const std::size_t chunk : {kMiB, 4 * kMiB, 16 * kMiB}) {
      std::printf("| %u | %zu MiB | pread | %.1f |\n", t, chunk / kMiB,
                  median_of(3, [&] { return pread_rate(path, file_bytes, t, chunk); }));
    }
  }
  std::printf("| %u | 4 MiB | memcpy from a fresh mapping | %.1f |\n", readers,
              median_of(3, [&] { return pread_rate(path, file_bytes, readers, 4 * kMiB, true); }));
  std::fflush(stdout);

  std::printf("\n## E4. Both at once on unrelated memory: DMA of the file's size (4 MiB copies, 2 streams) while "
              "host threads work\n\n| DMA from | host threads do | DMA GB/s | host GB/s |\n|---|---|---:|---:|\n");
  {
    Pinned ring(kGiB);
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    std::vector<std::unique_ptr<Pinned>> slots;
    for (unsigned k = 0; k < readers; ++k) slots.push_back(std::make_unique<Pinned>(8 * kMiB));
    std::vector<std::byte> a(kGiB, std::byte{1}), b(kGiB, std::byte{2});
    for (const std::size_t ring_bytes : {32 * kMiB, kGiB}) {
      {
        Background bg(readers, [&](unsigned k, const std::atomic<bool>& stop) {
          return read_into_slots(fd, std::filesystem::file_size(path), k, readers, 4 * kMiB, *slots[k], stop, false);
        });
        const double dma = dma_rate(ring.data, ring_bytes, 4 * kMiB, 2, file_bytes, device);
        std::printf("| %zu MiB ring | %u threads pread the file into 4 MiB slots | %.1f | %.1f |\n", ring_bytes / kMiB,
                    readers, dma, bg.stop());
      }
      {
        Background bg(readers, [&](unsigned k, const std::atomic<bool>& stop) {
          const std::size_t part = kGiB / readers;
          std::size_t n = 0;
          while (!stop.load()) {
            std::memcpy(b.data() + k * part, a.data() + k * part, part);
            n += part;
          }
          return n;
        });
        const double dma = dma_rate(ring.data, ring_bytes, 4 * kMiB, 2, file_bytes, device);
        std::printf("| %zu MiB ring | %u threads memcpy 1 GiB | %.1f | %.1f |\n", ring_bytes / kMiB, readers, dma,
                    bg.stop());
      }
    }
    close(fd);
  }
  std::fflush(stdout);

  std::printf("\n## E5. cudaHostRegister: cost, and DMA straight from the registered file\n\n"
              "| what | seconds | GB/s |\n|---|---:|---:|\n");
  {
    const auto row = [](const char* what, double seconds, std::size_t bytes) {
      std::printf("| %s | %.4f | %.1f |\n", what, seconds, bytes / seconds / 1e9);
      std::fflush(stdout);
    };
    {
      const std::size_t n = 256 * kMiB;
      void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      madvise(p, n, MADV_HUGEPAGE);
      std::memset(p, 1, n);
      double t = now();
      check(cudaHostRegister(p, n, cudaHostRegisterPortable), "cudaHostRegister");
      row("register 256 MiB of anonymous memory (faulted in, huge pages advised)", now() - t, n);
      t = now();
      check(cudaHostUnregister(p), "cudaHostUnregister");
      row("unregister it", now() - t, n);
      munmap(p, n);
    }
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    const unsigned flags = cudaHostRegisterPortable | cudaHostRegisterReadOnly;
    {
      auto* map = static_cast<std::byte*>(mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0));
      double t = now();
      check(cudaHostRegister(map, file_bytes, flags), "cudaHostRegister file");
      row("register the whole file's mapping (fresh, one call)", now() - t, file_bytes);
      const double dma = median_of(3, [&] { return dma_rate(map, file_bytes, 4 * kMiB, 2, file_bytes, device); });
      std::printf("| DMA from the registered file, 4 MiB copies, 2 streams | | %.1f |\n", dma);
      t = now();
      check(cudaHostUnregister(map), "cudaHostUnregister file");
      row("unregister it", now() - t, file_bytes);
      munmap(map, file_bytes);
    }
    {
      auto* map = static_cast<std::byte*>(mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0));
      const double t = now();
      check(cudaHostRegister(map, file_bytes, flags), "cudaHostRegister file");
      row("register the whole mapping, populated first (MAP_POPULATE)", now() - t, file_bytes);
      check(cudaHostUnregister(map), "cudaHostUnregister file");
      munmap(map, file_bytes);
    }
    for (const unsigned threads : {1u, 4u, readers}) {
      for (const std::size_t chunk : {4 * kMiB, 32 * kMiB}) {
        auto* map = static_cast<std::byte*>(mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0));
        const std::size_t span = threads == 1 ? kGiB : file_bytes;
        const double t = now();
        {
          std::vector<std::jthread> pool;
          for (unsigned k = 0; k < threads; ++k) {
            pool.emplace_back([&, k] {
              for (std::size_t at = k * chunk; at + chunk <= span; at += threads * chunk) {
                check(cudaHostRegister(map + at, chunk, flags), "cudaHostRegister chunk");
                check(cudaHostUnregister(map + at), "cudaHostUnregister chunk");
              }
            });
          }
        }
        char what[160];
        std::snprintf(what, sizeof what, "register + unregister %s in %zu MiB chunks, %u thread%s",
                      threads == 1 ? "1 GiB of the fresh mapping" : "the fresh mapping", chunk / kMiB, threads,
                      threads == 1 ? "" : "s");
        row(what, now() - t, span);
        munmap(map, file_bytes);
      }
    }
    close(fd);
  }
  check(cudaFree(device), "cudaFree");

}

}  // namespace

int main(int argc, char** argv) {
  double gib = 4.0;
  std::filesystem::path dir = "/tmp";
  bool keep = false, bench = false, micro_mode = false, shapes_mode = false, cold = false, sweep_mode = false,
       direct = false, reuse = false, sweep_staging = false, sweep_default = false;
  int rounds = 7;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "keep") keep = true;
    else if (a == "bench") bench = true;
    else if (a == "micro") micro_mode = true;
    else if (a == "shapes") shapes_mode = true;
    else if (a == "cold") cold = true;
    else if (a == "sweep") sweep_mode = true;
    else if (a == "sweep-staging") sweep_staging = true;
    else if (a == "sweep-default") sweep_default = true;
    else if (a == "direct") direct = true;
    else if (a == "reuse") reuse = true;
    else if (a.rfind("rounds=", 0) == 0) rounds = std::atoi(a.c_str() + 7);
    else if (positional++ == 0) gib = std::atof(a.c_str());
    else dir = a;
  }
  if (!bench && !micro_mode && !shapes_mode && !cold && !sweep_mode && !sweep_staging && !sweep_default && !direct) {
    bench = true;
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "context");

  const double t0 = now();
  const std::filesystem::path kept = dir / "nuvec-upload-bench.safetensors";
  std::error_code size_error;
  // `reuse`: the file an earlier run kept, if it is there (written by the same generator).
  const std::uintmax_t kept_bytes = reuse ? std::filesystem::file_size(kept, size_error) : 0;
  const bool reused = reuse && !size_error && kept_bytes > static_cast<std::size_t>(gib * kGiB);
  const std::filesystem::path path = reused ? kept : write_checkpoint(dir, static_cast<std::size_t>(gib * kGiB));
  const std::size_t file_bytes = std::filesystem::file_size(path);
  const nuvec::cuda::UploadOptions defaults;
  std::printf("file: %.2f GiB (%zu B) on %s (%s), %s in %.1f s; %u host threads; default options: %zu MiB "
              "staging in %zu MiB slots, %zu MiB pinned, pipelines %u (0: five eighths of the cores), %u stream(s); default "
              "wired limit %zu MiB; device buffers from %s\n",
              file_bytes / double(kGiB), file_bytes, dir.c_str(), filesystem_of(dir).c_str(),
              reused ? "reused (an earlier run's)" : "written", now() - t0, std::thread::hardware_concurrency(), defaults.staging_bytes / kMiB, defaults.slot_bytes / kMiB,
              defaults.pinned_bytes / kMiB, defaults.pipelines, defaults.streams,
              nuvec::cuda::kDefaultWiredLimit / kMiB,
              std::getenv("NUVEC_CUDA_ARENA") != nullptr && std::string(std::getenv("NUVEC_CUDA_ARENA")) == "0"
                  ? "whole blocks (NUVEC_CUDA_ARENA=0)"
                  : "the arena (default)");

  // The ceilings, in every mode.
  double pinned_rate = 0, pageable_rate = 0, chunked = 0;
  {
    void* device = nullptr;
    check(cudaMalloc(&device, std::max(file_bytes, kGiB)), "cudaMalloc");
    void* pinned = nullptr;
    check(cudaHostAlloc(&pinned, kGiB, 0), "cudaHostAlloc");
    std::memset(pinned, 1, kGiB);
    std::vector<std::byte> pageable(kGiB, std::byte{1});
    pinned_rate = copy_rate(pinned, device);
    pageable_rate = copy_rate(pageable.data(), device);
    chunked = median_of(3, [&] {
      return dma_rate(static_cast<std::byte*>(pinned), kGiB, 4 * kMiB, 2, file_bytes, device);
    });
    check(cudaFreeHost(pinned), "cudaFreeHost");
    check(cudaFree(device), "cudaFree");
  }
  std::printf("pinned cudaMemcpy H2D: %.1f GB/s; pageable: %.1f GB/s (median of 5, 1 GiB); pinned, the file's size "
              "in 4 MiB copies over 2 streams from a 1 GiB ring: %.1f GB/s (median of 3)\n",
              pinned_rate, pageable_rate, chunked);
  std::fflush(stdout);

  if (bench) {
    std::printf("\n## nuvec's upload, default options, page cache warm\n\n");
    print_upload_header();
    for (const bool arena : {true, false}) {
      set_arena(arena);
      upload_row(arena ? "load_safetensors + cuda::upload (defaults) + drop the mapping; buffers from the arena (the "
                         "default)"
                       : "the same, buffers as whole cudaMalloc blocks (NUVEC_CUDA_ARENA=0)",
                 path, {}, rounds, pinned_rate);
    }
    set_arena(true);
  }
  if (sweep_mode) sweep(path, pinned_rate, rounds, SweepSet::all);
  if (sweep_staging) sweep(path, pinned_rate, rounds, SweepSet::staging);
  if (sweep_default) sweep(path, pinned_rate, rounds, SweepSet::defaults);
  if (direct) {
    // The page cache holds the file: what a buffered read of the same bytes
    // gives, beside O_DIRECT's (which the page cache does not serve).
    const std::size_t bytes = std::min(file_bytes, kGiB) / (4 * kMiB) * (4 * kMiB);
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency() / 2);
    std::printf("\n## O_DIRECT reads into page-locked slots (%u threads, 4 MiB each, the first %.2f GiB, once)\n\n"
                "| read | GB/s |\n|---|---:|\n| pread, page cache warm | %.1f |\n| pread with O_DIRECT | %.1f |\n",
                threads, bytes / double(kGiB), pread_rate(path, bytes, threads, 4 * kMiB),
                direct_read_rate(path, bytes, threads));
    std::fflush(stdout);
  }
  if (micro_mode) micro(path, file_bytes);
  if (shapes_mode) shapes(path, file_bytes, pinned_rate);
  if (cold) {
    std::printf("\n## Cold page cache (dropped before each)\n\n");
    if (!drop_caches()) {
      std::printf("could not drop the page cache (/proc/sys/vm/drop_caches: not root?)\n");
    } else {
      const unsigned readers = std::min(std::thread::hardware_concurrency() - 1, 16u);
      std::printf("pread alone, %u threads, 4 MiB slots: %.1f GB/s\n\n", readers,
                  pread_rate(path, file_bytes, readers, 4 * kMiB));
      print_upload_header();
      for (int i = 0; i < 2; ++i) {
        drop_caches();
        upload_row("cold: load_safetensors + cuda::upload (defaults)", path, {}, 1, pinned_rate);
      }
    }
  }
  if (keep) {
    std::printf("\nkept: %s\n", path.c_str());
  } else {
    std::filesystem::remove(path);
  }
  return 0;
}
