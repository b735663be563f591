// A generated checkpoint shaped like a small Llama (bf16, ~150 tensors,
// ~1.6 GiB): the input of the load benchmarks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace nuvec::bench {

struct TensorShape {
  std::string name;
  std::vector<std::uint64_t> shape;
};

// The tensors of a Llama decoder with `layers` layers (TinyLlama's widths:
// hidden 2048, intermediate 5632, 4 KV heads of 64, vocabulary 32000).
std::vector<TensorShape> llama_tensor_shapes(int layers);

// Writes the checkpoint twice, unless both files exist already:
// `aligned` with save_safetensors (the reference layout: each tensor at a
// multiple of its element size, so a load maps it), and
// `unaligned` as MLX writes it (header unpadded, of odd length, so no bf16
// tensor is aligned and a load must read the file). Same tensors, same bytes.
void write_llama_checkpoints(const std::filesystem::path& aligned, const std::filesystem::path& unaligned,
                             int layers);

}  // namespace nuvec::bench
