// libFuzzer target: parse_model_config (a model's config.json) on arbitrary
// text. A FormatError is the expected refusal; a crash, a sanitizer report,
// any other exception (a raw JSON library error, say) or an accepted config
// that breaks the reader's bounds is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "nuvec/error.h"
#include "nuvec/lm/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nuvec::lm::ModelConfig c = nuvec::lm::parse_model_config(text, "config.json");
    // What the runtime relies on: every dimension positive, heads dividing,
    // one window per layer, and the products it forms in range.
    if (c.vocab_size == 0 || c.hidden_size == 0 || c.num_hidden_layers == 0 || c.num_key_value_heads == 0 ||
        c.num_attention_heads % c.num_key_value_heads != 0 || c.head_dim % 2 != 0 ||
        c.sliding_window.size() != c.num_hidden_layers || c.q_dim() > (std::size_t{1} << 17) ||
        !(c.rope_theta >= 1.0)) {
      std::abort();
    }
  } catch (const nuvec::FormatError& e) {
    if (e.offset() > size) std::abort();  // an offset must point into the text
  }
  return 0;
}
