#include "lm_cuda/linear.h"

#include <cublasLt.h>

#include <cerrno>
#include <cstdint>

#include <fmt/format.h>

#include "lm_cuda/check.h"
#include "nuvec/error.h"
#include "nuvec/trace_tag.h"

namespace nuvec::lm::gpu {
namespace {

void check_lt(cublasStatus_t status, std::string_view call, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw IoError(fmt::format("cannot {}: {}: {} ({})", what, call, cublasLtGetStatusString(status),
                            cublasLtGetStatusName(status)),
                {}, EIO);
}

cudaDataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

// The largest power of two, up to 256, that divides the address.
unsigned alignment(const void* p) {
  const auto bits = reinterpret_cast<std::uintptr_t>(p);
  unsigned a = 1;
  while (a < 256 && bits % (2 * a) == 0) a *= 2;
  return a;
}

cublasLtHandle_t lt(void* handle) { return static_cast<cublasLtHandle_t>(handle); }

}  // namespace

struct Linear::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t w = nullptr, x = nullptr, y = nullptr;
  cublasLtMatmulAlgo_t algo{};

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (y != nullptr) cublasLtMatrixLayoutDestroy(y);
    if (x != nullptr) cublasLtMatrixLayoutDestroy(x);
    if (w != nullptr) cublasLtMatrixLayoutDestroy(w);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
};

Linear::Linear(Device& device, cudaStream_t stream, std::size_t workspace_bytes) {
  if (workspace_bytes > 0) {
    const Tag tag(device, "scratch");
    workspace_ = device.new_buffer(workspace_bytes, reinterpret_cast<std::uintptr_t>(stream));
  }
  cublasLtHandle_t handle = nullptr;
  check_lt(cublasLtCreate(&handle), "cublasLtCreate", "start cuBLASLt");
  handle_ = handle;
}

Linear::~Linear() {
  plans_.clear();  // descriptors before the handle
  if (handle_ != nullptr) cublasLtDestroy(lt(handle_));
}

const Linear::Plan& Linear::plan(const Key& key) {
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  const auto [m, n, k, dtype, y_dtype, has_bias, align_x, align_w, align_y] = key;
  const std::string what = fmt::format("plan a {} x {} x {} product", m, n, k);
  auto p = std::make_unique<Plan>();
  check_lt(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate", what);
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
           "cublasLtMatmulDescSetAttribute", what);
  check_lt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep),
           "cublasLtMatmulDescSetAttribute", what);
  if (has_bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bias_type = data_type(y_dtype);
    check_lt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
             "cublasLtMatmulDescSetAttribute", what);
    check_lt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type),
             "cublasLtMatmulDescSetAttribute", what);
  }
  // cuBLASLt's matrices are column-major: w, [n][k] row by row, is a k x n
  // matrix (TRANSA makes it n x k), x a k x m one, and y, [m][n], the n x m
  // result, so y = (w as n x k) · (x as k x m) is x · wᵀ row by row.
  const auto rows = [](std::size_t v) { return static_cast<std::uint64_t>(v); };
  const auto lead = [](std::size_t v) { return static_cast<std::int64_t>(v); };
  check_lt(cublasLtMatrixLayoutCreate(&p->w, data_type(dtype), rows(k), rows(n), lead(k)), "cublasLtMatrixLayoutCreate",
           what);
  check_lt(cublasLtMatrixLayoutCreate(&p->x, data_type(dtype), rows(k), rows(m), lead(k)), "cublasLtMatrixLayoutCreate",
           what);
  check_lt(cublasLtMatrixLayoutCreate(&p->y, data_type(y_dtype), rows(n), rows(m), lead(n)),
           "cublasLtMatrixLayoutCreate", what);

  cublasLtMatmulPreference_t preference = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate", what);
  const std::uint64_t workspace = workspace_.size();
  const std::uint32_t aligned[] = {align_w, align_x, align_y, align_y};  // A (w), B (x), C, D (y)
  const cublasLtMatmulPreferenceAttributes_t names[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &workspace, sizeof workspace);
  for (int i = 0; i < 4 && status == CUBLAS_STATUS_SUCCESS; ++i) {
    status = cublasLtMatmulPreferenceSetAttribute(preference, names[i], &aligned[i], sizeof aligned[i]);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulAlgoGetHeuristic(lt(handle_), p->op, p->w, p->x, p->y, p->y, preference, 1, &result,
                                            &found);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0)) {
    throw InvalidArgument(fmt::format(
        "gpu::Linear: cuBLASLt has no kernel for a {} x {} x {} product of {} into {} (alignments x {}, w {}, y {} "
        "bytes; workspace {} bytes)",
        m, n, k, dtype_name(dtype), dtype_name(y_dtype), align_x, align_w, align_y, workspace));
  }
  check_lt(status, "cublasLtMatmulAlgoGetHeuristic", what);
  p->algo = result.algo;
  return *plans_.emplace(key, std::move(p)).first->second;
}

void Linear::operator()(const void* x, std::size_t m, std::size_t k, const void* w, std::size_t n, DType dtype,
                        const void* bias, void* y, DType y_dtype, cudaStream_t stream) {
  element_of(dtype, "gpu::Linear");
  if (y_dtype != dtype && y_dtype != DType::f32) {
    throw InvalidArgument(fmt::format("gpu::Linear: a product of {} is written as {} or f32, not {}",
                                      dtype_name(dtype), dtype_name(dtype), dtype_name(y_dtype)));
  }
  if (k == 0) throw InvalidArgument("gpu::Linear: a product over k = 0 elements");
  if (m == 0 || n == 0) return;
  const Plan& p = plan({m, n, k, dtype, y_dtype, bias != nullptr, alignment(x), alignment(w), alignment(y)});
  if (bias != nullptr) {
    check_lt(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
             "cublasLtMatmulDescSetAttribute", "give the product its bias");
  }
  const float one = 1, zero = 0;
  check_lt(cublasLtMatmul(lt(handle_), p.op, &one, w, p.w, x, p.x, &zero, y, p.y, y, p.y, &p.algo, workspace_.data(),
                          workspace_.size(), stream),
           "cublasLtMatmul", fmt::format("queue a {} x {} x {} product", m, n, k));
}

}  // namespace nuvec::lm::gpu
