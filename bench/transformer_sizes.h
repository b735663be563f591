// The request sizes of the built-in model's prefill and decode, as recorded
// from `nuvec profile` (bench/record_transformer_sizes.sh made this list):
// the activations and scratch a transformer asks its allocator for, 128 B to
// 4.3 MiB, in the order asked.
#pragma once

#include <cstddef>
#include <vector>

namespace nuvec::bench {

// The recorded sequence (prefill's allocations, then decode's).
const std::vector<std::size_t>& transformer_sizes();
// kTraceLength sizes: the recorded sequence repeated.
const std::vector<std::size_t>& transformer_trace();

}  // namespace nuvec::bench
