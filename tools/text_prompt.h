// Text for the commands that take it (run, tokenize, chat): a tokenizer for
// a model path, and text from a flag, a file or standard input.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "nuvec/text/tokenizer.h"

namespace nuvec::tool {

// The tokenizer named by `tokenizer` (a tokenizer.json, a directory, a
// .gguf), else the model's own (its directory's tokenizer.json, its GGUF
// vocabulary). InvalidArgument saying how to give one if there is none.
text::Tokenizer load_tokenizer(const std::filesystem::path& model, const std::string& tokenizer);

// The contents of `path`, or of standard input when it is "-".
std::string read_text_file(const std::string& path, const char* flag);

}  // namespace nuvec::tool
