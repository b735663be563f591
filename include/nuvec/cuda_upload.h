// Uploads: a checkpoint's tensors, from host memory (a mapped file, as
// load_safetensors gives, or any buffer), into buffers of a CUDA device.
//
// Copies run in a few pipelines, each with its own host thread and stream,
// so that while one pipeline's bytes travel to the device the others prepare
// theirs (page faults and disk reads happen there), and the copy engine stays
// busy. A pipeline prepares its bytes in one of two ways (UploadOptions):
// - staging: it copies them into its page-locked staging slot; the upload
//   adds that staging to host memory (at most staging_bytes). Bytes of a
//   read-only file mapping (a loaded checkpoint) are read from the file into
//   the slot, without touching the mapping: no page faults, and nothing to
//   tear down when the mapping goes;
// - pinning the source: it page-locks (cudaHostRegister) the source's pages a
//   chunk at a time and the device reads them where they are; nothing is
//   copied on the host and no memory is added (the file's pages are the page
//   cache's, shared); at most staging_bytes of them are locked at once.
// A tensor already page-locked (a mapping wired with cudaHostRegister) is
// copied straight from there either way.
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
  // Page-locked host memory at any one time, in total: staging slots, or
  // source pages locked in chunks (two chunks in flight per pipeline).
  // Slots of a few MiB are fastest: on the H200 machine 4 MiB slots beat
  // 16 MiB ones by a quarter (docs/cuda.md, "Uploads").
  std::size_t staging_bytes = std::size_t{64} << 20;
  // Pipelines, each with its own thread and stream: filling staging is
  // bound by the host's copy rate, which more threads raise.
  unsigned pipelines = 16;
  // Staging slots per pipeline (each staging_bytes / (pipelines * slots)):
  // with two, a pipeline fills one while the other's copy is in flight.
  unsigned slots = 1;
  // Wait for a slot's copy asleep (cudaEventBlockingSync) instead of
  // spinning. Spinning was faster on the H200 machine (32 cores, 16
  // pipelines: 33 against 24 GB/s); sleeping leaves the cores to others.
  bool blocking_wait = false;
  // Page-lock the source in chunks instead of copying it into staging. Where
  // the device cannot register read-only memory, staging is used regardless.
  bool pin_source = false;
  // Staging: read sources that lie in a read-only file mapping from the file
  // (pread) instead of copying them through the mapping (false: memcpy).
  bool read_files = true;
};

struct UploadReport {
  std::size_t bytes = 0;           // tensor bytes copied, which are:
  std::size_t direct_bytes = 0;    //   copied from memory already page-locked
  std::size_t pinned_bytes = 0;    //   copied from source chunks the upload page-locked
  std::size_t pageable_bytes = 0;  //   copied from pageable memory (a chunk that could not be locked)
                                   //   and the rest through staging, of which:
  std::size_t read_bytes = 0;      //   read from the file behind a mapping (UploadOptions::read_files)
  std::size_t staging_bytes = 0;   // page-locked staging memory the upload allocated
  unsigned pipelines = 0;          // threads and streams it used
  std::size_t copies = 0;          // host-to-device copies queued
  double setup_seconds = 0;        // device buffers and staging, before the first copy
  double seconds = 0;              // from the first copy queued to the last finished
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
// the copies. Every buffer is allocated before anything is copied, so a
// checkpoint past the memory limit raises OutOfMemory having copied nothing
// (the buffers taken go back to the cache). InvalidArgument if `gpu` is not a
// CUDA device or the options are unusable; IoError if a copy fails.
DeviceCheckpoint upload(Device& gpu, std::span<const io::TensorView> tensors, const UploadOptions& options = {});

inline DeviceCheckpoint upload(Device& gpu, const io::SafetensorsFile& checkpoint, const UploadOptions& options = {}) {
  return upload(gpu, checkpoint.tensors(), options);
}

}  // namespace nuvec::cuda
