// `nuvec demo-model DIR`: writes the built-in model, a deterministic
// random-weight Llama-family checkpoint, so the runtime runs offline.
#include <memory>
#include <string>

#include <fmt/core.h>

#include "command.h"
#include "nuvec/lm/demo_model.h"
#include "nuvec/memory.h"
#include "progress_line.h"

namespace nuvec::tool {
namespace {

struct DemoModelArgs {
  std::string dir;
  std::string arch = "llama";
  std::string dtype = "bf16";
  double llama3_rope_factor = 0;
  std::size_t llama3_original_context = 0;
  lm::DemoModelOptions options;
};

}  // namespace

Command add_demo_model_command(CLI::App& parent) {
  auto a = std::make_shared<DemoModelArgs>();
  lm::DemoModelOptions& o = a->options;
  CLI::App* app = parent.add_subcommand("demo-model", "Write the built-in random-weight model (a Llama checkpoint)");
  app->footer(
      "Writes DIR/config.json and DIR/model.safetensors (or shards and an index with\n"
      "--shard-size): a Llama-architecture decoder with uniform random weights, every\n"
      "tensor aligned (the layout Python's save_file writes) so it is mapped, not\n"
      "copied, when loaded, and every other reader sees exactly its tensors. The same\n"
      "options give the same bytes on every machine. The default is the model that\n"
      "`nuvec profile` runs: hidden 1024, 12 layers, 16 query and 4 key/value heads,\n"
      "vocabulary 32000, context 16384, bf16 (about 400 MB).");
  app->add_option("DIR", a->dir, "the directory to write (created if absent)")->required();
  app->add_option("--arch", a->arch, "llama, mistral or qwen2")->check(CLI::IsMember({"llama", "mistral", "qwen2"}));
  app->add_option("--dtype", a->dtype, "weight dtype: bf16, f16 or f32")->check(CLI::IsMember({"bf16", "f16", "f32"}));
  app->add_option("--vocab", o.vocab_size, "vocabulary size")->default_val(o.vocab_size);
  app->add_option("--hidden", o.hidden_size, "hidden size")->default_val(o.hidden_size);
  app->add_option("--intermediate", o.intermediate_size, "MLP intermediate size")->default_val(o.intermediate_size);
  app->add_option("--layers", o.num_hidden_layers, "decoder layers")->default_val(o.num_hidden_layers);
  app->add_option("--heads", o.num_attention_heads, "query heads")->default_val(o.num_attention_heads);
  app->add_option("--kv-heads", o.num_key_value_heads, "key/value heads")->default_val(o.num_key_value_heads);
  app->add_option("--head-dim", o.head_dim, "head dimension (0: hidden / heads)")->default_val(o.head_dim);
  app->add_option("--context", o.max_position_embeddings, "max_position_embeddings")
      ->default_val(o.max_position_embeddings);
  app->add_option("--rope-theta", o.rope_theta, "RoPE base")->default_val(o.rope_theta);
  app->add_option("--llama3-rope-factor", a->llama3_rope_factor, "Llama 3 rope_scaling factor (0: none)");
  app->add_option("--llama3-original-context", a->llama3_original_context,
                  "its original_max_position_embeddings (default: a quarter of --context)");
  app->add_option("--sliding-window", o.sliding_window, "sliding window (mistral, qwen2; 0: none)");
  app->add_flag("--tie-embeddings", o.tie_word_embeddings, "share the embedding table with the LM head");
  app->add_option("--init-std", o.init_std, "standard deviation of the weights")->default_val(o.init_std);
  app->add_option("--seed", o.seed, "seed of the weights")->default_val(o.seed);
  app->add_option("--shard-size", o.max_shard_bytes, "largest shard in bytes (0: one file)")
      ->default_val(o.max_shard_bytes);
  return {app, [a] {
            lm::DemoModelOptions o = a->options;
            o.architecture = a->arch == "mistral" ? lm::Architecture::mistral
                             : a->arch == "qwen2" ? lm::Architecture::qwen2
                                                  : lm::Architecture::llama;
            o.dtype = a->dtype == "f32" ? lm::DType::f32 : a->dtype == "f16" ? lm::DType::f16 : lm::DType::bf16;
            if (a->llama3_rope_factor > 0) {
              lm::Llama3RopeScaling s;
              s.factor = a->llama3_rope_factor;
              s.original_max_position_embeddings = a->llama3_original_context != 0
                                                       ? a->llama3_original_context
                                                       : std::max<std::size_t>(1, o.max_position_embeddings / 4);
              o.rope_scaling = s;
            }
            const std::size_t bytes = lm::demo_model_weight_bytes(o);  // checks the options first
            {
              ProgressLine progress("writing", "MiB");
              o.progress = [&](std::size_t done, std::size_t total) { progress(done >> 20, total >> 20); };
              lm::write_demo_model(a->dir, o);
              o.progress = nullptr;
            }
            fmt::print("wrote {} ({} of {} weights)\n", a->dir, format_bytes(bytes), a->dtype);
            return 0;
          }};
}

}  // namespace nuvec::tool
