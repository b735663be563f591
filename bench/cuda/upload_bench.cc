// Loading a safetensors checkpoint onto the GPU, side by side in one run:
// the pinned and pageable host-to-device bandwidth of this machine (plain
// cudaMemcpy, 1 GiB), then nuvec's upload (load_safetensors + cuda::upload)
// with several staging shapes, then the upload from a cudaHostRegister'ed
// (wired) mapping. For each: seconds, GB/s (10^9 B/s), share of the pinned
// bandwidth, and the host memory it added (peaks of RssAnon and of
// RssAnon+RssShmem sampled every millisecond, over the run's baseline).
//
// The file is written first and stays in the page cache (a warm start: the
// disk is not measured). Usage: nuvec_cuda_upload_bench [GiB=4] [dir=/tmp]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

// kB of a /proc/self/status field.
std::size_t status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::char_traits<char>::length(field);
  while (std::getline(in, line)) {
    if (line.compare(0, n, field) == 0) return std::strtoull(line.c_str() + n + 1, nullptr, 10);
  }
  return 0;
}

// Peaks of RssAnon and RssAnon+RssShmem over the sampler's life, in bytes.
class RssSampler {
 public:
  RssSampler() : thread_([this] {
      while (!stop_.load()) {
        const std::size_t anon = status_kb("RssAnon:"), shmem = status_kb("RssShmem:");
        anon_ = std::max(anon_.load(), anon * 1024);
        anon_shmem_ = std::max(anon_shmem_.load(), (anon + shmem) * 1024);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }) {}
  ~RssSampler() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::size_t anon() const { return anon_; }
  std::size_t anon_shmem() const { return anon_shmem_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> anon_{0}, anon_shmem_{0};
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

struct Row {
  std::string what;
  double seconds, setup_seconds, upload_seconds, gbps;
  std::size_t anon, anon_shmem, staging;
};

}  // namespace

int main(int argc, char** argv) {
  const double gib = argc > 1 ? std::atof(argv[1]) : 4.0;
  const std::filesystem::path dir = argc > 2 ? argv[2] : "/tmp";
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

  void* device = nullptr;
  void* pinned = nullptr;
  check(cudaMalloc(&device, kGiB), "cudaMalloc");
  check(cudaHostAlloc(&pinned, kGiB, 0), "cudaHostAlloc");
  std::vector<std::byte> pageable(kGiB, std::byte{1});
  const double pinned_rate = copy_rate(pinned, device);
  const double pageable_rate = copy_rate(pageable.data(), device);
  check(cudaFreeHost(pinned), "cudaFreeHost");
  check(cudaFree(device), "cudaFree");
  pageable = {};
  pageable.shrink_to_fit();

  std::vector<Row> rows;
  const auto run = [&](const std::string& what, const nuvec::cuda::UploadOptions& options, bool wired) {
    auto gpu = nuvec::Device::create_cuda(0);
    if (wired) gpu->set_wired_limit(nuvec::mapping_size(file_bytes));
    const std::size_t anon0 = status_kb("RssAnon:") * 1024;
    const std::size_t anon_shmem0 = anon0 + status_kb("RssShmem:") * 1024;
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
    rows.push_back({what, seconds, r.setup_seconds, r.seconds, r.bytes / seconds / 1e9, sampler.anon() - std::min(anon0, sampler.anon()),
                    sampler.anon_shmem() - std::min(anon_shmem0, sampler.anon_shmem()), r.staging_bytes});
  };
  for (int repeat = 0; repeat < 3; ++repeat) {
    run("staging 128 MiB, 8 pipelines (default)", {}, false);
    run("staging 128 MiB, 16 pipelines", {.staging_bytes = 128 * kMiB, .pipelines = 16}, false);
    run("staging 256 MiB, 16 pipelines", {.staging_bytes = 256 * kMiB, .pipelines = 16}, false);
    run("staging 64 MiB, 4 pipelines", {.staging_bytes = 64 * kMiB, .pipelines = 4}, false);
    run("wired mapping (cudaHostRegister), no staging", {}, true);
    run("pin source, 64 MiB window, 4 pipelines", {.staging_bytes = 64 * kMiB, .pipelines = 4, .pin_source = true},
        false);
  }

  std::printf("file: %.2f GiB (%zu B), page cache warm\n", file_bytes / double(kGiB), file_bytes);
  std::printf("pinned cudaMemcpy H2D: %.1f GB/s; pageable: %.1f GB/s (median of 5, 1 GiB)\n\n", pinned_rate,
              pageable_rate);
  std::printf("| upload | total s (load+upload) | setup s | copy s | GB/s (total) | of pinned | RssAnon peak + | RssAnon+Shmem peak + | staging |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %.3f | %.3f | %.3f | %.1f | %.0f%% | %.0f MiB | %.0f MiB | %.0f MiB |\n", r.what.c_str(),
                r.seconds, r.setup_seconds, r.upload_seconds, r.gbps, 100 * r.gbps / pinned_rate, r.anon / double(kMiB), r.anon_shmem / double(kMiB),
                r.staging / double(kMiB));
  }
  std::filesystem::remove(path);
  return 0;
}
