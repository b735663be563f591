# A tiny random-weight Llama model directory for the GGUF fixtures: one
# decoder layer (Llama, or Qwen2 with its q/k/v biases), hidden 256 (a whole K-quant super-block per row), GQA 4/2,
# separate lm_head, and a real SentencePiece tokenizer (trained here on text
# at hand, vocabulary 256) so that llama.cpp's convert_hf_to_gguf.py takes it.
# Weights are drawn wider than transformers' default (std 0.1, norms around
# 1) so that the logits spread out and top-2 gaps are meaningful.
import pathlib, sys

import sentencepiece as spm
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

arch = sys.argv[1]  # llama or qwen2
out = pathlib.Path(sys.argv[2])
text_files = sys.argv[3:]
out.mkdir(parents=True, exist_ok=True)

lines = []
for f in text_files:
    lines += [l.strip() for l in pathlib.Path(f).read_text(errors="ignore").splitlines() if l.strip()]
corpus = out / "corpus.txt"
corpus.write_text("\n".join(lines[:20000]))
spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(out / "tokenizer"), vocab_size=256,
                               model_type="bpe", character_coverage=1.0, bos_id=1, eos_id=2, unk_id=0,
                               hard_vocab_limit=False)
corpus.unlink()
(out / "tokenizer.vocab").unlink()

Config, Model = (LlamaConfig, LlamaForCausalLM) if arch == "llama" else (Qwen2Config, Qwen2ForCausalLM)
config = Config(vocab_size=256, hidden_size=256, intermediate_size=256, num_hidden_layers=1,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                     rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                     initializer_range=0.1, bos_token_id=1, eos_token_id=2, torch_dtype="float32")
torch.manual_seed(14)
model = Model(config)
with torch.no_grad():
    for name, p in model.named_parameters():
        if name.endswith("norm.weight"):
            p.copy_(1 + 0.2 * torch.randn_like(p))
        else:
            p.normal_(0, 0.1)
model.save_pretrained(out, safe_serialization=True)
print("model at", out, sum(p.numel() for p in model.parameters()), "parameters")
