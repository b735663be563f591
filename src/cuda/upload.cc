// Uploads (include/nuvec/cuda_upload.h): the pieces to copy and where they
// come from, the page-locked budget taken from the device's wired limit, the
// destinations, and then the engine (upload_engine.h).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cuda/file_sources.h"
#include "cuda/upload.h"
#include "cuda/upload_engine.h"
#include "nuvec/cuda.h"
#include "nuvec/cuda_upload.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::cuda {

namespace {

using detail::Batch;
using detail::CopyPiece;

// Below this much room under the wired limit, staging is refused rather than
// shrunk (an upload through a few pages would crawl): 1 MiB, or what was asked.
constexpr std::size_t kLeastStaging = std::size_t{1} << 20;

// The ordinal of a CUDA device, as its backend knows it.
int ordinal_of(const Device& gpu, std::string_view what) {
  const std::optional<int> ordinal = gpu.gpu_ordinal();
  if (!ordinal) {
    throw InvalidArgument(
        fmt::format("cannot {} device '{}': it is not a CUDA device (use Device::cuda)", what, gpu.name()));
  }
  return *ordinal;
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

// The page-locked memory an upload asks for, or holds: staging slots and
// pinned chunks.
struct Staging {
  std::size_t slot_bytes = 0;
  unsigned slots = 0;
  std::size_t chunk_bytes = 0;
  unsigned chunks = 0;
  std::size_t staging() const { return slot_bytes * slots; }
  std::size_t pinned() const { return chunk_bytes * chunks; }
  std::size_t bytes() const { return staging() + pinned(); }
};

std::size_t page_multiple(std::size_t bytes, const char* what) {
  const std::size_t page = page_size();
  if (bytes == 0 || bytes % page != 0) {
    throw InvalidArgument(fmt::format("cuda::upload: UploadOptions::{} ({} B) must be a positive multiple of the page "
                                      "size ({} B)",
                                      what, bytes, page));
  }
  return bytes;
}

// What `options` ask for; `pin`: whether chunks can be pinned at all.
Staging staging_asked(const UploadOptions& options, bool pin) {
  const std::size_t page = page_size();
  if (options.streams == 0) throw InvalidArgument("cuda::upload: UploadOptions::streams must be at least 1");
  Staging asked;
  asked.slot_bytes = std::min(page_multiple(options.slot_bytes, "slot_bytes"), options.staging_bytes / page * page);
  asked.chunk_bytes = std::min(page_multiple(options.chunk_bytes, "chunk_bytes"), options.pinned_bytes / page * page);
  if (options.staging_bytes != 0 && asked.slot_bytes == 0) {
    throw InvalidArgument(fmt::format("cuda::upload: UploadOptions::staging_bytes ({} B) is less than a page ({} B)",
                                      options.staging_bytes, page));
  }
  if (asked.slot_bytes != 0) {
    asked.slots = static_cast<unsigned>(std::min<std::size_t>(options.staging_bytes / asked.slot_bytes, 1u << 16));
  }
  if (pin && asked.chunk_bytes != 0) {
    asked.chunks = static_cast<unsigned>(std::min<std::size_t>(options.pinned_bytes / asked.chunk_bytes, 1u << 16));
  }
  if (asked.slots == 0 && asked.chunks == 0) {
    throw InvalidArgument(pin ? "cuda::upload: UploadOptions::staging_bytes and pinned_bytes are both 0: nothing "
                                "would carry the bytes"
                              : "cuda::upload: UploadOptions::staging_bytes is 0, and these bytes cannot be pinned "
                                "instead (they are read from a file, or the device cannot register read-only "
                                "memory): nothing would carry them");
  }
  return asked;
}

// NUVEC_CUDA_STAGING: "huge-pages" (the default: anonymous memory advised to
// take huge pages, faulted in by the pipelines, then one cudaHostRegister),
// "small-pages" (the same without the advice) or "hostalloc" (one
// cudaHostAlloc before the pipelines start). docs/cuda.md, "Uploads".
detail::EngineSettings::Staging staging_source() {
  using Staging = detail::EngineSettings::Staging;
  const char* how = std::getenv("NUVEC_CUDA_STAGING");
  if (how == nullptr || *how == '\0' || std::string_view(how) == "huge-pages") return Staging::huge_pages;
  if (std::string_view(how) == "small-pages") return Staging::small_pages;
  if (std::string_view(how) == "hostalloc") return Staging::driver;
  throw InvalidArgument(
      fmt::format("NUVEC_CUDA_STAGING={}: expected huge-pages (the default), small-pages or hostalloc", how));
}

unsigned pipelines_asked(const UploadOptions& options) {
  if (options.pipelines != 0) return options.pipelines;
  // Five eighths of the cores (10 on the H200 machine's 16): 10 beat 8 in both
  // interleaved sweeps of bench/results/2026-12-02-cuda-upload-sweep.md, 12
  // lost to both.
  return std::clamp(std::thread::hardware_concurrency() * 5 / 8, 1u, 16u);
}

// Page-locked memory counted in the device's `wired` for the upload's
// duration: as much of `asked` as the wired limit leaves room for. Staging
// first, down to kLeastStaging (or all of it, if smaller); then as many
// chunks as fit. Without room for either, OutOfMemory with nothing changed.
class StagingHold {
 public:
  StagingHold(Device& gpu, Staging asked) : gpu_(gpu) {
    const std::size_t page = page_size();
    const std::size_t least = asked.slots != 0 ? std::min(asked.staging(), kLeastStaging) : asked.chunk_bytes;
    // Another thread may take room between the look and the take: look again.
    for (int attempt = 0; attempt < 8; ++attempt) {
      const MemoryStats s = gpu.memory();
      std::size_t room = s.wired < s.wired_limit ? s.wired_limit - s.wired : 0;
      if (room < least) {
        throw OutOfMemory(
            fmt::format("cannot upload to {}: it needs {} of page-locked memory (staging {}, pinned chunks {}; at "
                        "least {}), and wired {} leaves {} under the wired limit of {}; raise the limit "
                        "(Device::set_wired_limit, NUVEC_WIRED_LIMIT) or lower UploadOptions::staging_bytes and "
                        "pinned_bytes",
                        gpu.name(), format_bytes(asked.bytes()), format_bytes(asked.staging()),
                        format_bytes(asked.pinned()), format_bytes(least), format_bytes(s.wired), format_bytes(room),
                        format_bytes(s.wired_limit)),
            least, s);
      }
      Staging granted = asked;
      if (asked.slots != 0 && room < asked.staging()) {
        if (room >= asked.slot_bytes) {
          granted.slots = static_cast<unsigned>(room / asked.slot_bytes);
        } else {
          granted.slot_bytes = room / page * page;
          granted.slots = 1;
        }
      }
      room -= granted.staging();
      granted.chunks = static_cast<unsigned>(std::min<std::size_t>(asked.chunks, room / std::max<std::size_t>(asked.chunk_bytes, 1)));
      if (gpu.hold_staging(id(), granted.bytes())) {
        held_ = granted;
        return;
      }
    }
    throw OutOfMemory(fmt::format("cannot upload to {}: other threads keep taking the wired limit's room for staging",
                                  gpu.name()),
                      asked.bytes(), gpu.memory());
  }
  ~StagingHold() { gpu_.release_staging(id(), held_.bytes()); }
  StagingHold(const StagingHold&) = delete;
  StagingHold& operator=(const StagingHold&) = delete;

  const Staging& held() const { return held_; }

 private:
  std::uint64_t id() const { return reinterpret_cast<std::uintptr_t>(this); }

  Device& gpu_;
  Staging held_;
};

// Fails before anything is read when the buffers cannot all fit under the
// memory limit (the common refusal): what new_buffer would say for one of
// them, for all of them. `lengths` are the buffers' lengths.
template <class Lengths>
void check_memory_limit(const Device& gpu, std::size_t buffers, Lengths lengths) {
  std::size_t need = 0;
  for (const std::size_t length : lengths) {
    const std::optional<std::size_t> size = allocation_size(length);
    need = size && need + *size >= need ? need + *size : SIZE_MAX;
  }
  const MemoryStats s = gpu.memory();
  const std::size_t used = s.active + s.mapped;
  if (need > s.memory_limit - std::min(used, s.memory_limit)) {
    throw OutOfMemory(fmt::format("cannot upload {} buffer{} ({}) to {}: active {} + mapped {} + {} would pass the "
                                  "memory limit of {} (raise it with Device::set_memory_limit or NUVEC_MEMORY_LIMIT, "
                                  "or free buffers and mappings first)",
                                  buffers, buffers == 1 ? "" : "s", format_bytes(need), gpu.name(),
                                  format_bytes(s.active), format_bytes(s.mapped), format_bytes(need),
                                  format_bytes(s.memory_limit)),
                      need, s);
  }
}

// upload(): one new buffer per tensor, made in order.
class NewBuffers final : public detail::Destinations {
 public:
  NewBuffers(Device& gpu, std::span<const io::TensorView> tensors, std::vector<DeviceTensor>& out)
      : gpu_(gpu), tensors_(tensors), out_(out) {}
  std::size_t count() const override { return out_.size(); }
  void make_next() override {
    out_[made_].buffer = gpu_.new_buffer(tensors_[made_].bytes.size());
    ++made_;
  }
  std::byte* address(std::size_t tensor) const override { return out_[tensor].buffer.data(); }

 private:
  Device& gpu_;
  std::span<const io::TensorView> tensors_;
  std::vector<DeviceTensor>& out_;
  std::size_t made_ = 0;
};

// read_file(): ranges of one new buffer, made when the engine starts.
class OneNewBuffer final : public detail::Destinations {
 public:
  OneNewBuffer(Device& gpu, std::size_t length, std::span<const FileRead> reads)
      : gpu_(gpu), length_(length), reads_(reads) {}
  std::size_t count() const override { return reads_.size(); }
  void make_next() override {  // once: every read lands in the one buffer
    if (made_) return;
    buffer_ = gpu_.new_buffer(length_);
    made_ = true;
  }
  std::byte* address(std::size_t read) const override { return buffer_.data() + reads_[read].buffer_offset; }
  bool exists() const { return made_; }
  Buffer take() { return std::move(buffer_); }

 private:
  Device& gpu_;
  std::size_t length_;
  std::span<const FileRead> reads_;
  Buffer buffer_;
  bool made_ = false;
};

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Plans `pieces`, takes the page-locked memory (fills in the report's
// staging fields) and runs the engine.
void carry_out(Device& gpu, int ordinal, std::vector<CopyPiece>& pieces, detail::Destinations& destinations,
               const UploadOptions& options, const std::function<int(int)>& fd, UploadReport& report,
               std::chrono::steady_clock::time_point start) {
  const detail::EngineSettings::Staging staging = staging_source();  // a bad value is refused before anything is held
  const bool pin = options.pinned_bytes != 0 && can_register_read_only(ordinal) &&
                   std::all_of(pieces.begin(), pieces.end(), [](const CopyPiece& p) { return p.source != nullptr; });
  const bool any_prepared =
      std::any_of(pieces.begin(), pieces.end(), [](const CopyPiece& p) { return !p.direct && p.length != 0; });
  const Staging asked = staging_asked(options, pin);
  std::optional<StagingHold> hold;
  if (any_prepared) hold.emplace(gpu, asked);
  Staging held = hold ? hold->held() : Staging{};
  if (held.slots == 0) held.slot_bytes = asked.slot_bytes != 0 ? asked.slot_bytes : asked.chunk_bytes;
  const detail::UploadPlan plan =
      detail::plan_upload(pieces, held.chunks != 0 ? held.chunk_bytes : 0, held.slot_bytes, page_size());
  const detail::EngineSettings settings{.ordinal = ordinal,
                                        .slot_bytes = held.slot_bytes,
                                        .slots = held.slots,
                                        .chunks = held.chunks,
                                        .pipelines = pipelines_asked(options),
                                        .streams = options.streams,
                                        .staging = staging,
                                        .fd = fd};
  report.staging_bytes = held.bytes();
  report.slot_bytes = held.slots == 0 ? 0 : held.slot_bytes;
  report.chunk_bytes = held.chunks == 0 ? 0 : held.chunk_bytes;
  report.pipelines = held.slots == 0 ? 0 : std::min(settings.pipelines, held.slots);
  report.streams = options.streams;
  const double before_engine = since(start);
  const detail::EngineTally tally = detail::run_engine(plan, destinations, settings);
  report.read_bytes = tally.read_bytes;
  report.pinned_bytes = tally.pinned_bytes;
  report.copies = tally.copies;
  report.plan_seconds = before_engine;
  report.setup_seconds = before_engine + tally.first_copy_seconds;
  report.staging_seconds = held.slots == 0 ? 0 : before_engine + tally.staging_seconds;
  report.buffers_seconds = before_engine + tally.destinations_seconds;
  report.staging_faulted_seconds = held.slots == 0 ? 0 : before_engine + tally.populated_seconds;
  report.staging_lock_seconds = held.slots == 0 ? 0 : tally.lock_seconds;
}

}  // namespace

DeviceCheckpoint upload(Device& gpu, std::span<const io::TensorView> tensors, const UploadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int ordinal = ordinal_of(gpu, "upload to");
  staging_asked(options, true);  // unusable options are refused before anything else
  std::vector<std::size_t> lengths;
  lengths.reserve(tensors.size());
  for (const io::TensorView& t : tensors) lengths.push_back(t.bytes.size());
  check_memory_limit(gpu, tensors.size(), lengths);

  UploadReport report;
  // Staged bytes of file mappings are read from their files.
  std::optional<detail::FileSources> files;
  if (options.read_files) {
    files.emplace();
  } else {
    files.emplace(std::vector<detail::MapsEntry>{});  // finds nothing
  }
  std::vector<CopyPiece> pieces;
  pieces.reserve(tensors.size());
  std::vector<DeviceTensor> out;
  out.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const io::TensorView& t = tensors[i];
    out.push_back(DeviceTensor{t.name, t.dtype, t.shape, Buffer()});
    if (t.bytes.empty()) continue;
    CopyPiece piece{.source = t.bytes.data(), .tensor = i, .offset = 0, .length = t.bytes.size()};
    piece.direct = page_locked(t.bytes.data());
    if (!piece.direct) {
      if (const auto found = files->find(t.bytes.data(), t.bytes.size())) {
        piece.file = found->file;
        piece.file_offset = found->offset;
      }
    }
    pieces.push_back(piece);
    report.bytes += t.bytes.size();
    if (piece.direct) report.direct_bytes += t.bytes.size();
  }

  NewBuffers buffers(gpu, tensors, out);
  carry_out(gpu, ordinal, pieces, buffers, options, [&](int file) { return files->fd(file); }, report, start);
  report.seconds = since(start);
  return DeviceCheckpoint(std::move(out), report);
}

FileUpload read_file(Device& gpu, int fd, std::size_t buffer_length, std::span<const FileRead> reads,
                     const UploadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int ordinal = ordinal_of(gpu, "read a file into");
  staging_asked(options, false);
  UploadReport report;
  std::vector<CopyPiece> pieces;
  pieces.reserve(reads.size());
  for (std::size_t i = 0; i < reads.size(); ++i) {
    const FileRead& r = reads[i];
    if (r.buffer_offset > buffer_length || r.length > buffer_length - r.buffer_offset) {
      throw InvalidArgument(fmt::format("cuda::read_file: bytes [{}, {}) are outside the buffer of {} bytes",
                                        r.buffer_offset, r.buffer_offset + r.length, buffer_length));
    }
    if (r.length == 0) continue;
    pieces.push_back({.source = nullptr, .tensor = i, .offset = 0, .length = r.length, .direct = false, .file = 0,
                      .file_offset = r.file_offset});
    report.bytes += r.length;
  }
  check_memory_limit(gpu, 1, std::span(&buffer_length, 1));
  OneNewBuffer buffer(gpu, buffer_length, reads);
  carry_out(gpu, ordinal, pieces, buffer, options, [fd](int) { return fd; }, report, start);
  if (!buffer.exists()) buffer.make_next();  // nothing to read (no reads, or empty ones): the buffer still
  report.seconds = since(start);
  return {buffer.take(), report};
}

}  // namespace nuvec::cuda
