// Tokenizers from the files models ship: Hugging Face `tokenizer.json`
// (byte-level BPE as GPT-2, Llama 3 and Qwen2/3 use it; BPE with byte
// fallback and the SentencePiece-style "▁" spaces of Llama 2, Mistral and
// TinyLlama), SentencePiece `tokenizer.model` files (run by libsentencepiece)
// and the vocabulary inside GGUF files (`tokenizer.ggml.*`).
//
// encode(text) gives the ids `tokenizers`' Tokenizer.encode(text).ids gives:
// added tokens are matched first (never split), each stretch between them is
// normalized, pre-tokenized and run through BPE, and the post-processor's
// special tokens (Llama 2's "<s>") are added unless add_special is false.
// Text that is not valid UTF-8 is read as Python's bytes.decode("utf-8",
// "replace") reads it: each maximal invalid subpart becomes U+FFFD.
//
// decode(ids) gives what `tokenizers`' decode gives: byte-fallback tokens
// become bytes, and bytes that do not form UTF-8 become U+FFFD.
// A Tokenizer is immutable once made; encode and decode may run on several
// threads at once (the pre-token cache inside has its own lock).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nuvec::io {
struct GgufFile;
}

namespace nuvec::text {

using TokenId = std::int32_t;

class TokenizerImpl;  // src/text/tokenizer_impl.h

class Tokenizer {
 public:
  // Reads `path`: a tokenizer.json, a SentencePiece .model file, a .gguf
  // file (its tokenizer.ggml.* metadata), or a model directory holding
  // tokenizer.json or else tokenizer.model (with tokenizer_config.json
  // beside it for the chat template, BOS/EOS and added tokens).
  // FormatError for a file that is not a tokenizer nuvec reads, naming
  // what it lacks or what it declares that nuvec does not support;
  // IoError if it cannot be read.
  static Tokenizer load(const std::filesystem::path& path);
  // From the text of a tokenizer.json (and, optionally, tokenizer_config.json's);
  // `name` labels errors.
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view config_json = {},
                             const std::filesystem::path& name = "tokenizer.json");
  // From the bytes of a SentencePiece tokenizer.model (and, optionally,
  // tokenizer_config.json's text): as transformers' LlamaTokenizer (legacy)
  // uses one, special tokens matched first, BOS in front by default.
  static Tokenizer from_sentencepiece(std::string_view model_bytes, std::string_view config_json = {},
                                      const std::filesystem::path& name = "tokenizer.model");
  // From a parsed GGUF header's tokenizer.ggml.* keys.
  static Tokenizer from_gguf(const io::GgufFile& file, const std::filesystem::path& name);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  std::vector<TokenId> encode(std::string_view text, bool add_special = true) const;
  // skip_special leaves out added tokens marked special (as `tokenizers`'
  // decode(ids, skip_special_tokens=True)). InvalidArgument for an id
  // outside the vocabulary.
  std::string decode(std::span<const TokenId> ids, bool skip_special = false) const;

  // Ids are in [0, vocab_size()).
  std::size_t vocab_size() const;
  // The token's text as the file spells it ("▁the", "Ġthe", "<0x0A>"); empty for
  // an id outside the vocabulary.
  std::string_view token_text(TokenId id) const;
  std::optional<TokenId> token_id(std::string_view text) const;
  bool is_special(TokenId id) const;
  std::optional<TokenId> bos() const;
  std::optional<TokenId> eos() const;
  // Further ids that end a turn (Llama 3's <|eot_id|>, Qwen's <|im_end|>), eos included.
  const std::vector<TokenId>& stop_ids() const;
  // The chat template (tokenizer_config.json's chat_template, GGUF's
  // tokenizer.chat_template); empty if the files have none.
  const std::string& chat_template() const;
  // Where it was read from: "tokenizer.json", "tokenizer.model", "gguf".
  std::string_view source() const;

  const TokenizerImpl& impl() const { return *impl_; }

 private:
  explicit Tokenizer(std::unique_ptr<TokenizerImpl> impl);
  std::unique_ptr<TokenizerImpl> impl_;
};

// The tokenizer for a model path (a directory or a .gguf file): the
// directory's tokenizer.json (else tokenizer.model), or the GGUF file's own vocabulary. Empty if
// there is none.
std::optional<Tokenizer> find_tokenizer(const std::filesystem::path& model);

}  // namespace nuvec::text
