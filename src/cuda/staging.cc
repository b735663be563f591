#include "cuda/staging.h"

#include <sys/mman.h>

#include <cuda_runtime_api.h>

#include <cerrno>
#include <cstring>

#include "cuda/cuda_error.h"

namespace nuvec::cuda {

namespace {

#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older kernels say EINVAL and are touched by hand
#endif

}  // namespace

StagingMemory::~StagingMemory() {
  if (data_ == nullptr) return;
  if (cudaHostUnregister(data_) != cudaSuccess) (void)cudaGetLastError();
  munmap(data_, size_);
}

bool StagingMemory::allocate(std::size_t bytes, std::string& error) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    error = std::string("mmap: ") + std::strerror(errno);
    return false;
  }
  madvise(p, bytes, MADV_HUGEPAGE);  // advice: fewer pages to fault in and to lock
  // Faulted in before registering, in one call where the kernel can.
  if (madvise(p, bytes, MADV_POPULATE_WRITE) != 0) std::memset(p, 0, bytes);
  if (const cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterPortable); e != cudaSuccess) {
    (void)cudaGetLastError();
    munmap(p, bytes);
    error = error_text("cudaHostRegister", e);
    return false;
  }
  data_ = static_cast<std::byte*>(p);
  size_ = bytes;
  return true;
}

}  // namespace nuvec::cuda
