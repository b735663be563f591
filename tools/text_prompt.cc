#include "text_prompt.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "nuvec/error.h"

namespace nuvec::tool {

text::Tokenizer load_tokenizer(const std::filesystem::path& model, const std::string& tokenizer) {
  if (!tokenizer.empty()) return text::Tokenizer::load(tokenizer);
  if (std::optional<text::Tokenizer> t = text::find_tokenizer(model)) return std::move(*t);
  throw InvalidArgument(fmt::format(
      "{} has no tokenizer (no tokenizer.json or tokenizer.model beside config.json, no tokenizer.ggml.* in a GGUF file): give one "
      "with --tokenizer PATH, or the prompt as ids with --prompt-ids",
      model.string()));
}

std::string read_text_file(const std::string& path, const char* flag) {
  if (path == "-") {
    std::ostringstream s;
    s << std::cin.rdbuf();
    return s.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw IoError(fmt::format("cannot read {} given to {}: {}", path, flag, std::strerror(errno)), path, errno);
  }
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace nuvec::tool
