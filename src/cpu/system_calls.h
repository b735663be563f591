// The system calls the CPU backend makes, behind one seam so tests can make
// each of them fail. Real() forwards to libc.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <memory>

namespace nuvec::cpu {

class SystemCalls {
 public:
  virtual ~SystemCalls() = default;
  // Each follows its libc namesake: on failure it returns the same value
  // (MAP_FAILED, -1, nullptr) with errno set.
  virtual void* mmap(void* addr, std::size_t length, int prot, int flags, int fd, off_t offset);
  virtual int munmap(void* addr, std::size_t length);
  virtual int mlock(const void* addr, std::size_t length);
  virtual int munlock(const void* addr, std::size_t length);
  virtual int madvise(void* addr, std::size_t length, int advice);
  virtual int open(const char* path, int flags);
  virtual int fstat(int fd, struct stat* st);
  virtual int close(int fd);
  // 64-byte-aligned memory for sub-page buffers (aligned_alloc / free).
  virtual void* aligned_alloc(std::size_t alignment, std::size_t size);
  virtual void free(void* p);

  static std::shared_ptr<SystemCalls> real();
};

}  // namespace nuvec::cpu
