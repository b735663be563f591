// Tensors: shapes, buffers counted by the device, read-only checkpoint views.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "nuvec/error.h"
#include "nuvec/lm/tensor.h"
#include "support/text.h"

namespace {

using nuvec::lm::DType;
using nuvec::lm::Shape;
using nuvec::lm::Tensor;

TEST(Shape, CountsElementsAndPrints) {
  const Shape s{3, 4, 5};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.elements(), 60u);
  EXPECT_EQ(s.to_string(), "[3, 4, 5]");
  EXPECT_EQ(Shape{}.elements(), 1u);
  EXPECT_TRUE((Shape{3, 4} == Shape{3, 4}));
  EXPECT_FALSE((Shape{3, 4} == Shape{4, 3}));
  EXPECT_FALSE((Shape{3} == Shape{3, 1}));
}

TEST(Shape, RefusesTooManyDimensionsAndOverflow) {
  EXPECT_THROW((Shape{1, 2, 3, 4, 5}), nuvec::InvalidArgument);
  Shape s{1, 2, 3, 4};
  EXPECT_THROW(s.push_back(5), nuvec::InvalidArgument);
  const Shape huge{std::size_t{1} << 40, std::size_t{1} << 40};
  EXPECT_THROW(huge.elements(), nuvec::InvalidArgument);
}

TEST(Tensor, EmptyIsADeviceBufferCountedInActive) {
  auto device = nuvec::Device::create_cpu();
  {
    const Tensor t = Tensor::empty(*device, DType::f32, Shape{16, 64});
    EXPECT_TRUE(t.defined());
    EXPECT_TRUE(t.contiguous());
    EXPECT_TRUE(t.writable());
    EXPECT_EQ(t.bytes(), 16u * 64 * 4);
    EXPECT_EQ(t.stride(0), 64u);
    EXPECT_EQ(t.stride(1), 1u);
    EXPECT_EQ(device->memory().active, 4096u);
    t.mutable_f32()[16 * 64 - 1] = 1.5f;  // the whole extent is writable
    EXPECT_EQ(t.f32()[16 * 64 - 1], 1.5f);
  }
  EXPECT_EQ(device->memory().active, 0u);
}

TEST(Tensor, RowsAndReshapeShareStorage) {
  auto device = nuvec::Device::create_cpu();
  const Tensor t = Tensor::empty(*device, DType::f32, Shape{4, 8});
  for (int i = 0; i < 32; ++i) t.mutable_f32()[i] = static_cast<float>(i);
  const Tensor r = t.rows(1, 3);
  EXPECT_EQ(r.shape(), (Shape{2, 8}));
  EXPECT_EQ(r.f32()[0], 8.0f);
  const Tensor flat = t.reshaped(Shape{32});
  EXPECT_EQ(flat.f32()[31], 31.0f);
  // Views, not copies: a write through one is seen through the others.
  EXPECT_EQ(r.f32(), t.f32() + 8);
  EXPECT_EQ(flat.f32(), t.f32());
  t.mutable_f32()[9] = -1.0f;
  EXPECT_EQ(r.f32()[1], -1.0f);
  EXPECT_EQ(flat.f32()[9], -1.0f);
  EXPECT_THROW(t.rows(3, 5), nuvec::InvalidArgument);
  EXPECT_THROW(t.reshaped(Shape{5, 7}), nuvec::InvalidArgument);
}

TEST(Tensor, ViewOfACheckpointTensorIsReadOnlyAndKeepsItsStorage) {
  auto bytes = std::make_shared<std::vector<std::uint16_t>>(6, 0x3f80);  // bf16 1.0
  nuvec::io::TensorView v;
  v.name = "w";
  v.dtype = nuvec::io::DType::BF16;
  v.shape = {2, 3};
  v.bytes = {reinterpret_cast<const std::byte*>(bytes->data()), 12};
  v.storage = bytes;
  const Tensor t = Tensor::view_of(v);
  const std::weak_ptr<std::vector<std::uint16_t>> storage = bytes;
  bytes.reset();
  v = {};
  EXPECT_FALSE(storage.expired()) << "the view must keep the storage alive";
  EXPECT_EQ(t.dtype(), DType::bf16);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_FALSE(t.writable());
  EXPECT_EQ(*reinterpret_cast<const std::uint16_t*>(t.data() + 10), 0x3f80);
  EXPECT_THROW(t.mutable_data(), nuvec::ReadOnly);
  EXPECT_THROW(t.f32(), nuvec::InvalidArgument);  // it is bf16
}

TEST(Tensor, ViewOfRefusesOtherDtypesAndWrongSizes) {
  std::vector<std::byte> bytes(16);
  nuvec::io::TensorView v;
  v.name = "ids";
  v.dtype = nuvec::io::DType::I32;
  v.shape = {4};
  v.bytes = {bytes.data(), 16};
  try {
    Tensor::view_of(v);
    FAIL() << "an I32 tensor was accepted";
  } catch (const nuvec::InvalidArgument& e) {
    EXPECT_TRUE(nuvec_test::contains(e.what(), "ids")) << e.what();
    EXPECT_TRUE(nuvec_test::contains(e.what(), "I32")) << e.what();
  }
  v.dtype = nuvec::io::DType::F32;
  v.shape = {3};
  EXPECT_THROW(Tensor::view_of(v), nuvec::InvalidArgument);  // 16 bytes for 3 floats
}

// MLX's types have no ggml id: a GGUF tensor claiming the marker is no type.
TEST(DType, GgmlIdsNameOnlyGgmlTypes) {
  using nuvec::lm::from_ggml_type;
  EXPECT_EQ(from_ggml_type(12), DType::q4_k);
  EXPECT_EQ(from_ggml_type(0xFFFFFFFFu), std::nullopt);
  EXPECT_EQ(nuvec::lm::dtype_name(DType::mlx_q4), "mlx_q4");
  EXPECT_TRUE(nuvec::lm::is_quantized(DType::mlx_q8));
}

}  // namespace
