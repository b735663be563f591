// config.json: what transformers 4.x and 5.x write, and hostile input.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include "lm_test_support.h"
#include "nuvec/error.h"
#include "nuvec/lm/config.h"
#include "support/text.h"

namespace {

using nuvec::lm::Architecture;
using nuvec::lm::parse_model_config;
using nuvec_test::contains;

const char* kTinyLlama = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
  "vocab_size": 32000, "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
  "num_attention_heads": 32, "num_key_value_heads": 4, "max_position_embeddings": 2048,
  "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "rope_scaling": null, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16"
})";

std::string with(const std::string& json, const std::string& key, const std::string& value) {
  // Replaces the value of `"key": ...` up to the next comma or brace.
  const std::size_t k = json.find("\"" + key + "\"");
  if (k == std::string::npos) {
    return json.substr(0, json.rfind('}')) + ", \"" + key + "\": " + value + "}";
  }
  const std::size_t start = json.find(':', k) + 1;
  std::size_t end = start;
  int depth = 0;
  while (end < json.size() && !(depth == 0 && (json[end] == ',' || json[end] == '}'))) {
    if (json[end] == '{' || json[end] == '[') ++depth;
    if (json[end] == '}' || json[end] == ']') --depth;
    ++end;
  }
  return json.substr(0, start) + " " + value + json.substr(end);
}

std::string error_of(const std::string& json) {
  try {
    parse_model_config(json, "config.json");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(ModelConfig, ReadsTinyLlamaAndDerivesDefaults) {
  const auto c = parse_model_config(kTinyLlama, "config.json");
  EXPECT_EQ(c.architecture, Architecture::llama);
  EXPECT_EQ(c.vocab_size, 32000u);
  EXPECT_EQ(c.hidden_size, 2048u);
  EXPECT_EQ(c.num_hidden_layers, 22u);
  EXPECT_EQ(c.num_key_value_heads, 4u);
  EXPECT_EQ(c.head_dim, 64u);  // hidden / heads
  EXPECT_EQ(c.group_size(), 8u);
  EXPECT_EQ(c.kv_dim(), 256u);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.rope_scaling);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias || c.qkv_bias || c.mlp_bias);
  ASSERT_EQ(c.sliding_window.size(), 22u);
  EXPECT_EQ(c.sliding_window[0], 0u);
}

TEST(ModelConfig, KeyValueHeadsDefaultToQueryHeads) {
  std::string j = kTinyLlama;
  j = with(j, "num_key_value_heads", "null");
  EXPECT_EQ(parse_model_config(j, "c").num_key_value_heads, 32u);
}

TEST(ModelConfig, ReadsLlama3RopeScalingInBothSpellings) {
  const std::string scaling =
      R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192})";
  const auto v4 = parse_model_config(with(with(kTinyLlama, "rope_scaling", scaling), "rope_theta", "500000.0"), "c");
  ASSERT_TRUE(v4.rope_scaling);
  EXPECT_DOUBLE_EQ(v4.rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(v4.rope_scaling->factor, 8.0);
  EXPECT_EQ(v4.rope_scaling->original_max_position_embeddings, 8192u);

  // transformers 5: rope_parameters holds rope_theta and the scaling.
  const std::string params =
      R"({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})";
  std::string j = with(kTinyLlama, "rope_parameters", params);
  j = with(j, "rope_theta", "null");
  const auto v5 = parse_model_config(j, "c");
  ASSERT_TRUE(v5.rope_scaling);
  EXPECT_DOUBLE_EQ(v5.rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(v5.rope_scaling->factor, 32.0);

  const auto plain = parse_model_config(with(kTinyLlama, "rope_parameters", R"({"rope_type": "default",
      "rope_theta": 1000000.0})"), "c");
  EXPECT_FALSE(plain.rope_scaling);
  EXPECT_DOUBLE_EQ(plain.rope_theta, 1e6);
}

TEST(ModelConfig, QwenHasQkvBiasesAndPerLayerWindows) {
  std::string j = with(kTinyLlama, "architectures", R"(["Qwen2ForCausalLM"])");
  j = with(j, "num_hidden_layers", "4");
  auto c = parse_model_config(j, "c");
  EXPECT_EQ(c.architecture, Architecture::qwen2);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.sliding_window, (std::vector<std::size_t>{0, 0, 0, 0}));  // use_sliding_window absent: off

  j = with(with(with(j, "use_sliding_window", "true"), "sliding_window", "128"), "max_window_layers", "2");
  c = parse_model_config(j, "c");
  EXPECT_EQ(c.sliding_window, (std::vector<std::size_t>{0, 0, 128, 128}));

  j = with(j, "layer_types", R"(["sliding_attention", "full_attention", "full_attention", "sliding_attention"])");
  c = parse_model_config(j, "c");
  EXPECT_EQ(c.sliding_window, (std::vector<std::size_t>{128, 0, 0, 128}));
}

TEST(ModelConfig, MistralWindowAppliesToEveryLayer) {
  std::string j = with(kTinyLlama, "architectures", R"(["MistralForCausalLM"])");
  EXPECT_EQ(parse_model_config(with(j, "sliding_window", "4096"), "c").sliding_window[21], 4096u);
  EXPECT_EQ(parse_model_config(with(j, "sliding_window", "null"), "c").sliding_window[21], 0u);
}

TEST(ModelConfig, LlamaBiasFlags) {
  const auto c = parse_model_config(with(with(kTinyLlama, "attention_bias", "true"), "mlp_bias", "true"), "c");
  EXPECT_TRUE(c.attention_bias);
  EXPECT_TRUE(c.mlp_bias);
  EXPECT_FALSE(c.qkv_bias);
}

TEST(ModelConfig, NotJsonIsAFormatErrorWithItsOffset) {
  try {
    parse_model_config("{\"vocab_size\": 12,, }", "dir/config.json");
    FAIL();
  } catch (const nuvec::FormatError& e) {
    EXPECT_EQ(e.file(), "dir/config.json");
    EXPECT_EQ(e.offset(), 18u);  // the second comma
    EXPECT_TRUE(contains(e.what(), "not valid JSON")) << e.what();
  }
  EXPECT_TRUE(contains(error_of("[1, 2]"), "not a JSON object"));
  EXPECT_TRUE(contains(error_of(""), "not valid JSON"));
}

TEST(ModelConfig, UnsupportedArchitecturesActivationsAndRopeTypesAreNamed) {
  const std::string arch = error_of(with(kTinyLlama, "architectures", R"(["GPT2LMHeadModel"])"));
  EXPECT_TRUE(contains(arch, "GPT2LMHeadModel")) << arch;
  EXPECT_TRUE(contains(arch, "LlamaForCausalLM")) << arch;
  EXPECT_TRUE(contains(error_of(with(kTinyLlama, "architectures", "[]")), "architectures"));
  EXPECT_TRUE(contains(error_of(with(kTinyLlama, "architectures", "[3]")), "architectures"));
  EXPECT_TRUE(contains(error_of(with(kTinyLlama, "hidden_act", "\"gelu\"")), "gelu"));
  const std::string yarn = error_of(with(kTinyLlama, "rope_scaling", R"({"type": "yarn", "factor": 4.0})"));
  EXPECT_TRUE(contains(yarn, "yarn")) << yarn;
}

TEST(ModelConfig, MissingMistypedAndOutOfRangeFieldsAreNamed) {
  const std::string missing = error_of(R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 10})");
  EXPECT_TRUE(contains(missing, "hidden_size is missing")) << missing;
  const struct {
    const char* key;
    const char* value;
    const char* says;
  } cases[] = {
      {"hidden_size", "\"2048\"", "must be an integer"},
      {"hidden_size", "2048.5", "must be an integer"},
      {"hidden_size", "-1", "must be in"},
      {"hidden_size", "0", "must be in"},
      {"vocab_size", "99999999999999999999", "vocab_size"},
      {"num_hidden_layers", "1000000", "must be in"},
      {"num_key_value_heads", "5", "must divide"},
      {"head_dim", "63", "must be even"},
      {"rms_norm_eps", "\"small\"", "must be a number"},
      {"rms_norm_eps", "-1", "must be in"},
      {"rope_theta", "0", "must be in"},
      {"tie_word_embeddings", "1", "true or false"},
      {"max_position_embeddings", "null", "is missing"},
      {"rope_scaling", "[1]", "must be null or an object"},
      {"rope_scaling", R"({"rope_type": "llama3", "factor": 8.0})", "low_freq_factor is missing"},
      {"rope_scaling",
       R"({"rope_type": "llama3", "factor": 8, "low_freq_factor": 4, "high_freq_factor": 1,
           "original_max_position_embeddings": 8192})",
       "must be above low_freq_factor"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(with(kTinyLlama, c.key, c.value));
    EXPECT_TRUE(contains(e, c.key) && contains(e, c.says)) << c.key << "=" << c.value << ": " << e;
  }
  // Heads that do not divide the hidden size need an explicit head_dim.
  EXPECT_TRUE(contains(error_of(with(kTinyLlama, "num_attention_heads", "36")), "head_dim is missing"));
  // Qwen2 layer_types must cover every layer.
  std::string q = with(kTinyLlama, "architectures", R"(["Qwen2ForCausalLM"])");
  EXPECT_TRUE(contains(error_of(with(q, "layer_types", R"(["full_attention"])")), "layer_types"));
}

// The offset is the offending value's own, not the first place its key's
// name appears in the text (here a decoy string holding it comes first).
TEST(ModelConfig, FieldErrorsPointAtTheValue) {
  const std::string j = with(kTinyLlama, "hidden_size", "-5");
  try {
    parse_model_config(j, "c");
    FAIL();
  } catch (const nuvec::FormatError& e) {
    EXPECT_EQ(e.offset(), j.find("-5"));
    EXPECT_TRUE(contains(e.what(), "c: at byte")) << e.what();
    EXPECT_TRUE(contains(e.what(), "hidden_size")) << e.what();
  }
  const std::string decoy = R"({"_name_or_path": "\"rope_theta\"", )" + std::string(kTinyLlama).substr(1);
  const std::string nested = with(decoy, "rope_scaling",
                                  R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,
                                      "high_freq_factor": 1.0, "original_max_position_embeddings": 8192})");
  try {
    parse_model_config(nested, "config.json");
    FAIL();
  } catch (const nuvec::FormatError& e) {
    EXPECT_TRUE(contains(e.what(), "rope_scaling.high_freq_factor")) << e.what();
    EXPECT_EQ(e.offset(), nested.find("1.0, \"original"));
  }
  // A missing key points at the object that lacks it.
  std::string missing = kTinyLlama;
  const std::size_t at = missing.find("\"vocab_size\"");
  missing.replace(at, std::string("\"vocab_size\"").size(), "\"vocab_sizes\"");
  try {
    parse_model_config(missing, "config.json");
    FAIL();
  } catch (const nuvec::FormatError& e) {
    EXPECT_TRUE(contains(e.what(), "vocab_size is missing")) << e.what();
    EXPECT_EQ(e.offset(), missing.find('{'));
  }
}

TEST(ModelConfig, ANumberOutOfRangeIsAFormatErrorNamingTheKey) {
  for (const char* huge : {"1e400", "-1e400"}) {
    const std::string j = with(kTinyLlama, "rope_theta", huge);
    try {
      parse_model_config(j, "config.json");
      FAIL() << huge;
    } catch (const nuvec::FormatError& e) {
      EXPECT_TRUE(contains(e.what(), "rope_theta")) << e.what();
      EXPECT_TRUE(contains(e.what(), "out of range")) << e.what();
      EXPECT_EQ(e.offset(), j.find(huge));
    }
  }
}

TEST(ModelConfig, UnsupportedValuesAreFormatErrorsAtTheirValue) {
  const std::string j = with(kTinyLlama, "hidden_act", "\"gelu\"");
  try {
    parse_model_config(j, "config.json");
    FAIL();
  } catch (const nuvec::FormatError& e) {
    EXPECT_EQ(e.offset(), j.find("\"gelu\""));
    EXPECT_TRUE(contains(e.what(), "hidden_act")) << e.what();
  }
}

TEST(ModelConfig, AConfigThatIsAFifoIsRefusedAtOnce) {
  nuvec_test::TempDir dir;
  ASSERT_EQ(::mkfifo((dir.path() / "config.json").c_str(), 0600), 0);
  EXPECT_THROW(nuvec::lm::read_model_config(dir.path() / "config.json"), nuvec::IoError);
}

TEST(ModelConfig, ReadFromDiskRefusesMissingAndHugeFiles) {
  nuvec_test::TempDir dir;
  EXPECT_THROW(nuvec::lm::read_model_config(dir.path() / "config.json"), nuvec::IoError);
  {
    std::ofstream out(dir.path() / "config.json");
    out << kTinyLlama;
  }
  EXPECT_EQ(nuvec::lm::read_model_config(dir.path() / "config.json").hidden_size, 2048u);
  { std::ofstream create(dir.path() / "big.json"); }
  std::filesystem::resize_file(dir.path() / "big.json", std::uintmax_t{17} << 20);  // sparse
  EXPECT_THROW(nuvec::lm::read_model_config(dir.path() / "big.json"), nuvec::FormatError);
}

}  // namespace
