#include "transformer_sizes.h"

#include "size_trace.h"

namespace nuvec::bench {

const std::vector<std::size_t>& transformer_sizes() {
  // bench/record_transformer_sizes.sh, on the built-in model (hidden 1024,
  // 12 layers, vocabulary 32000), prompt 128 tokens, 32 decoded.
  static const std::vector<std::size_t> sizes = {
      // 44 allocations: prefill, then decode
      128,   2359296, 1966080, 524288,  524288, 524288, 131072, 131072, 524288,  1441792, 1441792,
      128000, 16384,  16384,   4464640, 50432,  128,    2359296, 1966080, 524288, 524288,  524288,
      131072, 131072, 524288,  1441792, 1441792, 128000, 16384,  16384,  4464640, 50432,   4096,
      4096,  4096,    1024,    1024,    4096,   11264,  11264,  128000, 128,    128,     50432};
  return sizes;
}

const std::vector<std::size_t>& transformer_trace() {
  static const std::vector<std::size_t> trace = [] {
    const std::vector<std::size_t>& sizes = transformer_sizes();
    std::vector<std::size_t> out(kTraceLength);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = sizes[i % sizes.size()];
    return out;
  }();
  return trace;
}

}  // namespace nuvec::bench
