#include "memory/allocator.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
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
  if (backend_.can_reserve()) arena_ = std::make_unique<Arena>(classes_);
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
  if (arena_) {
    // Unmapping a reservation returns everything in it, locks included.
    for (const std::unique_ptr<Reservation>& r : arena_->reservations()) {
      if (const int error = backend_.unreserve(r->base, r->size); error != 0) {
        std::fprintf(stderr, "nuvec: warning: the system refused to return a reservation of %s (%s)\n",
                     format_bytes(r->size).c_str(), std::strerror(error));
      }
    }
    return;
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
  s.cache = cache_bytes();
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

std::uint64_t Allocator::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

std::optional<Backend::Committed> Allocator::committed() const {
  std::lock_guard lock(mutex_);
  return backend_.committed();
}

std::size_t Allocator::peak_held() const {
  std::lock_guard lock(mutex_);
  return peak_held_;
}

void Allocator::note_growth() {
  peak_ = std::max(peak_, active_);
  peak_with_mapped_ = std::max(peak_with_mapped_, active_ + mapped_);
  // active + cache grows only when a buffer is made of memory the cache did
  // not hold, which always passes here.
  peak_held_ = std::max(peak_held_, active_ + cache_bytes());
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
  if (arena_) return release_extent(block);
  if (const int error = backend_.release(block.address, block.size, block.wired); error != 0) {
    return error;  // the system still holds it: it stays cached (and wired) where it was
  }
  cache_.remove(block);
  residency_.forget_wired(block);
  note(TraceEventKind::release, block.trace_id(), 0, block.size);
  delete &block;
  return 0;
}

int Allocator::release_extent(Block& extent) noexcept {
  const auto [address, length] = arena_->decommit_range(extent);
  const bool wired = extent.wired;
  if (wired) extent.unwire(backend_);  // locked pages cannot be decommitted
  if (length != 0) {
    if (const int error = backend_.decommit(address, length); error != 0) {
      // Still committed: it stays cached, locked again if it was.
      if (wired && extent.wire(backend_) != 0) {
        residency_.forget_wired(extent);
        arena_->unwired(extent);
      }
      return error;
    }
  }
  const std::uint64_t id = extent.trace_id();
  const std::size_t size = extent.size;
  arena_->evict(extent);
  residency_.forget_wired(extent);
  arena_->make_hole(extent);
  note(TraceEventKind::release, id, 0, size);
  return 0;
}

template <class Over>
int Allocator::release_cached_while(Over over) noexcept {
  const std::size_t wired_before = residency_.wired();
  int error = 0;
  while (error == 0 && over()) {
    Block* oldest = oldest_cached();
    if (oldest == nullptr) break;
    error = release_cached(*oldest);
  }
  if (residency_.wired() < wired_before) residency_.promote(/*strict=*/false);
  return error;
}

// A cached block, already out of the cache, becomes live on `stream` (a hit).
Block& Allocator::hand_out_cached(Block& block, Stream stream, std::size_t len) {
  if (block.stream != stream) {
    backend_.order_after(block.stream, stream);
    block.stream = stream;
  }
  active_ += block.size;
  residency_.append(block);
  note_growth();
  note(TraceEventKind::allocate, block.trace_id(), len, block.size, /*hit=*/true);
  return block;
}

Block& Allocator::allocate(std::size_t len, Stream stream) {
  const std::optional<std::size_t> rounded = classes_.round(len);
  std::lock_guard lock(mutex_);
  const auto what = [len] { return fmt::format("allocate {}", format_bytes(len)); };
  if (!rounded) refuse(kMax, what());
  const std::size_t size = *rounded;
  const std::size_t headroom = memory_limit_ - active_ - mapped_;
  if (size > headroom) refuse(size, what());
  if (arena_) return allocate_in_arena(len, size, headroom, stream);

  // Bounded best fit: a cached block serves when it is below
  // min(2·size, size + 2·page) and fits under the limit.
  const std::size_t bound =
      std::min({saturating_add(size, size), saturating_add(size, 2 * classes_.page), saturating_add(headroom, 1)});
  if (Block* block = cache_.find(size, bound)) {
    if (const int error = residency_.wire_new(*block); error != 0) {
      throw IoError(wiring_error(block->size, error), {}, error);
    }
    cache_.remove(*block);
    return hand_out_cached(*block, stream, len);
  }

  // A miss: the cache yields to live data before the system is asked.
  release_cached_while([&] { return cache_.bytes() > headroom - size; });
  void* address = backend_.allocate(size);
  int error = address == nullptr ? errno : 0;
  if (address == nullptr && error == ENOMEM && !cache_.empty()) {
    // The system is out of memory while we hold some: give it all back (after
    // the device has finished with it) and ask once more. Any other failure
    // (a broken device context, say) would not heal by retrying.
    backend_.synchronize();
    release_cached_while([&] { return !cache_.empty(); });
    address = backend_.allocate(size);
    if (address == nullptr) error = errno;
  }
  if (address == nullptr) refuse_system(len, size, error);
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
  ++misses_;
  active_ += size;
  residency_.append(*block);
  note_growth();
  note(TraceEventKind::allocate, block->trace_id(), len, size, /*hit=*/false);
  return *block;
}

void Allocator::refuse_system(std::size_t len, std::size_t size, int error) {
  note(TraceEventKind::refuse, 0, size, 0, false, "the system refused");
  throw OutOfMemory(fmt::format("cannot allocate {} ({} from the system): {}; active {}, cache {}, memory limit {} — "
                                "free buffers, or lower the memory limit (Device::set_memory_limit, "
                                "NUVEC_MEMORY_LIMIT) to what the machine can give",
                                format_bytes(len), format_bytes(size), system_error("allocation", error),
                                format_bytes(active_), format_bytes(cache_bytes()), format_bytes(memory_limit_)),
                    size, snapshot());
}

Block& Allocator::allocate_in_arena(std::size_t len, std::size_t size, std::size_t headroom, Stream stream) {
  try {
    arena_->prepare(stream, /*spares=*/2);  // a take needs at most two Block objects
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(
        fmt::format("cannot allocate {}: no memory for the allocator's bookkeeping", format_bytes(len)), size,
        snapshot());
  }

  // 1. A wired cached block (never split or merged): bounded best fit, as
  // without an arena, so that its lock serves again.
  if (Block* block = arena_->find_wired(size, headroom)) {
    arena_->take_wired(*block);
    return hand_out_cached(*block, stream, len);
  }

  // 2. A hit: the best-fitting cached extent, split.
  if (Block* extent = arena_->find_cached(size, stream)) {
    const Stream from = extent->stream;
    Block& block = take(*extent, size, stream);
    if (from != stream) backend_.order_after(from, stream);
    note(TraceEventKind::allocate, block.trace_id(), len, size, /*hit=*/true);
    return block;
  }

  // 3. A miss: the cache yields to live data, then a hole serves (address
  // space never used, or decommitted), else a new reservation.
  release_cached_while([&] { return arena_->bytes() > headroom - size; });
  Block* hole = arena_->find_hole(size);
  const std::uint64_t reserved_before = system_allocations_;
  if (hole == nullptr) hole = &reserve(len, size);
  Reservation* const fresh = system_allocations_ != reserved_before ? hole->reservation : nullptr;
  // The block's pages are committed before it is handed out (a GPU maps
  // physical memory there; the CPU's pages come on first touch). A device
  // out of memory while we hold some: give it all back (after the device
  // has finished with it) and commit once more, from the hole that fits
  // best now (the released extents became holes, maybe merged with ours).
  int error = commit_pages(*hole, size);
  if (error == ENOMEM && !arena_->empty()) {
    backend_.synchronize();
    release_cached_while([] { return true; });
    hole = arena_->find_hole(size);  // never null: ours is still there, or part of a larger one
    error = commit_pages(*hole, size);
  }
  if (error != 0) {
    return_if_unused(fresh);
    refuse_system(len, size, error);
  }
  try {
    Block& block = take(*hole, size, stream);
    return_if_unused(fresh);  // served from an older one after the release
    ++misses_;
    note(TraceEventKind::allocate, block.trace_id(), len, size, /*hit=*/false);
    return block;
  } catch (...) {
    // Wiring failed: a reservation made for this allocation goes back too.
    // (Pages committed above stay committed for the hole's next block; no
    // backend both commits explicitly and wires buffers.)
    return_if_unused(fresh);
    throw;
  }
}

int Allocator::commit_pages(const Block& hole, std::size_t size) noexcept {
  const std::uintptr_t page = classes_.page;
  const auto start = reinterpret_cast<std::uintptr_t>(hole.address);
  const std::uintptr_t from = start & ~(page - 1);
  const std::uintptr_t to = (start + size + page - 1) & ~(page - 1);
  return backend_.commit(reinterpret_cast<void*>(from), to - from);
}

void Allocator::return_if_unused(Reservation* reservation) noexcept {
  if (reservation == nullptr || !reservation->unused()) return;
  if (backend_.unreserve(reservation->base, reservation->size) == 0) {
    arena_->remove_reservation(*reservation);
    --system_allocations_;
  }
}

Block& Allocator::take(Block& extent, std::size_t size, Stream stream) {
  Block& block = arena_->carve(extent, size);
  if (const int error = residency_.wire_new(block); error != 0) {
    arena_->discard(extent, block);
    throw IoError(wiring_error(size, error), {}, error);
  }
  arena_->commit(extent, block);
  block.stream = stream;
  active_ += size;
  residency_.append(block);
  note_growth();
  return block;
}

Block& Allocator::reserve(std::size_t len, std::size_t size) {
  const ArenaKind kind = arena_->kind_of(size);
  Backend::Reservation r = backend_.reserve(size, kind == ArenaKind::pages);
  if (r.base == nullptr) {
    int error = errno;
    const auto& all = arena_->reservations();
    const bool unused = std::any_of(all.begin(), all.end(), [](const auto& x) { return x->unused(); });
    if (error == ENOMEM && (!arena_->empty() || unused)) {
      // The system is out of memory (or address space) while we hold some:
      // give it all back (after the device has finished with it), then try
      // the holes and the system once more.
      backend_.synchronize();
      release_cached_while([] { return true; });
      if (Block* hole = arena_->find_hole(size)) return *hole;
      unreserve_unused();
      r = backend_.reserve(size, kind == ArenaKind::pages);
      if (r.base == nullptr) error = errno;
    }
    if (r.base == nullptr) refuse_system(len, size, error);
  }
  ++system_allocations_;
  return arena_->add_reservation(r.base, r.size, kind);
}

void Allocator::unreserve_unused() noexcept {
  const auto& all = arena_->reservations();
  for (std::size_t i = all.size(); i-- > 0;) {
    Reservation& r = *all[i];
    if (!r.unused()) continue;
    if (const int error = backend_.unreserve(r.base, r.size); error != 0) {
      std::fprintf(stderr, "nuvec: warning: the system refused to return a reservation of %s (%s)\n",
                   format_bytes(r.size).c_str(), std::strerror(error));
      continue;
    }
    arena_->remove_reservation(r);
  }
}

void Allocator::free(Block& block) noexcept {
  std::lock_guard lock(mutex_);
  const std::uint64_t id = block.trace_id();
  const std::size_t size = block.size;
  active_ -= size;
  residency_.remove(block);
  if (arena_) {
    arena_->put(block);  // may merge: the block is then the merged extent
  } else {
    cache_.put(block);
  }
  note(TraceEventKind::free, id, 0, size);
  if (const int error = release_cached_while([&] { return cache_bytes() > cache_limit_; }); error != 0) {
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
  release_cached_while([&] { return cache_bytes() > headroom - size; });
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
  peak_held_ = active_ + cache_bytes();
  backend_.reset_committed_peak();
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
  release_cached_while([&] { return active_ + mapped_ + cache_bytes() > memory_limit_; });
  return previous;
}

std::size_t Allocator::set_cache_limit(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const std::size_t previous = cache_limit_;
  cache_limit_ = bytes;
  note(TraceEventKind::cache_limit, 0, bytes);
  release_cached_while([&] { return cache_bytes() > cache_limit_; });
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
    // Cached blocks hold no live data: they give up their lock first. In an
    // arena an unlocked extent becomes an ordinary cached extent.
    if (arena_) {
      arena_->for_each_newest_first([&](Block& block) {
        if (!block.wired || residency_.wired() <= bytes) return;
        residency_.unwire_cached(block);
        arena_->unwired(block);
      });
    } else {
      cache_.for_each_newest_first([&](Block& block) {
        if (residency_.wired() > bytes) residency_.unwire_cached(block);
      });
    }
    residency_.unwire_newest(bytes);
  }
  return previous;
}

void Allocator::clear_cache() {
  std::lock_guard lock(mutex_);
  note(TraceEventKind::clear_cache);
  if (const int error = release_cached_while([] { return true; }); error != 0) {
    throw IoError(fmt::format("clear_cache: the system refused to release a cached block ({}); {} stays cached",
                              system_error(arena_ ? "madvise" : "munmap", error), format_bytes(cache_bytes())),
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

bool Allocator::wire_staging(std::uint64_t id, std::size_t bytes, bool wire) {
  std::lock_guard lock(mutex_);
  if (wire) {
    if (!residency_.hold_staging(bytes)) return false;
    note(TraceEventKind::wire, id, 0, bytes);
  } else {
    residency_.release_staging(bytes);
    note(TraceEventKind::unwire, id, 0, bytes);
    residency_.promote(/*strict=*/false);  // mappings that waited for the room
  }
  return true;
}

}  // namespace nuvec::detail
