// What the LM runtime's tests share: a scratch directory and a tiny model.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <string>

#include "nuvec/lm/demo_model.h"

namespace nuvec_test {

// A fresh directory under temp_directory_path(), removed with its contents.
class TempDir {
 public:
  TempDir() {
    static std::atomic<unsigned> counter{0};
    std::random_device entropy;
    path_ = std::filesystem::temp_directory_path() /
            ("nuvec-lm-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
             std::to_string(entropy()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A two-layer model of a few hundred KB: GQA (4 query heads, 2 key/value
// heads), logits of order 1 (weights larger than transformers' default).
inline nuvec::lm::DemoModelOptions tiny_model(nuvec::lm::DType dtype = nuvec::lm::DType::f32) {
  nuvec::lm::DemoModelOptions o;
  o.vocab_size = 128;
  o.hidden_size = 32;
  o.intermediate_size = 64;
  o.num_hidden_layers = 2;
  o.num_attention_heads = 4;
  o.num_key_value_heads = 2;
  o.max_position_embeddings = 256;
  o.rope_theta = 10000;
  o.init_std = 0.15;
  o.dtype = dtype;
  return o;
}

}  // namespace nuvec_test
