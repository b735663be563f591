#include "cuda/staging.h"

#include <sys/mman.h>

#include <cuda_runtime_api.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "cuda/cuda_error.h"

namespace nuvec::cuda {

namespace {

#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older kernels say EINVAL and are touched by hand
#endif

constexpr std::size_t kHugePage = std::size_t{2} << 20;

}  // namespace

StagingMemory::~StagingMemory() {
  if (base_ == nullptr) return;
  if (from_driver_) {
    if (cudaFreeHost(base_) != cudaSuccess) (void)cudaGetLastError();
    return;
  }
  if (locked_ && cudaHostUnregister(data_) != cudaSuccess) (void)cudaGetLastError();
  munmap(base_, mapped_);
}

bool StagingMemory::reserve(std::size_t bytes, std::string& error, bool huge_pages) {
  // Room to start at a huge-page boundary, so that every 2 MiB of slots can
  // be one huge page: fewer faults to take and fewer pages to lock.
  const std::size_t mapped = bytes + kHugePage;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    error = std::string("mmap: ") + std::strerror(errno);
    return false;
  }
  const auto start = (reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  base_ = p;
  mapped_ = mapped;
  data_ = reinterpret_cast<std::byte*>(start);
  size_ = bytes;
  if (huge_pages) madvise(data_, size_, MADV_HUGEPAGE);  // advice: nothing depends on it
  return true;
}

void StagingMemory::populate(std::size_t offset, std::size_t length) {
  if (madvise(data_ + offset, length, MADV_POPULATE_WRITE) != 0) std::memset(data_ + offset, 0, length);
}

bool StagingMemory::lock(std::string& error) {
  if (const cudaError_t e = cudaHostRegister(data_, size_, cudaHostRegisterPortable); e != cudaSuccess) {
    (void)cudaGetLastError();
    error = error_text("cudaHostRegister", e);
    return false;
  }
  locked_ = true;
  return true;
}

bool StagingMemory::allocate_locked(std::size_t bytes, std::string& error) {
  void* p = nullptr;
  if (const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable); e != cudaSuccess) {
    (void)cudaGetLastError();
    error = error_text("cudaHostAlloc", e);
    return false;
  }
  base_ = p;
  mapped_ = bytes;
  data_ = static_cast<std::byte*>(p);
  size_ = bytes;
  locked_ = true;
  from_driver_ = true;
  return true;
}

}  // namespace nuvec::cuda
