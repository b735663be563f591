// Tensors of the LM runtime: a dtype, a shape and strides over bytes that
// live either in a device buffer (activations, the KV cache: counted in
// `active`) or in a checkpoint's mapping (weights: counted in `mapped`, used
// in place, never copied).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "nuvec/device.h"
#include "nuvec/io/tensor.h"

namespace nuvec::lm {

// The element types the runtime computes with. Activations are always f32;
// weights may be f32, f16, bf16, or one of ggml's quantized block types
// (llama.cpp's GGUF files: q8_0 .. q6_k), which are stored as blocks of
// `block_elements` weights in `block_bytes` bytes along a row and used in
// place: products dequantize them block by block (kernels/quant_linear.h).
// mlx_q4 / mlx_q8 are MLX's affine quantization (mlx-community checkpoints):
// 4- or 8-bit values packed into uint32 words (a "block" here is one word),
// with a scale and a bias per group of values held beside (Tensor::affine).
enum class DType : std::uint8_t {
  f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, mlx_q4, mlx_q8
};

std::string_view dtype_name(DType dtype);  // "f32", "f16", "bf16", "q4_k", ...
// Bytes per element of f32/f16/bf16; bytes per block of a quantized type.
std::size_t dtype_size(DType dtype);
bool is_quantized(DType dtype);
// Weights per block (1 for f32/f16/bf16; 32 or 256 for quantized types) and
// bytes per block (the element size for f32/f16/bf16).
std::size_t block_elements(DType dtype);
std::size_t block_bytes(DType dtype);
// Bytes that `elements` weights take (a whole number of blocks); InvalidArgument
// when they are not whole blocks or overflow.
std::size_t storage_bytes(DType dtype, std::size_t elements);
// The runtime's dtype for a checkpoint's; empty for any other (I32, F8, ...).
std::optional<DType> from_io_dtype(io::DType dtype);
// The runtime's dtype for a ggml type id (GGUF), empty for one it does not compute with.
std::optional<DType> from_ggml_type(std::uint32_t ggml_id);

// Up to four dimensions, stored inline so that making and slicing tensors on
// the hot path never touches the heap.
class Shape {
 public:
  static constexpr int kMaxRank = 4;
  Shape() = default;
  Shape(std::initializer_list<std::size_t> dims);  // InvalidArgument past kMaxRank
  // Adds a last dimension; InvalidArgument past kMaxRank.
  void push_back(std::size_t dim);

  int rank() const { return rank_; }
  std::size_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::size_t& operator[](int i) { return dims_[static_cast<std::size_t>(i)]; }
  // The product of the dimensions (1 for rank 0); InvalidArgument on overflow.
  std::size_t elements() const;
  std::string to_string() const;  // "[32000, 1024]"

  friend bool operator==(const Shape& a, const Shape& b);

 private:
  std::array<std::size_t, kMaxRank> dims_{};
  int rank_ = 0;
};

class Tensor {
 public:
  struct Affine;
  Tensor() = default;

  // A new contiguous tensor in a buffer from `device` (contents unspecified).
  // OutOfMemory past the device's memory limit.
  static Tensor empty(Device& device, DType dtype, const Shape& shape);
  // A read-only view of a checkpoint tensor, sharing its storage (the
  // mapping, or the buffer a non-aligned file was read into).
  // InvalidArgument for a dtype the runtime does not compute with, or bytes
  // that are not aligned to the element size.
  static Tensor view_of(const io::TensorView& view);
  // The same for a view whose bytes hold `dtype` (a GGUF tensor, whose view
  // says GGML_BLOCK for quantized types): the last dimension must be whole
  // blocks, the bytes aligned to 2 (every ggml block starts with f16 fields
  // or bytes; f32 to 4).
  static Tensor view_of(const io::TensorView& view, DType dtype);
  // MLX affine weights (mlx_q4 or mlx_q8, by `bits`), [n][k] from the packed
  // U32 words [n][k * bits / 32] and the F16 or BF16 scales and biases
  // [n][k / group_size]; all three stay views of the checkpoint.
  // InvalidArgument for shapes or dtypes that do not fit together.
  static Tensor affine(const io::TensorView& packed, const io::TensorView& scales, const io::TensorView& biases,
                       int bits, std::size_t group_size);
  // The scales and biases of an mlx_q4 / mlx_q8 tensor; null for others.
  const Affine* affine() const { return affine_.get(); }

  // False for a default-constructed tensor (an absent optional weight).
  bool defined() const { return rank() > 0; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  std::size_t dim(int i) const { return shape_[i]; }
  // In elements.
  std::size_t stride(int i) const { return strides_[static_cast<std::size_t>(i)]; }
  std::size_t elements() const { return shape_.elements(); }
  std::size_t bytes() const { return storage_bytes(dtype_, elements()); }
  bool contiguous() const;
  bool writable() const { return writable_; }

  const std::byte* data() const { return data_; }
  // ReadOnly for a view of a mapping.
  std::byte* mutable_data() const;
  // The elements as f32; InvalidArgument if the dtype is another.
  const float* f32() const;
  float* mutable_f32() const;

  // Rows [begin, end) of dimension 0, sharing storage (InvalidArgument for
  // MLX affine weights, whose scales would need slicing too).
  Tensor rows(std::size_t begin, std::size_t end) const;
  // The same elements with another shape; the tensor must be contiguous.
  Tensor reshaped(const Shape& shape) const;

 private:
  DType dtype_ = DType::f32;
  Shape shape_;
  std::array<std::size_t, Shape::kMaxRank> strides_{};
  std::byte* data_ = nullptr;
  bool writable_ = false;
  std::shared_ptr<const void> storage_;  // a Buffer, or what a checkpoint view holds
  std::shared_ptr<const Affine> affine_;
};

struct Tensor::Affine {
  Tensor scales, biases;  // f16 or bf16, [n][k / group_size]
  std::size_t group_size = 0;
};

}  // namespace nuvec::lm
