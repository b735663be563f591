// Page-locked host memory for staging copies to a GPU. Made from anonymous
// memory (huge pages where the kernel gives them), faulted in whole, then
// registered with cudaHostRegister: on the H200 machine that took a few
// milliseconds for 16 MiB where cudaHostAlloc took about 0.5 ms per MiB
// (docs/cuda.md, "Uploads"). Each upload pipeline makes its own, on its own
// thread, so they are made in parallel.
#pragma once

#include <cstddef>
#include <string>

namespace nuvec::cuda {

class StagingMemory {
 public:
  StagingMemory() = default;
  StagingMemory(const StagingMemory&) = delete;
  StagingMemory& operator=(const StagingMemory&) = delete;
  ~StagingMemory();

  // `bytes` of page-locked memory; false, with the reason in `error`, if
  // the system or the driver refused (nothing is then held).
  bool allocate(std::size_t bytes, std::string& error);

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace nuvec::cuda
