// BlockCache: what the Allocator asks of the memory it reuses — a cached
// block that serves a request (the hit path), memory the cache does not hold
// yet (a miss), taking freed blocks back, and giving cached memory back to
// the system. Two implementations, one per kind of source:
//   WholeBlockCache (memory/whole_block_cache.h): one allocation per block
//     (BlockSource), blocks reused whole by bounded best fit;
//   ArenaCache (memory/arena_cache.h): blocks carved from the reservations
//     it owns (ReservationSource), split and merged.
// The Allocator keeps the accounting (active, peaks, limits, misses), the
// residency order and the trace; a cache changes only what it holds. Every
// method runs under the Allocator's lock.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "memory/backend.h"
#include "memory/block.h"
#include "memory/residency.h"
#include "memory/size_classes.h"

namespace nuvec::detail {

// What a cache reports to, and raises through, the Allocator that owns it.
class CacheOwner {
 public:
  // A cached block went back to the system (a trace event).
  virtual void note_release(std::uint64_t id, std::size_t size) noexcept = 0;
  // OutOfMemory: the system refused `size` bytes for a request of `len`.
  [[noreturn]] virtual void refuse_system(std::size_t len, std::size_t size, int error) = 0;
  // OutOfMemory: no memory for the cache's own bookkeeping.
  [[noreturn]] virtual void refuse_bookkeeping(std::size_t len, std::size_t size) = 0;

 protected:
  ~CacheOwner() = default;
};

// Address space a cache holds reserved (not a MemoryStats field: reported
// by Device::counters()).
struct Reserved {
  std::size_t count = 0;
  std::size_t bytes = 0;
};

class BlockCache {
 public:
  BlockCache(CacheOwner& owner, Residency& residency, StreamOrder* streams)
      : owner_(owner), residency_(residency), streams_(streams) {}
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;
  virtual ~BlockCache() = default;

  // The hit path: a cached block of at least `size` bytes (a size class) for
  // `stream`, at most `headroom`, taken out of the cache and ready to be
  // live — wired if the wired limit has room, its stream handed over. Null
  // when nothing cached serves (a miss). Allocates nothing; raises IoError
  // if the system refuses to wire it (nothing changes then).
  virtual Block* take_cached(std::size_t size, Stream stream, std::size_t headroom) = 0;
  // A miss: a block of `size` bytes for a request of `len` from memory the
  // cache did not hold — the system's, or reserved address space never
  // used (or decommitted). If the system is out of memory while the cache
  // holds some, the cache is given back (after the device finished with it)
  // and the system asked once more. Raises OutOfMemory or IoError.
  virtual Block& take_new(std::size_t len, std::size_t size, Stream stream) = 0;
  // A live block (out of the residency order) becomes cached, the most
  // recently freed; the arena may merge it with its neighbours.
  virtual void put(Block& block) noexcept = 0;
  // A block on its way in was freed on `stream` (StreamOrder::freed_on).
  void note_free(Stream stream) noexcept {
    if (stream != 0 && streams_ != nullptr) streams_->freed_on(stream);
  }

  // Cached bytes; read on every allocation and free, so not a virtual call.
  std::size_t bytes() const { return *bytes_; }
  bool empty() const { return *bytes_ == 0; }
  // The least recently freed cached block, or null.
  virtual Block* oldest() const = 0;
  // Returns `wanted` bytes of a cached block to the system, or the whole
  // block where it cannot be cut (whole blocks, a wired extent) or is not
  // larger: an arena's unwired extent gives only its high `wanted` bytes,
  // rounded up to its size classes' step. 0, or the errno of a refusal (it
  // then stays cached, whole, and wired if it was).
  virtual int release(Block& cached, std::size_t wanted) noexcept = 0;
  // Releases the least recently freed memory while `excess()` (the bytes
  // still over a limit) is not 0: a trim or a yield takes what it must,
  // not the whole of a block it can cut. Returns 0 or the errno of a
  // refused release; waiting items are promoted if wiring fell.
  template <class Excess>
  int release_excess(Excess excess) noexcept {
    const std::size_t wired_before = residency_.wired();
    int error = 0;
    for (std::size_t over = excess(); error == 0 && over != 0; over = excess()) {
      Block* block = oldest();
      if (block == nullptr) break;
      error = release(*block, over);
    }
    if (residency_.wired() < wired_before) residency_.promote(/*strict=*/false);
    return error;
  }
  // Releases the least recently freed memory until `bytes` went back (or
  // none is left); `bytes` falls by what went. 0 or the errno of a refusal.
  int release_bytes(std::size_t& bytes) noexcept {
    const std::size_t before = this->bytes();
    const auto gone = [&] { return before - this->bytes(); };
    const int error = release_excess([&] { return bytes > gone() ? bytes - gone() : 0; });
    bytes -= std::min(bytes, gone());
    return error;
  }
  int release_all() noexcept {
    return release_excess([] { return static_cast<std::size_t>(-1); });
  }
  // Unlocks cached blocks, most recently freed first, while wired > target.
  virtual void unwire_newest(std::size_t target) noexcept = 0;
  // Everything back to the system, at the device's end.
  virtual void release_everything() noexcept = 0;

  virtual Reserved reserved() const { return {}; }
  // The source's committed memory (BlockSource/ReservationSource::committed).
  virtual std::optional<Committed> committed() const = 0;
  virtual void reset_committed_peak() noexcept = 0;

 protected:
  // The block was last used on another stream: `stream` waits for that work.
  void hand_over(Block& block, Stream stream) noexcept {
    if (block.stream == stream) return;
    if (streams_ != nullptr) streams_->order_after(block.stream, stream);
    block.stream = stream;
  }
  void synchronize() noexcept {
    if (streams_ != nullptr) streams_->synchronize();
  }
  // The implementation's count of cached bytes.
  void count_bytes_in(const std::size_t& bytes) { bytes_ = &bytes; }

  CacheOwner& owner_;
  Residency& residency_;
  StreamOrder* const streams_;

 private:
  const std::size_t* bytes_ = nullptr;
};

// The bytes by which `held` passes `limit`: what a trim must release.
inline std::size_t bytes_over(std::size_t held, std::size_t limit) { return held > limit ? held - limit : 0; }
// A trim the system refused (errno `error`) is not raised, only said: the
// block stays cached and the next trim tries again.
void warn_release_refused(int error) noexcept;

// The shared cache for `backend`: an ArenaCache over its reservations if it
// has them, else a WholeBlockCache over its blocks; InvalidArgument if it
// has neither.
std::unique_ptr<BlockCache> make_block_cache(Backend& backend, CacheOwner& owner, Residency& residency,
                                             SizeClasses classes);

// IoError: the system would not wire `bytes` (errno `error`); the message
// ends with `how_to_lock_more` (Wiring::how_to_lock_more).
[[noreturn]] void refuse_wiring(std::string_view how_to_lock_more, std::size_t bytes, int error,
                                const std::filesystem::path& path = {});

}  // namespace nuvec::detail
