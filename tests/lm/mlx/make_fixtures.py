# Makes the MLX-quantized fixtures of tests/lm/mlx: a tiny random Llama
# (2 layers, hidden 128, 4 heads / 2 KV heads, intermediate 256, vocabulary
# 256, tied embeddings) quantized the way mlx.core.quantize's affine mode
# defines it, written as mlx-lm writes a checkpoint (config.json with its
# `quantization` entry; model.safetensors with, per linear layer and the
# embedding, `weight` U32 [rows, k * bits / 32] packed little-endian from
# the low bits, `scales` and `biases` [rows, k / group]), and beside each
# the same model dequantized by this script (w = scale * q + bias, in f32)
# as a plain f32 checkpoint: the reference nuvec's logits are held to.
#   python3 tests/lm/mlx/make_fixtures.py tests/lm/mlx/fixtures
# (numpy only; the committed fixtures were made with numpy 1.24.2).
import json
import os
import struct
import sys

import numpy as np

out = sys.argv[1]
L, H, HEADS, KV, FF, V = 2, 128, 4, 2, 256, 256
HD = H // HEADS
rng = np.random.default_rng(2026)


def config(quantization=None):
    c = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
        "intermediate_size": FF, "num_hidden_layers": L, "num_attention_heads": HEADS,
        "num_key_value_heads": KV, "head_dim": HD, "vocab_size": V, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "max_position_embeddings": 256, "tie_word_embeddings": True,
        "torch_dtype": "float16",
    }
    if quantization:
        c["quantization"] = quantization
        c["quantization_config"] = quantization
    return c


def quantize(w, bits, group):
    """mlx.core.quantize's affine mode: per group, scale = (max - min) / (2^bits - 1), bias = min."""
    rows, k = w.shape
    g = w.reshape(rows, k // group, group).astype(np.float32)
    lo, hi = g.min(axis=2), g.max(axis=2)
    scale = np.maximum((hi - lo) / (2 ** bits - 1), 1e-8)
    q = np.clip(np.round((g - lo[..., None]) / scale[..., None]), 0, 2 ** bits - 1).astype(np.uint32)
    q = q.reshape(rows, k)
    per = 32 // bits
    words = np.zeros((rows, k // per), dtype=np.uint32)
    for i in range(per):
        words |= q[:, i::per] << np.uint32(bits * i)
    return words, scale, lo


def dequantize(words, scales, biases, bits, group):
    """The published formula, from the stored values: w = scale * q + bias."""
    rows = words.shape[0]
    per = 32 // bits
    k = words.shape[1] * per
    q = np.zeros((rows, k), dtype=np.float32)
    for i in range(per):
        q[:, i::per] = (words >> np.uint32(bits * i)) & np.uint32(2 ** bits - 1)
    s = np.repeat(scales.astype(np.float32), group, axis=1)
    b = np.repeat(biases.astype(np.float32), group, axis=1)
    return s * q + b


def save(path, tensors):
    header, blobs, at = {}, [], 0
    codes = {np.float32: "F32", np.float16: "F16", np.uint32: "U32", np.uint16: "BF16"}
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        header[name] = {"dtype": codes[a.dtype.type], "shape": list(a.shape), "data_offsets": [at, at + a.nbytes]}
        blobs.append(a.tobytes())
        at += a.nbytes
        pad = (-at) % 64
        if pad:
            blobs.append(b"\0" * pad)
            at += pad
    text = json.dumps(header).encode()
    text += b" " * ((-(8 + len(text))) % 64)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def to_bf16(a):
    """bf16 bits of f32 values, rounded to nearest even (as MLX casts)."""
    u = a.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def weights():
    w = {"model.embed_tokens.weight": rng.standard_normal((V, H)) * 0.5, "model.norm.weight": 1 + 0.1 * rng.standard_normal(H)}
    for i in range(L):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(H)
        w[p + "post_attention_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(H)
        for name, shape in [("self_attn.q_proj", (HEADS * HD, H)), ("self_attn.k_proj", (KV * HD, H)),
                            ("self_attn.v_proj", (KV * HD, H)), ("self_attn.o_proj", (H, HEADS * HD)),
                            ("mlp.gate_proj", (FF, H)), ("mlp.up_proj", (FF, H)), ("mlp.down_proj", (H, FF))]:
            w[p + name + ".weight"] = rng.standard_normal(shape) * (1.0 / np.sqrt(shape[1]))
    return {k: v.astype(np.float32) for k, v in w.items()}


def write(name, bits, group, bf16, overrides):
    """overrides: module -> (bits, group) as mlx-lm's per-module entries."""
    base = weights()
    quant, plain = {}, {}
    for k, w in base.items():
        module = k[: -len(".weight")]
        if w.ndim != 2:
            quant[k] = w.astype(np.float16)
            plain[k] = w.astype(np.float16).astype(np.float32)
            continue
        b, g = overrides.get(module, (bits, group))
        words, s, lo = quantize(w, b, g)
        if bf16:
            s16, lo16 = to_bf16(s), to_bf16(lo)
            s_back, lo_back = from_bf16(s16), from_bf16(lo16)
        else:
            s16, lo16 = s.astype(np.float16), lo.astype(np.float16)
            s_back, lo_back = s16, lo16
        quant[k], quant[module + ".scales"], quant[module + ".biases"] = words, s16, lo16
        plain[k] = dequantize(words, s_back, lo_back, b, g)
    q = {"group_size": group, "bits": bits}
    for module, (b, g) in overrides.items():
        q[module] = {"group_size": g, "bits": b}
    for d, tensors, cfg in [(name, quant, config(q)), (name + "-dequantized", plain, config())]:
        os.makedirs(os.path.join(out, d), exist_ok=True)
        with open(os.path.join(out, d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=1)
        save(os.path.join(out, d, "model.safetensors"), tensors)
        print("wrote", os.path.join(out, d))


write("mlx-q4-g64", 4, 64, False, {"model.layers.1.mlp.down_proj": (8, 128)})
write("mlx-q8-g32-bf16", 8, 32, True, {"model.layers.0.self_attn.q_proj": (4, 128)})
