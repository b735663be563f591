#include "memory/thread_caches.h"

#include <algorithm>
#include <atomic>

namespace nuvec::detail {

namespace {

// Requests up to how many bytes thread caches serve on `backend` (0: none).
std::size_t thread_cache_max_of(Backend& backend, const SizeClasses& classes) {
  // A thread cache keeps no stream order; its bins stop at kMaxBlock.
  if (backend.streams() != nullptr) return 0;
  const std::size_t max = std::min(backend.thread_cache_max(), ThreadCache::kMaxBlock);
  if (max < classes.small_step) return 0;
  // The bins hold classes up to ThreadCache::kBinMax for pages of 4 KiB and up.
  if (classes.page < 4096 || classes.page % classes.small_step != 0 || classes.page > ThreadCache::kBinMax) return 0;
  return max;
}

std::uint64_t next_tier_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

std::unique_ptr<ThreadTier> make_thread_tier(Backend& backend, SizeClasses classes, ThreadTierOwner& owner,
                                             CacheOwner& cache_owner, Residency& residency, std::mutex& shared_lock,
                                             std::size_t cache_limit) {
  // With a limit of 0 no request is small enough: take() and keep() never
  // find a thread cache, and nothing attaches.
  return std::make_unique<ThreadCaches>(classes, thread_cache_max_of(backend, classes), next_tier_id(), owner,
                                        cache_owner, residency, backend.reservations(), shared_lock, cache_limit);
}

ThreadCaches::ThreadCaches(SizeClasses classes, std::size_t max_block, std::uint64_t id, ThreadTierOwner& owner,
                           CacheOwner& cache_owner, Residency& residency, ReservationSource* reservations,
                           std::mutex& shared_lock, std::size_t cache_limit)
    : ThreadTier(classes, max_block, id),
      owner_(owner),
      cache_owner_(cache_owner),
      residency_(residency),
      reservations_(reservations),
      shared_lock_(shared_lock),
      cache_limit_(cache_limit) {}

// --- Locking the thread caches (under a Hold) ---

void ThreadCaches::collect(ThreadCache& local) const noexcept {
  if (!local.collected) {
    local.lock().lock();
    local.collected = true;
    ++collected_;
  }
}

void ThreadCaches::collect_all() const noexcept {
  if (collected_ == locals_.size()) return;
  for (ThreadCache* local : locals_) collect(*local);
}

void ThreadCaches::release_locked() const noexcept {
  if (collected_ == 0) return;
  for (ThreadCache* local : locals_) {
    if (local->collected) {
      local->collected = false;
      local->lock().unlock();
    }
  }
  collected_ = 0;
}

// --- Threads joining and leaving ---

void ThreadCaches::attach(ThreadCache& local) {
  std::lock_guard lock(shared_lock_);
  // Its arena: an exited thread's, or a new one (which may raise bad_alloc:
  // then nothing changed and the thread uses the shared cache).
  std::unique_ptr<ArenaCache> arena;
  const bool adopted = !orphans_.empty();
  if (adopted) {
    arena = std::move(orphans_.back());
    orphans_.pop_back();
  } else if (reservations_ != nullptr) {
    arena = std::make_unique<ArenaCache>(cache_owner_, residency_, nullptr, *reservations_, classes_,
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
  attached_ = locals_.size();
  local.set_arena(std::move(arena));
  local.owner = this;
  local.set_enabled(serving_);
  grant_capacity(local);
  Hold held(*this);
  collect(local);
  trim(local);
  owner_.trim_shared();  // an adopted arena no longer counts in the shared part
}

void ThreadCaches::detach(ThreadCache& local) noexcept {
  std::lock_guard lock(shared_lock_);
  {
    Hold held(*this);
    flush(local);
    // Blocks it handed out that are still live (other threads hold them)
    // outlive it: they join the residency order.
    local.take_live([&](Block& block) { residency_.append(block); });
    if (std::unique_ptr<ArenaCache> arena = local.take_arena()) {
      // Kept for the next thread (push_back cannot fail: attach reserved the room).
      orphans_.push_back(std::move(arena));
    }
  }  // unlocked before it leaves the list
  local_capacity_ -= local.capacity();
  local.set_capacity(0);
  locals_.erase(std::find(locals_.begin(), locals_.end(), &local));
  attached_ = locals_.size();
  local.owner = nullptr;
  owner_.trim_shared();
}

void ThreadCaches::close() noexcept {
  {
    Hold held(*this);
    collect_all();
    for (ThreadCache* local : locals_) {
      local->owner = nullptr;
      local->set_capacity(0);
      if (std::unique_ptr<ArenaCache> arena = local->take_arena()) arena->release_everything();
    }
  }
  locals_.clear();
  attached_ = 0;
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) arena->release_everything();
  orphans_.clear();
}

void ThreadCaches::grant_capacity(ThreadCache& local) noexcept {
  const std::size_t share = ThreadCache::capacity_for(max_block_);
  if (local_capacity_ + share <= cache_limit_ / 2) {
    local.set_capacity(share);
    local_capacity_ += share;
  } else {
    local.set_capacity(0);
  }
}

// --- The shared path of a request and of a free ---

ThreadCache* ThreadCaches::serving(ThreadCache* local, std::size_t size) noexcept {
  if (local == nullptr || size > max_block_ || !serving_) return nullptr;
  collect(*local);
  if (!local->enabled()) return nullptr;
  take_budget(*local);
  return local;
}

std::size_t ThreadCaches::grant(ThreadCache& local, Block& block, std::size_t room) noexcept {
  local.list_live(block);
  // A fair part of the room: the threads that come next find some left.
  const std::size_t granted = std::min(room / locals_.size(), local.holdings());
  local.grant_budget(granted);
  return granted;
}

Block* ThreadCaches::take_cached(std::size_t size, Stream stream, std::size_t headroom) {
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) {
    if (Block* block = arena->take_cached(size, stream, headroom)) return block;
  }
  // While thread caches serve, a thread's arena serves only its thread (a
  // block taken from another's would go back there on every free).
  if (serving_) return nullptr;
  for (ThreadCache* local : locals_) {
    if (local->arena() == nullptr) continue;
    collect(*local);
    if (Block* block = local->arena()->take_cached(size, stream, headroom)) {
      owner_.hand_back(local->excess_budget());
      return block;
    }
  }
  return nullptr;
}

bool ThreadCaches::route(Block& block, ThreadCache& local) noexcept {
  collect(local);
  if (!local.enabled() || !serving_) return false;
  Block* out = local.put(block);
  if (out == &block) {
    put_cached(block, block.size);  // its live bytes become its home's budget, or are handed back
  } else if (out != nullptr) {
    put_cached(*out, local.excess_budget());
  }
  if (local.holdings() > local.capacity()) trim(local);
  return true;
}

void ThreadCaches::put_cached(Block& block, std::size_t budget) noexcept {
  ArenaCache* home = ArenaCache::home_of(block);
  if (home == nullptr) {
    owner_.put_shared(block);
    owner_.hand_back(budget);
    return;
  }
  ThreadCache* holder = home->holder;
  if (holder == nullptr) {  // an exited thread's arena: it counts in the shared part
    home->put(block);
    owner_.hand_back(budget);
    owner_.trim_shared();
    return;
  }
  collect(*holder);
  home->put(block);
  if (holder->enabled()) {
    holder->grant_budget(budget);
  } else {
    owner_.hand_back(budget);
  }
  if (holder->holdings() > holder->capacity()) trim(*holder);
}

// --- Budgets, flushing, serving ---

std::size_t ThreadCaches::take_budget(ThreadCache& local) noexcept {
  collect(local);
  const std::size_t bytes = local.take_budget();
  owner_.hand_back(bytes);
  return bytes;
}

void ThreadCaches::take_budgets(std::size_t bytes) noexcept {
  std::size_t back = 0;
  if (ThreadCache* mine = last_thread_cache(id_)) back += take_budget(*mine);
  for (ThreadCache* local : locals_) {
    if (back >= bytes) break;
    back += take_budget(*local);
  }
}

void ThreadCaches::trim(ThreadCache& local) noexcept {
  // Under a Hold with `local` collected.
  if (ArenaCache* arena = local.arena()) {
    if (const int error = arena->release_excess([&] { return bytes_over(local.holdings(), local.capacity()); });
        error != 0) {
      warn_release_refused(error);
    }
  }
  owner_.hand_back(local.excess_budget());
}

void ThreadCaches::flush(ThreadCache& local) noexcept {
  take_budget(local);
  local.drain([&](Block& block) { put_cached(block, 0); });
}

void ThreadCaches::flush_all() noexcept {
  collect_all();
  for (ThreadCache* local : locals_) flush(*local);
}

void ThreadCaches::set_serving(bool serving) {
  serving_ = serving;
  if (locals_.empty()) return;
  Hold held(*this);
  collect_all();
  if (!serving) {
    flush_all();
    // Their live blocks join the residency order, to be wired as it says.
    for (ThreadCache* local : locals_) local->take_live([&](Block& block) { residency_.append(block); });
  }
  for (ThreadCache* local : locals_) local->set_enabled(serving);
}

// --- What the tier holds, and giving it back ---

ThreadTier::Totals ThreadCaches::totals() const {
  Totals totals{.cached = orphan_bytes()};
  if (locals_.empty()) return totals;
  Hold held(*this);
  collect_all();
  for (const ThreadCache* local : locals_) {
    totals.cached += local->holdings();
    totals.budgets += local->budget();
  }
  return totals;
}

std::size_t ThreadCaches::holdings_bound() const {
  return orphan_bytes() + local_capacity_ + locals_.size() * max_block_;
}

std::size_t ThreadCaches::orphan_bytes() const {
  std::size_t bytes = 0;
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) bytes += arena->bytes();
  return bytes;
}

void ThreadCaches::set_cache_limit(std::size_t bytes) noexcept {
  cache_limit_ = bytes;
  local_capacity_ = 0;
  collect_all();
  for (ThreadCache* local : locals_) {
    grant_capacity(*local);
    trim(*local);
  }
  // The exited threads' arenas count first in the shared part.
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) {
    arena->release_excess(
        [&] { return bytes_over(orphan_bytes(), cache_limit_ - std::min(cache_limit_, local_capacity_)); });
  }
}

int ThreadCaches::release(std::size_t& bytes) noexcept {
  int error = 0;
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) {
    if (error == 0 && bytes != 0) error = arena->release_bytes(bytes);
  }
  collect_all();
  for (ThreadCache* local : locals_) {
    if (error == 0 && bytes != 0 && local->arena() != nullptr) error = local->arena()->release_bytes(bytes);
  }
  return error;
}

int ThreadCaches::release_all() noexcept {
  int error = 0;
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) {
    if (error == 0) error = arena->release_all();
  }
  collect_all();
  for (ThreadCache* local : locals_) {
    if (error == 0 && local->arena() != nullptr) error = local->arena()->release_all();
  }
  return error;
}

void ThreadCaches::unwire_newest(std::size_t target) noexcept {
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) arena->unwire_newest(target);
  Hold held(*this);
  collect_all();
  for (ThreadCache* local : locals_) {
    if (local->arena() != nullptr) local->arena()->unwire_newest(target);
  }
}

Reserved ThreadCaches::reserved() const {
  Reserved reserved;
  const auto add = [&](const ArenaCache& arena) {
    const Reserved r = arena.reserved();
    reserved.count += r.count;
    reserved.bytes += r.bytes;
  };
  for (const std::unique_ptr<ArenaCache>& arena : orphans_) add(*arena);
  Hold held(*this);
  collect_all();
  for (const ThreadCache* local : locals_) {
    if (local->arena() != nullptr) add(*local->arena());
  }
  return reserved;
}

}  // namespace nuvec::detail
