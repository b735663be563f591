// What the LM runtime's tests share: a tiny model (and TempDir, from tests/support).
#pragma once

#include "nuvec/lm/demo_model.h"
#include "support/temp_file.h"  // TempDir

namespace nuvec_test {

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
