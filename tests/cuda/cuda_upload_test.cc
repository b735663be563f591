// Uploads of safetensors checkpoints onto GPU 0: bit-exact against the file
// through staging (slots smaller than tensors, and tensors smaller than
// slots), by pinning the source in chunks, both at once, and straight from a
// registered mapping; the
// staging counts in `wired` while the upload runs and within wired_limit
// (less of it, or a refusal that changes nothing); the host mapping can go
// afterwards; a checkpoint past the limit is refused before anything is
// read; the loaders read unaligned checkpoints onto a GPU through staging.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "gpu.h"
#include "io/safetensors/safetensors_test_support.h"
#include "nuvec/cuda.h"
#include "nuvec/cuda_upload.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/nuvec.h"
#include "support/scoped_env.h"
#include "support/stats_invariants.h"
#include "support/text.h"

namespace {

using nuvec::io::DType;
using nuvec_test::kMiB;
using nuvec_test::random_tensor;
using nuvec_test::TestTensor;

// Tensors of awkward sizes: empty, a byte, odd lengths, several megabytes.
std::vector<TestTensor> checkpoint_tensors() {
  std::vector<TestTensor> t;
  t.push_back(random_tensor("embed", DType::BF16, {1000, 1531}, 1));  // 3 062 000 B
  t.push_back(random_tensor("empty", DType::F32, {0, 4}, 2));
  t.push_back(random_tensor("one", DType::U8, {1}, 3));
  t.push_back(random_tensor("norm", DType::F32, {777}, 4));
  for (int i = 0; i < 20; ++i) t.push_back(random_tensor("small." + std::to_string(i), DType::F16, {13, 17}, 10 + i));
  t.push_back(random_tensor("big", DType::F32, {1 << 20, 5}, 5));    // 20 MiB
  t.push_back(random_tensor("tail", DType::I8, {65537}, 6));
  return t;
}

std::vector<std::byte> device_bytes(const nuvec::Buffer& b, std::size_t offset, std::size_t length) {
  std::vector<std::byte> back(length);
  nuvec::cuda::copy_to_host(back, b, offset);
  return back;
}

void expect_on_device(const nuvec::cuda::DeviceCheckpoint& uploaded, const std::vector<TestTensor>& expected) {
  ASSERT_EQ(uploaded.size(), expected.size());
  for (const TestTensor& t : expected) {
    const nuvec::cuda::DeviceTensor& d = uploaded.at(t.name);
    EXPECT_EQ(d.dtype, t.dtype) << t.name;
    EXPECT_EQ(d.shape, t.shape) << t.name;
    ASSERT_EQ(d.buffer.size(), t.bytes.size()) << t.name;
    EXPECT_TRUE(device_bytes(d.buffer, 0, t.bytes.size()) == t.bytes) << t.name << " differs from the file";
  }
}

// The statistics of each wire/unwire event of staging (id not a mapping's)
// in the device's trace: what `wired` was after each.
struct StagingEvents {
  std::vector<std::size_t> wired_after_wire, wired_after_unwire, sizes;
};
StagingEvents staging_events(const nuvec::Device& gpu) {
  StagingEvents out;
  const auto trace = gpu.trace();
  if (!trace) return out;
  for (const nuvec::TraceEvent& e : trace->events) {
    if (e.kind != nuvec::TraceEventKind::wire && e.kind != nuvec::TraceEventKind::unwire) continue;
    (e.kind == nuvec::TraceEventKind::wire ? out.wired_after_wire : out.wired_after_unwire).push_back(e.stats->wired);
    out.sizes.push_back(e.size);
  }
  return out;
}

// No page of the checkpoint is still page-locked.
void expect_all_unlocked(const nuvec::io::SafetensorsFile& host) {
  for (const auto& t : host.tensors()) {
    if (t.bytes.empty()) continue;
    cudaPointerAttributes attributes{};
    CUDA_ASSERT(cudaPointerGetAttributes(&attributes, t.bytes.data()));
    EXPECT_NE(attributes.type, cudaMemoryTypeHost) << t.name << " is still page-locked";
  }
}

class CudaUploadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NUVEC_REQUIRE_GPU();
    gpu_ = nuvec::Device::create_cuda(0);
    cpu_ = nuvec_test::fresh_device();
    tensors_ = checkpoint_tensors();
    path_ = dir_ / "model.safetensors";
    nuvec::io::save_safetensors(path_, nuvec_test::views_of(tensors_));
    for (const TestTensor& t : tensors_) bytes_ += t.bytes.size();
  }
  void TearDown() override {
    if (gpu_) {
      EXPECT_EQ(nuvec_test::invariant_violations(gpu_->memory()), "");
      EXPECT_EQ(gpu_->memory().wired, gpu_->memory().wired_mapped) << "staging outlived its upload";
    }
  }
  // The checkpoint mapped by a CPU device (never wired there): on the GPU,
  // `wired` then holds only what the upload page-locks.
  nuvec::io::SafetensorsFile host_checkpoint() { return nuvec::io::load_safetensors(*cpu_, path_); }

  nuvec_test::TempDir dir_;
  std::unique_ptr<nuvec::Device> gpu_, cpu_;
  std::vector<TestTensor> tensors_;
  std::filesystem::path path_;
  std::size_t bytes_ = 0;
};

TEST_F(CudaUploadTest, BitExactThroughSlotsSmallerThanTheTensors) {
  const auto host = host_checkpoint();
  ASSERT_EQ(host.sources().at(0).load_path, nuvec::io::LoadPath::mapped);
  struct Shape {
    unsigned pipelines, slots, streams;
  };
  for (const Shape& shape : {Shape{1, 1, 1}, Shape{3, 6, 2}, Shape{8, 8, 1}, Shape{2, 3, 4}, Shape{5, 2, 2}}) {
    SCOPED_TRACE(testing::Message() << shape.pipelines << " pipelines, " << shape.slots << " slots, " << shape.streams
                                    << " streams");
    const nuvec::cuda::UploadOptions options{.staging_bytes = shape.slots * 64 * 1024,
                                             .slot_bytes = 64 * 1024,
                                             .pinned_bytes = 0,
                                             .pipelines = shape.pipelines,
                                             .streams = shape.streams};
    const auto uploaded = nuvec::cuda::upload(*gpu_, host, options);
    expect_on_device(uploaded, tensors_);
    const auto& r = uploaded.report();
    EXPECT_EQ(r.bytes, bytes_);
    EXPECT_EQ(r.direct_bytes, 0u);
    EXPECT_EQ(r.staging_bytes, options.staging_bytes);
    EXPECT_EQ(r.pipelines, std::min(shape.pipelines, shape.slots));
    EXPECT_EQ(r.read_bytes, bytes_) << "a mapped checkpoint is read from its file";
    EXPECT_EQ(gpu_->memory().wired, 0u);
  }
}

TEST_F(CudaUploadTest, BitExactCopyingThroughTheMapping) {
  const auto host = host_checkpoint();
  const nuvec::cuda::UploadOptions options{.staging_bytes = 3 * 64 * 1024,
                                           .slot_bytes = 64 * 1024,
                                           .pinned_bytes = 0,
                                           .pipelines = 3,
                                           .read_files = false};
  const auto uploaded = nuvec::cuda::upload(*gpu_, host, options);
  expect_on_device(uploaded, tensors_);
  EXPECT_EQ(uploaded.report().read_bytes, 0u);
  EXPECT_EQ(uploaded.report().bytes, bytes_);
}

// Tensors in ordinary (anonymous) memory have no file: copied with memcpy.
TEST_F(CudaUploadTest, FromAnonymousMemory) {
  std::vector<nuvec::io::TensorView> views = nuvec_test::views_of(tensors_);
  const auto uploaded = nuvec::cuda::upload(*gpu_, views, {.staging_bytes = 2 * kMiB, .slot_bytes = kMiB});
  expect_on_device(uploaded, tensors_);
  EXPECT_EQ(uploaded.report().read_bytes, 0u);
}

// The file shrinks under its mapping: reading it says so (through the
// mapping, the same copy would have been a SIGBUS). Pinning the missing
// pages fails too, and the unit falls back to staging, which says so.
TEST_F(CudaUploadTest, AFileThatShrankIsAnErrorNotACrash) {
  const auto host = host_checkpoint();
  const nuvec::MemoryStats before = gpu_->memory();
  std::filesystem::resize_file(path_, std::filesystem::file_size(path_) / 2);
  try {
    nuvec::cuda::upload(*gpu_, host, {.staging_bytes = kMiB, .slot_bytes = 256 * 1024, .pipelines = 2});
    ADD_FAILURE() << "an upload from a truncated file succeeded";
  } catch (const nuvec::IoError& e) {
    EXPECT_TRUE(nuvec_test::contains(e.what(), "ended early")) << e.what();
  }
  EXPECT_EQ(gpu_->memory().active, before.active) << "the buffers taken go back";
  EXPECT_EQ(gpu_->memory().wired, 0u) << "and so does the staging";
}

TEST_F(CudaUploadTest, BitExactPinningTheSourceInChunks) {
  const auto host = host_checkpoint();
  // Chunks of 8 pages: tensors span many, and neighbours share pages.
  const std::size_t chunk = 8 * nuvec::page_size();
  const nuvec::cuda::UploadOptions options{
      .staging_bytes = 0, .pinned_bytes = 3 * chunk, .chunk_bytes = chunk};
  gpu_->start_trace();
  const auto uploaded = nuvec::cuda::upload(*gpu_, host, options);
  expect_on_device(uploaded, tensors_);
  const auto& r = uploaded.report();
  EXPECT_EQ(r.pinned_bytes, bytes_);
  EXPECT_EQ(r.read_bytes, 0u);
  EXPECT_EQ(r.staging_bytes, 3 * chunk) << "the chunks locked at once count as staging";
  EXPECT_EQ(r.chunk_bytes, chunk);
  EXPECT_EQ(staging_events(*gpu_).wired_after_wire, std::vector<std::size_t>{3 * chunk});
  expect_all_unlocked(host);
}

// Both ways at once, as by default: one pipeline pins chunks from the front,
// the others stage from the back; every byte goes one way or the other.
TEST_F(CudaUploadTest, BitExactPinningAndStagingTogether) {
  const auto host = host_checkpoint();
  const std::size_t chunk = 8 * nuvec::page_size();
  for (int round = 0; round < 3; ++round) {
    const nuvec::cuda::UploadOptions options{.staging_bytes = 4 * 64 * 1024,
                                             .slot_bytes = 64 * 1024,
                                             .pinned_bytes = 2 * chunk,
                                             .chunk_bytes = chunk,
                                             .pipelines = 3};
    const auto uploaded = nuvec::cuda::upload(*gpu_, host, options);
    expect_on_device(uploaded, tensors_);
    const auto& r = uploaded.report();
    EXPECT_EQ(r.pinned_bytes + r.read_bytes, bytes_) << "pinned " << r.pinned_bytes << ", read " << r.read_bytes;
    EXPECT_EQ(r.staging_bytes, 4 * 64 * 1024 + 2 * chunk);
  }
  expect_all_unlocked(host);
}

// The staging is page-locked host memory: `wired` holds it from before the
// first slot is made until the last copy has left, and no longer.
TEST_F(CudaUploadTest, StagingCountsInWiredDuringTheUploadAndLeavesAfter) {
  const auto host = host_checkpoint();
  EXPECT_EQ(gpu_->memory().wired_limit, nuvec::cuda::kDefaultWiredLimit) << "a CUDA device can stage by default";
  gpu_->start_trace();
  const nuvec::cuda::UploadOptions options{
      .staging_bytes = 4 * kMiB, .slot_bytes = kMiB, .pinned_bytes = 0, .pipelines = 3};
  const auto uploaded = nuvec::cuda::upload(*gpu_, host, options);
  expect_on_device(uploaded, tensors_);
  EXPECT_EQ(uploaded.report().staging_bytes, 4 * kMiB);
  const StagingEvents events = staging_events(*gpu_);
  EXPECT_EQ(events.wired_after_wire, std::vector<std::size_t>{4 * kMiB});
  EXPECT_EQ(events.wired_after_unwire, std::vector<std::size_t>{0});
  EXPECT_EQ(events.sizes, (std::vector<std::size_t>{4 * kMiB, 4 * kMiB}));
  // The buffers were all made while the staging was held (between the two).
  const auto trace = gpu_->trace();
  std::size_t wire = 0, unwire = 0, allocations = 0;
  for (std::size_t i = 0; i < trace->events.size(); ++i) {
    const auto& e = trace->events[i];
    if (e.kind == nuvec::TraceEventKind::wire) wire = i;
    if (e.kind == nuvec::TraceEventKind::unwire) unwire = i;
    if (e.kind == nuvec::TraceEventKind::allocate) {
      ++allocations;
      EXPECT_GT(i, wire);
      EXPECT_EQ(e.stats->wired, 4 * kMiB);
    }
  }
  EXPECT_LT(wire, unwire);
  EXPECT_EQ(allocations, tensors_.size() - 1) << "one buffer per tensor but the empty one";
  EXPECT_EQ(gpu_->memory().wired, 0u);
  // With chunks pinned too: both count.
  gpu_->start_trace();
  const auto both = nuvec::cuda::upload(
      *gpu_, host, {.staging_bytes = 4 * kMiB, .slot_bytes = kMiB, .pinned_bytes = 2 * kMiB, .chunk_bytes = kMiB});
  expect_on_device(both, tensors_);
  EXPECT_EQ(both.report().staging_bytes, 6 * kMiB);
  EXPECT_EQ(staging_events(*gpu_).wired_after_wire, std::vector<std::size_t>{6 * kMiB});
  EXPECT_EQ(gpu_->memory().wired, 0u);
}

// NUVEC_CUDA_STAGING=hostalloc: the staging from cudaHostAlloc instead of
// registered anonymous memory, counted the same; small-pages: registered
// without huge pages; another value is refused before anything is held.
TEST_F(CudaUploadTest, StagingFromTheDriverIsBitExactAndCountsInWired) {
  const auto host = host_checkpoint();
  const nuvec::cuda::UploadOptions options{
      .staging_bytes = 4 * kMiB, .slot_bytes = kMiB, .pinned_bytes = 0, .pipelines = 3};
  const auto registered = nuvec::cuda::upload(*gpu_, host, options);
  EXPECT_GT(registered.report().staging_lock_seconds, 0.0);
  EXPECT_GT(registered.report().staging_faulted_seconds, 0.0);
  EXPECT_LE(registered.report().staging_faulted_seconds, registered.report().staging_seconds);
  nuvec_test::ScopedEnv env("NUVEC_CUDA_STAGING", "hostalloc");
  gpu_->start_trace();
  const auto uploaded = nuvec::cuda::upload(*gpu_, host, options);
  expect_on_device(uploaded, tensors_);
  EXPECT_EQ(uploaded.report().staging_bytes, 4 * kMiB);
  EXPECT_GT(uploaded.report().staging_lock_seconds, 0.0);
  EXPECT_EQ(staging_events(*gpu_).wired_after_wire, std::vector<std::size_t>{4 * kMiB});
  EXPECT_EQ(gpu_->memory().wired, 0u);
  nuvec_test::ScopedEnv bad("NUVEC_CUDA_STAGING", "pinned");
  const nuvec::MemoryStats before = gpu_->memory();
  try {
    nuvec::cuda::upload(*gpu_, host, options);
    ADD_FAILURE() << "NUVEC_CUDA_STAGING=pinned was accepted";
  } catch (const nuvec::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("NUVEC_CUDA_STAGING=pinned: expected huge-pages"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(gpu_->memory(), before);
  nuvec_test::ScopedEnv small("NUVEC_CUDA_STAGING", "small-pages");
  expect_on_device(nuvec::cuda::upload(*gpu_, host, options), tensors_);
  EXPECT_EQ(gpu_->memory().wired, 0u);
}

// Less room under the wired limit than the staging asked for: the upload
// takes what there is, in fewer slots.
TEST_F(CudaUploadTest, AWiredLimitBelowTheStagingMeansLessStaging) {
  const auto host = host_checkpoint();
  gpu_->set_wired_limit(3 * kMiB);
  gpu_->start_trace();
  const auto uploaded =
      nuvec::cuda::upload(*gpu_, host, {.staging_bytes = 16 * kMiB, .slot_bytes = kMiB, .pinned_bytes = 0});
  expect_on_device(uploaded, tensors_);
  EXPECT_EQ(uploaded.report().staging_bytes, 3 * kMiB);
  EXPECT_EQ(staging_events(*gpu_).wired_after_wire, std::vector<std::size_t>{3 * kMiB});
  // Room for the staging and two of the four chunks: two chunks.
  gpu_->set_wired_limit(6 * kMiB);
  const auto some = nuvec::cuda::upload(
      *gpu_, host, {.staging_bytes = 4 * kMiB, .slot_bytes = kMiB, .pinned_bytes = 4 * kMiB, .chunk_bytes = kMiB});
  expect_on_device(some, tensors_);
  EXPECT_EQ(some.report().staging_bytes, 6 * kMiB);
  EXPECT_EQ(some.report().chunk_bytes, kMiB);
  // Less than a slot of room: one smaller slot, and nothing pinned.
  gpu_->set_wired_limit(kMiB + 8192);
  const auto again = nuvec::cuda::upload(*gpu_, host, {.staging_bytes = 16 * kMiB, .slot_bytes = 4 * kMiB});
  expect_on_device(again, tensors_);
  EXPECT_EQ(again.report().staging_bytes, kMiB + 8192);
  EXPECT_EQ(again.report().slot_bytes, kMiB + 8192);
  EXPECT_EQ(again.report().chunk_bytes, 0u);
}

// Under 1 MiB of room: refused, with every statistic as it was.
TEST_F(CudaUploadTest, AWiredLimitWithoutRoomForStagingRefusesAndChangesNothing) {
  const auto host = host_checkpoint();
  gpu_->set_wired_limit(512 * 1024);
  const nuvec::MemoryStats before = gpu_->memory();
  try {
    nuvec::cuda::upload(*gpu_, host, {.staging_bytes = 8 * kMiB, .slot_bytes = kMiB});
    ADD_FAILURE() << "an upload without room for staging succeeded";
  } catch (const nuvec::OutOfMemory& e) {
    EXPECT_TRUE(nuvec_test::contains(e.what(), "wired limit")) << e.what();
    EXPECT_TRUE(nuvec_test::contains(e.what(), "set_wired_limit")) << e.what();
    EXPECT_EQ(e.stats(), before);
  }
  EXPECT_EQ(gpu_->memory(), before);
  // Staging asked smaller than 1 MiB is taken whole where it fits.
  const auto small = nuvec::cuda::upload(*gpu_, host, {.staging_bytes = 256 * 1024, .slot_bytes = 64 * 1024});
  expect_on_device(small, tensors_);
  EXPECT_EQ(small.report().staging_bytes, 256 * 1024u);
}

TEST_F(CudaUploadTest, DefaultOptionsAndTheMappingCanGoAfterwards) {
  auto host = host_checkpoint();
  const auto uploaded = nuvec::cuda::upload(*gpu_, host);
  const nuvec::cuda::UploadOptions defaults;
  EXPECT_LE(uploaded.report().staging_bytes, defaults.staging_bytes + defaults.pinned_bytes);
  EXPECT_GT(uploaded.report().streams, 0u);
  const nuvec::MemoryStats loaded = gpu_->memory();
  host = {};  // drops the views, and with them the mapping
  EXPECT_EQ(cpu_->memory().mapped, 0u);
  EXPECT_EQ(gpu_->memory(), loaded);
  expect_on_device(uploaded, tensors_);
}

// With the default wired limit, a checkpoint that fits under it is wired when
// mapped (cudaHostRegister) and copied straight from there, without staging;
// when the mapping goes, `mapped` falls back and its registration with it.
TEST_F(CudaUploadTest, ASmallCheckpointIsRegisteredAndCopiedWithoutStaging) {
  auto host = nuvec::io::load_safetensors(*gpu_, path_);
  const std::size_t mapped = nuvec::mapping_size(std::filesystem::file_size(path_));
  ASSERT_LT(mapped, nuvec::cuda::kDefaultWiredLimit);
  ASSERT_EQ(gpu_->memory().wired_mapped, mapped);
  const auto uploaded = nuvec::cuda::upload(*gpu_, host);
  EXPECT_EQ(uploaded.report().direct_bytes, bytes_);
  EXPECT_EQ(uploaded.report().staging_bytes, 0u);
  expect_on_device(uploaded, tensors_);
  const nuvec::MemoryStats loaded = gpu_->memory();
  host = {};
  const nuvec::MemoryStats after = gpu_->memory();
  EXPECT_EQ(after.mapped, 0u);
  EXPECT_EQ(after.wired, 0u);
  EXPECT_EQ(after.active, loaded.active);
  EXPECT_EQ(after.active_with_mapped, loaded.active_with_mapped - mapped);
}

TEST_F(CudaUploadTest, PastTheMemoryLimitNothingIsReadAndNothingChanges) {
  const auto host = host_checkpoint();
  gpu_->set_memory_limit(10 * kMiB);
  gpu_->start_trace();
  const nuvec::MemoryStats before = gpu_->memory();
  try {
    nuvec::cuda::upload(*gpu_, host);
    ADD_FAILURE() << "an upload past the memory limit succeeded";
  } catch (const nuvec::OutOfMemory& e) {
    EXPECT_TRUE(nuvec_test::contains(e.what(), "memory limit")) << e.what();
  }
  EXPECT_EQ(gpu_->memory(), before);
  EXPECT_TRUE(gpu_->trace()->events.empty()) << "not even staging was taken";
}

TEST_F(CudaUploadTest, UnusableOptionsAreInvalid) {
  const auto host = host_checkpoint();
  EXPECT_THROW(nuvec::cuda::upload(*gpu_, host, {.streams = 0}), nuvec::InvalidArgument);
  EXPECT_THROW(nuvec::cuda::upload(*gpu_, host, {.staging_bytes = 100}), nuvec::InvalidArgument);
  EXPECT_THROW(nuvec::cuda::upload(*gpu_, host, {.slot_bytes = 1000}), nuvec::InvalidArgument);
  EXPECT_THROW(nuvec::cuda::upload(*gpu_, host, {.slot_bytes = 0}), nuvec::InvalidArgument);
  EXPECT_THROW(nuvec::cuda::upload(*gpu_, host, {.chunk_bytes = 1000}), nuvec::InvalidArgument);
  EXPECT_THROW(nuvec::cuda::upload(*gpu_, host, {.staging_bytes = 0, .pinned_bytes = 0}), nuvec::InvalidArgument);
  EXPECT_EQ(gpu_->memory().active, 0u);
}

// read_file: ranges of a file into one new device buffer, at offsets.
TEST_F(CudaUploadTest, ReadFilePlacesFileRangesInANewBuffer) {
  const auto file_bytes = nuvec_test::read_file(path_);
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::vector<nuvec::cuda::FileRead> reads = {
      {.file_offset = 3, .length = 1000, .buffer_offset = 0},
      {.file_offset = 5 * kMiB + 1, .length = kMiB + 77, .buffer_offset = 1024},
      {.file_offset = 0, .length = 0, .buffer_offset = 3 * kMiB},  // nothing, at the very end
      {.file_offset = 100, .length = 300, .buffer_offset = 3 * kMiB - 300},
  };
  const auto read = nuvec::cuda::read_file(*gpu_, fd, 3 * kMiB, reads, {.staging_bytes = kMiB, .slot_bytes = 256 * 1024});
  ASSERT_EQ(read.buffer.size(), 3 * kMiB);
  EXPECT_EQ(read.report.read_bytes, 1000 + kMiB + 77 + 300);
  EXPECT_EQ(read.report.staging_bytes, kMiB);
  for (const auto& r : reads) {
    const std::vector<std::byte> expected(file_bytes.begin() + static_cast<std::ptrdiff_t>(r.file_offset),
                                          file_bytes.begin() + static_cast<std::ptrdiff_t>(r.file_offset + r.length));
    EXPECT_TRUE(device_bytes(read.buffer, r.buffer_offset, r.length) == expected) << r.file_offset;
  }
  const nuvec::MemoryStats before = gpu_->memory();
  const std::vector<nuvec::cuda::FileRead> outside = {{.file_offset = 0, .length = 2, .buffer_offset = kMiB - 1}};
  EXPECT_THROW(nuvec::cuda::read_file(*gpu_, fd, kMiB, outside), nuvec::InvalidArgument);
  EXPECT_EQ(gpu_->memory(), before);
  const std::vector<nuvec::cuda::FileRead> past_end = {
      {.file_offset = file_bytes.size() - 10, .length = 20, .buffer_offset = 0}};
  EXPECT_THROW(nuvec::cuda::read_file(*gpu_, fd, kMiB, past_end), nuvec::IoError);
  const auto empty = nuvec::cuda::read_file(*gpu_, fd, 4096, {});
  EXPECT_EQ(empty.buffer.size(), 4096u) << "no reads: the buffer all the same";
  ::close(fd);
}

// A checkpoint whose tensors are not aligned (as MLX writes them) takes the
// loader's read path: on a GPU through staging, into one device buffer.
TEST_F(CudaUploadTest, TheLoadersReadPathWorksOnAGpu) {
  std::vector<TestTensor> tensors = {random_tensor("a", DType::F32, {3, 5}, 40),
                                     random_tensor("b", DType::BF16, {1 << 19, 3}, 41),  // 3 MiB
                                     random_tensor("c", DType::U8, {7}, 42)};
  const auto path = dir_ / "unpadded.safetensors";
  nuvec_test::write_file(path, nuvec_test::unpadded_file(tensors));
  gpu_->start_trace();
  const auto loaded = nuvec::io::load_safetensors(*gpu_, path);
  ASSERT_EQ(loaded.sources().at(0).load_path, nuvec::io::LoadPath::read);
  EXPECT_EQ(gpu_->memory().mapped, 0u);
  EXPECT_EQ(gpu_->memory().active, loaded.sources().at(0).buffer_bytes);
  EXPECT_EQ(gpu_->memory().wired, 0u) << "the staging went with the load";
  EXPECT_EQ(staging_events(*gpu_).wired_after_wire.size(), 1u) << "read through staging";
  for (const TestTensor& t : tensors) {
    const nuvec::io::TensorView& v = loaded.at(t.name);
    cudaPointerAttributes attributes{};
    CUDA_ASSERT(cudaPointerGetAttributes(&attributes, v.bytes.data()));
    EXPECT_EQ(attributes.type, cudaMemoryTypeDevice) << t.name;
    std::vector<std::byte> back(v.bytes.size());
    CUDA_ASSERT(cudaMemcpy(back.data(), v.bytes.data(), back.size(), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(back == t.bytes) << t.name;
  }
  // No room for staging: refused before the buffer is made, nothing changed.
  gpu_->set_wired_limit(0);
  const nuvec::MemoryStats before = gpu_->memory();
  EXPECT_THROW(nuvec::io::load_safetensors(*gpu_, path), nuvec::OutOfMemory);
  EXPECT_EQ(gpu_->memory(), before);
}

// Needs no GPU: a CPU device's buffers are not device memory (without a GPU,
// or without CUDA, the answer is the same error).
TEST(CudaUpload, ToACpuDeviceIsInvalid) {
  auto cpu = nuvec_test::fresh_device();
  nuvec_test::TempDir dir;
  const auto t = std::vector<TestTensor>{random_tensor("x", DType::F32, {64}, 1)};
  nuvec::io::save_safetensors(dir / "x.safetensors", nuvec_test::views_of(t));
  const auto host = nuvec::io::load_safetensors(*cpu, dir / "x.safetensors");
  try {
    nuvec::cuda::upload(*cpu, host);
    ADD_FAILURE() << "an upload to the CPU device succeeded";
  } catch (const nuvec::InvalidArgument& e) {
    EXPECT_TRUE(nuvec_test::contains(e.what(), "not a CUDA device") ||
                nuvec_test::contains(e.what(), "built without CUDA"))
        << e.what();
  }
}

}  // namespace
