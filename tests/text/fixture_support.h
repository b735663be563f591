// What the tokenizer fixture tests share: where the npm tokenizer files are
// cached (scripts/fetch_tokenizers.sh), reading a JSON file, and the hex
// form the fixtures use for byte strings that are not valid UTF-8.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace nuvec::text::testing {

inline std::filesystem::path cache_dir() {
  const char* env = std::getenv("NUVEC_TOKENIZER_CACHE");
  if (env != nullptr && *env != '\0') return env;
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home ? home : "/root") / ".cache/nuvec/tokenizers";
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return nlohmann::json::parse(in);
}

inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

}  // namespace nuvec::text::testing
