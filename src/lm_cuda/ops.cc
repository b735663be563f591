// The element-wise and row-wise operations' checks; the kernels are
// rms_norm.cu, swiglu.cu and rope.cu.
#include "lm_cuda/ops.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "lm_cuda/check.h"
#include "nuvec/error.h"

namespace nuvec::lm::gpu {
namespace {

constexpr std::size_t kMaxInt = std::numeric_limits<int>::max();
constexpr std::size_t kMaxGridY = 65535;

}  // namespace

void rms_norm(const void* x, std::size_t rows, std::size_t dim, const void* weight, double eps, void* out,
              DType dtype, cudaStream_t stream) {
  const char* what = "gpu::rms_norm";
  const Element element = element_of(dtype, what);
  require_at_most(dim, kMaxInt, "dim", what);
  require_at_most(rows, kMaxInt, "rows", what);
  if (rows == 0 || dim == 0) return;
  launch_rms_norm(x, static_cast<int>(rows), static_cast<int>(dim), weight, static_cast<float>(eps), out, element,
                  stream);
}

void swiglu(const void* gate, const void* up, void* out, std::size_t count, DType dtype, cudaStream_t stream) {
  const Element element = element_of(dtype, "gpu::swiglu");
  if (count == 0) return;
  launch_swiglu(gate, up, out, count, element, stream);
}

void rope(void* x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
          const float* inv_freq, std::size_t first, RopeLayout layout, DType dtype, cudaStream_t stream,
          const std::int32_t* first_at) {
  const char* what = "gpu::rope";
  const Element element = element_of(dtype, what);
  if (head_dim % 2 != 0) throw InvalidArgument(fmt::format("{}: head_dim {} is odd", what, head_dim));
  require_at_most(head_dim, kMaxInt, "head_dim", what);
  require_at_most(heads, kMaxInt / std::max<std::size_t>(head_dim, 1), "heads", what);
  require_at_most(rows, kMaxGridY, "rows", what);  // the grid's y dimension
  if (heads * head_dim > row_stride) {
    throw InvalidArgument(
        fmt::format("{}: {} heads of {} do not fit a row of {} elements", what, heads, head_dim, row_stride));
  }
  if (rows == 0 || heads == 0 || head_dim == 0) return;
  launch_rope(x, static_cast<int>(rows), row_stride, static_cast<int>(heads), static_cast<int>(head_dim), inv_freq,
              first, first_at, layout == RopeLayout::interleaved, element, stream);
}

}  // namespace nuvec::lm::gpu
