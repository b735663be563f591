// Uploads: a checkpoint's tensors, from host memory (a mapped file, as
// load_safetensors gives, or any buffer) or straight from a file, into
// buffers of a CUDA device.
//
// Staging pipelines (host threads) copy the bytes, a slot at a time, into
// page-locked staging: bytes of a read-only file mapping (a loaded
// checkpoint) are read from the file (pread), without touching the mapping;
// other memory is copied with memcpy. Meanwhile the calling thread makes the
// device buffers and one more thread queues each slot's copy as soon as its
// buffer exists, giving the slot back once the copy has left. Optionally
// (UploadOptions::pinned_bytes) one more pipeline page-locks chunks of the
// source (cudaHostRegister) from the other end of the checkpoint, for the
// device to read in place. A tensor already page-locked (a mapping wired
// with cudaHostRegister) is copied straight from there. docs/cuda.md,
// "Uploads", says why this shape and these defaults.
//
// The staging (and any locked chunks) is page-locked host memory: it counts
// in the device's `wired` while the upload runs, within its wired_limit. The
// staging is the only private host memory an upload adds.
//
// After an upload the host checkpoint can be dropped: its mapping goes, and
// `mapped` falls back, while the device tensors stay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/buffer.h"
#include "nuvec/device.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/io/tensor.h"

namespace nuvec::cuda {

struct UploadOptions {
  // Page-locked staging, in slots of slot_bytes (a multiple of the page
  // size; smaller staging makes one slot of it): what the staging pipelines
  // fill. 0: none (every byte is pinned in chunks instead). docs/cuda.md,
  // "Uploads", has the measurements behind each default.
  std::size_t staging_bytes = std::size_t{32} << 20;
  std::size_t slot_bytes = std::size_t{2} << 20;
  // Source chunks one registering pipeline page-locks (cudaHostRegister) at
  // once, in chunks of chunk_bytes (a multiple of the page size), for the
  // device to read in place while the staging pipelines work from the other
  // end. 0 (the default): none, every byte is staged; on the H200 machine
  // registering while copying ran at under half the copy engine's rate.
  // Pinning needs the source in memory (not read_file) and a device that
  // registers read-only memory; otherwise everything is staged.
  std::size_t pinned_bytes = 0;
  std::size_t chunk_bytes = std::size_t{32} << 20;
  // Staging pipelines (threads); 0: five eighths of the cores (10 of 16), at
  // most 16. Filling staging competes with the device's reads for memory
  // bandwidth: on the H200 machine 12 of 16 were slower than 10, and 8 too
  // few to keep the copies fed.
  unsigned pipelines = 0;
  // Streams the copies are queued on, in turn (one kept the copy engine
  // busiest).
  unsigned streams = 1;
  // Staging: read sources that lie in a read-only file mapping from the file
  // (pread) instead of copying them through the mapping (false: memcpy).
  bool read_files = true;
  // staging_bytes + pinned_bytes is page-locked host memory: it counts in the
  // device's `wired` while the upload runs and must fit under wired_limit.
  // Where less room is left, the upload stages through less, down to 1 MiB
  // (or staging_bytes, if smaller), and pins fewer chunks (or none); below
  // that it raises OutOfMemory, having changed nothing.
};

struct UploadReport {
  std::size_t bytes = 0;           // tensor bytes copied, which are:
  std::size_t direct_bytes = 0;    //   copied from memory already page-locked
  std::size_t pinned_bytes = 0;    //   copied from source chunks the upload page-locked
                                   //   and the rest through staging, of which:
  std::size_t read_bytes = 0;      //   read from a file (a mapping's, with read_files, or read_file's)
  std::size_t staging_bytes = 0;   // page-locked memory the upload held (in `wired`): slots and chunk window
  std::size_t slot_bytes = 0;      // each staging slot (0: none)
  std::size_t chunk_bytes = 0;     // each pinned chunk (0: none pinned)
  unsigned pipelines = 0;          // staging threads (the registering one not counted)
  unsigned streams = 0;            // streams the copies went on
  std::size_t copies = 0;          // host-to-device copies queued
  // From the call: until the pipelines started (the plan made, the staging
  // taken from the wired limit), until the first copy was queued, until the
  // staging was page-locked, until the last device buffer was made; the
  // whole call.
  double plan_seconds = 0;
  double setup_seconds = 0;
  double staging_seconds = 0;
  double buffers_seconds = 0;
  // Of the staging: until the pipelines had faulted it in (from the call),
  // and how long page-locking it took (cudaHostRegister; with
  // NUVEC_CUDA_STAGING=hostalloc, cudaHostAlloc). 0 without staging.
  double staging_faulted_seconds = 0;
  double staging_lock_seconds = 0;
  double seconds = 0;
};

// One tensor on the device.
struct DeviceTensor {
  std::string name;
  io::DType dtype = io::DType::U8;
  std::vector<std::uint64_t> shape;
  Buffer buffer;  // the tensor's bytes (empty for a tensor of none)
};

// An uploaded checkpoint: its tensors in the order given.
class DeviceCheckpoint {
 public:
  DeviceCheckpoint() = default;
  DeviceCheckpoint(std::vector<DeviceTensor> tensors, UploadReport report);

  const std::vector<DeviceTensor>& tensors() const { return tensors_; }
  std::vector<DeviceTensor>& tensors() { return tensors_; }
  std::size_t size() const { return tensors_.size(); }
  // The tensor called `name`, or null; at() raises InvalidArgument instead.
  const DeviceTensor* find(std::string_view name) const;
  const DeviceTensor& at(std::string_view name) const;
  const UploadReport& report() const { return report_; }

 private:
  std::vector<DeviceTensor> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;
  UploadReport report_;
};

// Copies `tensors` into new buffers of `gpu`, one per tensor, and waits for
// the copies. A checkpoint past the memory limit raises OutOfMemory before
// anything is read; one that the device refuses part way (a failed
// cudaMalloc) raises OutOfMemory once the copies queued so far have finished,
// its buffers back in the cache. OutOfMemory also when too little of the
// wired limit is left for staging (UploadOptions::staging_bytes); the
// statistics are then as they were. InvalidArgument if `gpu` is not a CUDA
// device or the options are unusable; IoError if a read or a copy fails.
DeviceCheckpoint upload(Device& gpu, std::span<const io::TensorView> tensors, const UploadOptions& options = {});

inline DeviceCheckpoint upload(Device& gpu, const io::SafetensorsFile& checkpoint, const UploadOptions& options = {}) {
  return upload(gpu, checkpoint.tensors(), options);
}

// One byte range of a file, and where in the new buffer it goes (Device::read_file's).
using FileRead = nuvec::FileRead;

struct FileUpload {
  Buffer buffer;
  UploadReport report;
};

// Reads `reads` of the open file `fd` into a new buffer of `buffer_length`
// bytes on `gpu`, through page-locked staging as upload() does (the file is
// read with pread; nothing is mapped), and waits for the copies: how the
// loaders bring checkpoints whose tensors are not aligned onto a GPU. The
// staging is taken before the buffer, so either refusal (OutOfMemory: the
// memory limit, or no room for staging under the wired limit) leaves the
// statistics as they were. InvalidArgument if `gpu` is not a CUDA device or
// a range falls outside the buffer; IoError if the file cannot be read or
// ends early.
FileUpload read_file(Device& gpu, int fd, std::size_t buffer_length, std::span<const FileRead> reads,
                     const UploadOptions& options = {});

}  // namespace nuvec::cuda
