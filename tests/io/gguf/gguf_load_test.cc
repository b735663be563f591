// load_gguf: a small model in llama.cpp's layout is mapped and each tensor
// is a view into the mapping; misaligned tensors are read into one buffer;
// a refused file changes no statistic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "io/gguf/gguf_builder.h"
#include "nuvec/nuvec.h"
#include "nuvec/io/gguf.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"

namespace {

using nuvec::MemoryStats;
using nuvec::io::DType;
using nuvec::io::GgufArray;
using nuvec::io::GgufModel;
using nuvec::io::load_gguf;
using nuvec_test::counting_bytes;
using nuvec_test::GgufBuilder;
using nuvec_test::TempFile;

class GgufLoad : public ::testing::Test {
 protected:
  void SetUp() override { device_ = std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), false); }
  void TearDown() override { EXPECT_EQ(nuvec_test::invariant_violations(device_->memory()), ""); }

  // Loads `b` and checks that its tensors were read into one buffer.
  void expect_read_into_buffer(const GgufBuilder& b);

  std::unique_ptr<nuvec::Device> device_;
};

// A tiny llama: metadata, a vocabulary, a quantized embedding, F32 norms,
// an F16 projection and a BF16 one.
GgufBuilder tiny_llama() {
  GgufBuilder b;
  b.kv("general.architecture", std::string("llama"))
      .kv("general.name", std::string("tiny"))
      .kv("llama.context_length", std::uint32_t{128})
      .kv("llama.embedding_length", std::uint32_t{64})
      .kv("tokenizer.ggml.tokens", GgufArray{std::vector<std::string>{"<unk>", "<s>", "</s>", "a"}})
      .kv("tokenizer.ggml.scores", GgufArray{std::vector<float>{0, 0, 0, -1}});
  b.tensor("token_embd.weight", {64, 4}, 8, counting_bytes(4 * 2 * 34, 1));  // Q8_0
  b.tensor("output_norm.weight", {64}, 0, counting_bytes(64 * 4, 2));         // F32
  b.tensor("blk.0.attn_q.weight", {64, 64}, 1, counting_bytes(64 * 64 * 2, 3));  // F16
  b.tensor("blk.0.ffn_up.weight", {64, 2}, 30, counting_bytes(64 * 2 * 2, 4));    // BF16
  return b;
}

TEST_F(GgufLoad, MapsTheFileAndGivesViewsIntoIt) {
  const GgufBuilder builder = tiny_llama();
  const TempFile file(builder.build());
  {
    const GgufModel model = load_gguf(*device_, file.path());
    const MemoryStats s = device_->memory();
    EXPECT_EQ(s.mapped, nuvec::mapping_size(file.size()));
    EXPECT_EQ(s.active, 0u);
    ASSERT_EQ(model.tensors.size(), 4u);
    const auto* mapping = static_cast<const nuvec::Mapping*>(model.tensors[0].storage.get());
    for (std::size_t i = 0; i < model.tensors.size(); ++i) {
      const auto& view = model.tensors[i];
      const auto& info = model.header.tensors[i];
      const auto& spec = builder.tensors[i];
      EXPECT_EQ(view.name, spec.name);
      EXPECT_EQ(view.shape, info.shape());
      EXPECT_TRUE(std::equal(view.bytes.begin(), view.bytes.end(), spec.data.begin(), spec.data.end())) << spec.name;
      EXPECT_EQ(view.bytes.data(), mapping->bytes().data() + model.header.data_offset + info.offset);
      EXPECT_EQ(view.storage, model.tensors[0].storage) << "one mapping shared by every view";
    }
    EXPECT_EQ(model.tensors[0].dtype, DType::GGML_BLOCK);
    EXPECT_EQ(model.header.tensors[0].type.name, "Q8_0");
    EXPECT_EQ(model.tensors[0].shape, (std::vector<std::uint64_t>{4, 64}));
    EXPECT_EQ(model.tensors[1].dtype, DType::F32);
    EXPECT_EQ(model.tensors[2].dtype, DType::F16);
    EXPECT_EQ(model.tensors[3].dtype, DType::BF16);
    ASSERT_NE(model.find("output_norm.weight"), nullptr);
    EXPECT_EQ(model.find("nothing"), nullptr);
    EXPECT_EQ(std::get<std::string>(*model.header.find("general.architecture")), "llama");
  }
  EXPECT_EQ(device_->memory().mapped, 0u);
}

TEST_F(GgufLoad, OneViewKeepsTheMappingAlive) {
  const TempFile file(tiny_llama().build());
  nuvec::io::TensorView kept;
  {
    const GgufModel model = load_gguf(*device_, file.path());
    kept = *model.find("output_norm.weight");
  }
  EXPECT_EQ(device_->memory().mapped, nuvec::mapping_size(file.size()));
  EXPECT_EQ(kept.bytes[0], std::byte{2});
  kept = {};
  EXPECT_EQ(device_->memory().mapped, 0u);
}

TEST_F(GgufLoad, ReadsMisalignedTensorsIntoOneBuffer) {
  // general.alignment 1 lets an F32 tensor start anywhere: after 1, 2 or 3
  // bytes of I8, one of which puts it off a multiple of 4.
  for (std::uint64_t skip = 1; skip <= 3; ++skip) {
    GgufBuilder b;
    b.alignment(1);
    b.tensor("skip", {skip}, 24, counting_bytes(skip, 9));  // I8
    b.tensor("f32", {4}, 0, counting_bytes(16, 5));
    const nuvec::io::GgufFile header = nuvec::io::parse_gguf(b.build(), b.build().size(), "probe.gguf");
    if ((header.data_offset + skip) % 4 != 0) {
      expect_read_into_buffer(b);
      return;
    }
  }
  FAIL() << "no misaligned layout found";
}

void GgufLoad::expect_read_into_buffer(const GgufBuilder& b) {
  const TempFile file(b.build());
  const GgufModel model = load_gguf(*device_, file.path());
  const MemoryStats s = device_->memory();
  EXPECT_EQ(s.mapped, 0u);
  EXPECT_EQ(s.active, *nuvec::allocation_size(512));  // two tensors, each from a 256-byte boundary
  const auto& f32 = *model.find("f32");
  // 256 bytes into the buffer, itself at least 64-byte aligned.
  EXPECT_EQ(f32.bytes.data() - model.find("skip")->bytes.data(), 256);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(f32.bytes.data()) % 64, 0u);
  EXPECT_TRUE(std::equal(f32.bytes.begin(), f32.bytes.end(), b.tensors[1].data.begin(), b.tensors[1].data.end()));
  EXPECT_EQ(model.find("skip")->bytes[0], std::byte{9});
}

TEST_F(GgufLoad, AVocabularyOnlyFileMapsNothing) {
  GgufBuilder b;
  b.kv("tokenizer.ggml.tokens", GgufArray{std::vector<std::string>{"a", "b"}});
  const TempFile file(b.build());
  const GgufModel model = load_gguf(*device_, file.path());
  EXPECT_TRUE(model.tensors.empty());
  EXPECT_EQ(device_->memory().mapped, 0u);
}

TEST_F(GgufLoad, ReadsAHeaderLargerThanTheFirstRead) {
  // 200,000 tokens: about 3 MB of header, read in growing steps.
  std::vector<std::string> tokens;
  for (int i = 0; i < 200000; ++i) tokens.push_back("token-" + std::to_string(i));
  GgufBuilder b = tiny_llama();
  b.kv("tokenizer.ggml.merges", GgufArray{tokens});
  const TempFile file(b.build());
  const GgufModel model = load_gguf(*device_, file.path());
  EXPECT_GT(model.header.data_offset, std::uint64_t{2} << 20);
  EXPECT_EQ(std::get<GgufArray>(*model.header.find("tokenizer.ggml.merges")).size(), 200000u);
  EXPECT_TRUE(std::equal(model.tensors[2].bytes.begin(), model.tensors[2].bytes.end(), b.tensors[2].data.begin(),
                         b.tensors[2].data.end()));
}

TEST_F(GgufLoad, ARefusedFileChangesNoStatistic) {
  std::vector<std::vector<std::byte>> hostile;
  hostile.push_back({});
  hostile.push_back(nuvec_test::ByteWriter{}.preamble(std::uint64_t{1} << 62, 0).bytes);
  auto truncated = tiny_llama().build();
  truncated.erase(truncated.end() - 100, truncated.end());
  hostile.push_back(truncated);
  GgufBuilder misaligned_and_truncated;  // would have taken the buffer path
  misaligned_and_truncated.alignment(1);
  misaligned_and_truncated.tensor("a", {1}, 24, counting_bytes(1)).tensor("b", {4}, 0, {});
  hostile.push_back(misaligned_and_truncated.build());
  const MemoryStats before = device_->memory();
  for (const auto& bytes : hostile) {
    const TempFile file(bytes);
    EXPECT_THROW(load_gguf(*device_, file.path()), nuvec::FormatError);
    EXPECT_EQ(device_->memory(), before);
  }
}

TEST_F(GgufLoad, APassedMemoryLimitIsOutOfMemoryAndChangesNothing) {
  const TempFile file(tiny_llama().build());
  device_->set_memory_limit(4096);
  const MemoryStats before = device_->memory();
  EXPECT_THROW(load_gguf(*device_, file.path()), nuvec::OutOfMemory);
  EXPECT_EQ(device_->memory(), before);
}

}  // namespace
