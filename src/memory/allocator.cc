#include "memory/allocator.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::detail {

namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

std::size_t saturating_add(std::size_t a, std::size_t b) { return a > kMax - b ? kMax : a + b; }

std::string system_error(const char* call, int error) { return fmt::format("{}: {}", call, std::strerror(error)); }

std::string wiring_error(std::size_t bytes, int error) {
  return fmt::format(
      "cannot wire {} ({}): the system would not lock more memory; raise the process's lock limit "
      "(`ulimit -l`, or run with CAP_IPC_LOCK) or lower the wired limit (Device::set_wired_limit, NUVEC_WIRED_LIMIT)",
      format_bytes(bytes), system_error("mlock", error));
}

}  // namespace

// A mapping the allocator made: a Mapping to its users, a Resident to the
// residency order; unmapped through the allocator when its last owner goes.
class Allocator::FileMapping final : public Mapping, public Resident {
 public:
  FileMapping(Allocator& allocator, std::filesystem::path path, std::uint64_t file_size, bool whole_file,
              std::vector<Region> regions)
      : allocator_(allocator) {
    path_ = std::move(path);
    file_size_ = file_size;
    whole_file_ = whole_file;
    regions_ = std::move(regions);
    for (const Region& r : regions_) mapped_bytes_ += r.length;
    size = mapped_bytes_;
  }
  ~FileMapping() override {
    if (live_) allocator_.unmap(*this);
  }

  int wire(Backend& backend) override {
    for (std::size_t i = 0; i < regions_.size(); ++i) {
      if (const int error = backend.wire(regions_[i].address, regions_[i].length); error != 0) {
        while (i-- > 0) backend.unwire(regions_[i].address, regions_[i].length);
        return error;
      }
    }
    return 0;
  }
  void unwire(Backend& backend) noexcept override {
    for (const Region& r : regions_) backend.unwire(r.address, r.length);
  }
  bool is_mapping() const override { return true; }
  std::uint64_t trace_id() const override { return reinterpret_cast<std::uintptr_t>(this); }

  // Maps every region of `file`; on failure unmaps what was mapped and raises.
  void map_regions(Backend& backend, const OpenFile& file) {
    for (std::size_t i = 0; i < regions_.size(); ++i) {
      try {
        regions_[i].address = static_cast<const std::byte*>(backend.map(file, regions_[i].file_offset, regions_[i].length));
      } catch (...) {
        while (i-- > 0) backend.unmap(regions_[i].address, regions_[i].length);
        throw;
      }
    }
  }
  void unmap_regions(Backend& backend) noexcept {
    for (const Region& r : regions_) backend.unmap(r.address, r.length);
  }

  bool live_ = false;

 private:
  Allocator& allocator_;
};

Allocator::Allocator(Backend& backend)
    : backend_(backend), classes_(backend.size_classes()), cache_(classes_), residency_(backend) {
  residency_.observe(&Allocator::note_wiring, this);
  memory_limit_ = backend_.default_memory_limit();
  cache_limit_ = memory_limit_;
}

Allocator::~Allocator() {
  std::lock_guard lock(mutex_);
  if (active_ != 0 || mapped_ != 0) {
    std::fprintf(stderr,
                 "nuvec: device '%.*s' destroyed while %s of buffers and %s of mappings are live; buffers and "
                 "mappings must not outlive their device\n",
                 static_cast<int>(backend_.name().size()), backend_.name().data(), format_bytes(active_).c_str(),
                 format_bytes(mapped_).c_str());
    std::abort();
  }
  while (Block* block = cache_.oldest()) {
    if (release_cached(*block) != 0) break;  // the system refused; nothing more can be done
  }
}

MemoryStats Allocator::snapshot() const {
  MemoryStats s;
  s.active = active_;
  s.peak = peak_;
  s.active_with_mapped = active_ + mapped_;
  s.peak_with_mapped = peak_with_mapped_;
  s.cache = cache_.bytes();
  s.memory_limit = memory_limit_;
  s.cache_limit = cache_limit_;
  s.system_allocations = system_allocations_;
  s.wired_limit = residency_.limit();
  s.wired = residency_.wired();
  s.mapped = mapped_;
  s.wired_mapped = residency_.wired_mapped();
  return s;
}

MemoryStats Allocator::memory() const {
  std::lock_guard lock(mutex_);
  return snapshot();
}

void Allocator::note_growth() {
  peak_ = std::max(peak_, active_);
  peak_with_mapped_ = std::max(peak_with_mapped_, active_ + mapped_);
}

void Allocator::refuse(std::size_t requested, const std::string& what) {
  note(TraceEventKind::refuse, 0, requested, 0, false, what);
  throw OutOfMemory(fmt::format("cannot {}: active {} + mapped {} + {} would pass the memory limit of {} "
                                "(raise it with Device::set_memory_limit or NUVEC_MEMORY_LIMIT, or free buffers "
                                "and mappings first)",
                                what, format_bytes(active_), format_bytes(mapped_), format_bytes(requested),
                                format_bytes(memory_limit_)),
                    requested, snapshot());
}

int Allocator::release_cached(Block& block) noexcept {
  if (const int error = backend_.release(block.address, block.size, block.wired); error != 0) {
    return error;  // the system still holds it: it stays cached (and wired) where it was
  }
  cache_.remove(block);
  residency_.forget_wired(block);
  note(TraceEventKind::release, block.trace_id(), 0, block.size);
  delete &block;
  return 0;
}

template <class Over>
int Allocator::release_cached_while(Over over) noexcept {
  const std::size_t wired_before = residency_.wired();
  int error = 0;
  while (error == 0 && over()) {
    Block* oldest = cache_.oldest();
    if (oldest == nullptr) break;
    error = release_cached(*oldest);
  }
  if (residency_.wired() < wired_before) residency_.promote(/*strict=*/false);
  return error;
}

Block& Allocator::allocate(std::size_t len, Stream stream) {
  const std::optional<std::size_t> rounded = classes_.round(len);
  std::lock_guard lock(mutex_);
  const auto what = [len] { return fmt::format("allocate {}", format_bytes(len)); };
  if (!rounded) refuse(kMax, what());
  const std::size_t size = *rounded;
  const std::size_t headroom = memory_limit_ - active_ - mapped_;
  if (size > headroom) refuse(size, what());

  // Bounded best fit: a cached block serves when it is below
  // min(2·size, size + 2·page) and fits under the limit.
  const std::size_t bound =
      std::min({saturating_add(size, size), saturating_add(size, 2 * classes_.page), saturating_add(headroom, 1)});
  if (Block* block = cache_.find(size, bound)) {
    if (const int error = residency_.wire_new(*block); error != 0) {
      throw IoError(wiring_error(block->size, error), {}, error);
    }
    cache_.remove(*block);
    if (block->stream != stream) {
      backend_.order_after(block->stream, stream);
      block->stream = stream;
    }
    active_ += block->size;
    residency_.append(*block);
    note_growth();
    note(TraceEventKind::allocate, block->trace_id(), len, block->size, /*hit=*/true);
    return *block;
  }

  // A miss: the cache yields to live data before the system is asked.
  release_cached_while([&] { return cache_.bytes() > headroom - size; });
  void* address = backend_.allocate(size);
  if (address == nullptr && !cache_.empty()) {
    // The system is out of memory while we hold some: give it all back (after
    // the device has finished with it) and ask once more.
    backend_.synchronize();
    release_cached_while([&] { return !cache_.empty(); });
    address = backend_.allocate(size);
  }
  if (address == nullptr) {
    const int error = errno;
    note(TraceEventKind::refuse, 0, size, 0, false, "the system refused");
    throw OutOfMemory(fmt::format("cannot {} ({} from the system): {}; active {}, cache {}, memory limit {} — "
                                  "free buffers, or lower the memory limit (Device::set_memory_limit, "
                                  "NUVEC_MEMORY_LIMIT) to what the machine can give",
                                  what(), format_bytes(size), system_error("allocation", error), format_bytes(active_),
                                  format_bytes(cache_.bytes()), format_bytes(memory_limit_)),
                      size, snapshot());
  }
  Block* block = new (std::nothrow) Block(address, size);
  if (block != nullptr) block->stream = stream;
  if (block == nullptr) {
    backend_.release(address, size, /*wired=*/false);
    throw OutOfMemory(fmt::format("cannot {}: no memory for the allocator's bookkeeping", what()), size, snapshot());
  }
  if (const int error = residency_.wire_new(*block); error != 0) {
    backend_.release(address, size, /*wired=*/false);
    delete block;
    throw IoError(wiring_error(size, error), {}, error);
  }
  ++system_allocations_;
  active_ += size;
  residency_.append(*block);
  note_growth();
  note(TraceEventKind::allocate, block->trace_id(), len, size, /*hit=*/false);
  return *block;
}

void Allocator::free(Block& block) noexcept {
  std::lock_guard lock(mutex_);
  active_ -= block.size;
  residency_.remove(block);
  cache_.put(block);
  note(TraceEventKind::free, block.trace_id(), 0, block.size);
  if (const int error = release_cached_while([&] { return cache_.bytes() > cache_limit_; }); error != 0) {
    std::fprintf(stderr, "nuvec: warning: the system refused to release a cached block (%s); it stays cached\n",
                 std::strerror(error));
  }
}

std::shared_ptr<const Mapping> Allocator::map(std::unique_ptr<OpenFile> file, std::span<const FileRange> ranges,
                                               bool whole_file) {
  const std::filesystem::path& path = file->path();
  const std::uint64_t file_size = file->size();

  // The regions to map: the whole file, or the ranges widened to pages,
  // sorted, with overlapping or touching ones merged.
  std::vector<Mapping::Region> regions;
  if (whole_file) {
    if (file_size > 0) regions.push_back({0, mapping_size(file_size), nullptr});
  } else {
    for (const FileRange& r : ranges) {
      if (r.length == 0 || r.offset > file_size || r.length > file_size - r.offset) {
        throw InvalidArgument(fmt::format("cannot map bytes [{}, {}) of {}: the file has {} bytes", r.offset,
                                          r.offset + r.length, path.string(), file_size));
      }
    }
    for (const FileRange& r : page_rounded_ranges(ranges)) {
      regions.push_back({r.offset, static_cast<std::size_t>(r.length), nullptr});
    }
  }
  auto mapping = std::make_shared<FileMapping>(*this, path, file_size, whole_file, std::move(regions));
  const std::size_t size = mapping->mapped_bytes();

  std::lock_guard lock(mutex_);
  const std::size_t headroom = memory_limit_ - active_ - mapped_;
  if (size > headroom) refuse(size, fmt::format("map {} ({})", path.string(), format_bytes(size)));
  release_cached_while([&] { return cache_.bytes() > headroom - size; });
  mapping->map_regions(backend_, *file);
  if (const int error = residency_.wire_new(*mapping); error != 0) {
    mapping->unmap_regions(backend_);
    throw IoError(wiring_error(size, error), path, error);
  }
  mapped_ += size;
  residency_.append(*mapping);
  note_growth();
  mapping->live_ = true;
  note(TraceEventKind::map, mapping->trace_id(), size, size, false, path.string());
  return mapping;
}

void Allocator::unmap(FileMapping& mapping) noexcept {
  std::lock_guard lock(mutex_);
  residency_.remove(mapping);
  mapping.unmap_regions(backend_);  // unmapping unlocks too
  const bool was_wired = mapping.wired;
  residency_.forget_wired(mapping);
  mapped_ -= mapping.mapped_bytes();
  note(TraceEventKind::unmap, mapping.trace_id(), 0, mapping.mapped_bytes());
  if (was_wired) residency_.promote(/*strict=*/false);
}

void Allocator::reset_peak() {
  std::lock_guard lock(mutex_);
  peak_ = active_;
  peak_with_mapped_ = active_ + mapped_;
  note(TraceEventKind::reset_peak);
}

std::size_t Allocator::set_memory_limit(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes < active_ + mapped_) {
    throw InvalidArgument(fmt::format(
        "cannot set the memory limit to {}: active {} + mapped {} already pass it; free buffers and mappings first",
        format_bytes(bytes), format_bytes(active_), format_bytes(mapped_)));
  }
  const std::size_t previous = memory_limit_;
  memory_limit_ = bytes;
  note(TraceEventKind::memory_limit, 0, bytes);
  release_cached_while([&] { return active_ + mapped_ + cache_.bytes() > memory_limit_; });
  return previous;
}

std::size_t Allocator::set_cache_limit(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const std::size_t previous = cache_limit_;
  cache_limit_ = bytes;
  note(TraceEventKind::cache_limit, 0, bytes);
  release_cached_while([&] { return cache_.bytes() > cache_limit_; });
  return previous;
}

std::size_t Allocator::set_wired_limit(std::size_t bytes) {
  const std::size_t lockable = backend_.lockable_bytes();
  if (bytes > lockable) {
    throw InvalidArgument(fmt::format(
        "cannot set the wired limit to {}: this process may lock at most {} (physical memory, and RLIMIT_MEMLOCK "
        "without CAP_IPC_LOCK); raise `ulimit -l` or choose a lower limit",
        format_bytes(bytes), format_bytes(lockable)));
  }
  std::lock_guard lock(mutex_);
  const std::size_t previous = residency_.limit();
  residency_.set_limit(bytes);
  note(TraceEventKind::wired_limit, 0, bytes);
  if (bytes >= previous) {
    if (const int error = residency_.promote(/*strict=*/true); error != 0) {
      residency_.set_limit(previous);
      throw IoError(fmt::format("cannot raise the wired limit to {} ({}): the system would not lock more memory; "
                                "raise the process's lock limit (`ulimit -l`, or run with CAP_IPC_LOCK)",
                                format_bytes(bytes), system_error("mlock", error)),
                    {}, error);
    }
  } else {
    // Cached blocks hold no live data: they give up their lock first.
    cache_.for_each_newest_first([&](Block& block) {
      if (residency_.wired() > bytes) residency_.unwire_cached(block);
    });
    residency_.unwire_newest(bytes);
  }
  return previous;
}

void Allocator::clear_cache() {
  std::lock_guard lock(mutex_);
  note(TraceEventKind::clear_cache);
  if (const int error = release_cached_while([] { return true; }); error != 0) {
    throw IoError(fmt::format("clear_cache: the system refused to release a cached block ({}); {} stays cached",
                              system_error("munmap", error), format_bytes(cache_.bytes())),
                  {}, error);
  }
}

void Allocator::note_wiring(void* self, const Resident& item, bool wired) {
  static_cast<Allocator*>(self)->note(wired ? TraceEventKind::wire : TraceEventKind::unwire, item.trace_id(), 0,
                                      item.size);
}

void Allocator::start_trace(std::size_t capacity, std::string device_name) {
  std::lock_guard lock(mutex_);
  trace_ = std::make_unique<TraceRecorder>(
      capacity, TraceHeader{.device = std::move(device_name), .page_size = classes_.page, .source = "nuvec"});
}

void Allocator::stop_trace() {
  std::lock_guard lock(mutex_);
  trace_.reset();
}

std::optional<Trace> Allocator::trace() const {
  std::lock_guard lock(mutex_);
  if (trace_ == nullptr) return std::nullopt;
  return trace_->snapshot();
}

void Allocator::mark(std::string_view phase) {
  std::lock_guard lock(mutex_);
  note(TraceEventKind::mark, 0, 0, 0, false, phase);
}

}  // namespace nuvec::detail
