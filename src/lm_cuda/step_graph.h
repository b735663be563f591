// A decode step as one CUDA graph. A step of the 1.1B shape is about 300
// launches (14 per layer: norms, seven products, RoPE twice, the cache's
// store, attention, SwiGLU), each small enough that the CPU's cost of
// queueing it, cuBLASLt's above all, outlasts the GPU's of running it.
// Captured once from the session's stream, the step is replayed with one
// cudaGraphLaunch: the GPU runs the launches back to back.
//
// A graph keeps the arguments its launches were captured with. What moves
// from step to step (the token, the position) the kernels read from device
// memory instead (launch.h: first_at; decode attention splits the keys from
// it in a grid sized for the whole cache); what changes the launches
// themselves (the buffers) goes into the key, and a new key captures the
// step again.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include <cuda_runtime_api.h>

namespace nuvec::lm::gpu {

class StepGraph {
 public:
  StepGraph() = default;
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Queues one step on `stream`: the graph captured for `key`, or, for a key
  // other than the last one's, what `queue` queues on `stream`, captured
  // first (the executable graph is updated in place when only the launches'
  // arguments changed, else made anew). `queue` must queue the step's work
  // on `stream` and nothing else; it runs on this thread only during a
  // capture (cudaStreamCaptureModeThreadLocal: a call that would
  // synchronise fails the capture). IoError if the capture or the launch
  // fails; the stream is then as it was before the call.
  void run(std::span<const std::size_t> key, cudaStream_t stream, const std::function<void()>& queue);

  std::size_t captures() const { return captures_; }
  std::size_t replays() const { return replays_; }

 private:
  cudaGraphExec_t exec_ = nullptr;
  std::vector<std::size_t> key_;
  std::size_t captures_ = 0;
  std::size_t replays_ = 0;
};

}  // namespace nuvec::lm::gpu
