// Uploads (include/nuvec/cuda_upload.h): P pipelines, each a host thread
// with its own stream; pipeline k carries batches k, k+P, k+2P, ... of the
// plan (upload.h). Staging: it takes its slots in turn (with two, it fills
// one while the other's copy is in flight), waits until the slot's last copy
// has left (an event), fills it from the source and queues the copy. A source in a
// read-only file mapping is read from its file (pread: the kernel copies
// from the page cache, reading the disk where it must) rather than through
// the mapping, whose page faults (one per few pages) and page-table entries
// (torn down when it is unmapped) cost more than the copy; other sources are
// copied with memcpy, page faults and all, on the pipeline's thread.
// Pinning: it page-locks the batch's source pages and queues copies from
// them, unlocking each chunk once its copies are done. Either way P-1
// pipelines prepare while one copies.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
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
#include "cuda/upload.h"
#include "nuvec/cuda_upload.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::cuda {

namespace {

using detail::Batch;
using detail::CopyPiece;

// The first failure of any pipeline; the others stop at their next batch.
class Failure {
 public:
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  void record(std::string message) {
    std::lock_guard lock(mutex_);
    if (!failed_.exchange(true)) message_ = std::move(message);
  }
  void raise() const {
    if (failed()) throw IoError(fmt::format("upload failed: {}", message_), {}, EIO);
  }

 private:
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::string message_;
};

// What pipelines count as they go (a pipeline adds its own at the end).
struct Tally {
  std::atomic<std::size_t> pinned{0}, pageable{0}, staging{0}, read{0};
};

// One pipeline: its thread runs batches k, k+P, k+2P, ... on its own stream.
class Pipeline {
 public:
  Pipeline(std::size_t slot_bytes, unsigned slots, bool blocking_wait, const detail::FileSources& files,
           Failure& failure, Tally& tally)
      : slot_bytes_(slot_bytes),
        slot_count_(slots),
        blocking_wait_(blocking_wait),
        slots_(new Slot[slots]),
        files_(files),
        failure_(failure),
        tally_(tally) {}

  void run(unsigned k, unsigned pipelines, const std::vector<Batch>& batches, int ordinal) {
    DeviceGuard guard(ordinal);
    // The staging slots, if this pipeline stages anything: made here, so
    // that the pipelines make theirs at the same time.
    for (std::size_t b = k; b < batches.size() && slot_bytes_ != 0; b += pipelines) {
      if (batches[b].direct) continue;
      for (unsigned i = 0; i < slot_count_; ++i) {
        std::string error;
        if (!slots_[i].memory.allocate(slot_bytes_, error)) {
          failure_.record(fmt::format("cannot page-lock {} of staging memory: {}", format_bytes(slot_bytes_), error));
          return;
        }
        tally_.staging += slot_bytes_;
      }
      break;
    }
    if (!create()) return;
    for (std::size_t b = k; b < batches.size() && !failure_.failed(); b += pipelines) {
      const Batch& batch = batches[b];
      const bool ok = batch.pin_length != 0 ? pinned(batch) : batch.direct ? direct(batch) : staged(batch);
      if (!ok) break;
    }
    // Wait for this pipeline's copies even after a failure: the staging slots
    // and the locked pages must outlive them.
    if (const cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess) fail("cudaStreamSynchronize", e);
    unlock_all();
    tally_.pinned += pinned_bytes_;
    tally_.pageable += pageable_bytes_;
    tally_.read += read_bytes_;
    destroy();
  }

 private:
  struct InFlight {
    cudaEvent_t done = nullptr;
    void* locked = nullptr;  // what this pipeline locked for it (null: nothing to unlock)
    bool busy = false;
  };
  struct Slot {
    StagingMemory memory;
    cudaEvent_t free = nullptr;  // its last copy has left
    bool in_use = false;
  };

  bool create() {
    if (const cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); e != cudaSuccess) {
      stream_ = nullptr;
      return fail("cudaStreamCreateWithFlags", e);
    }
    // A blocking event puts the waiting thread to sleep, leaving the core to
    // others; a spinning one wakes sooner (UploadOptions::blocking_wait).
    const unsigned slot_flags = cudaEventDisableTiming | (blocking_wait_ ? cudaEventBlockingSync : 0u);
    std::vector<std::pair<cudaEvent_t*, unsigned>> events = {{&in_flight_[0].done, cudaEventDisableTiming},
                                                             {&in_flight_[1].done, cudaEventDisableTiming}};
    for (unsigned i = 0; i < slot_count_; ++i) events.emplace_back(&slots_[i].free, slot_flags);
    for (const auto& [event, flags] : events) {
      if (const cudaError_t e = cudaEventCreateWithFlags(event, flags); e != cudaSuccess) {
        *event = nullptr;
        destroy();
        return fail("cudaEventCreateWithFlags", e);
      }
    }
    return true;
  }

  void destroy() {
    for (cudaEvent_t event : {in_flight_[0].done, in_flight_[1].done}) {
      if (event != nullptr) cudaEventDestroy(event);
    }
    for (unsigned i = 0; i < slot_count_; ++i) {
      if (slots_[i].free != nullptr) cudaEventDestroy(slots_[i].free);
      slots_[i].free = nullptr;
    }
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  bool fail(std::string_view call, cudaError_t error) {
    (void)cudaGetLastError();
    failure_.record(error_text(call, error));
    return false;
  }

  // Queues the batch's copies: from `slot` (staged), or from the sources (null).
  bool queue(const Batch& batch, const StagingMemory* slot) {
    for (const Batch::Entry& entry : batch.entries) {
      const void* from =
          slot != nullptr ? static_cast<const void*>(slot->data() + entry.staging_offset) : entry.piece.source;
      if (const cudaError_t e =
              cudaMemcpyAsync(entry.piece.destination, from, entry.piece.length, cudaMemcpyHostToDevice, stream_);
          e != cudaSuccess) {
        return fail("cudaMemcpyAsync", e);
      }
    }
    return true;
  }

  bool direct(const Batch& batch) { return queue(batch, nullptr); }

  bool staged(const Batch& batch) {
    Slot& slot = slots_[next_slot_];
    next_slot_ = (next_slot_ + 1) % slot_count_;
    // The slot's last copy must have left before it is overwritten.
    if (slot.in_use) {
      if (const cudaError_t e = cudaEventSynchronize(slot.free); e != cudaSuccess) {
        return fail("cudaEventSynchronize", e);
      }
    }
    for (const Batch::Entry& entry : batch.entries) {
      const detail::CopyPiece& piece = entry.piece;
      std::byte* to = slot.memory.data() + entry.staging_offset;
      if (piece.file < 0) {
        std::memcpy(to, piece.source, piece.length);
        continue;
      }
      if (std::string error = detail::read_exactly(files_.fd(piece.file), to, piece.length, piece.file_offset);
          !error.empty()) {
        failure_.record(fmt::format("reading {} at offset {} of the file behind the mapping: {}",
                                    format_bytes(piece.length), piece.file_offset, error));
        return false;
      }
      read_bytes_ += piece.length;
    }
    if (!queue(batch, &slot.memory)) return false;
    if (const cudaError_t e = cudaEventRecord(slot.free, stream_); e != cudaSuccess) return fail("cudaEventRecord", e);
    slot.in_use = true;
    return true;
  }

  // Locks the batch's source pages and queues copies straight from them. At
  // most two chunks per pipeline are locked: before a third, the oldest
  // one's copies are waited for and it is unlocked.
  bool pinned(const Batch& batch) {
    InFlight& entry = in_flight_[turn_ % 2];  // the older of the two, if both are busy
    if (!retire(entry)) return false;
    void* begin = const_cast<std::byte*>(batch.pin_begin);
    const cudaError_t locked =
        cudaHostRegister(begin, batch.pin_length, cudaHostRegisterPortable | cudaHostRegisterReadOnly);
    if (locked != cudaSuccess) (void)cudaGetLastError();
    // Someone else's lock (a wired mapping) serves as well; any other refusal
    // leaves a pageable copy, which the driver stages itself: slower, correct.
    const bool ours = locked == cudaSuccess;
    if (ours || locked == cudaErrorHostMemoryAlreadyRegistered) {
      pinned_bytes_ += batch.bytes;
    } else {
      pageable_bytes_ += batch.bytes;
    }
    entry.locked = ours ? begin : nullptr;
    entry.busy = true;
    ++turn_;
    if (!queue(batch, nullptr)) return false;
    if (const cudaError_t e = cudaEventRecord(entry.done, stream_); e != cudaSuccess) {
      entry.busy = false;  // the stream is synchronized before unlocking at the end
      return fail("cudaEventRecord", e);
    }
    return true;
  }

  // Waits for an in-flight chunk's copies and unlocks it.
  bool retire(InFlight& entry) {
    if (!entry.busy) return true;
    entry.busy = false;
    const cudaError_t waited = cudaEventSynchronize(entry.done);
    if (waited != cudaSuccess) {
      cudaStreamSynchronize(stream_);  // the pages must outlive the copies, whatever happened
      (void)cudaGetLastError();
    }
    if (entry.locked != nullptr) {
      const cudaError_t e = cudaHostUnregister(entry.locked);
      entry.locked = nullptr;
      if (e != cudaSuccess) return fail("cudaHostUnregister", e);
    }
    return waited == cudaSuccess || fail("cudaEventSynchronize", waited);
  }

  // After the stream is synchronized: unlocks whatever is still locked.
  void unlock_all() {
    for (InFlight& entry : in_flight_) {
      entry.busy = false;
      if (entry.locked != nullptr) {
        if (const cudaError_t e = cudaHostUnregister(entry.locked); e != cudaSuccess) fail("cudaHostUnregister", e);
        entry.locked = nullptr;
      }
    }
  }

  const std::size_t slot_bytes_;
  const unsigned slot_count_;
  const bool blocking_wait_;
  std::unique_ptr<Slot[]> slots_;  // staging, taken in turn
  unsigned next_slot_ = 0;
  const detail::FileSources& files_;
  Failure& failure_;
  Tally& tally_;
  cudaStream_t stream_ = nullptr;
  InFlight in_flight_[2];  // pinning: the two most recent chunks
  unsigned turn_ = 0;
  std::size_t pinned_bytes_ = 0, pageable_bytes_ = 0, read_bytes_ = 0;
};

// The device a CUDA buffer lives on; InvalidArgument for other memory.
int ordinal_of(const Buffer& buffer, const Device& gpu) {
  cudaPointerAttributes attributes{};
  const cudaError_t error = cudaPointerGetAttributes(&attributes, buffer.data());
  if (error != cudaSuccess || attributes.type != cudaMemoryTypeDevice) {
    (void)cudaGetLastError();
    throw InvalidArgument(fmt::format("cannot upload to device '{}': it is not a CUDA device (use Device::cuda)",
                                      gpu.name()));
  }
  return attributes.device;
}

// Whether the device can page-lock read-only memory (mapped files are).
bool can_register_read_only(int ordinal) {
  int supported = 0;
  if (cudaDeviceGetAttribute(&supported, cudaDevAttrHostRegisterReadOnlySupported, ordinal) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return supported != 0;
}

// Whether host memory at `p` is page-locked (registered or cudaHostAlloc'ed).
bool page_locked(const std::byte* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace

DeviceCheckpoint upload(Device& gpu, std::span<const io::TensorView> tensors, const UploadOptions& options) {
  const auto setup_start = std::chrono::steady_clock::now();
  if (options.pipelines == 0) throw InvalidArgument("cuda::upload: UploadOptions::pipelines must be at least 1");
  if (options.slots == 0) throw InvalidArgument("cuda::upload: UploadOptions::slots must be at least 1");
  const std::size_t page = page_size();
  // Staging: `slots` slots per pipeline. Pinning: two chunks in flight per pipeline.
  const std::size_t parts = std::size_t{options.pipelines} * (options.pin_source ? 2 : options.slots);
  const std::size_t slot_bytes = options.staging_bytes / parts / page * page;
  const std::size_t chunk_bytes = slot_bytes;
  if (slot_bytes == 0) {
    throw InvalidArgument(fmt::format(
        "cuda::upload: {} of page-locked memory cannot be split into {} pipelines of {} parts of at least a page "
        "({} B) each; give more staging or fewer pipelines",
        format_bytes(options.staging_bytes), options.pipelines, parts / options.pipelines, page));
  }

  // Every buffer first: a checkpoint that does not fit fails before any copy.
  std::vector<DeviceTensor> out;
  out.reserve(tensors.size());
  for (const io::TensorView& t : tensors) {
    out.push_back(DeviceTensor{t.name, t.dtype, t.shape, gpu.new_buffer(t.bytes.size())});
  }
  const auto first = std::find_if(out.begin(), out.end(), [](const DeviceTensor& t) { return !t.buffer.empty(); });
  if (first == out.end()) return DeviceCheckpoint(std::move(out), UploadReport{});
  const int ordinal = ordinal_of(first->buffer, gpu);

  UploadReport report;
  const bool pin = options.pin_source && can_register_read_only(ordinal);
  // Staged bytes of file mappings are read from their files.
  std::optional<detail::FileSources> files;
  if (!pin && options.read_files) {
    files.emplace();
  } else {
    files.emplace(std::vector<detail::MapsEntry>{});  // finds nothing
  }
  std::vector<CopyPiece> pieces;
  pieces.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto bytes = tensors[i].bytes;
    if (bytes.empty()) continue;
    const bool direct = page_locked(bytes.data());
    CopyPiece piece{bytes.data(), out[i].buffer.data(), bytes.size(), direct};
    if (!direct) {
      if (const auto found = files->find(bytes.data(), bytes.size())) {
        piece.file = found->file;
        piece.file_offset = found->offset;
      }
    }
    pieces.push_back(piece);
    report.bytes += bytes.size();
    if (direct) report.direct_bytes += bytes.size();
  }
  const std::vector<Batch> batches =
      pin ? detail::plan_pinned_chunks(pieces, chunk_bytes, page) : detail::plan_batches(pieces, slot_bytes);
  const bool any_staged = std::any_of(batches.begin(), batches.end(), [](const Batch& b) { return !b.direct; });
  const auto pipelines = static_cast<unsigned>(std::min<std::size_t>(options.pipelines, batches.size()));
  for (const Batch& b : batches) report.copies += b.entries.size();

  report.pipelines = pipelines;

  Failure failure;
  Tally tally;
  const auto start = std::chrono::steady_clock::now();
  report.setup_seconds = std::chrono::duration<double>(start - setup_start).count();
  {
    std::vector<std::unique_ptr<Pipeline>> lanes;  // outlive the threads: their slots are freed after the joins
    for (unsigned k = 0; k < pipelines; ++k) {
      lanes.push_back(std::make_unique<Pipeline>(any_staged ? slot_bytes : 0, options.slots, options.blocking_wait,
                                                 *files, failure, tally));
    }
    std::vector<std::jthread> threads;
    threads.reserve(pipelines);
    for (unsigned k = 0; k < pipelines; ++k) {
      threads.emplace_back([&, k] { lanes[k]->run(k, pipelines, batches, ordinal); });
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.pinned_bytes = tally.pinned;
  report.pageable_bytes = tally.pageable;
  report.staging_bytes = tally.staging;
  report.read_bytes = tally.read;
  failure.raise();
  return DeviceCheckpoint(std::move(out), report);
}

}  // namespace nuvec::cuda
