#include "cpu/system_calls.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

namespace nuvec::cpu {

void* SystemCalls::mmap(void* addr, std::size_t length, int prot, int flags, int fd, off_t offset) {
  return ::mmap(addr, length, prot, flags, fd, offset);
}
int SystemCalls::munmap(void* addr, std::size_t length) { return ::munmap(addr, length); }
int SystemCalls::mlock(const void* addr, std::size_t length) { return ::mlock(addr, length); }
int SystemCalls::munlock(const void* addr, std::size_t length) { return ::munlock(addr, length); }
int SystemCalls::madvise(void* addr, std::size_t length, int advice) { return ::madvise(addr, length, advice); }
int SystemCalls::open(const char* path, int flags) { return ::open(path, flags); }
int SystemCalls::fstat(int fd, struct stat* st) { return ::fstat(fd, st); }
int SystemCalls::close(int fd) { return ::close(fd); }
void* SystemCalls::aligned_alloc(std::size_t alignment, std::size_t size) { return std::aligned_alloc(alignment, size); }
void SystemCalls::free(void* p) { std::free(p); }

std::shared_ptr<SystemCalls> SystemCalls::real() {
  static const std::shared_ptr<SystemCalls> calls = std::make_shared<SystemCalls>();
  return calls;
}

}  // namespace nuvec::cpu
