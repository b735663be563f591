#include "memory/allocator.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "memory/arena_cache.h"
#include "memory/whole_block_cache.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::detail {

namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

// The bytes by which `held` passes `limit`: what a trim must release.
std::size_t excess(std::size_t held, std::size_t limit) { return held > limit ? held - limit : 0; }

std::unique_ptr<BlockCache> make_cache(Backend& backend, CacheOwner& owner, Residency& residency,
                                       SizeClasses classes) {
  if (ReservationSource* reservations = backend.reservations()) {
    return std::make_unique<ArenaCache>(owner, residency, backend.streams(), *reservations, classes);
  }
  BlockSource* blocks = backend.blocks();
  if (blocks == nullptr) {
    throw InvalidArgument(fmt::format("device '{}': its backend supplies neither reservations nor blocks",
                                      backend.name()));
  }
  return std::make_unique<WholeBlockCache>(owner, residency, backend.streams(), *blocks, classes);
}

}  // namespace

void refuse_wiring(std::string_view how_to_lock_more, std::size_t bytes, int error,
                   const std::filesystem::path& path) {
  throw IoError(fmt::format("cannot wire {} ({}): the system would not lock more memory; {}, or lower the wired "
                            "limit (Device::set_wired_limit, NUVEC_WIRED_LIMIT)",
                            format_bytes(bytes), std::strerror(error), how_to_lock_more),
                path, error);
}

std::size_t thread_cache_max_of(const Backend& backend, const SizeClasses& classes) {
  // A thread cache keeps no stream order; its bins stop at kMaxBlock.
  if (const_cast<Backend&>(backend).streams() != nullptr) return 0;
  const std::size_t max = std::min(backend.thread_cache_max(), ThreadCache::kMaxBlock);
  if (max < classes.small_step) return 0;
  // The bins hold classes up to ThreadCache::kBinMax for pages of 4 KiB and up.
  if (classes.page < 4096 || classes.page % classes.small_step != 0 || classes.page > ThreadCache::kBinMax) return 0;
  return max;
}

std::uint64_t next_allocator_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

Allocator::Allocator(Backend& backend)
    : backend_(backend),
      classes_(backend.size_classes()),
      residency_(backend),
      cache_(make_cache(backend, *this, residency_, classes_)),
      thread_cache_max_(thread_cache_max_of(backend, classes_)),
      id_(next_allocator_id()) {
  residency_.observe(&Allocator::note_wiring, this);
  memory_limit_ = backend_.default_memory_limit();
  cache_limit_ = memory_limit_;
}

Allocator::~Allocator() {
  std::lock_guard registry(thread_cache_registry_lock());
  std::lock_guard lock(mutex_);
  {
    Collecting held(*this);
    flush_all();
    if (handed_out_ != 0 || mapped_ != 0) {
      std::fprintf(stderr,
                   "nuvec: device '%.*s' destroyed while %s of buffers and %s of mappings are live; buffers and "
                   "mappings must not outlive their device\n",
                   static_cast<int>(backend_.name().size()), backend_.name().data(),
                   format_bytes(handed_out_).c_str(), format_bytes(mapped_).c_str());
      std::abort();
    }
    for (ThreadCache* local : locals_) {
      local->owner = nullptr;
      local->set_capacity(0);
      if (std::unique_ptr<ArenaCache> arena = local->take_arena()) arena->release_everything();
    }
  }
  locals_.clear();
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) arena->release_everything();
  cache_->release_everything();
}

Allocator::LocalTotals Allocator::local_totals() const {
  LocalTotals totals;
  if (locals_.empty()) return totals;
  Collecting held(*this);
  collect_all();
  for (const ThreadCache* local : locals_) {
    totals.holdings += local->holdings();
    totals.budgets += local->budget();
  }
  return totals;
}

std::size_t Allocator::orphan_bytes() const {
  std::size_t bytes = 0;
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) bytes += arena->bytes();
  return bytes;
}

void Allocator::release_collected() const noexcept {
  if (collected_ == 0) return;
  for (ThreadCache* local : locals_) {
    if (local->collected) {
      local->collected = false;
      local->lock().unlock();
    }
  }
  collected_ = 0;
}

MemoryStats Allocator::snapshot() const {
  // Budgets are handed out (handed_out_) but hold no live data: they are
  // part of what thread caches hold, which is cache.
  Collecting held(*this);
  const LocalTotals local = local_totals();
  MemoryStats s;
  s.active = handed_out_ - local.budgets;
  s.peak = peak_;
  s.active_with_mapped = s.active + mapped_;
  s.peak_with_mapped = peak_with_mapped_;
  s.cache = cache_->bytes() + orphan_bytes() + local.holdings;
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
  Reserved reserved = cache_->reserved();
  const auto add = [&](const ArenaCache& arena) {
    const Reserved r = arena.reserved();
    reserved.count += r.count;
    reserved.bytes += r.bytes;
  };
  {
    Collecting held(*this);
    collect_all();
    for (const ThreadCache* local : locals_) {
      if (local->arena() != nullptr) add(*local->arena());
    }
  }
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) add(*arena);
  c.reservations = reserved.count;
  c.reserved_bytes = reserved.bytes;
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
  Collecting held(*this);  // thread caches whose budget was taken stay locked until the end
  if (!rounded) [[unlikely]] refuse_allocation(len, rounded);
  const std::size_t size = *rounded;
  bool serve_local = false;
  if (local != nullptr && size <= thread_cache_max_ && locals_serve()) {
    collect(*local);
    serve_local = local->enabled();
  }
  // This thread's budget comes back first: the request is counted anew.
  if (serve_local) take_budget(*local);
  std::size_t headroom = memory_limit_ - handed_out_ - mapped_;
  // handed_out_ counts budgets: past the limit by those only, they come
  // back and the limit is checked against live bytes.
  if (size > headroom && !locals_.empty()) [[unlikely]] {
    take_all_budgets();
    headroom = memory_limit_ - handed_out_ - mapped_;
  }
  if (size > headroom) [[unlikely]] refuse_allocation(len, rounded);
  Block* block = serve_local ? local->take(size) : nullptr;
  if (block == nullptr) block = take_cached_anywhere(size, stream, headroom, !locals_serve());
  const bool hit = block != nullptr;
  if (!hit) [[unlikely]] {
    block = &take_new(len, size, headroom, stream, serve_local ? local->arena() : nullptr);
  }
  // A new peak is set from live bytes: thread caches give their budgets
  // back first (as many as it takes), and stay locked until it is set.
  if ((handed_out_ + block->size > peak_ || handed_out_ + mapped_ + block->size > peak_with_mapped_) &&
      !locals_.empty()) [[unlikely]] {
    take_budgets_until_within_peaks(block->size);
  }
  handed_out_ += block->size;
  peak_ = std::max(peak_, handed_out_);
  peak_with_mapped_ = std::max(peak_with_mapped_, handed_out_ + mapped_);
  if (serve_local) {
    local->list_live(*block);
    // Budget for what it holds, as far as the peaks and the limit leave
    // room without rising: its next hits need no shared lock.
    const std::size_t room = std::min({peak_ - handed_out_, peak_with_mapped_ - mapped_ - handed_out_,
                                       memory_limit_ - mapped_ - handed_out_});
    // A fair part of the room: the threads that come next find some left.
    const std::size_t grant = std::min(room / locals_.size(), local->holdings());
    local->grant_budget(grant);
    handed_out_ += grant;
  } else {
    residency_.append(*block);
  }
  note(TraceEventKind::allocate, block->trace_id(), len, block->size, hit, {}, stream);
  return *block;
}

Block* Allocator::take_cached_anywhere(std::size_t size, Stream stream, std::size_t headroom, bool every_thread) {
  if (Block* block = cache_->take_cached(size, stream, headroom)) return block;
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) {
    if (Block* block = arena->take_cached(size, stream, headroom)) return block;
  }
  // While thread caches serve, a thread's arena serves only its thread (a
  // block taken from another's would go back there on every free).
  if (!every_thread) return nullptr;
  for (ThreadCache* local : locals_) {
    if (local->arena() == nullptr) continue;
    collect(*local);
    if (Block* block = local->arena()->take_cached(size, stream, headroom)) {
      handed_out_ -= local->excess_budget();
      return block;
    }
  }
  return nullptr;
}

// --- Thread caches ---

void Allocator::take_budget(ThreadCache& local) noexcept {
  collect(local);
  handed_out_ -= local.take_budget();
}

void Allocator::take_all_budgets() noexcept {
  collect_all();
  for (ThreadCache* local : locals_) take_budget(*local);
}

void Allocator::take_budgets_until_within_peaks(std::size_t size) noexcept {
  const auto within = [&] {
    return handed_out_ + size <= peak_ && handed_out_ + mapped_ + size <= peak_with_mapped_;
  };
  const thread_cache_detail::Last& mine = thread_cache_detail::last;
  if (mine.owner_id == id_ && mine.cache != nullptr) take_budget(*mine.cache);
  for (ThreadCache* local : locals_) {
    if (within()) break;
    take_budget(*local);
  }
}

void Allocator::place_cached(Block& block, std::size_t budget) noexcept {
  ArenaCache* home = ArenaCache::home_of(block);
  if (home == nullptr) {
    cache_->put(block);
    handed_out_ -= budget;
    trim_shared();
    return;
  }
  ThreadCache* holder = home->holder;
  if (holder == nullptr) {  // an exited thread's arena
    home->put(block);
    handed_out_ -= budget;
    trim_shared();
    return;
  }
  collect(*holder);
  home->put(block);
  if (holder->enabled()) {
    holder->grant_budget(budget);
  } else {
    handed_out_ -= budget;
  }
  if (holder->holdings() > holder->capacity()) trim_locked(*holder);
}

void Allocator::free_routed(Block& block, ThreadCache& local) noexcept {
  std::lock_guard lock(mutex_);
  Collecting held(*this);
  collect(local);
  if (!local.enabled() || !locals_serve()) {
    handed_out_ -= block.size;
    place_cached(block, 0);
    note(TraceEventKind::free, block.trace_id(), 0, block.size, false, {}, block.stream);
    return;
  }
  Block* out = local.put(block);
  if (out == &block) {
    place_cached(block, block.size);  // live bytes become that cache's budget, or leave handed_out_
  } else if (out != nullptr) {
    place_cached(*out, local.excess_budget());
  }
  if (local.holdings() > local.capacity()) trim_locked(local);
}

void Allocator::trim_locked(ThreadCache& local) noexcept {
  // Under a Collecting guard with `local` collected.
  if (ArenaCache* arena = local.arena()) {
    if (const int error = arena->release_excess([&] { return excess(local.holdings(), local.capacity()); });
        error != 0) {
      std::fprintf(stderr, "nuvec: warning: the system refused to release a cached block (%s); it stays cached\n",
                   std::strerror(error));
    }
  }
  handed_out_ -= local.excess_budget();
}

void Allocator::trim_shared() noexcept {
  if (cache_->bytes() <= shared_cache_limit()) [[likely]] return;
  if (const int error = cache_->release_excess([&] { return excess(cache_->bytes(), shared_cache_limit()); });
      error != 0) {
    std::fprintf(stderr, "nuvec: warning: the system refused to release a cached block (%s); it stays cached\n",
                 std::strerror(error));
  }
}

void Allocator::flush(ThreadCache& local) noexcept {
  take_budget(local);
  local.drain([&](Block& block) { place_cached(block, 0); });
}

void Allocator::flush_all() noexcept {
  collect_all();
  for (ThreadCache* local : locals_) flush(*local);
}

int Allocator::release_caches_for(std::size_t size) noexcept {
  // Budgets taken back first: handed_out_ is then the live bytes, and what
  // every cache holds is the cache.
  flush_all();
  const std::size_t live = handed_out_ + mapped_ + size;
  const std::size_t room = memory_limit_ - std::min(memory_limit_, live);
  std::size_t total = cache_->bytes() + orphan_bytes() + local_totals().holdings;
  int error = 0;
  const auto release_from = [&](BlockCache& cache) {
    if (error != 0 || total <= room) return;
    const std::size_t before = cache.bytes();
    error = cache.release_excess([&] { return excess(total - (before - cache.bytes()), room); });
    total -= before - cache.bytes();
  };
  release_from(*cache_);
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) release_from(*arena);
  for (ThreadCache* local : locals_) {
    if (local->arena() != nullptr) release_from(*local->arena());
  }
  return error;
}

void Allocator::update_locals() {
  if (locals_.empty()) return;
  Collecting held(*this);
  collect_all();
  const bool serve = locals_serve();
  if (!serve) {
    flush_all();
    // Their live blocks join the residency order, to be wired as it says.
    for (ThreadCache* local : locals_) local->take_live([&](Block& block) { residency_.append(block); });
  }
  for (ThreadCache* local : locals_) local->set_enabled(serve);
}

void Allocator::grant_capacity(ThreadCache& local) {
  // Each thread cache's share comes out of the cache limit, so that the
  // shared cache and all of them together stay within it; past half of the
  // limit a new thread gets none (and keeps nothing).
  const std::size_t share = ThreadCache::capacity_for(thread_cache_max_);
  if (local_capacity_ + share <= cache_limit_ / 2) {
    local.set_capacity(share);
    local_capacity_ += share;
  } else {
    local.set_capacity(0);
  }
}

void Allocator::attach(ThreadCache& local) {
  std::lock_guard lock(mutex_);
  // Its arena: an exited thread's, or a new one (which may raise bad_alloc:
  // then nothing changed and the thread uses the shared cache).
  std::unique_ptr<ArenaCache> arena;
  const bool adopted = !orphans_.empty();
  if (adopted) {
    arena = std::move(orphans_.back());
    orphans_.pop_back();
  } else if (ReservationSource* reservations = backend_.reservations()) {
    arena = std::make_unique<ArenaCache>(static_cast<CacheOwner&>(*this), residency_, nullptr, *reservations, classes_,
                                         /*home_of_its_blocks=*/true);
  }
  try {
    // Room for every arena to become an exited thread's (detach cannot fail).
    orphans_.reserve(orphans_.size() + locals_.size() + 2);
    locals_.push_back(&local);
  } catch (...) {
    if (adopted) orphans_.push_back(std::move(arena));  // into the room it left
    throw;
  }
  local.set_arena(std::move(arena));
  local.owner = this;
  local.set_enabled(locals_serve());
  grant_capacity(local);
  Collecting held(*this);
  collect(local);
  trim_locked(local);
  trim_shared();
}

void Allocator::detach(ThreadCache& local) noexcept {
  std::lock_guard lock(mutex_);
  {
    Collecting held(*this);
    flush(local);
    // Blocks it handed out that are still live (other threads hold them)
    // outlive it: they join the residency order.
    local.take_live([&](Block& block) { residency_.append(block); });
    if (std::unique_ptr<ArenaCache> arena = local.take_arena()) {
      // Kept for the next thread (push_back cannot fail: attach reserved the room).
      orphans_.push_back(std::move(arena));
    }
  }
  local_capacity_ -= local.capacity();
  local.set_capacity(0);
  locals_.erase(std::find(locals_.begin(), locals_.end(), &local));
  local.owner = nullptr;
  trim_shared();
}

// --- Allocation: the slow paths of allocate() ---

void Allocator::refuse_allocation(std::size_t len, std::optional<std::size_t> rounded) {
  refuse(rounded.value_or(kMax), fmt::format("allocate {}", format_bytes(len)));
}

Block& Allocator::take_new(std::size_t len, std::size_t size, std::size_t headroom, Stream stream,
                           ArenaCache* arena) {
  // The cache yields to live data before the system is asked (all caches
  // counted exactly only when they could be in the way).
  const std::size_t bound = cache_->bytes() + orphan_bytes() + local_capacity_ + locals_.size() * thread_cache_max_;
  if (bound > headroom - size) release_caches_for(size);
  Block& block = (arena != nullptr ? static_cast<BlockCache&>(*arena) : *cache_).take_new(len, size, stream);
  ++system_allocations_;
  // active + cache grows only here: a buffer made of memory the cache did not hold.
  const LocalTotals local = local_totals();
  peak_held_ = std::max(peak_held_, handed_out_ - local.budgets + block.size + cache_->bytes() + orphan_bytes() +
                                        local.holdings);
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

void Allocator::free_shared(Block& block, bool ordered) noexcept {
  std::lock_guard lock(mutex_);
  Collecting held(*this);
  const std::uint64_t id = block.trace_id();
  const std::size_t size = block.size;
  const Stream stream = block.stream;
  handed_out_ -= size;
  if (ordered) residency_.remove(block);
  place_cached(block, 0);
  note(TraceEventKind::free, id, 0, size, false, {}, stream);
}

// --- Mappings ---

std::shared_ptr<const Mapping> Allocator::map(std::unique_ptr<OpenFile> file, std::span<const FileRange> ranges,
                                               bool whole_file) {
  auto mapping = std::make_shared<FileMapping>(static_cast<MappingOwner&>(*this), *file, ranges, whole_file);
  const std::filesystem::path& path = file->path();
  const std::size_t size = mapping->mapped_bytes();

  std::lock_guard lock(mutex_);
  Collecting held(*this);  // as in allocate_shared: the limit and the peak against live bytes
  if (!locals_.empty() &&
      (size > memory_limit_ - handed_out_ - mapped_ || handed_out_ + mapped_ + size > peak_with_mapped_)) {
    take_all_budgets();
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
  Collecting held(*this);  // the peaks become live bytes: no budget may stay handed out
  take_all_budgets();
  peak_ = handed_out_;
  peak_with_mapped_ = handed_out_ + mapped_;
  peak_held_ = handed_out_ + cache_->bytes() + orphan_bytes() + local_totals().holdings;
  cache_->reset_committed_peak();
  note(TraceEventKind::reset_peak);
}

std::size_t Allocator::set_memory_limit(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  // Taking the budgets back changes no statistic; it makes handed_out_ the
  // live bytes, so the checks are exact.
  Collecting held(*this);
  take_all_budgets();
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
  Collecting held(*this);
  flush_all();
  const std::size_t previous = cache_limit_;
  cache_limit_ = bytes;
  note(TraceEventKind::cache_limit, 0, bytes);
  // The thread caches' shares, granted again within the new limit; the
  // exited threads' arenas count first, in the shared part.
  local_capacity_ = 0;
  for (ThreadCache* local : locals_) {
    grant_capacity(*local);
    trim_locked(*local);
  }
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) {
    arena->release_excess(
        [&] { return excess(orphan_bytes(), cache_limit_ - std::min(cache_limit_, local_capacity_)); });
  }
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
  update_locals();  // they serve only while nothing is wired
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
    for (const std::unique_ptr<ArenaCache>& arena : orphans_) arena->unwire_newest(bytes);
    {
      Collecting held(*this);
      collect_all();
      for (ThreadCache* local : locals_) {
        if (local->arena() != nullptr) local->arena()->unwire_newest(bytes);
      }
    }
    residency_.unwire_newest(bytes);
  }
  return previous;
}

void Allocator::clear_cache() {
  std::lock_guard lock(mutex_);
  Collecting held(*this);
  flush_all();
  note(TraceEventKind::clear_cache);
  int error = cache_->release_all();
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) {
    if (error == 0) error = arena->release_all();
  }
  for (ThreadCache* local : locals_) {
    if (error == 0 && local->arena() != nullptr) error = local->arena()->release_all();
  }
  if (error != 0) {
    throw IoError(fmt::format("clear_cache on {}: the system refused to release a cached block ({}); {} stays cached",
                              backend_.name(), std::strerror(error),
                              format_bytes(cache_->bytes() + orphan_bytes() + local_totals().holdings)),
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
  update_locals();  // a traced device serves every request under its lock: one order
}

void Allocator::stop_trace() {
  std::lock_guard lock(mutex_);
  trace_.reset();
  update_locals();
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

