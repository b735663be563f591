// The upload engine (upload_engine.h). One thread queues every copy, so the
// pipelines only read and never wait on the driver for it: the design before
// (16 pipelines, each queueing and spinning on its own copies) stopped at
// 35 GB/s of 55 on the H200 machine, this one ran 40-45. The buffers are
// made on the calling thread: made on the queueing thread, they stopped the
// copies for as long as each allocation took. Measurements: docs/cuda.md,
// "Uploads", and bench/results/2026-11-30-cuda-upload-2.md.
#include "cuda/upload_engine.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cuda/cuda_error.h"
#include "cuda/device_guard.h"
#include "cuda/file_sources.h"
#include "cuda/staging.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NUVEC_CPU_RELAX() _mm_pause()
#else
#define NUVEC_CPU_RELAX() std::this_thread::yield()
#endif

namespace nuvec::cuda::detail {

namespace {

// The first failure of any thread; the others stop at their next step.
class Failure {
 public:
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  void record(std::string message) {
    std::lock_guard lock(mutex_);
    if (!failed_.exchange(true)) message_ = std::move(message);
  }
  void record(std::exception_ptr exception) {
    std::lock_guard lock(mutex_);
    if (!failed_.exchange(true)) exception_ = std::move(exception);
  }
  void raise() const {
    if (!failed()) return;
    if (exception_) std::rethrow_exception(exception_);
    throw IoError(fmt::format("upload failed: {}", message_), {}, EIO);
  }

 private:
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::string message_;
  std::exception_ptr exception_;
};

// A staging slot, or a token of the registering pipeline (at most as many
// chunks are locked at once as there are tokens).
struct Slot {
  std::byte* memory = nullptr;  // staging: its part of the staging region
  void* locked = nullptr;       // token: the pages it locked last, unlocked when it is next used
  cudaEvent_t done = nullptr;
};

// Free slots, most recently freed first (its lines may still be cached).
class SlotPool {
 public:
  void put(unsigned slot) {
    {
      std::lock_guard lock(mutex_);
      free_.push_back(slot);
    }
    ready_.notify_one();
  }
  // A free slot, or nothing once aborted.
  std::optional<unsigned> take() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !free_.empty() || aborted_; });
    if (aborted_) return std::nullopt;
    const unsigned slot = free_.back();
    free_.pop_back();
    return slot;
  }
  void abort() {
    {
      std::lock_guard lock(mutex_);
      aborted_ = true;
    }
    ready_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<unsigned> free_;
  bool aborted_ = false;
};

// Prepared batches, from the pipelines to the thread that queues copies.
class Handover {
 public:
  struct Item {
    const Batch* batch;
    unsigned slot;  // staging slot or chunk token
  };
  void push(Item item) {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      items_.push_back(item);
      wake = sleeping_;
    }
    if (wake) ready_.notify_one();
  }
  void take_all(std::vector<Item>& out) {
    std::lock_guard lock(mutex_);
    out.insert(out.end(), items_.begin(), items_.end());
    items_.clear();
  }
  // Sleeps until an item arrives, wake() is called (after a failure: from
  // then on it never sleeps), or a millisecond passes.
  void wait() {
    std::unique_lock lock(mutex_);
    if (!items_.empty() || woken_) return;
    sleeping_ = true;
    ready_.wait_for(lock, std::chrono::milliseconds(1), [&] { return !items_.empty() || woken_; });
    sleeping_ = false;
  }
  void wake() {
    {
      std::lock_guard lock(mutex_);
      woken_ = true;
    }
    ready_.notify_all();
  }
  // Wakes the waiting thread, if it sleeps, to look again.
  void poke() {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      wake = sleeping_;
    }
    if (wake) ready_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<Item> items_;
  bool sleeping_ = false, woken_ = false;
};

class Engine {
 public:
  Engine(const UploadPlan& plan, Destinations& destinations, const EngineSettings& settings)
      : plan_(plan),
        destinations_(destinations),
        settings_(settings),
        slots_(settings.slots + settings.chunks),
        pinning_(settings.chunks != 0 &&
                 std::any_of(plan.units.begin(), plan.units.end(), [](const Unit& u) { return u.pinned.pin_length != 0; })),
        back_(plan.units.size()) {
    for (const Unit& unit : plan_.units) {
      for (const Batch& b : unit.staged) total_bytes_ += b.bytes;
    }
    for (const Batch& b : plan_.direct) total_bytes_ += b.bytes;
  }

  EngineTally run() {
    start_ = std::chrono::steady_clock::now();
    if (!plan_.units.empty() && settings_.slots == 0 && !pinning_) {
      throw InvalidArgument("cuda::upload: units to stage but no staging slots");
    }
    stagers_ = settings_.slots == 0 ? 0 : std::max(1u, std::min(settings_.pipelines, settings_.slots));
    DeviceGuard guard(settings_.ordinal);
    if (create() && reserve_staging()) {
      for (unsigned t = settings_.slots; t < slots_.size(); ++t) tokens_.put(t);
      std::vector<std::jthread> pipelines;
      {
        std::jthread queueing([this] { queue_copies(); });
        try {
          if (pinning_) pipelines.emplace_back([this] { register_units(); });
          for (unsigned k = 0; k < stagers_; ++k) pipelines.emplace_back([this, k] { stage(k); });
        } catch (...) {  // a thread the system would not make
          failure_.record(std::current_exception());
          stop_all();
        }
        all_started_.count_down();
        if (!failure_.failed()) make_destinations();
      }  // the queueing thread is done: everything was copied, or something failed
      // The pipelines stop at their next step (after a failure; otherwise
      // they are done already).
      pool_.abort();
      tokens_.abort();
    }
    // Every copy queued must finish before the slots and the locked pages go.
    for (cudaStream_t stream : streams_) {
      if (const cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) fail("cudaStreamSynchronize", e);
    }
    for (Slot& slot : slots_) unlock(slot);
    destroy();
    failure_.raise();
    tally_.read_bytes = read_bytes_;
    tally_.pinned_bytes = pinned_bytes_;
    return tally_;
  }

 private:
  bool fail(std::string_view call, cudaError_t error) {
    (void)cudaGetLastError();
    failure_.record(error_text(call, error));
    stop_all();
    return false;
  }
  void stop_all() {
    pool_.abort();
    tokens_.abort();
    handover_.wake();
    {
      std::lock_guard lock(populated_mutex_);  // the calling thread may wait for the staging
    }
    populated_ready_.notify_all();
  }

  bool create() {
    streams_.resize(settings_.streams, nullptr);
    for (cudaStream_t& stream : streams_) {
      if (const cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
        stream = nullptr;
        return fail("cudaStreamCreateWithFlags", e);
      }
    }
    for (Slot& slot : slots_) {
      if (const cudaError_t e = cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming); e != cudaSuccess) {
        slot.done = nullptr;
        return fail("cudaEventCreateWithFlags", e);
      }
    }
    in_flight_.resize(streams_.size());
    return true;
  }

  void destroy() noexcept {
    for (Slot& slot : slots_) {
      if (slot.done != nullptr) cudaEventDestroy(slot.done);
      slot.done = nullptr;
    }
    for (cudaStream_t stream : streams_) {
      if (stream != nullptr) cudaStreamDestroy(stream);
    }
    streams_.clear();
  }

  void unlock(Slot& slot) {
    if (slot.locked == nullptr) return;
    if (const cudaError_t e = cudaHostUnregister(slot.locked); e != cudaSuccess) fail("cudaHostUnregister", e);
    slot.locked = nullptr;
  }

  // ---- the staging region: reserved here, faulted in by the staging
  // pipelines (each its own slots, in parallel), then locked here at once.

  bool reserve_staging() {
    if (settings_.slots == 0) return true;
    std::string error;
    const std::size_t bytes = settings_.slot_bytes * settings_.slots;
    if (settings_.staging == EngineSettings::Staging::driver) {
      const double begin = elapsed();
      if (!staging_.allocate_locked(bytes, error)) {
        failure_.record(fmt::format("cannot page-lock {} of staging memory: {}", format_bytes(bytes), error));
        return false;
      }
      tally_.populated_seconds = tally_.staging_seconds = elapsed();
      tally_.lock_seconds = tally_.staging_seconds - begin;
      staging_locked_.store(true, std::memory_order_release);
    } else if (!staging_.reserve(bytes, error, settings_.staging == EngineSettings::Staging::huge_pages)) {
      failure_.record(fmt::format("cannot reserve {} of staging memory: {}", format_bytes(bytes), error));
      return false;
    }
    for (unsigned s = 0; s < settings_.slots; ++s) slots_[s].memory = staging_.data() + s * settings_.slot_bytes;
    return true;
  }

  // Page-locks the staging once the pipelines have faulted it in (waiting
  // for them with `wait`, else only if they have); from then on staged
  // batches may be copied. False after a failure.
  bool lock_staging(bool wait) {
    if (settings_.slots == 0 || staging_locked_.load(std::memory_order_relaxed)) return !failure_.failed();
    {
      std::unique_lock lock(populated_mutex_);
      const auto populated = [&] { return populated_by_ == stagers_ || failure_.failed(); };
      if (wait) {
        populated_ready_.wait(lock, populated);
      } else if (!populated()) {
        return true;  // not yet: the next look
      }
    }
    if (failure_.failed()) return false;
    std::string error;
    tally_.populated_seconds = populated_at_;
    const double begin = elapsed();
    if (!staging_.lock(error)) {
      failure_.record(fmt::format("cannot page-lock {} of staging memory: {}", format_bytes(staging_.size()), error));
      stop_all();
      return false;
    }
    tally_.staging_seconds = elapsed();
    tally_.lock_seconds = tally_.staging_seconds - begin;
    staging_locked_.store(true, std::memory_order_release);
    handover_.poke();
    return true;
  }

  // ---- the calling thread: destinations, in order.

  // The staging is locked between two destinations as soon as it is
  // faulted in: making buffers overlaps the faulting, and the one
  // registration waits for at most one buffer.
  void make_destinations() {
    const std::size_t count = destinations_.count();
    for (std::size_t i = 0; i < count && !failure_.failed(); ++i) {
      if (!lock_staging(/*wait=*/false)) return;
      try {
        destinations_.make_next();
      } catch (...) {
        failure_.record(std::current_exception());
        stop_all();
        return;
      }
      made_.store(i + 1, std::memory_order_release);
      handover_.poke();  // copies may have been waiting for it
    }
    tally_.destinations_seconds = elapsed();
    lock_staging(/*wait=*/true);
  }

  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

  // ---- which unit goes which way: the registering pipeline takes units
  // from the front, the staging pipelines from the back (from the front
  // where nothing is pinned), until they meet.

  std::optional<std::size_t> claim_to_pin() {
    std::lock_guard lock(claim_mutex_);
    if (front_ >= back_) return std::nullopt;
    return front_++;
  }

  // A staged batch to fill: (unit, batch within it).
  std::optional<std::pair<std::size_t, std::size_t>> claim_to_stage() {
    std::lock_guard lock(claim_mutex_);
    for (;;) {
      if (!units_staged_.empty()) {
        const std::size_t unit = units_staged_.front();
        if (next_staged_ < plan_.units[unit].staged.size()) return std::pair{unit, next_staged_++};
        units_staged_.pop_front();
        next_staged_ = 0;
        continue;
      }
      if (front_ >= back_) return std::nullopt;
      units_staged_.push_back(pinning_ ? --back_ : front_++);
    }
  }

  // ---- the registering pipeline.

  void register_units() {
    all_started_.wait();  // as the staging pipelines (stage)
    DeviceGuard guard(settings_.ordinal);
    while (!failure_.failed()) {
      const std::optional<std::size_t> unit = claim_to_pin();
      if (!unit) return;
      const std::optional<unsigned> token = tokens_.take();
      if (!token) return;
      Slot& slot = slots_[*token];
      unlock(slot);  // the chunk this token locked last; its copies have finished
      const Batch& batch = plan_.units[*unit].pinned;
      void* begin = const_cast<std::byte*>(batch.pin_begin);
      const cudaError_t locked =
          cudaHostRegister(begin, batch.pin_length, cudaHostRegisterPortable | cudaHostRegisterReadOnly);
      if (locked == cudaSuccess || locked == cudaErrorHostMemoryAlreadyRegistered) {
        // Someone else's lock (a wired mapping) serves as well.
        if (locked != cudaSuccess) (void)cudaGetLastError();
        slot.locked = locked == cudaSuccess ? begin : nullptr;
        pinned_bytes_ += batch.bytes;
        handover_.push({&batch, *token});
        continue;
      }
      // The system will lock no more (or cannot): this unit, and the rest,
      // go through staging; this thread stages with the others.
      (void)cudaGetLastError();
      tokens_.put(*token);
      if (stagers_ == 0) {
        failure_.record(fmt::format("cannot page-lock {} of the source for the device to read, and there is no "
                                    "staging to fall back on (UploadOptions::staging_bytes is 0): {}",
                                    format_bytes(batch.pin_length), error_text("cudaHostRegister", locked)));
        stop_all();
        return;
      }
      {
        std::lock_guard lock(claim_mutex_);
        units_staged_.push_back(*unit);
      }
      stage_batches();
      return;
    }
  }

  // ---- the staging pipelines.

  void stage(unsigned k) {
    // This pipeline's slots (k, k + stagers, ...): faulted in here, so that
    // the pipelines fault theirs in at the same time; then filled (copies
    // from them wait until the region is locked). Not before every thread
    // is made: faulting holds the process's address-space lock for reading
    // and making a thread (its stack) takes it for writing, so on the H200
    // machine each thread made after the first six waited about 1 ms for
    // the others' faults, the last pipeline started 3-4.5 ms into the
    // upload, and the first copy waited for it (5.5-7 ms; 4.0-5.2 with
    // every thread made first, on three machines:
    // bench/results/2026-12-02-cuda-upload-threads-first.md).
    all_started_.wait();
    for (std::size_t s = k; s < settings_.slots; s += stagers_) {
      if (settings_.staging != EngineSettings::Staging::driver) staging_.populate(s * settings_.slot_bytes, settings_.slot_bytes);
      pool_.put(static_cast<unsigned>(s));
    }
    {
      std::lock_guard lock(populated_mutex_);
      if (++populated_by_ == stagers_) populated_at_ = elapsed();
    }
    populated_ready_.notify_one();
    DeviceGuard guard(settings_.ordinal);
    stage_batches();
  }

  // Fills claimed batches until none is left.
  void stage_batches() {
    std::size_t read = 0;
    while (!failure_.failed()) {
      const auto claim = claim_to_stage();
      if (!claim) break;
      const std::optional<unsigned> s = pool_.take();
      if (!s) break;
      const Batch& batch = plan_.units[claim->first].staged[claim->second];
      if (!fill(batch, slots_[*s], read)) break;
      handover_.push({&batch, *s});
    }
    read_bytes_ += read;
  }

  bool fill(const Batch& batch, Slot& slot, std::size_t& read) {
    for (const Batch::Entry& entry : batch.entries) {
      const CopyPiece& piece = entry.piece;
      std::byte* to = slot.memory + entry.staging_offset;
      if (piece.file < 0) {
        std::memcpy(to, piece.source, piece.length);
        continue;
      }
      if (std::string error = read_exactly(settings_.fd(piece.file), to, piece.length, piece.file_offset);
          !error.empty()) {
        failure_.record(fmt::format("reading {} at offset {} of the file: {}", format_bytes(piece.length),
                                    piece.file_offset, error));
        stop_all();
        return false;
      }
      read += piece.length;
    }
    return true;
  }

  // ---- the queueing thread.

  void queue_copies() {
    DeviceGuard guard(settings_.ordinal);
    std::vector<Handover::Item> handed, waiting;  // waiting: handed over, destinations not made yet
    std::size_t next_direct = 0, queued_bytes = 0;
    while (!failure_.failed()) {
      bool progress = false;
      const std::size_t made = made_.load(std::memory_order_acquire);
      const bool staging_locked = staging_locked_.load(std::memory_order_acquire);
      handover_.take_all(handed);
      for (const Handover::Item& item : handed) {
        if (item.batch->last_tensor < made && (staging_locked || item.slot >= settings_.slots)) {
          if (!queue(*item.batch, item.slot)) return;
          queued_bytes += item.batch->bytes;
          progress = true;
        } else {
          waiting.push_back(item);
        }
      }
      handed.swap(waiting);
      waiting.clear();
      for (; next_direct < plan_.direct.size() && plan_.direct[next_direct].last_tensor < made; ++next_direct) {
        if (!queue(plan_.direct[next_direct], kNoSlot)) return;
        queued_bytes += plan_.direct[next_direct].bytes;
        progress = true;
      }
      if (!retire(progress)) return;
      const bool idle = std::all_of(in_flight_.begin(), in_flight_.end(), [](const auto& q) { return q.empty(); });
      if (queued_bytes == total_bytes_ && idle) return;
      if (progress) continue;
      if (!idle) {
        for (int i = 0; i < 64; ++i) NUVEC_CPU_RELAX();  // a copy is about to finish: poll again soon
      } else {
        handover_.wait();  // the pipelines are preparing, or a destination is being made
      }
    }
  }

  static constexpr unsigned kNoSlot = ~0u;

  // Queues `batch`'s copies: from staging slot `index`, or from the sources
  // (a locked chunk's token, or kNoSlot for direct batches); then, with a
  // slot or token, an event after them.
  bool queue(const Batch& batch, unsigned index) {
    const std::size_t s = turn_++ % streams_.size();
    const bool staged = index < settings_.slots;
    for (const Batch::Entry& entry : batch.entries) {
      const CopyPiece& piece = entry.piece;
      const void* from = staged ? static_cast<const void*>(slots_[index].memory + entry.staging_offset)
                                : static_cast<const void*>(piece.source);
      std::byte* to = destinations_.address(piece.tensor) + piece.offset;
      if (const cudaError_t e = cudaMemcpyAsync(to, from, piece.length, cudaMemcpyHostToDevice, streams_[s]);
          e != cudaSuccess) {
        return fail("cudaMemcpyAsync", e);
      }
      if (tally_.copies++ == 0) tally_.first_copy_seconds = elapsed();
    }
    if (index == kNoSlot) return true;
    if (const cudaError_t e = cudaEventRecord(slots_[index].done, streams_[s]); e != cudaSuccess) {
      return fail("cudaEventRecord", e);
    }
    in_flight_[s].push_back(index);
    return true;
  }

  // Gives back the slots and chunks whose copies have finished (each
  // stream's in order).
  bool retire(bool& progress) {
    for (std::deque<unsigned>& queue : in_flight_) {
      while (!queue.empty()) {
        const cudaError_t e = cudaEventQuery(slots_[queue.front()].done);
        if (e == cudaErrorNotReady) {
          (void)cudaGetLastError();
          break;
        }
        if (e != cudaSuccess) return fail("cudaEventQuery", e);
        (queue.front() < settings_.slots ? pool_ : tokens_).put(queue.front());
        queue.pop_front();
        progress = true;
      }
    }
    return true;
  }

  const UploadPlan& plan_;
  Destinations& destinations_;
  const EngineSettings& settings_;
  std::vector<Slot> slots_;  // staging slots, then the registering pipeline's tokens
  const bool pinning_;
  std::size_t total_bytes_ = 0;
  std::vector<cudaStream_t> streams_;
  std::vector<std::deque<unsigned>> in_flight_;  // per stream: slots and tokens whose copies are queued, oldest first
  std::size_t turn_ = 0;
  SlotPool pool_, tokens_;
  Handover handover_;
  Failure failure_;
  std::atomic<std::size_t> made_{0};
  unsigned stagers_ = 0;
  StagingMemory staging_;  // the slots' memory
  std::mutex populated_mutex_;
  std::condition_variable populated_ready_;
  unsigned populated_by_ = 0;  // staging pipelines that have faulted their slots in
  double populated_at_ = 0;    // when the last of them had
  std::atomic<bool> staging_locked_{false};
  std::latch all_started_{1};  // counted down once every thread is made
  std::mutex claim_mutex_;
  std::size_t front_ = 0, back_;            // units not claimed yet: [front_, back_)
  std::deque<std::size_t> units_staged_;    // units being staged, the first one's batches handed out in turn
  std::size_t next_staged_ = 0;
  std::atomic<std::size_t> read_bytes_{0}, pinned_bytes_{0};
  EngineTally tally_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

EngineTally run_engine(const UploadPlan& plan, Destinations& destinations, const EngineSettings& settings) {
  return Engine(plan, destinations, settings).run();
}

}  // namespace nuvec::cuda::detail
