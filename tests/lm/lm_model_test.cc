// Loading models: weights are views of the mapping (nothing copied), and a
// checkpoint that does not match its config is refused naming the tensor.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "cpu/cpu_backend.h"
#include "lm_test_support.h"
#include "nuvec/error.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/lm/demo_model.h"
#include "nuvec/lm/model.h"
#include "nuvec/lm/model_files.h"
#include "nuvec/memory.h"
#include "support/text.h"

namespace {

using nuvec::lm::DType;
using nuvec::lm::load_model;
using nuvec_test::contains;
using nuvec_test::TempDir;
using nuvec_test::tiny_model;

std::vector<char> file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string load_error(const std::filesystem::path& dir) {
  auto device = nuvec::Device::create_cpu();
  try {
    load_model(*device, dir);
  } catch (const std::exception& e) {
    EXPECT_EQ(device->memory().active + device->memory().mapped, 0u) << "a refused load left something behind";
    return e.what();
  }
  return "(loaded)";
}

// Rewrites dir/model.safetensors with `edit` applied to its tensors.
void edit_checkpoint(const std::filesystem::path& dir,
                     const std::function<void(std::vector<nuvec::io::TensorView>&)>& edit) {
  auto device = nuvec::Device::create_cpu();
  std::vector<nuvec::io::TensorView> tensors;
  {
    const auto file = nuvec::io::load_safetensors(*device, dir / "model.safetensors");
    tensors = file.tensors();
  }
  edit(tensors);
  nuvec::io::save_safetensors(dir / "model.safetensors", tensors);
}

TEST(LoadModel, WeightsAreViewsOfTheMappingNotCopies) {
  TempDir dir;
  nuvec::lm::write_demo_model(dir.path(), tiny_model(DType::bf16));
  auto device = nuvec::Device::create_cpu();
  const auto model = load_model(*device, dir.path());
  const auto stats = device->memory();
  EXPECT_EQ(stats.active, 0u);
  EXPECT_EQ(stats.mapped, nuvec::mapping_size(std::filesystem::file_size(dir.path() / "model.safetensors")));
  const auto& w = model.weights();
  ASSERT_EQ(w.layers.size(), 2u);
  EXPECT_EQ(w.layers[1].k_proj.shape(), (nuvec::lm::Shape{16, 32}));  // kv_heads 2 x head_dim 8, hidden 32
  EXPECT_EQ(w.layers[1].k_proj.dtype(), DType::bf16);
  EXPECT_FALSE(w.layers[0].q_proj.writable());
  EXPECT_FALSE(w.layers[0].q_bias.defined());
  // The tensor's bytes lie inside the mapping of the file.
  const auto& view = model.file_as<nuvec::lm::SafetensorsModelFile>()->checkpoint().at("model.layers.1.self_attn.k_proj.weight");
  EXPECT_EQ(w.layers[1].k_proj.data(), view.bytes.data());
  EXPECT_EQ(model.weight_bytes(), nuvec::lm::demo_model_weight_bytes(tiny_model(DType::bf16)));
}

TEST(LoadModel, TiedEmbeddingsShareTheTable) {
  TempDir dir;
  auto o = tiny_model();
  o.tie_word_embeddings = true;
  nuvec::lm::write_demo_model(dir.path(), o);
  auto device = nuvec::Device::create_cpu();
  const auto model = load_model(*device, dir.path());
  EXPECT_EQ(model.weights().lm_head.data(), model.weights().embed_tokens.data());
  EXPECT_EQ(model.file_as<nuvec::lm::SafetensorsModelFile>()->checkpoint().find("lm_head.weight"), nullptr);
}

TEST(LoadModel, ShardedCheckpointsAndQwenBiases) {
  TempDir dir;
  auto o = tiny_model(DType::f16);
  o.architecture = nuvec::lm::Architecture::qwen2;
  o.max_shard_bytes = 20000;
  nuvec::lm::write_demo_model(dir.path(), o);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "model.safetensors.index.json"));
  auto device = nuvec::Device::create_cpu();
  const auto model = load_model(*device, dir.path());
  EXPECT_GT(model.file_as<nuvec::lm::SafetensorsModelFile>()->checkpoint().sources().size(), 2u);
  EXPECT_TRUE(model.weights().layers[0].q_bias.defined());
  EXPECT_EQ(model.weights().layers[0].v_bias.shape(), (nuvec::lm::Shape{16}));
  EXPECT_FALSE(model.weights().layers[0].o_bias.defined());
  EXPECT_EQ(device->memory().active, 0u);
}

// A sharded model refused by the memory limit, wherever the limit falls
// among its shards, leaves every statistic as it was (peak_with_mapped too).
TEST(LoadModel, AShardedModelRefusedAtAnyShardChangesNothing) {
  TempDir dir;
  auto o = tiny_model(DType::f16);
  o.max_shard_bytes = 20000;
  nuvec::lm::write_demo_model(dir.path(), o);
  const nuvec::io::Footprint whole = nuvec::io::footprint(dir.path());
  std::size_t shards = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    shards += entry.path().extension() == ".safetensors";
  }
  ASSERT_GT(shards, 2u);
  for (std::size_t limit = nuvec::page_size(); limit < whole.mapped + whole.active; limit += nuvec::page_size()) {
    auto device = std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), false);
    device->set_memory_limit(limit);
    const nuvec::MemoryStats before = device->memory();
    EXPECT_THROW(load_model(*device, dir.path()), nuvec::OutOfMemory) << "limit " << limit;
    EXPECT_EQ(device->memory(), before) << "limit " << limit;
  }
}

TEST(LoadModel, MissingTensorIsNamed) {
  TempDir dir;
  nuvec::lm::write_demo_model(dir.path(), tiny_model());
  edit_checkpoint(dir.path(), [](auto& tensors) {
    std::erase_if(tensors, [](const auto& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
  });
  const std::string e = load_error(dir.path());
  EXPECT_TRUE(contains(e, "model.layers.1.mlp.up_proj.weight is missing")) << e;
  EXPECT_TRUE(contains(e, "[64, 32]")) << e;
}

TEST(LoadModel, MisShapedTensorIsNamedWithTheShapeTheConfigImplies) {
  TempDir dir;
  nuvec::lm::write_demo_model(dir.path(), tiny_model());
  edit_checkpoint(dir.path(), [](auto& tensors) {
    for (auto& t : tensors) {
      if (t.name == "model.layers.0.self_attn.k_proj.weight") t.shape = {32, 16};  // same bytes, other shape
    }
  });
  const std::string e = load_error(dir.path());
  EXPECT_TRUE(contains(e, "model.layers.0.self_attn.k_proj.weight has shape [32, 16]")) << e;
  EXPECT_TRUE(contains(e, "[16, 32]")) << e;
  EXPECT_TRUE(contains(e, "num_key_value_heads 2")) << e;
}

TEST(LoadModel, WrongDtypeIsNamed) {
  TempDir dir;
  nuvec::lm::write_demo_model(dir.path(), tiny_model());
  edit_checkpoint(dir.path(), [](auto& tensors) {
    for (auto& t : tensors) {
      if (t.name == "model.norm.weight") t.dtype = nuvec::io::DType::I32;  // 32 floats = 32 int32
    }
  });
  const std::string e = load_error(dir.path());
  EXPECT_TRUE(contains(e, "model.norm.weight is I32")) << e;
}

TEST(LoadModel, UntiedModelNeedsItsLmHead) {
  TempDir dir;
  nuvec::lm::write_demo_model(dir.path(), tiny_model());
  edit_checkpoint(dir.path(), [](auto& tensors) {
    std::erase_if(tensors, [](const auto& t) { return t.name == "lm_head.weight"; });
  });
  const std::string e = load_error(dir.path());
  EXPECT_TRUE(contains(e, "lm_head.weight is missing")) << e;
  EXPECT_TRUE(contains(e, "tie_word_embeddings is false")) << e;
}

TEST(LoadModel, UnknownArchitectureAndMissingFilesAreClearErrors) {
  TempDir dir;
  nuvec::lm::write_demo_model(dir.path(), tiny_model());
  std::string config(file_bytes(dir.path() / "config.json").data(), file_bytes(dir.path() / "config.json").size());
  config.replace(config.find("LlamaForCausalLM"), 16, "BertForMaskedLM!");
  std::ofstream(dir.path() / "config.json") << config;
  EXPECT_TRUE(contains(load_error(dir.path()), "BertForMaskedLM! is not supported"));

  TempDir empty;
  EXPECT_TRUE(contains(load_error(empty.path()), "config.json"));
  EXPECT_TRUE(contains(load_error(empty.path() / "nothing"), "not a model directory"));
}

TEST(DemoModel, IsDeterministicAndTheSeedMatters) {
  TempDir a, b, c;
  nuvec::lm::write_demo_model(a.path(), tiny_model(DType::bf16));
  nuvec::lm::write_demo_model(b.path(), tiny_model(DType::bf16));
  auto other = tiny_model(DType::bf16);
  other.seed = 1;
  nuvec::lm::write_demo_model(c.path(), other);
  for (const char* name : {"config.json", "model.safetensors"}) {
    EXPECT_EQ(file_bytes(a.path() / name), file_bytes(b.path() / name)) << name;
  }
  EXPECT_NE(file_bytes(a.path() / "model.safetensors"), file_bytes(c.path() / "model.safetensors"));
}

TEST(DemoModel, TheBuiltInModelIsAFewHundredMegabytesWithAnEightThousandContext) {
  const nuvec::lm::DemoModelOptions o;  // the defaults are the built-in model
  const auto c = nuvec::lm::demo_model_config(o);
  EXPECT_EQ(c.architecture, nuvec::lm::Architecture::llama);
  EXPECT_GE(c.max_position_embeddings, 8192u + 128);  // an 8192-token prompt, then decoding
  EXPECT_LT(c.num_key_value_heads, c.num_attention_heads);
  const std::size_t bytes = nuvec::lm::demo_model_weight_bytes(o);
  EXPECT_GT(bytes, std::size_t{200} << 20);
  EXPECT_LT(bytes, std::size_t{800} << 20);
}

TEST(DemoModel, InconsistentOptionsAreRefused) {
  auto o = tiny_model();
  o.num_key_value_heads = 3;  // does not divide 4
  EXPECT_THROW(nuvec::lm::demo_model_config(o), nuvec::InvalidArgument);
}

}  // namespace
