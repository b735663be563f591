// The tokenizer's parts on their own: UTF-8 repair, the byte-level
// alphabet, streaming decode of split characters, and clear refusals of
// tokenizer files nuvec does not read.
#include <string>

#include <gtest/gtest.h>

#include "nuvec/error.h"
#include "nuvec/text/stream_decoder.h"
#include "nuvec/text/tokenizer.h"
#include "text/byte_level.h"
#include "text/utf8.h"

namespace {

using nuvec::text::Tokenizer;

TEST(Utf8, InvalidBytesBecomeOneReplacementPerMaximalSubpart) {
  // As Python's bytes.decode("utf-8", "replace"): b"\xe6\x97" is one
  // truncated character, b"\xed\xa0\x80" (a surrogate) three bytes that
  // start none, b"\xf0\x9f\x98" one truncated emoji.
  EXPECT_EQ(nuvec::text::utf8_lossy("a\xe6\x97z"), "a\xEF\xBF\xBDz");
  EXPECT_EQ(nuvec::text::utf8_lossy("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(nuvec::text::utf8_lossy("\xf0\x9f\x98!"), "\xEF\xBF\xBD!");
  EXPECT_EQ(nuvec::text::utf8_lossy("\xff\xfe"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(nuvec::text::utf8_lossy("\xc0\xaf"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  EXPECT_EQ(nuvec::text::utf8_lossy("ok \xe6\x97\xa5"), "ok \xe6\x97\xa5");
  EXPECT_TRUE(nuvec::text::utf8_valid("\xf0\x9f\x98\x80"));
  EXPECT_FALSE(nuvec::text::utf8_valid("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST(ByteLevel, EveryByteRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    const auto bytes = nuvec::text::byte_level_bytes(nuvec::text::byte_level_char(static_cast<unsigned char>(b)));
    ASSERT_TRUE(bytes.has_value()) << b;
    EXPECT_EQ(*bytes, std::string(1, static_cast<char>(b)));
  }
  EXPECT_EQ(nuvec::text::byte_level_char(' '), "\xC4\xA0");  // "Ġ"
  EXPECT_FALSE(nuvec::text::byte_level_bytes("\xE2\x96\x81").has_value());  // "▁" is not in the alphabet
}

// A small SentencePiece-style tokenizer: "▁" spaces, byte fallback.
constexpr const char* kTinyJson = R"({
  "added_tokens": [{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "</s>", "special": true}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                 {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "pre_tokenizer": null,
  "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}}], "pair": [],
                     "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}}},
  "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
              {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "byte_fallback": true, "fuse_unk": true,
            "vocab": {"<s>": 0, "</s>": 1, "<0xE6>": 2, "<0x97>": 3, "<0xA5>": 4, "▁": 5, "a": 6, "b": 7,
                      "▁a": 8, "ab": 9, "▁ab": 10},
            "merges": ["▁ a", "a b", "▁a b"]}
})";

TEST(Tokenizer, MergesLowestRankFirstAndFallsBackToBytes) {
  const Tokenizer t = Tokenizer::from_json(kTinyJson);
  // "▁ab": "▁ a" (rank 0) before "a b" (rank 1), then "▁a b".
  EXPECT_EQ(t.encode("ab"), (std::vector<nuvec::text::TokenId>{0, 10}));
  // 日 is not in the vocabulary: its three bytes.
  EXPECT_EQ(t.encode("a日", false), (std::vector<nuvec::text::TokenId>{8, 2, 3, 4}));
  EXPECT_EQ(t.decode(std::vector<nuvec::text::TokenId>{0, 8, 2, 3, 4}, true), "a日");
  // Bytes that do not form a character decode to one U+FFFD each.
  EXPECT_EQ(t.decode(std::vector<nuvec::text::TokenId>{2, 3}), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_THROW(t.decode(std::vector<nuvec::text::TokenId>{11}), nuvec::InvalidArgument);
}

TEST(StreamDecoder, HoldsACharacterUntilItsLastByte) {
  const Tokenizer t = Tokenizer::from_json(kTinyJson);
  nuvec::text::StreamDecoder stream(t);
  EXPECT_EQ(stream.push(8), "a");
  EXPECT_EQ(stream.push(2), "");
  EXPECT_EQ(stream.push(3), "");
  EXPECT_EQ(stream.push(4), "日");
  // A space after the first token is text; only the very first one is stripped.
  EXPECT_EQ(stream.push(5), " ");
  EXPECT_EQ(stream.finish(), "");
}

TEST(Tokenizer, RefusesWhatItDoesNotReadByName) {
  std::string wordpiece = kTinyJson;
  wordpiece.replace(wordpiece.find("\"type\": \"BPE\""), 13, "\"type\": \"WordPiece\"");
  try {
    (void)Tokenizer::from_json(wordpiece, {}, "bert/tokenizer.json");
    FAIL() << "a WordPiece model was accepted";
  } catch (const nuvec::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("bert/tokenizer.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'WordPiece'"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)Tokenizer::from_json("{not json"), nuvec::FormatError);
  EXPECT_THROW((void)Tokenizer::from_json(R"({"model": {"type": "BPE", "vocab": [1, 2]}})"), nuvec::FormatError);
}

// Bytes that are not a SentencePiece ModelProto (or a truncated one) are a
// FormatError naming the file, not a crash inside the library.
TEST(Tokenizer, RefusesABrokenSentencePieceModelByName) {
  for (const std::string bytes : {std::string("not a model"), std::string("\x0a\xff\xff\xff\xff\x0f", 6),
                                  std::string()}) {
    try {
      (void)Tokenizer::from_sentencepiece(bytes, {}, "llama/tokenizer.model");
      FAIL() << "accepted " << bytes.size() << " bytes of garbage";
    } catch (const nuvec::FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("llama/tokenizer.model"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
