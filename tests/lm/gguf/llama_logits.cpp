// Prints llama.cpp's logits for a fixed token sequence: every position's,
// as float32 [tokens][vocab] in a binary file. A comparison tool for the
// GGUF fixtures, built against llama.h of a llama.cpp checkout.
//   llama_logits model.gguf out.f32 threads token...
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s model.gguf out.f32 threads token...\n", argv[0]);
    return 2;
  }
  std::vector<llama_token> tokens;
  for (int i = 4; i < argc; ++i) tokens.push_back(std::atoi(argv[i]));
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 128;
  cp.n_batch = cp.n_ubatch = 128;
  cp.n_threads = cp.n_threads_batch = std::atoi(argv[3]);
  cp.type_k = GGML_TYPE_F32;  // an f32 KV cache, as nuvec's default
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn = false;
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  const int n = static_cast<int>(tokens.size());
  llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = n;
  if (llama_decode(ctx, batch) != 0) return 1;
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::FILE* f = std::fopen(argv[2], "wb");
  for (int i = 0; i < n; ++i) std::fwrite(llama_get_logits_ith(ctx, i), sizeof(float), vocab, f);
  std::fclose(f);
  std::printf("%s: %d tokens x %d logits\n", argv[2], n, vocab);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
