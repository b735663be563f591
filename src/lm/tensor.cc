#include "nuvec/lm/tensor.h"

#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nuvec/buffer.h"
#include "nuvec/error.h"

namespace nuvec::lm {

namespace {

struct DTypeInfo {
  std::string_view name;
  std::size_t block_elements, block_bytes;
  std::uint32_t ggml_id;  // ggml.h's enum ggml_type
};

constexpr std::uint32_t kNoGgml = 0xFFFFFFFF;  // a type ggml has no id for

// Block sizes as ggml-common.h's block structs: f16 scale(s), then the quants.
constexpr DTypeInfo kInfo[] = {
    {"f32", 1, 4, 0},      {"f16", 1, 2, 1},      {"bf16", 1, 2, 30},    {"q8_0", 32, 34, 8},
    {"q4_0", 32, 18, 2},   {"q4_1", 32, 20, 3},   {"q5_0", 32, 22, 6},   {"q5_1", 32, 24, 7},
    {"q2_k", 256, 84, 10}, {"q3_k", 256, 110, 11}, {"q4_k", 256, 144, 12}, {"q5_k", 256, 176, 13},
    {"q6_k", 256, 210, 14}, {"mlx_q4", 8, 4, kNoGgml}, {"mlx_q8", 4, 4, kNoGgml},
};

const DTypeInfo& info(DType dtype) { return kInfo[static_cast<std::size_t>(dtype)]; }

}  // namespace

std::string_view dtype_name(DType dtype) {
  return static_cast<std::size_t>(dtype) < std::size(kInfo) ? info(dtype).name : "?";
}

std::size_t dtype_size(DType dtype) { return info(dtype).block_bytes; }
bool is_quantized(DType dtype) { return info(dtype).block_elements > 1; }
std::size_t block_elements(DType dtype) { return info(dtype).block_elements; }
std::size_t block_bytes(DType dtype) { return info(dtype).block_bytes; }

std::size_t storage_bytes(DType dtype, std::size_t elements) {
  const DTypeInfo& i = info(dtype);
  std::size_t bytes = 0;
  if (elements % i.block_elements != 0 ||
      __builtin_mul_overflow(elements / i.block_elements, i.block_bytes, &bytes)) {
    throw InvalidArgument(fmt::format("{} elements are not a whole number of {} blocks of {} or overflow",
                                      elements, i.name, i.block_elements));
  }
  return bytes;
}

std::optional<DType> from_ggml_type(std::uint32_t ggml_id) {
  for (std::size_t d = 0; d < std::size(kInfo); ++d) {
    // kNoGgml marks MLX's types: a hostile file's type id 0xFFFFFFFF is no type.
    if (kInfo[d].ggml_id == ggml_id && ggml_id != kNoGgml) return static_cast<DType>(d);
  }
  return std::nullopt;
}

std::optional<DType> from_io_dtype(io::DType dtype) {
  switch (dtype) {
    case io::DType::F32: return DType::f32;
    case io::DType::F16: return DType::f16;
    case io::DType::BF16: return DType::bf16;
    default: return std::nullopt;
  }
}

Shape::Shape(std::initializer_list<std::size_t> dims) {
  if (dims.size() > kMaxRank) {
    throw InvalidArgument(fmt::format("a tensor has at most {} dimensions, not {}", kMaxRank, dims.size()));
  }
  for (std::size_t d : dims) dims_[static_cast<std::size_t>(rank_++)] = d;
}

void Shape::push_back(std::size_t dim) {
  if (rank_ == kMaxRank) throw InvalidArgument(fmt::format("a tensor has at most {} dimensions", kMaxRank));
  dims_[static_cast<std::size_t>(rank_++)] = dim;
}

std::size_t Shape::elements() const {
  std::size_t n = 1;
  for (int i = 0; i < rank_; ++i) {
    if (__builtin_mul_overflow(n, dims_[static_cast<std::size_t>(i)], &n)) {
      throw InvalidArgument(fmt::format("tensor shape {} has more elements than fit in size_t", to_string()));
    }
  }
  return n;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) s += fmt::format("{}{}", i ? ", " : "", dims_[static_cast<std::size_t>(i)]);
  return s + "]";
}

bool operator==(const Shape& a, const Shape& b) {
  if (a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

namespace {

std::array<std::size_t, Shape::kMaxRank> contiguous_strides(const Shape& shape) {
  std::array<std::size_t, Shape::kMaxRank> strides{};
  std::size_t s = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[static_cast<std::size_t>(i)] = s;
    s *= shape[i];
  }
  return strides;
}

}  // namespace

Tensor Tensor::empty(Device& device, DType dtype, const Shape& shape) {
  if (is_quantized(dtype)) {
    throw InvalidArgument(fmt::format("the runtime makes no {} tensors: quantized types are only read from files",
                                      dtype_name(dtype)));
  }
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(shape.elements(), dtype_size(dtype), &bytes)) {
    throw InvalidArgument(fmt::format("a {} tensor of shape {} has more bytes than fit in size_t",
                                      dtype_name(dtype), shape.to_string()));
  }
  auto buffer = std::make_shared<Buffer>(device.new_buffer(bytes));
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.data_ = buffer->data();
  t.writable_ = true;
  t.storage_ = std::move(buffer);
  return t;
}

Tensor Tensor::view_of(const io::TensorView& view) {
  const std::optional<DType> dtype = from_io_dtype(view.dtype);
  if (!dtype) {
    throw InvalidArgument(fmt::format("tensor {} has dtype {}; the runtime computes with F32, F16 and BF16 only",
                                      view.name, io::dtype_name(view.dtype)));
  }
  return view_of(view, *dtype);
}

Tensor Tensor::view_of(const io::TensorView& view, DType dtype) {
  if (view.shape.size() > Shape::kMaxRank || view.shape.empty()) {
    throw InvalidArgument(fmt::format("tensor {} has {} dimensions; the runtime expects 1 to {}", view.name,
                                      view.shape.size(), Shape::kMaxRank));
  }
  // Blocks hold f16 fields, so 2-byte alignment is what their loads need.
  const std::size_t alignment = is_quantized(dtype) ? 2 : dtype_size(dtype);
  if (reinterpret_cast<std::uintptr_t>(view.bytes.data()) % alignment != 0) {
    throw InvalidArgument(fmt::format("tensor {} is not aligned to {} bytes", view.name, alignment));
  }
  Tensor t;
  t.dtype_ = dtype;
  for (std::uint64_t d : view.shape) t.shape_.push_back(static_cast<std::size_t>(d));
  if (view.shape.back() % block_elements(dtype) != 0) {
    throw InvalidArgument(fmt::format("tensor {} has rows of {} elements, not whole {} blocks of {}", view.name,
                                      view.shape.back(), dtype_name(dtype), block_elements(dtype)));
  }
  if (t.bytes() != view.bytes.size()) {
    throw InvalidArgument(fmt::format("tensor {} holds {} bytes, not the {} its dtype and shape {} need",
                                      view.name, view.bytes.size(), t.bytes(), t.shape_.to_string()));
  }
  t.strides_ = contiguous_strides(t.shape_);
  t.data_ = const_cast<std::byte*>(view.bytes.data());
  t.writable_ = false;
  t.storage_ = view.storage;
  return t;
}

Tensor Tensor::affine(const io::TensorView& packed, const io::TensorView& scales, const io::TensorView& biases,
                      int bits, std::size_t group_size) {
  if (bits != 4 && bits != 8) {
    throw InvalidArgument(fmt::format("tensor {} is {}-bit MLX quantized; nuvec computes with 4 and 8 bits", packed.name,
                                      bits));
  }
  if (packed.dtype != io::DType::U32 || packed.shape.size() != 2) {
    throw InvalidArgument(fmt::format("tensor {} is {} with {} dimensions; MLX quantized weights are U32 [rows, words]",
                                      packed.name, io::dtype_name(packed.dtype), packed.shape.size()));
  }
  const std::uint64_t n = packed.shape[0], k = packed.shape[1] * (32 / static_cast<std::uint64_t>(bits));
  const std::uint64_t groups = group_size == 0 ? 0 : k / group_size;
  for (const io::TensorView* v : {&scales, &biases}) {
    if (v->dtype != scales.dtype || (v->dtype != io::DType::F16 && v->dtype != io::DType::BF16) ||
        v->shape.size() != 2 || v->shape[0] != n || v->shape[1] != groups || groups * group_size != k) {
      throw InvalidArgument(fmt::format(
          "tensor {} is {} of shape [{}]; {} ({} rows of {} values in groups of {}) needs F16 or BF16 [{}, {}], "
          "scales and biases alike",
          v->name, io::dtype_name(v->dtype), fmt::join(v->shape, ", "), packed.name, n, k, group_size, n, groups));
    }
  }
  io::TensorView words = packed;
  words.shape = {n, k};
  Tensor t = view_of(words, bits == 4 ? DType::mlx_q4 : DType::mlx_q8);
  auto side = std::make_shared<Affine>();
  side->scales = view_of(scales);
  side->biases = view_of(biases);
  side->group_size = group_size;
  t.affine_ = std::move(side);
  return t;
}

bool Tensor::contiguous() const { return strides_ == contiguous_strides(shape_); }

std::byte* Tensor::mutable_data() const {
  if (!writable_) throw ReadOnly("a tensor that views a checkpoint is read-only");
  return data_;
}

const float* Tensor::f32() const {
  if (dtype_ != DType::f32) {
    throw InvalidArgument(fmt::format("tensor is {}, not f32", dtype_name(dtype_)));
  }
  return reinterpret_cast<const float*>(data_);
}

float* Tensor::mutable_f32() const {
  f32();
  return reinterpret_cast<float*>(mutable_data());
}

Tensor Tensor::rows(std::size_t begin, std::size_t end) const {
  if (affine_) throw InvalidArgument("rows of MLX affine weights: their scales and biases would need slicing too");
  if (rank() == 0 || begin > end || end > dim(0)) {
    throw InvalidArgument(fmt::format("rows [{}, {}) of a tensor of shape {}", begin, end, shape_.to_string()));
  }
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.data_ = data_ + storage_bytes(dtype_, begin * strides_[0]);
  return t;
}

Tensor Tensor::reshaped(const Shape& shape) const {
  if (!contiguous() || shape.elements() != elements()) {
    throw InvalidArgument(fmt::format("cannot view a tensor of shape {} as {}", shape_.to_string(),
                                      shape.to_string()));
  }
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  return t;
}

}  // namespace nuvec::lm
