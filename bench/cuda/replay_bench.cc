// Replays a real allocation trace (traces/*.jsonl.gz, docs/trace-format.md)
// on GPU 0, three times, in one process:
//  - nuvec arena: the replay engine (include/nuvec/trace/replay.h) on a fresh CUDA
//    device whose blocks are carved from reserved address space, 2 MiB
//    granules committed as blocks need them (the default);
//  - nuvec blocks: the same on a fresh device with one cudaMalloc per
//    block, reused whole (CudaBackendOptions::reservations = false);
//  - cudaMallocAsync: the same allocate/free sequence through
//    cudaMallocFromPoolAsync / cudaFreeAsync on one stream, on a fresh pool
//    (default properties, release threshold raised so the pool keeps what it
//    has, as PyTorch's cudaMallocAsync backend sets it); its peak is the
//    pool's cudaMemPoolAttrReservedMemHigh.
// For nuvec, peak_held is the highest active + cache after any event
// (memory() sampled after every operation), and peak_committed the most
// device memory the backend held at once: granules mapped (the arena; at
// least active + cache, since small blocks share granules) or cudaMalloc'd
// bytes (blocks). Each ratio is over peak live, the highest sum of the
// requested bytes of live buffers (the same for every allocator).
// PyTorch's side is bench/cuda/torch_replay.py. Prints one JSON object.
// Usage: nuvec_cuda_replay_bench TRACE
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <unordered_map>

#include "cuda/cuda_backend.h"
#include "nuvec/nuvec.h"
#include "nuvec/trace.h"
#include "nuvec/trace/replay.h"
#include "support/cuda_check.h"

namespace {

using nuvec_bench::check;

struct AsyncReport {
  std::uint64_t allocations = 0, frees = 0;
  std::size_t peak_live = 0;
  std::uint64_t reserved_high = 0, used_high = 0;
  double seconds = 0;
};

AsyncReport replay_async(const nuvec::Trace& trace) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool = nullptr;
  check(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");
  std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "release threshold");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  AsyncReport r;
  std::unordered_map<std::uint64_t, std::pair<void*, std::size_t>> live;
  std::size_t live_bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const nuvec::TraceEvent& e : trace.events) {
    if (e.kind == nuvec::TraceEventKind::allocate) {
      void* p = nullptr;
      check(cudaMallocFromPoolAsync(&p, e.requested, pool, stream), "cudaMallocFromPoolAsync");
      live[e.id] = {p, e.requested};
      live_bytes += e.requested;
      r.peak_live = std::max(r.peak_live, live_bytes);
      ++r.allocations;
    } else if (e.kind == nuvec::TraceEventKind::free) {
      const auto it = live.find(e.id);
      if (it == live.end()) continue;
      check(cudaFreeAsync(it->second.first, stream), "cudaFreeAsync");
      live_bytes -= it->second.second;
      live.erase(it);
      ++r.frees;
    }
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &r.reserved_high), "ReservedMemHigh");
  check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &r.used_high), "UsedMemHigh");
  for (const auto& [id, block] : live) check(cudaFreeAsync(block.first, stream), "cudaFreeAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  cudaStreamDestroy(stream);
  check(cudaMemPoolDestroy(pool), "cudaMemPoolDestroy");
  return r;
}

struct NuvecReport {
  nuvec::ReplayReport replay;
  std::size_t peak_committed = 0;
  double seconds = 0;
};

NuvecReport replay_nuvec(const nuvec::Trace& trace, const char* path, bool reservations) {
  nuvec::Device gpu(nuvec::cuda::make_backend(0, {.reservations = reservations}), false);
  NuvecReport r;
  const auto start = std::chrono::steady_clock::now();
  nuvec::ReplayOptions options;
  options.trace_path = path;
  r.replay = nuvec::replay(trace, gpu, options);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.peak_committed = gpu.counters().committed_peak.value();
  gpu.clear_cache();
  return r;
}

std::string nuvec_json(const NuvecReport& r) {
  const nuvec::ReplayReport& n = r.replay;
  char out[1024];
  std::snprintf(out, sizeof out,
                "{\"peak_held\": %zu, \"ratio\": %.4f, \"peak_committed\": %zu, \"committed_ratio\": %.4f, "
                "\"allocations\": %llu, \"refusals\": %llu, \"system_allocations\": %llu, \"reservations\": %zu, "
                "\"peak_active\": %zu, \"seconds\": %.3f}",
                n.peak_held, n.fragmentation(), r.peak_committed,
                n.peak_live == 0 ? 0.0 : double(r.peak_committed) / double(n.peak_live),
                static_cast<unsigned long long>(n.allocations), static_cast<unsigned long long>(n.refusals),
                static_cast<unsigned long long>(n.system_allocations), n.reservations,
                n.final_stats.peak, r.seconds);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TRACE\n", argv[0]);
    return 2;
  }
  const nuvec::Trace trace = nuvec::read_trace(argv[1]);
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "context");

  const NuvecReport arena = replay_nuvec(trace, argv[1], true);
  const NuvecReport blocks = replay_nuvec(trace, argv[1], false);
  const AsyncReport a = replay_async(trace);

  std::printf(
      "{\"trace\": \"%s\", \"events\": %llu, \"peak_live\": %zu,\n \"nuvec\": %s,\n \"nuvec_blocks\": %s,\n"
      " \"cudaMallocAsync\": {\"reserved_high\": %llu, \"used_high\": %llu, \"ratio\": %.4f, \"peak_live\": %zu, "
      "\"allocations\": %llu, \"seconds\": %.3f}}\n",
      argv[1], static_cast<unsigned long long>(arena.replay.events), arena.replay.peak_live, nuvec_json(arena).c_str(),
      nuvec_json(blocks).c_str(), static_cast<unsigned long long>(a.reserved_high),
      static_cast<unsigned long long>(a.used_high),
      a.peak_live == 0 ? 0.0 : double(a.reserved_high) / double(a.peak_live), a.peak_live,
      static_cast<unsigned long long>(a.allocations), a.seconds);
  // All three must have replayed the same sequence.
  return a.peak_live == arena.replay.peak_live && blocks.replay.peak_live == arena.replay.peak_live ? 0 : 1;
}
