// MLX-quantized checkpoints (fixtures/, made by make_fixtures.py): nuvec's
// logits on a fixed token sequence against its logits on the same model
// dequantized by numpy from MLX's formula (w = scale * q + bias) and saved as
// f32. The weights are then the same numbers, so what remains is how nuvec
// sums. With f32 activations (NUVEC_QUANT_DOT=off, the MlxFixture.F32 test)
// only f32 rounding: observed max 1.3e-5, rms 2.9e-6 against logits of rms
// 6; bounds 1e-4 and 1e-5. On the integer path (AVX-512 VNNI) the
// activations are also rounded to int8 per 32 values (relative error up to
// 0.4% each), which through two layers moved these logits by max 0.50, rms
// 0.092 (1.5% of their rms); bounds 1.0 and 0.15, and the greedy token must
// agree wherever the reference's top-2 gap exceeds 1.0. The kernel tests
// bound the integer products themselves tightly (kernel_affine_test).
// The fixtures hold both bit widths, f16 and bf16 scales, groups of 32, 64
// and 128 and mlx-lm's per-module overrides; the prompt runs as one prefill
// (the tiled path) and one decode step per token (the one-row path).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lm/kernels/quant_dot.h"
#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/lm/model.h"
#include "nuvec/lm/session.h"

namespace {

const std::filesystem::path kMlxFixtures = NUVEC_MLX_FIXTURES;
const std::vector<std::int32_t> kTokens = {1, 37, 201, 5, 88, 140, 12, 255, 64, 3, 99, 180, 27, 222, 150, 7};

std::vector<float> logits(const std::filesystem::path& dir) {
  auto device = nuvec::Device::create_cpu();
  const nuvec::lm::Model model = nuvec::lm::load_model(*device, dir);
  nuvec::lm::Session session(*device, model);
  const std::size_t half = kTokens.size() / 2;
  std::vector<float> out;
  session.prefill(std::span(kTokens).first(half),
                  [&](std::size_t, std::span<const float> row) { out.insert(out.end(), row.begin(), row.end()); });
  for (std::size_t i = half; i < kTokens.size(); ++i) {
    const auto row = session.decode(kTokens[i]);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

class MlxFixture : public testing::TestWithParam<std::string> {};

TEST_P(MlxFixture, LogitsMatchTheDequantizedModel) {
  const std::vector<float> ours = logits(kMlxFixtures / GetParam());
  const std::vector<float> want = logits(kMlxFixtures / (GetParam() + "-dequantized"));
  ASSERT_EQ(ours.size(), want.size());
  ASSERT_EQ(ours.size(), kTokens.size() * 256);
  double max_abs = 0, sq = 0, scale = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const double d = double{ours[i]} - want[i];
    max_abs = std::max(max_abs, std::abs(d));
    sq += d * d;
    scale += double{want[i]} * want[i];
  }
  const double rms = std::sqrt(sq / ours.size());
  const bool integer = nuvec::lm::kernels::detail::quant_dot_supported();
  EXPECT_LE(max_abs, integer ? 1.0 : 1e-4) << GetParam();
  EXPECT_LE(rms, integer ? 0.15 : 1e-5) << GetParam();
  std::size_t checked = 0;
  for (std::size_t r = 0; r < kTokens.size(); ++r) {
    const float* a = ours.data() + r * 256;
    const float* b = want.data() + r * 256;
    std::vector<float> sorted(b, b + 256);
    std::sort(sorted.rbegin(), sorted.rend());
    if (sorted[0] - sorted[1] <= 1.0) continue;
    ++checked;
    EXPECT_EQ(std::max_element(a, a + 256) - a, std::max_element(b, b + 256) - b) << GetParam() << " row " << r;
  }
  EXPECT_GT(checked, 0u) << "no position had a clear top token";
  EXPECT_GT(std::sqrt(scale / ours.size()), 0.5) << "the logits are not trivially small";
  std::printf("%s: max %.3g rms %.3g (logits rms %.3g, %s path)\n", GetParam().c_str(), max_abs, rms,
              std::sqrt(scale / ours.size()), integer ? "integer" : "f32");
}

INSTANTIATE_TEST_SUITE_P(Mlx, MlxFixture, testing::Values("mlx-q4-g64", "mlx-q8-g32-bf16"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// A copy of a fixture with its config.json's text replaced.
std::filesystem::path with_config(const std::string& fixture, const std::string& from, const std::string& to) {
  const auto dir = std::filesystem::path(testing::TempDir()) / ("mlx_" + std::to_string(std::rand()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kMlxFixtures / fixture / "model.safetensors", dir / "model.safetensors");
  std::ifstream in(kMlxFixtures / fixture / "config.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  std::ofstream(dir / "config.json") << text;
  return dir;
}

void expect_refused(const std::filesystem::path& dir, const std::string& says) {
  auto device = nuvec::Device::create_cpu();
  try {
    (void)nuvec::lm::load_model(*device, dir);
    ADD_FAILURE() << "loaded " << dir;
  } catch (const nuvec::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
  EXPECT_EQ(device->memory().active, 0u);
  std::filesystem::remove_all(dir);
}

TEST(MlxFixture, RefusesWeightsTheConfigDoesNotDescribe) {
  // No quantization entry: bits and group size unknown.
  expect_refused(with_config("mlx-q4-g64", "\"quantization\"", "\"no_quantization\""), "no quantization entry");
  // 8 bits said, 4 bits stored: the words unpack to half the columns.
  expect_refused(with_config("mlx-q4-g64", "\"bits\": 4", "\"bits\": 8"), "with 8 bits in groups of 64");
  // A group size MLX does not write.
  expect_refused(with_config("mlx-q4-g64", "\"group_size\": 64", "\"group_size\": 16"), "group size 16");
  // 3 bits: not computed.
  expect_refused(with_config("mlx-q4-g64", "\"bits\": 4", "\"bits\": 3"), "4 and 8 bits");
}

}  // namespace
