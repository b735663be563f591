// The engine behind uploads (include/nuvec/cuda_upload.h): carries out a
// plan (upload.h) with four kinds of thread at once.
// - The calling thread makes the destinations (device buffers) in order,
//   and page-locks the staging once the staging pipelines have faulted it in.
// - The staging pipelines take units and copy them, a slot at a time, into
//   page-locked staging: pread from the file behind a mapping, memcpy from
//   other memory.
// - Where chunks may be pinned (EngineSettings::chunks), one registering
//   pipeline takes units from the front of the plan and page-locks each
//   whole (cudaHostRegister), the device reading it in place, while the
//   staging pipelines take theirs from the back.
// - One queueing thread queues each prepared batch's copies once its
//   destinations exist, on the streams in turn, records an event after them,
//   and gives the slot (or the locked chunk) back as soon as it has passed.
// The two kinds of pipeline meet where their rates put them: neither waits
// for the other, and each unit goes one way only. Registering needs no copy
// by the processor but runs one call at a time in the driver (and, on the
// H200 machine, slowed the copies: off by default); staging costs memory
// bandwidth but spreads over cores (docs/cuda.md, "Uploads").
#pragma once

#include <cstddef>
#include <functional>

#include "cuda/upload.h"
#include "nuvec/cuda_upload.h"

namespace nuvec::cuda::detail {

// Where copies land, made one at a time by the calling thread while the
// pipelines prepare the first units.
class Destinations {
 public:
  virtual ~Destinations() = default;
  virtual std::size_t count() const = 0;
  // Makes the next destination; may raise (OutOfMemory: nothing more is
  // queued, the copies in flight finish, and the exception reaches the caller).
  virtual void make_next() = 0;
  // Safe to call for a destination made (the engine publishes how many are).
  virtual std::byte* address(std::size_t tensor) const = 0;
};

struct EngineSettings {
  int ordinal = 0;
  std::size_t slot_bytes = 0;  // staging
  unsigned slots = 0;
  unsigned chunks = 0;         // units locked at once by the registering pipeline (0: none are pinned)
  unsigned pipelines = 0;      // staging pipelines
  unsigned streams = 1;
  // How the staging is made: anonymous memory advised to take huge pages, or
  // not, faulted in by the pipelines and registered with one
  // cudaHostRegister; or from the driver (cudaHostAlloc, page-locked as it is
  // made, on the calling thread before the pipelines start).
  enum class Staging { huge_pages, small_pages, driver } staging = Staging::huge_pages;
  // The descriptor of an open file of the plan (CopyPiece::file).
  std::function<int(int file)> fd;
};

struct EngineTally {
  std::size_t read_bytes = 0, pinned_bytes = 0, copies = 0;
  // Since run_engine began: when the first copy was queued, when the last
  // staging slot was ready, when the last destination was made; when the
  // pipelines had faulted the staging in, and how long page-locking it took
  // (the cudaHostRegister or cudaHostAlloc call).
  double first_copy_seconds = 0, staging_seconds = 0, destinations_seconds = 0;
  double populated_seconds = 0, lock_seconds = 0;
};

// Carries out `plan`. Raises the first failure once every queued copy has
// finished and everything locked is unlocked: IoError for a read or a CUDA
// call, whatever make_next() raised.
EngineTally run_engine(const UploadPlan& plan, Destinations& destinations, const EngineSettings& settings);

}  // namespace nuvec::cuda::detail
