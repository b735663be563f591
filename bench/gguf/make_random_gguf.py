# A random-weight f16 GGUF of a Llama shape, written with llama.cpp's gguf-py
# (for speed comparisons only: the weights are slices of one random pool).
#   make_random_gguf.py GGUF_PY_DIR OUT.gguf [layers hidden ff heads kv_heads vocab [tied]]
# (tied: 1 for no output.weight, the output reusing token_embd.weight)
import sys

sys.path.insert(0, sys.argv[1])
import gguf  # noqa: E402
import numpy as np  # noqa: E402

out = sys.argv[2]
layers, hidden, ff, heads, kv, vocab = (int(v) for v in (sys.argv[3:9] or [22, 2048, 5632, 32, 4, 32000]))
tied = len(sys.argv) > 9 and sys.argv[9] == "1"
head_dim = hidden // heads
rng = np.random.default_rng(14)
pool = (rng.standard_normal(1 << 26, dtype=np.float32) * 0.02).astype(np.float16)
cursor = [0]


def weights(rows, cols):
    n = rows * cols
    start = cursor[0] % (pool.size - n) if pool.size > n else 0
    cursor[0] += 7919 * 64 + n // 3
    if n <= pool.size:
        return pool[start:start + n].reshape(rows, cols)
    return np.resize(pool, n).reshape(rows, cols)


w = gguf.GGUFWriter(out, "llama")
w.add_name("random-llama")
w.add_context_length(16384)
w.add_embedding_length(hidden)
w.add_block_count(layers)
w.add_feed_forward_length(ff)
w.add_head_count(heads)
w.add_head_count_kv(kv)
w.add_layer_norm_rms_eps(1e-5)
w.add_rope_freq_base(10000.0)
w.add_rope_dimension_count(head_dim)
w.add_vocab_size(vocab)
w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
w.add_tokenizer_model("llama")
# Llama 2's layout: three specials, the 256 byte tokens, then pieces.
w.add_token_list(["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + [f"t{i}" for i in range(259, vocab)])
w.add_token_scores([0.0] * vocab)
w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (vocab - 259))
w.add_bos_token_id(1)
w.add_eos_token_id(2)
ones = np.ones(hidden, dtype=np.float32)
w.add_tensor("token_embd.weight", weights(vocab, hidden))
for i in range(layers):
    p = f"blk.{i}."
    w.add_tensor(p + "attn_norm.weight", ones)
    w.add_tensor(p + "attn_q.weight", weights(heads * head_dim, hidden))
    w.add_tensor(p + "attn_k.weight", weights(kv * head_dim, hidden))
    w.add_tensor(p + "attn_v.weight", weights(kv * head_dim, hidden))
    w.add_tensor(p + "attn_output.weight", weights(hidden, heads * head_dim))
    w.add_tensor(p + "ffn_norm.weight", ones)
    w.add_tensor(p + "ffn_gate.weight", weights(ff, hidden))
    w.add_tensor(p + "ffn_up.weight", weights(ff, hidden))
    w.add_tensor(p + "ffn_down.weight", weights(hidden, ff))
w.add_tensor("output_norm.weight", ones)
if not tied:
    w.add_tensor("output.weight", weights(vocab, hidden))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print("wrote", out)
