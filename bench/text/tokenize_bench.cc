// Encoding throughput of nuvec's tokenizer, one thread: the corpus encoded
// whole, `repeats` times after one warm-up pass (which fills the pre-token
// cache, as `tokenizers`' own cache is filled by its warm-up), median MB/s.
// bench/text/run_tokenize_bench.py runs it beside Hugging Face `tokenizers`.
// Usage: nuvec_tokenize_bench TOKENIZER CORPUS [repeats] [--ids OUT.json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nuvec/text/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: nuvec_tokenize_bench TOKENIZER CORPUS [repeats] [--ids OUT.json]\n");
    return 2;
  }
  const nuvec::text::Tokenizer tokenizer = nuvec::text::Tokenizer::load(argv[1]);
  std::ifstream in(argv[2], std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  const std::string corpus = s.str();
  const int repeats = argc > 3 && argv[3][0] != '-' ? std::stoi(argv[3]) : 5;
  std::string ids_out;
  for (int i = 3; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--ids") ids_out = argv[i + 1];
  }
  std::vector<nuvec::text::TokenId> ids = tokenizer.encode(corpus, false);  // warm-up
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    const auto t = std::chrono::steady_clock::now();
    ids = tokenizer.encode(corpus, false);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  fmt::print("{{\"bytes\": {}, \"tokens\": {}, \"median_s\": {:.6f}, \"mb_per_s\": {:.3f}, \"repeats\": {}}}\n",
             corpus.size(), ids.size(), median, corpus.size() / median / 1e6, repeats);
  if (!ids_out.empty()) {
    std::FILE* f = std::fopen(ids_out.c_str(), "w");
    fmt::print(f, "[{}]\n", fmt::join(ids, ","));
    std::fclose(f);
  }
  return 0;
}
