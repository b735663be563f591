#include "memory/allocator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "memory/thread_registry.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::detail {

namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

}  // namespace

Allocator::Allocator(Backend& backend)
    : backend_(backend),
      classes_(backend.size_classes()),
      residency_(backend),
      cache_(make_block_cache(backend, *this, residency_, classes_)),
      tier_(make_thread_tier(backend, classes_, *this, *this, residency_, mutex_, backend.default_memory_limit())) {
  residency_.observe(&Allocator::note_wiring, this);
  memory_limit_ = backend_.default_memory_limit();
  cache_limit_ = memory_limit_;
  tier_->set_serving(threads_serve());
}

Allocator::~Allocator() {
  std::lock_guard registry(thread_cache_registry_lock());
  std::lock_guard lock(mutex_);
  {
    ThreadTier::Hold held(*tier_);
    tier_->flush_all();
    if (handed_out_ != 0 || mapped_ != 0) {
      std::fprintf(stderr,
                   "nuvec: device '%.*s' destroyed while %s of buffers and %s of mappings are live; buffers and "
                   "mappings must not outlive their device\n",
                   static_cast<int>(backend_.name().size()), backend_.name().data(),
                   format_bytes(handed_out_).c_str(), format_bytes(mapped_).c_str());
      std::abort();
    }
  }
  tier_->close();
  cache_->release_everything();
}

MemoryStats Allocator::snapshot() const {
  // Budgets are handed out (handed_out_) but hold no live data: they are
  // part of what thread caches hold, which is cache.
  ThreadTier::Hold held(*tier_);
  const ThreadTier::Totals threads = tier_->totals();
  MemoryStats s;
  s.active = handed_out_ - threads.budgets;
  s.peak = peak_;
  s.active_with_mapped = s.active + mapped_;
  s.peak_with_mapped = peak_with_mapped_;
  s.cache = cache_->bytes() + threads.cached;
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

DeviceCounters Allocator::counters() const {
  std::lock_guard lock(mutex_);
  DeviceCounters c;
  c.system_allocations = system_allocations_;
  const Reserved shared = cache_->reserved();
  const Reserved threads = tier_->reserved();
  c.reservations = shared.count + threads.count;
  c.reserved_bytes = shared.bytes + threads.bytes;
  if (const std::optional<Committed> committed = cache_->committed()) {
    c.committed = committed->bytes;
    c.committed_peak = committed->peak;
  }
  c.peak_held = peak_held_;
  return c;
}

// --- Allocation: the shared path of allocate() and free() ---

Block& Allocator::allocate_shared(std::size_t len, Stream stream, ThreadCache* local) {
  const std::optional<std::size_t> rounded = classes_.round(len);
  std::lock_guard lock(mutex_);
  ThreadTier::Hold held(*tier_);  // thread caches whose budget was taken stay locked until the end
  if (!rounded) [[unlikely]] refuse_allocation(len, rounded);
  const std::size_t size = *rounded;
  // This thread's cache, if it serves the size; its budget came back first:
  // the request is counted anew.
  ThreadCache* const serving = tier_->serving(local, size);
  std::size_t headroom = memory_limit_ - handed_out_ - mapped_;
  // handed_out_ counts budgets: past the limit by those only, they come
  // back and the limit is checked against live bytes.
  if (size > headroom && tier_->has_threads()) [[unlikely]] {
    tier_->take_all_budgets();
    headroom = memory_limit_ - handed_out_ - mapped_;
  }
  if (size > headroom) [[unlikely]] refuse_allocation(len, rounded);
  Block* block = serving != nullptr ? tier_->take_from(*serving, size) : nullptr;
  if (block == nullptr) block = cache_->take_cached(size, stream, headroom);
  if (block == nullptr) block = tier_->take_cached(size, stream, headroom);
  const bool hit = block != nullptr;
  if (!hit) [[unlikely]] {
    BlockCache* arena = serving != nullptr ? tier_->arena_of(*serving) : nullptr;
    block = &take_new(len, size, headroom, stream, arena != nullptr ? *arena : *cache_);
  }
  // A new peak is set from live bytes: thread caches give their budgets
  // back first (as many as it takes), and stay locked until it is set.
  if ((handed_out_ + block->size > peak_ || handed_out_ + mapped_ + block->size > peak_with_mapped_) &&
      tier_->has_threads()) [[unlikely]] {
    take_budgets_within_peaks(block->size);
  }
  handed_out_ += block->size;
  peak_ = std::max(peak_, handed_out_);
  peak_with_mapped_ = std::max(peak_with_mapped_, handed_out_ + mapped_);
  if (serving != nullptr) {
    // Budget for what it holds, as far as the peaks and the limit leave
    // room without rising: its next hits need no shared lock.
    const std::size_t room = std::min({peak_ - handed_out_, peak_with_mapped_ - mapped_ - handed_out_,
                                       memory_limit_ - mapped_ - handed_out_});
    handed_out_ += tier_->grant(*serving, *block, room);
  } else {
    residency_.append(*block);
  }
  note(TraceEventKind::allocate, block->trace_id(), len, block->size, hit, {}, stream);
  return *block;
}

void Allocator::take_budgets_within_peaks(std::size_t size) noexcept {
  // Within once handed_out_ + size <= peak_ and handed_out_ + mapped_ + size <= peak_with_mapped_.
  const std::size_t over_peak = handed_out_ + size - std::min(handed_out_ + size, peak_);
  const std::size_t over_with_mapped =
      handed_out_ + mapped_ + size - std::min(handed_out_ + mapped_ + size, peak_with_mapped_);
  tier_->take_budgets(std::max(over_peak, over_with_mapped));
}

void Allocator::free_shared(Block& block, ThreadTier::Freed freed) noexcept {
  std::lock_guard lock(mutex_);
  ThreadTier::Hold held(*tier_);
  // A block this thread's cache could not keep alone: the tier sends it, or
  // one that made room for it, home (unless that cache stopped serving).
  if (freed.where == ThreadTier::Freed::Where::route && tier_->route(block, *freed.local)) return;
  const std::uint64_t id = block.trace_id();
  const std::size_t size = block.size;
  const Stream stream = block.stream;
  handed_out_ -= size;
  if (freed.where == ThreadTier::Freed::Where::ordered) residency_.remove(block);
  cache_->note_free(stream);
  put_cached(block);
  note(TraceEventKind::free, id, 0, size, false, {}, stream);
}

void Allocator::put_cached(Block& block) noexcept {
  if (ThreadTier::is_home_of(block)) {
    tier_->put_cached(block, 0);
  } else {
    put_shared(block);
  }
}

void Allocator::put_shared(Block& block) noexcept {
  cache_->put(block);
  trim_shared();
}

void Allocator::trim_shared() noexcept {
  if (cache_->bytes() <= shared_cache_limit()) [[likely]] return;
  if (const int error = cache_->release_excess([&] { return bytes_over(cache_->bytes(), shared_cache_limit()); });
      error != 0) {
    warn_release_refused(error);
  }
}

int Allocator::release_caches_for(std::size_t size) noexcept {
  // Budgets taken back first: handed_out_ is then the live bytes, and what
  // every cache holds is the cache.
  tier_->flush_all();
  const std::size_t live = handed_out_ + mapped_ + size;
  const std::size_t room = memory_limit_ - std::min(memory_limit_, live);
  std::size_t over = bytes_over(cache_->bytes() + tier_->totals().cached, room);
  if (over == 0) return 0;
  const int error = cache_->release_bytes(over);
  return error != 0 || over == 0 ? error : tier_->release(over);
}

// --- Allocation: the slow paths of allocate() ---

void Allocator::refuse_allocation(std::size_t len, std::optional<std::size_t> rounded) {
  refuse(rounded.value_or(kMax), fmt::format("allocate {}", format_bytes(len)));
}

Block& Allocator::take_new(std::size_t len, std::size_t size, std::size_t headroom, Stream stream,
                           BlockCache& from) {
  // The cache yields to live data before the system is asked (all caches
  // counted exactly only when they could be in the way).
  const std::size_t bound = cache_->bytes() + tier_->holdings_bound();
  if (bound > headroom - size) release_caches_for(size);
  Block& block = from.take_new(len, size, stream);
  ++system_allocations_;
  // active + cache grows only here: a buffer made of memory the cache did not hold.
  const ThreadTier::Totals threads = tier_->totals();
  peak_held_ =
      std::max(peak_held_, handed_out_ - threads.budgets + block.size + cache_->bytes() + threads.cached);
  return block;
}

void Allocator::refuse(std::size_t requested, const std::string& what) {
  note(TraceEventKind::refuse, 0, requested, 0, false, what);
  const MemoryStats now = snapshot();
  throw OutOfMemory(fmt::format("cannot {}: active {} + mapped {} + {} would pass the memory limit of {} "
                                "(raise it with Device::set_memory_limit or NUVEC_MEMORY_LIMIT, or free buffers "
                                "and mappings first)",
                                what, format_bytes(now.active), format_bytes(mapped_), format_bytes(requested),
                                format_bytes(memory_limit_)),
                    requested, now);
}

void Allocator::refuse_system(std::size_t len, std::size_t size, int error) {
  note(TraceEventKind::refuse, 0, size, 0, false, "the system refused");
  const MemoryStats now = snapshot();
  throw OutOfMemory(fmt::format("cannot allocate {} on {} ({} from the system): {}; active {}, cache {}, memory limit "
                                "{} — free buffers, or lower the memory limit (Device::set_memory_limit, "
                                "NUVEC_MEMORY_LIMIT) to what the device can give",
                                format_bytes(len), backend_.name(), format_bytes(size), std::strerror(error),
                                format_bytes(now.active), format_bytes(now.cache), format_bytes(memory_limit_)),
                    size, now);
}

void Allocator::refuse_bookkeeping(std::size_t len, std::size_t size) {
  throw OutOfMemory(
      fmt::format("cannot allocate {}: no memory for the allocator's bookkeeping", format_bytes(len)), size,
      snapshot());
}

void Allocator::note_release(std::uint64_t id, std::size_t size) noexcept {
  note(TraceEventKind::release, id, 0, size);
}

// --- Mappings ---

std::shared_ptr<const Mapping> Allocator::map(std::unique_ptr<OpenFile> file, std::span<const FileRange> ranges,
                                               bool whole_file) {
  auto mapping = std::make_shared<FileMapping>(static_cast<MappingOwner&>(*this), *file, ranges, whole_file);
  const std::filesystem::path& path = file->path();
  const std::size_t size = mapping->mapped_bytes();

  std::lock_guard lock(mutex_);
  ThreadTier::Hold held(*tier_);  // as in allocate_shared: the limit and the peak against live bytes
  if (tier_->has_threads() &&
      (size > memory_limit_ - handed_out_ - mapped_ || handed_out_ + mapped_ + size > peak_with_mapped_)) {
    tier_->take_all_budgets();
  }
  const std::size_t headroom = memory_limit_ - handed_out_ - mapped_;
  if (size > headroom) refuse(size, fmt::format("map {} ({})", path.string(), format_bytes(size)));
  release_caches_for(size);
  mapping->map_regions(backend_.files(), *file);
  if (const int error = residency_.wire_new(*mapping); error != 0) {
    mapping->unmap_regions(backend_.files());
    refuse_wiring(residency_.how_to_lock_more(true), size, error, path);
  }
  mapped_ += size;
  residency_.append(*mapping);
  peak_with_mapped_ = std::max(peak_with_mapped_, handed_out_ + mapped_);
  mapping->set_live();
  note(TraceEventKind::map, mapping->trace_id(), size, size, false, path.string());
  return mapping;
}

void Allocator::unmap(FileMapping& mapping) noexcept {
  std::lock_guard lock(mutex_);
  residency_.remove(mapping);
  mapping.unmap_regions(backend_.files());  // unmapping unlocks too
  const bool was_wired = mapping.wired;
  residency_.forget_wired(mapping);
  mapped_ -= mapping.mapped_bytes();
  note(TraceEventKind::unmap, mapping.trace_id(), 0, mapping.mapped_bytes());
  if (was_wired) residency_.promote(/*strict=*/false);
}

// --- Peaks and limits ---

void Allocator::reset_peak() {
  std::lock_guard lock(mutex_);
  ThreadTier::Hold held(*tier_);  // the peaks become live bytes: no budget may stay handed out
  tier_->take_all_budgets();
  peak_ = handed_out_;
  peak_with_mapped_ = handed_out_ + mapped_;
  peak_held_ = handed_out_ + cache_->bytes() + tier_->totals().cached;
  cache_->reset_committed_peak();
  note(TraceEventKind::reset_peak);
}

std::size_t Allocator::set_memory_limit(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  // Taking the budgets back changes no statistic; it makes handed_out_ the
  // live bytes, so the checks are exact.
  ThreadTier::Hold held(*tier_);
  tier_->take_all_budgets();
  if (bytes < handed_out_ + mapped_) {
    throw InvalidArgument(fmt::format(
        "cannot set the memory limit to {}: active {} + mapped {} already pass it; free buffers and mappings first",
        format_bytes(bytes), format_bytes(handed_out_), format_bytes(mapped_)));
  }
  const std::size_t previous = memory_limit_;
  memory_limit_ = bytes;
  note(TraceEventKind::memory_limit, 0, bytes);
  release_caches_for(0);
  return previous;
}

std::size_t Allocator::set_cache_limit(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  ThreadTier::Hold held(*tier_);
  tier_->flush_all();
  const std::size_t previous = cache_limit_;
  cache_limit_ = bytes;
  note(TraceEventKind::cache_limit, 0, bytes);
  // The thread caches' shares, granted again within the new limit; the
  // exited threads' arenas count first, in the shared part.
  tier_->set_cache_limit(bytes);
  trim_shared();
  return previous;
}

std::size_t Allocator::set_wired_limit(std::size_t bytes) {
  Wiring& wiring = backend_.mapping_wiring();
  const std::size_t lockable = wiring.lockable_bytes();
  if (bytes > lockable) {
    throw InvalidArgument(fmt::format("cannot set the wired limit to {}: this process may lock at most {}; {}, or "
                                      "choose a lower limit",
                                      format_bytes(bytes), format_bytes(lockable), wiring.how_to_lock_more()));
  }
  std::lock_guard lock(mutex_);
  const std::size_t previous = residency_.limit();
  residency_.set_limit(bytes);
  note(TraceEventKind::wired_limit, 0, bytes);
  tier_->set_serving(threads_serve());  // they serve only while nothing is wired
  if (bytes >= previous) {
    if (const int error = residency_.promote(/*strict=*/true); error != 0) {
      residency_.set_limit(previous);
      throw IoError(fmt::format("cannot raise the wired limit to {} ({}): the system would not lock more memory; {}",
                                format_bytes(bytes), std::strerror(error), wiring.how_to_lock_more()),
                    {}, error);
    }
  } else {
    // Cached blocks hold no live data: they give up their lock first.
    cache_->unwire_newest(bytes);
    tier_->unwire_newest(bytes);
    residency_.unwire_newest(bytes);
  }
  return previous;
}

void Allocator::clear_cache() {
  std::lock_guard lock(mutex_);
  ThreadTier::Hold held(*tier_);
  tier_->flush_all();
  note(TraceEventKind::clear_cache);
  int error = cache_->release_all();
  if (error == 0) error = tier_->release_all();
  if (error != 0) {
    throw IoError(fmt::format("clear_cache on {}: the system refused to release a cached block ({}); {} stays cached",
                              backend_.name(), std::strerror(error),
                              format_bytes(cache_->bytes() + tier_->totals().cached)),
                  {}, error);
  }
}

// --- The trace and staging ---

void Allocator::note_wiring(void* self, const Resident& item, bool wired) {
  static_cast<Allocator*>(self)->note(wired ? TraceEventKind::wire : TraceEventKind::unwire, item.trace_id(), 0,
                                      item.size);
}

void Allocator::start_trace(std::size_t capacity, std::string device_name, const Device* tagged) {
  std::lock_guard lock(mutex_);
  trace_ = std::make_unique<TraceRecorder>(
      capacity, TraceHeader{.device = std::move(device_name), .page_size = classes_.page, .source = "nuvec"},
      tagged);
  tier_->set_serving(threads_serve());  // a traced device serves every request under its lock: one order
}

void Allocator::stop_trace() {
  std::lock_guard lock(mutex_);
  trace_.reset();
  tier_->set_serving(threads_serve());
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

