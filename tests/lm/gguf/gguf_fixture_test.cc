// nuvec's logits on llama.cpp's own GGUF files against llama.cpp's logits
// for them (tests/lm/gguf/make_fixtures.sh made both, on llama.cpp of
// 2025-02-20: a one-layer random Llama, hidden 256, GQA 4/2, separate
// output, converted by convert_hf_to_gguf.py and quantized by
// llama-quantize --pure to each type; Q4_K_M is llama-quantize's own mixture
// of Q4_K and Q6_K; a Qwen2 file with q/k/v biases; 24 tokens).
//
// Tolerances (absolute, on logits whose largest is about 6.4): llama.cpp's
// CPU products do not use f32 activations. For F16 weights they are f32
// here (observed difference 1e-5), for BF16 it rounds the activations to
// bf16 (relative 2^-8), as nuvec's bf16 fast path does for the 12-row
// prefill (observed max 0.012, rms 0.006), for Q8_0..Q5_1 it rounds them to
// 8 bits per 32 (Q8_0), for the K-quants to 8 bits per 256 (Q8_K, coarser),
// which moves its logits by up to 0.24 and 0.43 (rms 0.037, 0.050) from
// nuvec's f32-activation products. The bounds are those observations with
// room: max 1e-4 / 0.05 / 0.4 / 0.6, rms 1e-5 / 0.01 / 0.06 / 0.08. And so
// that a wrong dequantization cannot hide inside them: for every quantized
// type, nuvec's logits are closer to llama.cpp's (rms) than 0.7 times the
// distance quantization itself moved llama.cpp's logits from its f32 ones
// (observed ratios 0.03 for Q2_K to 0.6 for Q8_0). Greedy tokens: wherever
// llama.cpp's top-2 gap exceeds twice the max bound, the argmax is the same.
// The prompt runs as one prefill of 12 rows (the tiled path) and 12 decode
// steps (the one-row path).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/lm/model.h"
#include "nuvec/lm/model_files.h"
#include "nuvec/lm/session.h"
#include "nuvec/memory.h"
#include "support/temp_file.h"

namespace {

const std::filesystem::path kGgufFixtures = NUVEC_GGUF_FIXTURES;

std::vector<float> read_floats(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

std::vector<std::int32_t> tokens() {
  std::ifstream in(kGgufFixtures / "tokens.txt");
  std::vector<std::int32_t> t;
  for (std::int32_t v; in >> v;) t.push_back(v);
  return t;
}

double rms(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
  return std::sqrt(s / static_cast<double>(a.size()));
}

// Every position's logits: a prefill of the first half, then one decode step per token.
std::vector<float> nuvec_logits(const std::filesystem::path& file) {
  auto device = nuvec::Device::create_cpu();
  const nuvec::lm::Model model = nuvec::lm::load_model(*device, file);
  nuvec::lm::Session session(*device, model);
  const auto t = tokens();
  const std::size_t half = t.size() / 2;
  std::vector<float> out;
  session.prefill(std::span(t).first(half),
                  [&](std::size_t, std::span<const float> row) { out.insert(out.end(), row.begin(), row.end()); });
  for (std::size_t i = half; i < t.size(); ++i) {
    const auto row = session.decode(t[i]);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

struct Case {
  std::string file;      // fixture name without .gguf
  double max_abs, rms;   // bounds on nuvec - llama.cpp
  bool quantized;
};

class GgufFixture : public testing::TestWithParam<Case> {};

TEST_P(GgufFixture, LogitsMatchLlamaCpp) {
  const Case& c = GetParam();
  const std::vector<float> ours = nuvec_logits(kGgufFixtures / (c.file + ".gguf"));
  const std::vector<float> theirs = read_floats(kGgufFixtures / (c.file + ".logits"));
  ASSERT_EQ(ours.size(), theirs.size());
  double max_abs = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) max_abs = std::max(max_abs, double{std::abs(ours[i] - theirs[i])});
  const double distance = rms(ours, theirs);
  EXPECT_LE(max_abs, c.max_abs) << c.file;
  EXPECT_LE(distance, c.rms) << c.file;
  if (c.quantized) {
    const std::string arch = c.file.substr(0, c.file.find('-'));
    const double quantization = rms(theirs, read_floats(kGgufFixtures / (arch + "-f32.logits")));
    EXPECT_LT(distance, 0.7 * quantization) << c.file << ": nuvec is not closer to llama.cpp than quantization moved it";
  }
  // Greedy tokens where the top-2 gap leaves no doubt.
  const std::size_t vocab = 256, rows = ours.size() / vocab;
  std::size_t checked = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* a = ours.data() + r * vocab;
    const float* b = theirs.data() + r * vocab;
    std::vector<float> sorted(b, b + vocab);
    std::sort(sorted.rbegin(), sorted.rend());
    if (sorted[0] - sorted[1] <= 2 * c.max_abs) continue;
    ++checked;
    EXPECT_EQ(std::max_element(a, a + vocab) - a, std::max_element(b, b + vocab) - b) << c.file << " row " << r;
  }
  EXPECT_GT(checked, 0u) << c.file << ": no position had a clear top token";
}

INSTANTIATE_TEST_SUITE_P(
    LlamaCpp, GgufFixture,
    testing::Values(Case{"llama-f16", 1e-4, 1e-5, false}, Case{"llama-bf16", 0.05, 0.01, false},
                    Case{"llama-Q8_0", 0.4, 0.06, true}, Case{"llama-Q4_0", 0.4, 0.06, true},
                    Case{"llama-Q4_1", 0.4, 0.06, true}, Case{"llama-Q5_0", 0.4, 0.06, true},
                    Case{"llama-Q5_1", 0.4, 0.06, true}, Case{"llama-Q2_K", 0.6, 0.08, true},
                    Case{"llama-Q3_K", 0.6, 0.08, true}, Case{"llama-Q4_K", 0.6, 0.08, true},
                    Case{"llama-Q5_K", 0.6, 0.08, true}, Case{"llama-Q6_K", 0.6, 0.08, true},
                    Case{"llama-Q4_K_M", 0.6, 0.08, true}, Case{"qwen2-Q4_K", 0.6, 0.08, true}),
    [](const testing::TestParamInfo<Case>& i) {
      std::string n = i.param.file;
      std::replace(n.begin(), n.end(), '-', '_');
      return n;
    });

// The type field of tensor `name` in a GGUF file's bytes (after its name,
// n_dims and dims).
std::size_t type_offset(const std::string& bytes, const std::string& name) {
  const std::size_t at = bytes.find(name);
  std::uint32_t n_dims;
  std::memcpy(&n_dims, bytes.data() + at + name.size(), 4);
  return at + name.size() + 4 + 8 * n_dims;
}

TEST(GgufModelLoad, ATypeNuvecDoesNotComputeIsRefusedByNameAndChangesNoStatistic) {
  std::ifstream in(kGgufFixtures / "llama-Q4_0.gguf", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  // IQ4_NL (ggml type 20) has Q4_0's block size, so the header stays valid.
  const std::uint32_t iq4_nl = 20;
  std::memcpy(bytes.data() + type_offset(bytes, "blk.0.attn_k.weight"), &iq4_nl, 4);
  const nuvec_test::TempDir dir;
  const auto path = dir / "iq4nl.gguf";
  std::ofstream(path, std::ios::binary) << bytes;
  auto device = nuvec::Device::create_cpu();
  const nuvec::MemoryStats before = device->memory();
  try {
    nuvec::lm::load_model(*device, path);
    ADD_FAILURE() << "an IQ4_NL tensor loaded";
  } catch (const nuvec::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.attn_k.weight is IQ4_NL"), std::string::npos) << e.what();
  }
  EXPECT_EQ(device->memory(), before);
}

TEST(GgufModelLoad, ConfigComesFromTheMetadataAndWeightsStayInTheMapping) {
  auto device = nuvec::Device::create_cpu();
  const nuvec::lm::Model model = nuvec::lm::load_model(*device, kGgufFixtures / "llama-Q4_K.gguf");
  const nuvec::lm::ModelConfig& c = model.config();
  EXPECT_EQ(c.hidden_size, 256u);
  EXPECT_EQ(c.num_hidden_layers, 1u);
  EXPECT_EQ(c.num_attention_heads, 4u);
  EXPECT_EQ(c.num_key_value_heads, 2u);
  EXPECT_EQ(c.vocab_size, 256u);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_TRUE(c.rope_interleaved);
  EXPECT_EQ(model.weights().layers[0].q_proj.dtype(), nuvec::lm::DType::q4_k);
  // Nothing but the mapping: the load adds no buffer.
  const nuvec::MemoryStats s = device->memory();
  EXPECT_EQ(s.active, 0u);
  EXPECT_EQ(s.mapped, nuvec::mapping_size(std::filesystem::file_size(kGgufFixtures / "llama-Q4_K.gguf")));
  EXPECT_EQ(model.checkpoint_bytes(), s.mapped);
  const auto* gguf = model.file_as<nuvec::lm::GgufModelFile>();
  ASSERT_NE(gguf, nullptr);
  EXPECT_EQ(model.file_as<nuvec::lm::SafetensorsModelFile>(), nullptr);
  EXPECT_EQ(model.weights().layers[0].q_proj.data(), gguf->file().find("blk.0.attn_q.weight")->bytes.data());
}

TEST(GgufModelLoad, FootprintFromTheHeaderIsWhatALoadAdds) {
  for (const char* name : {"llama-Q4_K_M.gguf", "llama-Q2_K.gguf", "qwen2-Q4_K.gguf"}) {
    const nuvec::io::Footprint f = nuvec::io::gguf_footprint(kGgufFixtures / name);
    auto device = nuvec::Device::create_cpu();
    device->reset_peak();
    const nuvec::lm::Model model = nuvec::lm::load_model(*device, kGgufFixtures / name);
    const nuvec::MemoryStats s = device->memory();
    EXPECT_EQ(f.mapped, s.mapped) << name;
    EXPECT_EQ(f.active, s.active) << name;
    EXPECT_EQ(f.peak_with_mapped(), s.peak_with_mapped) << name;
    EXPECT_GT(f.mapped, 0u);
  }
}

}  // namespace
