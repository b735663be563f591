// Attention tiles for baseline x86-64 (SSE2), or any other CPU: 4 lanes (attention_tile.inc).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "lm/attention_kernels.h"

#define NUVEC_LANES 4
namespace nuvec::lm::attention::detail {
#include "lm/attention_tile.inc"

void attend_tile_portable(const TileTask& task) { attend_tile_either(task); }

}  // namespace nuvec::lm::attention::detail
