// StepGraph (step_graph.h): capture, update or instantiate, then launch.
#include "lm_cuda/step_graph.h"

#include <algorithm>
#include <exception>

#include "cuda/cuda_error.h"

namespace nuvec::lm::gpu {
namespace {

// Ends a capture that `queue` left by throwing; what it captured is dropped.
void abandon_capture(cudaStream_t stream) {
  cudaGraph_t partial = nullptr;
  cudaStreamEndCapture(stream, &partial);
  if (partial != nullptr) cudaGraphDestroy(partial);
  cudaGetLastError();  // the invalidated capture's error is ours to clear
}

// The captured graph, destroyed when this goes (the executable graph keeps
// what it needs).
struct Captured {
  cudaGraph_t graph = nullptr;
  ~Captured() {
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
};

}  // namespace

StepGraph::~StepGraph() {
  // A graph still running is freed when it completes (cudaGraphExecDestroy).
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
}

void StepGraph::run(std::span<const std::size_t> key, cudaStream_t stream, const std::function<void()>& queue) {
  const bool same = exec_ != nullptr && std::equal(key.begin(), key.end(), key_.begin(), key_.end());
  if (!same) {
    const char* what = "capture a decode step as a CUDA graph";
    cuda::check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture", what);
    try {
      queue();
    } catch (...) {
      abandon_capture(stream);
      throw;
    }
    Captured captured;
    const cudaError_t ended = cudaStreamEndCapture(stream, &captured.graph);
    if (ended != cudaSuccess) cudaGetLastError();
    cuda::check(ended, "cudaStreamEndCapture", what);
    bool updated = false;
    if (exec_ != nullptr) {
      cudaGraphExecUpdateResultInfo info{};
      updated = cudaGraphExecUpdate(exec_, captured.graph, &info) == cudaSuccess;
      if (!updated) {
        cudaGetLastError();  // a change of topology: not an error, a new graph
        cudaGraphExecDestroy(exec_);
        exec_ = nullptr;
      }
    }
    key_.clear();  // until the executable graph is the key's
    if (!updated) {
      cudaGraphExec_t made = nullptr;
      cuda::check(cudaGraphInstantiate(&made, captured.graph, 0), "cudaGraphInstantiate", what);
      exec_ = made;
    }
    key_.assign(key.begin(), key.end());
    ++captures_;
  }
  cuda::check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch", "replay a decode step");
  ++replays_;
}

}  // namespace nuvec::lm::gpu
