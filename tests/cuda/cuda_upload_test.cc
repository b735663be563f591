// Uploads of safetensors checkpoints onto GPU 0: bit-exact against the file
// through staging (slots smaller than tensors, and tensors smaller than
// slots) and straight from a registered mapping; the host mapping can go
// afterwards; a checkpoint past the limit is refused having copied nothing.
#include <gtest/gtest.h>

#include <vector>

#include "gpu.h"
#include "io/safetensors/safetensors_test_support.h"
#include "nuvec/cuda.h"
#include "nuvec/cuda_upload.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/nuvec.h"
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

void expect_on_device(const nuvec::cuda::DeviceCheckpoint& uploaded, const std::vector<TestTensor>& expected) {
  ASSERT_EQ(uploaded.size(), expected.size());
  for (const TestTensor& t : expected) {
    const nuvec::cuda::DeviceTensor& d = uploaded.at(t.name);
    EXPECT_EQ(d.dtype, t.dtype) << t.name;
    EXPECT_EQ(d.shape, t.shape) << t.name;
    ASSERT_EQ(d.buffer.size(), t.bytes.size()) << t.name;
    std::vector<std::byte> back(t.bytes.size());
    nuvec::cuda::copy_to_host(back, d.buffer);
    EXPECT_TRUE(back == t.bytes) << t.name << " differs from the file";
  }
}

class CudaUploadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NUVEC_REQUIRE_GPU();
    gpu_ = nuvec::Device::create_cuda(0);
    tensors_ = checkpoint_tensors();
    path_ = dir_ / "model.safetensors";
    nuvec::io::save_safetensors(path_, nuvec_test::views_of(tensors_));
    for (const TestTensor& t : tensors_) bytes_ += t.bytes.size();
  }
  void TearDown() override {
    if (gpu_) {
      EXPECT_EQ(nuvec_test::invariant_violations(gpu_->memory()), "");
    }
  }

  nuvec_test::TempDir dir_;
  std::unique_ptr<nuvec::Device> gpu_;
  std::vector<TestTensor> tensors_;
  std::filesystem::path path_;
  std::size_t bytes_ = 0;
};

TEST_F(CudaUploadTest, BitExactThroughSlotsSmallerThanTheTensors) {
  const auto host = nuvec::io::load_safetensors(*gpu_, path_);
  ASSERT_EQ(host.sources().at(0).load_path, nuvec::io::LoadPath::mapped);
  for (const auto& [pipelines, slots] : {std::pair{1u, 1u}, std::pair{3u, 2u}, std::pair{8u, 1u}, std::pair{2u, 3u}}) {
    const bool blocking = slots == 2;  // waits asleep in one case
    SCOPED_TRACE(testing::Message() << pipelines << " pipelines, " << slots << " slots"
                                    << (blocking ? ", blocking" : ""));
    const nuvec::cuda::UploadOptions options{.staging_bytes = pipelines * slots * 64 * 1024,
                                             .pipelines = pipelines,
                                             .slots = slots,
                                             .blocking_wait = blocking};
    const auto uploaded = nuvec::cuda::upload(*gpu_, host, options);
    expect_on_device(uploaded, tensors_);
    const auto& r = uploaded.report();
    EXPECT_EQ(r.bytes, bytes_);
    EXPECT_EQ(r.direct_bytes, 0u);
    EXPECT_LE(r.staging_bytes, options.staging_bytes);
    EXPECT_EQ(r.pipelines, pipelines);
    EXPECT_EQ(r.read_bytes, bytes_) << "a mapped checkpoint is read from its file";
  }
}

TEST_F(CudaUploadTest, BitExactCopyingThroughTheMapping) {
  const auto host = nuvec::io::load_safetensors(*gpu_, path_);
  const nuvec::cuda::UploadOptions options{.staging_bytes = 3 * 64 * 1024, .pipelines = 3, .read_files = false};
  const auto uploaded = nuvec::cuda::upload(*gpu_, host, options);
  expect_on_device(uploaded, tensors_);
  EXPECT_EQ(uploaded.report().read_bytes, 0u);
  EXPECT_EQ(uploaded.report().bytes, bytes_);
}

// Tensors in ordinary (anonymous) memory have no file: copied with memcpy.
TEST_F(CudaUploadTest, FromAnonymousMemory) {
  std::vector<nuvec::io::TensorView> views = nuvec_test::views_of(tensors_);
  const auto uploaded = nuvec::cuda::upload(*gpu_, views, {.staging_bytes = 2 * kMiB, .pipelines = 2});
  expect_on_device(uploaded, tensors_);
  EXPECT_EQ(uploaded.report().read_bytes, 0u);
}

// The file shrinks under its mapping: reading it says so (through the
// mapping, the same copy would have been a SIGBUS).
TEST_F(CudaUploadTest, AFileThatShrankIsAnErrorNotACrash) {
  const auto host = nuvec::io::load_safetensors(*gpu_, path_);
  const nuvec::MemoryStats before = gpu_->memory();
  std::filesystem::resize_file(path_, std::filesystem::file_size(path_) / 2);
  try {
    nuvec::cuda::upload(*gpu_, host, {.staging_bytes = kMiB, .pipelines = 2});
    ADD_FAILURE() << "an upload from a truncated file succeeded";
  } catch (const nuvec::IoError& e) {
    EXPECT_TRUE(nuvec_test::contains(e.what(), "ended early")) << e.what();
  }
  EXPECT_EQ(gpu_->memory().active, before.active) << "the buffers taken go back";
}

TEST_F(CudaUploadTest, BitExactPinningTheSourceInChunks) {
  const auto host = nuvec::io::load_safetensors(*gpu_, path_);
  for (const unsigned pipelines : {1u, 4u}) {
    SCOPED_TRACE(pipelines);
    // Chunks of 8 pages: tensors span many, and neighbours share pages.
    const nuvec::cuda::UploadOptions options{
        .staging_bytes = 2 * pipelines * 8 * nuvec::page_size(), .pipelines = pipelines, .pin_source = true};
    const auto uploaded = nuvec::cuda::upload(*gpu_, host, options);
    expect_on_device(uploaded, tensors_);
    const auto& r = uploaded.report();
    EXPECT_EQ(r.pinned_bytes, bytes_);
    EXPECT_EQ(r.pageable_bytes, 0u);
    EXPECT_EQ(r.staging_bytes, 0u);
  }
  // Every chunk was unlocked: the mapping can be locked whole now.
  EXPECT_EQ(gpu_->set_wired_limit(host.sources().at(0).mapped_bytes), 0u);
  EXPECT_EQ(gpu_->memory().wired_mapped, host.sources().at(0).mapped_bytes);
}

TEST_F(CudaUploadTest, DefaultOptionsAndTheMappingCanGoAfterwards) {
  auto host = nuvec::io::load_safetensors(*gpu_, path_);
  const std::size_t mapped = gpu_->memory().mapped;
  EXPECT_EQ(mapped, nuvec::mapping_size(std::filesystem::file_size(path_)));
  const auto uploaded = nuvec::cuda::upload(*gpu_, host);
  EXPECT_LE(uploaded.report().staging_bytes, nuvec::cuda::UploadOptions{}.staging_bytes);
  const nuvec::MemoryStats loaded = gpu_->memory();
  host = {};  // drops the views, and with them the mapping
  const nuvec::MemoryStats after = gpu_->memory();
  EXPECT_EQ(after.mapped, 0u);
  EXPECT_EQ(after.active, loaded.active);
  EXPECT_EQ(after.active_with_mapped, loaded.active_with_mapped - mapped);
  expect_on_device(uploaded, tensors_);
}

TEST_F(CudaUploadTest, RegisteredMappingIsCopiedWithoutStaging) {
  gpu_->set_wired_limit(nuvec::mapping_size(std::filesystem::file_size(path_)));
  const auto host = nuvec::io::load_safetensors(*gpu_, path_);
  ASSERT_EQ(gpu_->memory().wired_mapped, gpu_->memory().mapped);
  const auto uploaded = nuvec::cuda::upload(*gpu_, host);
  EXPECT_EQ(uploaded.report().direct_bytes, bytes_);
  EXPECT_EQ(uploaded.report().staging_bytes, 0u);
  expect_on_device(uploaded, tensors_);
}

TEST_F(CudaUploadTest, FromACpuDevicesCheckpointToo) {
  auto cpu = nuvec_test::fresh_device();
  const auto host = nuvec::io::load_safetensors(*cpu, path_);
  const auto uploaded = nuvec::cuda::upload(*gpu_, host);
  expect_on_device(uploaded, tensors_);
  EXPECT_EQ(gpu_->memory().mapped, 0u) << "the mapping counts on the device that made it";
}

TEST_F(CudaUploadTest, PastTheLimitNothingIsCopiedAndNothingStaysActive) {
  const auto host = nuvec::io::load_safetensors(*gpu_, path_);
  const nuvec::MemoryStats before = gpu_->memory();
  gpu_->set_memory_limit(before.active + before.mapped + 10 * kMiB);
  EXPECT_THROW(nuvec::cuda::upload(*gpu_, host), nuvec::OutOfMemory);
  EXPECT_EQ(gpu_->memory().active, before.active);
}

TEST_F(CudaUploadTest, UnusableOptionsAreInvalid) {
  const auto host = nuvec::io::load_safetensors(*gpu_, path_);
  EXPECT_THROW(nuvec::cuda::upload(*gpu_, host, {.staging_bytes = kMiB, .pipelines = 0}), nuvec::InvalidArgument);
  EXPECT_THROW(nuvec::cuda::upload(*gpu_, host, {.staging_bytes = 100, .pipelines = 1}), nuvec::InvalidArgument);
  EXPECT_THROW(nuvec::cuda::upload(*gpu_, host, {.staging_bytes = kMiB, .pipelines = 1, .slots = 0}),
               nuvec::InvalidArgument);
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
