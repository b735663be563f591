# A random-weight GGUF of a Llama shape in one of llama.cpp's types, written
# block by block with numpy alone (no llama.cpp, no gguf-py): for speed
# measurements where llama-quantize cannot be built. The quants are random
# bytes and every block's f16 scales small finite numbers, so each block is
# a valid block of its type with weights of magnitude ~0.01; the tensor
# types per file are the ones llama-quantize (not --pure) chooses:
#   Q4_K_M  Q4_K, with Q6_K for output.weight and for attn_v / ffn_down of
#           the layers llama.cpp's use_more_bits() picks
#   Q4_0    Q4_0, output.weight Q6_K
#   Q8_0    Q8_0 throughout
#   Q6_K    Q6_K throughout
#   BF16    bf16 throughout (as convert_hf_to_gguf.py --outtype bf16)
# norms f32 in every file. The files hold the same bytes per token as
# llama-quantize's of the same shape (only the values differ).
#   make_decode_gguf.py TYPE OUT.gguf [layers hidden ff heads kv_heads vocab]
# (default: the 1.1B shape of make_random_gguf.py: 22 2048 5632 32 4 32000)
import struct
import sys

import numpy as np

F32, Q4_0, Q8_0, Q4_K, Q6_K, BF16 = 0, 2, 8, 12, 14, 30
BLOCK = {Q4_0: (32, 18), Q8_0: (32, 34), Q4_K: (256, 144), Q6_K: (256, 210)}  # weights, bytes
# Byte offsets of each block's f16 scales (d, and Q4_K's dmin).
HALVES = {Q4_0: (0,), Q8_0: (0,), Q4_K: (0, 2), Q6_K: (208,)}
FILE_TYPE = {"Q4_0": 2, "Q8_0": 7, "Q4_K_M": 15, "Q6_K": 18, "BF16": 32}  # llama_ftype

kind, out = sys.argv[1], sys.argv[2]
if kind not in FILE_TYPE:
    sys.exit(f"make_decode_gguf.py: TYPE is one of {', '.join(FILE_TYPE)} (got {kind})")
layers, hidden, ff, heads, kv, vocab = (int(v) for v in (sys.argv[3:9] or [22, 2048, 5632, 32, 4, 32000]))
head_dim = hidden // heads
rng = np.random.default_rng(14)


def use_more_bits(i, n):  # llama.cpp's llama-quant.cpp
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def type_of(name, layer):
    if kind == "BF16":
        return BF16
    base = {"Q4_0": Q4_0, "Q8_0": Q8_0, "Q4_K_M": Q4_K, "Q6_K": Q6_K}[kind]
    if name == "output.weight" and base != Q8_0:
        return Q6_K
    if kind == "Q4_K_M" and name.endswith(("attn_v.weight", "ffn_down.weight")) and use_more_bits(layer, layers):
        return Q6_K
    return base


def tensor_bytes(ggml_type, rows, cols):
    if ggml_type == F32:
        return np.ones(rows * cols, dtype=np.float32).tobytes()
    if ggml_type == BF16:
        v = (rng.standard_normal(rows * cols, dtype=np.float32) * 0.02).view(np.uint32)
        return (v >> 16).astype(np.uint16).tobytes()
    per, size = BLOCK[ggml_type]
    blocks = rows * (cols // per)
    b = rng.integers(0, 256, size=(blocks, size), dtype=np.uint8)
    for at in HALVES[ggml_type]:
        scale = (rng.random(blocks, dtype=np.float32) * 0.5 + 0.5) * (2e-4 if ggml_type == Q4_K else 1e-3)
        b[:, at:at + 2] = scale.astype(np.float16).view(np.uint8).reshape(blocks, 2)
    return b.tobytes()


# (name, [ne0 (columns), ne1 (rows)], type)
tensors = [("token_embd.weight", [hidden, vocab], type_of("token_embd.weight", 0))]
for i in range(layers):
    p = f"blk.{i}."
    for name, rows, cols in (("attn_norm.weight", 1, hidden), ("attn_q.weight", heads * head_dim, hidden),
                             ("attn_k.weight", kv * head_dim, hidden), ("attn_v.weight", kv * head_dim, hidden),
                             ("attn_output.weight", hidden, heads * head_dim), ("ffn_norm.weight", 1, hidden),
                             ("ffn_gate.weight", ff, hidden), ("ffn_up.weight", ff, hidden),
                             ("ffn_down.weight", hidden, ff)):
        t = F32 if rows == 1 else type_of(p + name, i)
        tensors.append((p + name, [cols] if rows == 1 else [cols, rows], t))
tensors.append(("output_norm.weight", [hidden], F32))
tensors.append(("output.weight", [hidden, vocab], type_of("output.weight", layers)))


def gstr(s):
    e = s.encode()
    return struct.pack("<Q", len(e)) + e


def kv_u32(k, v):
    return gstr(k) + struct.pack("<II", 4, v)


def kv_f32(k, v):
    return gstr(k) + struct.pack("<If", 6, v)


def kv_str(k, v):
    return gstr(k) + struct.pack("<I", 8) + gstr(v)


kvs = [kv_str("general.architecture", "llama"), kv_str("general.name", f"random-llama-{kind}"),
       kv_u32("general.alignment", 32), kv_u32("general.file_type", FILE_TYPE[kind]),
       kv_u32("llama.context_length", 16384), kv_u32("llama.embedding_length", hidden),
       kv_u32("llama.block_count", layers), kv_u32("llama.feed_forward_length", ff),
       kv_u32("llama.attention.head_count", heads), kv_u32("llama.attention.head_count_kv", kv),
       kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5), kv_f32("llama.rope.freq_base", 10000.0),
       kv_u32("llama.rope.dimension_count", head_dim), kv_u32("llama.vocab_size", vocab)]


def size_of(dims, t):
    n = int(np.prod(dims))
    if t == F32:
        return 4 * n
    if t == BF16:
        return 2 * n
    per, size = BLOCK[t]
    return n // per * size


def up(n):
    return (n + 31) // 32 * 32


header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
offset = 0
for name, dims, t in tensors:
    header += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
    header += struct.pack("<IQ", t, offset)
    offset = up(offset + size_of(dims, t))
with open(out, "wb") as f:
    f.write(header + b"\0" * (up(len(header)) - len(header)))
    for name, dims, t in tensors:
        data = tensor_bytes(t, dims[1] if len(dims) == 2 else 1, dims[0])
        assert len(data) == size_of(dims, t), name
        f.write(data + b"\0" * (up(len(data)) - len(data)))
print(f"{out}: {kind}, {len(tensors)} tensors, {offset / 2**20:.1f} MiB of tensor data")
