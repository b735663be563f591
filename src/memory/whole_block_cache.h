// WholeBlockCache: the BlockCache of a backend without reservations. Each
// block is one allocation from the BlockSource, alive from the miss that
// made it until it is released; freed blocks are reused whole by bounded
// best fit (docs/allocator-policy.md) from a BufferCache.
#pragma once

#include "memory/block_cache.h"
#include "memory/buffer_cache.h"
#include "memory/size_classes.h"

namespace nuvec::detail {

class WholeBlockCache final : public BlockCache {
 public:
  WholeBlockCache(CacheOwner& owner, Residency& residency, StreamOrder* streams, BlockSource& source,
                  SizeClasses classes);

  Block* take_cached(std::size_t size, Stream stream, std::size_t headroom) override;
  Block& take_new(std::size_t len, std::size_t size, Stream stream) override;
  void put(Block& block) noexcept override { cache_.put(block); }
  Block* oldest() const override { return cache_.oldest(); }
  // A block is one allocation of the source: it goes back whole, whatever is wanted.
  int release(Block& cached, std::size_t /*wanted*/) noexcept override { return release_whole(cached); }
  void unwire_newest(std::size_t target) noexcept override;
  void release_everything() noexcept override;
  std::optional<Committed> committed() const override { return source_.committed(); }
  void reset_committed_peak() noexcept override { source_.reset_committed_peak(); }

 private:
  int release_whole(Block& cached) noexcept;

  BlockSource& source_;
  const SizeClasses classes_;
  BufferCache cache_;
};

}  // namespace nuvec::detail
