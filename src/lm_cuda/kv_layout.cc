// The KV cache's store: its checks; the kernel is kv_store.cu.
#include "lm_cuda/kv_layout.h"

#include <limits>

#include <fmt/format.h>

#include "lm_cuda/check.h"
#include "nuvec/error.h"

namespace nuvec::lm::gpu {

void kv_store(const KVLayer& layer, std::size_t first, std::size_t rows, const void* k, const void* v,
              cudaStream_t stream, const std::int32_t* first_at) {
  const char* what = "gpu::kv_store";
  const Element element = element_of(layer.dtype, what);
  if (first > layer.capacity || rows > layer.capacity - first) {
    throw InvalidArgument(fmt::format("{}: positions {} .. {} do not fit a cache of {} positions", what, first,
                                      first + rows, layer.capacity));
  }
  require_at_most(rows, std::numeric_limits<int>::max(), "rows", what);
  require_at_most(layer.kv_heads, 65535, "kv_heads", what);  // the grid's y dimension
  require_at_most(layer.head_dim, std::numeric_limits<int>::max(), "head_dim", what);
  if (rows == 0 || layer.kv_heads == 0 || layer.head_dim == 0) return;
  launch_kv_store(layer.keys, layer.values, layer.capacity, static_cast<int>(layer.kv_heads),
                  static_cast<int>(layer.head_dim), first, first_at, static_cast<int>(rows), k, v, element,
                  stream);
}

}  // namespace nuvec::lm::gpu
