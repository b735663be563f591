// The CPU backend (Linux). The allocator's arena carves blocks from
// reservations: private anonymous mappings with MAP_NORESERVE, whose pages
// the kernel commits on first touch (as for any mmap or malloc) and takes
// back on MADV_DONTNEED. Without reservations, page-sized and larger blocks
// are anonymous mappings of their own and smaller ones 256-byte-aligned heap
// memory. Files are mapped read-only and shared: a private copy-on-write
// mapping would cost more to fault in.
#include "cpu/cpu_backend.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::cpu {
namespace {

// Sub-page blocks are multiples of 256 bytes: aligning them to 256 too means
// every buffer starts on a 256-byte boundary, as checkpoint loaders promise.
constexpr std::size_t kSmallAlignment = 256;
constexpr std::size_t kSmallStep = 256;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

// Whether the process may lock memory beyond RLIMIT_MEMLOCK (CAP_IPC_LOCK,
// capability 14, in the effective set).
bool can_lock_without_limit() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      const unsigned long long caps = std::stoull(line.substr(7), nullptr, 16);
      return (caps >> 14) & 1;
    }
  }
  return false;
}

class CpuFile final : public detail::OpenFile {
 public:
  CpuFile(const std::filesystem::path& path, SystemCalls& calls, int fd, std::uint64_t size)
      : OpenFile(path), calls_(calls), fd_(fd), size_(size) {}
  ~CpuFile() override { calls_.close(fd_); }
  std::uint64_t size() const override { return size_; }
  int fd() const { return fd_; }

 private:
  SystemCalls& calls_;
  int fd_;
  std::uint64_t size_;
};

class CpuBackend final : public detail::Backend,
                         private detail::ReservationSource,
                         private detail::BlockSource,
                         private detail::Wiring,
                         private detail::FileMapper {
 public:
  CpuBackend(std::shared_ptr<SystemCalls> calls, CpuBackendOptions options)
      : calls_(std::move(calls)), options_(options), page_(page_size()) {
    options_.reservation_bytes = std::max(page_, options_.reservation_bytes & ~(page_ - 1));
  }

  std::string_view name() const override { return "cpu"; }
  detail::SizeClasses size_classes() const override { return {kSmallStep, page_}; }

  std::size_t default_memory_limit() const override {
    const std::size_t physical = physical_memory();
    return physical == 0 ? std::numeric_limits<std::size_t>::max() : physical;
  }

  // The arena's reservations, or whole blocks (an option, for tests of that policy).
  detail::ReservationSource* reservations() override { return options_.reservations ? this : nullptr; }
  detail::BlockSource* blocks() override { return options_.reservations ? nullptr : this; }
  detail::Wiring* buffer_wiring() override { return this; }
  detail::Wiring& mapping_wiring() override { return *this; }
  detail::FileMapper& files() override { return *this; }

 private:
  // --- ReservationSource ---
  int reserve(std::size_t min_size, bool huge_pages, Reservation* out) noexcept override {
    if (min_size > std::numeric_limits<std::size_t>::max() - page_) return ENOMEM;
    const std::size_t least = (std::max<std::size_t>(min_size, 1) + page_ - 1) & ~(page_ - 1);
    std::size_t size = std::max(least, options_.reservation_bytes);
    for (;;) {
      void* p = calls_->mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p != MAP_FAILED) {
        // Large buffers fault in 512 times fewer pieces with transparent huge
        // pages (see allocate()). Not for reservations of small blocks, where
        // one 2 MiB page would hold a few hundred bytes. Advice only.
        if (huge_pages && size >= kHugePage) calls_->madvise(p, size, MADV_HUGEPAGE);
        *out = {p, size};
        return 0;
      }
      if (size == least) return errno;  // from mmap
      size = std::max(least, (size / 2) & ~(page_ - 1));
    }
  }

  int decommit(void* address, std::size_t size) noexcept override {
    return calls_->madvise(address, size, MADV_DONTNEED) == 0 ? 0 : errno;
  }

  int unreserve(void* base, std::size_t size) noexcept override {
    return calls_->munmap(base, size) == 0 ? 0 : errno;  // unmapping unlocks
  }

  // --- BlockSource ---
  int allocate(std::size_t size, void** address) noexcept override {
    if (size < page_) {
      *address = calls_->aligned_alloc(kSmallAlignment, size);
      return *address != nullptr ? 0 : ENOMEM;
    }
    void* p = calls_->mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return errno;
    // Large buffers (weights, activations) fault in 512 times fewer pieces
    // with transparent huge pages: filling a fresh 1 GiB buffer is then
    // bound by copying, not by page faults. Advice only; failure is harmless.
    if (size >= kHugePage) calls_->madvise(p, size, MADV_HUGEPAGE);
    *address = p;
    return 0;
  }

  int release(void* address, std::size_t size, bool wired) noexcept override {
    if (size < page_) {
      // Heap memory keeps its lock after free(); drop it first.
      if (wired) calls_->munlock(address, size);
      calls_->free(address);
      return 0;
    }
    return calls_->munmap(address, size) == 0 ? 0 : errno;  // unmapping unlocks
  }

  // --- Wiring: mlock ---
  int wire(const void* address, std::size_t size) noexcept override {
    if (size == 0) return 0;
    return calls_->mlock(address, size) == 0 ? 0 : errno;
  }
  void unwire(const void* address, std::size_t size) noexcept override {
    if (size != 0) calls_->munlock(address, size);
  }

  // --- FileMapper: read-only shared mappings ---
  std::unique_ptr<detail::OpenFile> open(const std::filesystem::path& path) override {
    // O_NONBLOCK: opening a FIFO for reading would wait for a writer forever
    // (adopt refuses anything but a regular file); on a regular file it
    // changes nothing for mmap or reads.
    const int fd = calls_->open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw io_error("open", path);
    return adopt(fd, path);
  }

  std::unique_ptr<detail::OpenFile> open_descriptor(int fd, const std::filesystem::path& path) override {
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) throw io_error("dup", path);
    return adopt(copy, path);
  }

  const void* map(const detail::OpenFile& file, std::uint64_t offset, std::size_t length) override {
    const auto& cpu_file = static_cast<const CpuFile&>(file);
    void* p = calls_->mmap(nullptr, length, PROT_READ, MAP_SHARED, cpu_file.fd(), static_cast<off_t>(offset));
    if (p == MAP_FAILED) {
      const int error = errno;
      throw IoError(fmt::format("cannot map {} of {} at offset {} (mmap: {})", format_bytes(length),
                                file.path().string(), offset, std::strerror(error)),
                    file.path(), error);
    }
    return p;
  }

  void unmap(const void* address, std::size_t length) noexcept override {
    if (calls_->munmap(const_cast<void*>(address), length) != 0) {
      std::fprintf(stderr, "nuvec: warning: munmap of a %zu-byte file mapping failed (%s)\n", length,
                   std::strerror(errno));
    }
  }

  std::size_t lockable_bytes() const override {
    std::size_t lockable = physical_memory();
    if (lockable == 0) lockable = std::numeric_limits<std::size_t>::max();
    struct rlimit limit {};
    if (!can_lock_without_limit() && getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      lockable = std::min<std::size_t>(lockable, limit.rlim_cur);
    }
    return lockable;
  }

  std::string_view how_to_lock_more() const override {
    return "raise the process's lock limit (`ulimit -l`, or run with CAP_IPC_LOCK)";
  }

  // Takes ownership of `fd`: checks it is a regular file and reads its size.
  std::unique_ptr<detail::OpenFile> adopt(int fd, const std::filesystem::path& path) {
    struct stat st {};
    if (calls_->fstat(fd, &st) != 0) {
      const int error = errno;
      calls_->close(fd);
      errno = error;
      throw io_error("fstat", path);
    }
    if (!S_ISREG(st.st_mode)) {
      calls_->close(fd);
      throw IoError(fmt::format("cannot map {}: it is not a regular file", path.string()), path, EINVAL);
    }
    return std::make_unique<CpuFile>(path, *calls_, fd, static_cast<std::uint64_t>(st.st_size));
  }

  static IoError io_error(const char* call, const std::filesystem::path& path) {
    const int error = errno;
    return IoError(fmt::format("cannot map {} ({}: {})", path.string(), call, std::strerror(error)), path, error);
  }

  std::size_t thread_cache_max() const override { return options_.thread_cache_max; }

  std::shared_ptr<SystemCalls> calls_;
  CpuBackendOptions options_;
  std::size_t page_;
};

}  // namespace

CpuBackendOptions device_options() {
  CpuBackendOptions options;
  options.thread_cache_max = kThreadCacheMax;
  if (const char* text = std::getenv("NUVEC_THREAD_CACHE"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    errno = 0;
    const unsigned long long bytes = std::strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || text[0] == '-') {
      throw InvalidArgument(fmt::format("NUVEC_THREAD_CACHE={}: not a byte count (the largest block cached per "
                                        "thread, e.g. 262144; 0 turns thread caches off)",
                                        text));
    }
    options.thread_cache_max = static_cast<std::size_t>(bytes);
  }
  return options;
}

std::unique_ptr<detail::Backend> make_backend(std::shared_ptr<SystemCalls> calls, CpuBackendOptions options) {
  return std::make_unique<CpuBackend>(std::move(calls), options);
}

}  // namespace nuvec::cpu
