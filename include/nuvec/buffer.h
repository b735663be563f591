// Buffer: a block of device memory owned by one holder.
#pragma once

#include <cstddef>
#include <span>

namespace nuvec {

class Device;
namespace detail {
struct Block;
}

// Move-only RAII handle to an allocator block. Destroying (or reset()ing) it
// returns the block to its device's cache. The device must outlive it.
// Contents of a new buffer are unspecified. Not itself thread-safe.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept { swap(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    Buffer(std::move(other)).swap(*this);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  // Returns the block to the device now; the buffer becomes empty.
  void reset() noexcept;

  std::byte* data() const { return data_; }
  // The length asked for.
  std::size_t size() const { return size_; }
  // The block's size: what this buffer counts in `active`.
  std::size_t capacity() const;
  std::span<std::byte> bytes() const { return {data_, size_}; }
  bool empty() const { return block_ == nullptr; }
  Device* device() const { return device_; }

  void swap(Buffer& other) noexcept {
    std::swap(device_, other.device_);
    std::swap(block_, other.block_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

 private:
  friend class Device;
  Buffer(Device* device, detail::Block* block, std::byte* data, std::size_t size)
      : device_(device), block_(block), data_(data), size_(size) {}

  Device* device_ = nullptr;
  detail::Block* block_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace nuvec
