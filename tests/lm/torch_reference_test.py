#!/usr/bin/env python3
"""nuvec's forward pass against a reference written in plain PyTorch.

For each of a few tiny generated models (`nuvec demo-model`, one per
architecture, covering GQA, Llama 3 RoPE scaling, tied embeddings, q/k/v
biases, a sliding window, f32/f16/bf16 weights, sharded checkpoints and
prompts longer than one prefill chunk and one attention tile), `nuvec run`
generates greedily and dumps the logits of every token it is fed. This script
reads the same safetensors files itself, runs the Llama forward pass below in
float64 over the whole sequence (no KV cache, the full causal mask), and
checks that nuvec's logits match at every position and that every generated
token is the reference's argmax.

Usage: torch_reference_test.py NUVEC_BINARY. Exits 77 (skipped) without torch
(Debian: python3-torch; scripts/install-deps.sh installs it).
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skipped: {e} (install python3-torch)")
    sys.exit(77)

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    """{name: float64 tensor} from one .safetensors file, read without any library."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or name.startswith("__nuvec_padding_"):
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        t = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        out[name] = t.to(torch.float64)
    return out


def read_model(directory):
    weights = {}
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    for name in files:
        weights.update(read_safetensors(os.path.join(directory, name)))
    with open(os.path.join(directory, "config.json")) as f:
        return json.load(f), weights


def inverse_frequencies(cfg, head_dim):
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    s = cfg.get("rope_scaling")
    if not s or s.get("rope_type", s.get("type")) in (None, "default"):
        return inv
    factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old = s["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > old / low, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old / high) & (wavelen <= old / low)
    return torch.where(medium, blended, scaled)


def rms_norm(x, w, eps):
    return w * (x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def forward(cfg, w, ids):
    """Logits [len(ids), vocab] of a Llama-family decoder, in float64."""
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // heads
    eps = cfg["rms_norm_eps"]
    t = len(ids)
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]
    freqs = torch.outer(torch.arange(t, dtype=torch.float64), inverse_frequencies(cfg, hd))
    cos, sin = torch.cat((freqs, freqs), -1).cos(), torch.cat((freqs, freqs), -1).sin()
    qpos, kpos = torch.arange(t)[:, None], torch.arange(t)[None, :]
    visible = kpos <= qpos
    window = cfg.get("sliding_window")
    if window and (cfg["model_type"] == "mistral" or cfg.get("use_sliding_window")):
        visible &= (qpos - kpos) < window
    bias = lambda name: w.get(name, 0.0)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = h @ w[p + "self_attn.q_proj.weight"].T + bias(p + "self_attn.q_proj.bias")
        k = h @ w[p + "self_attn.k_proj.weight"].T + bias(p + "self_attn.k_proj.bias")
        v = h @ w[p + "self_attn.v_proj.weight"].T + bias(p + "self_attn.v_proj.bias")
        q = q.view(t, heads, hd).transpose(0, 1)
        k = k.view(t, kv_heads, hd).transpose(0, 1)
        v = v.view(t, kv_heads, hd).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(heads // kv_heads, dim=0)
        v = v.repeat_interleave(heads // kv_heads, dim=0)
        scores = (q @ k.transpose(1, 2)) / math.sqrt(hd)
        scores = scores.masked_fill(~visible, float("-inf"))
        out = (torch.softmax(scores, -1) @ v).transpose(0, 1).reshape(t, heads * hd)
        x = x + out @ w[p + "self_attn.o_proj.weight"].T + bias(p + "self_attn.o_proj.bias")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T)
        x = x + (gate * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


TINY = ["--vocab", "512", "--hidden", "64", "--intermediate", "176", "--layers", "2", "--context", "256",
        "--init-std", "0.15"]

# (name, demo-model arguments, extra `nuvec run` arguments, prompt length,
# tokens to generate, prefill chunk, tolerance). The tolerance is on |logit
# difference|; logits here are of order 1-5. With bf16 weights the kernels
# round prompt activations to bf16 where the CPU multiplies bf16 natively
# (kernels/linear.h, Precision::fast), which moves logits by about 1% of
# their size (4e-2 seen here): 1e-1 leaves room for another blocking of the
# sums; --exact computes in f32 and is held to 1e-4.
CASES = [
    ("llama-gqa-llama3rope-tied-f32",
     TINY + ["--heads", "4", "--kv-heads", "2", "--dtype", "f32", "--tie-embeddings",
             "--llama3-rope-factor", "8", "--llama3-original-context", "64", "--rope-theta", "10000"],
     [], 70, 12, 32, 1e-4),
    ("mistral-window8-bf16-sharded",
     TINY + ["--arch", "mistral", "--heads", "4", "--kv-heads", "1", "--dtype", "bf16",
             "--sliding-window", "8", "--shard-size", "60000"],
     [], 24, 10, 512, 1e-1),
    ("mistral-window8-bf16-exact",
     TINY + ["--arch", "mistral", "--heads", "4", "--kv-heads", "1", "--dtype", "bf16", "--sliding-window", "8"],
     ["--exact"], 24, 10, 512, 1e-4),
    ("qwen2-biases-f16-headdim32",
     TINY + ["--arch", "qwen2", "--heads", "4", "--kv-heads", "4", "--head-dim", "32", "--dtype", "f16"],
     [], 40, 10, 16, 1e-4),
]


def run_case(nuvec, tmp, name, args, run_args, prompt_len, max_new, chunk, tolerance):
    model = os.path.join(tmp, name)
    subprocess.run([nuvec, "demo-model", model] + args, check=True, stdout=subprocess.DEVNULL)
    logits_path = os.path.join(tmp, name + ".npy")
    out = subprocess.run([nuvec, "run", model, "--prompt-len", str(prompt_len), "--max-new", str(max_new),
                          "--prefill-chunk", str(chunk), "--dump-logits", logits_path, "--json"] + run_args,
                         check=True, capture_output=True, text=True)
    result = json.loads(out.stdout)
    generated = result["generated"]
    assert len(generated) == max_new, result

    cfg, w = read_model(model)
    # The prompt is `nuvec run`'s synthetic one, made here the same way.
    prompt = synthetic_prompt(prompt_len, cfg["vocab_size"])
    fed = prompt + generated[:-1]
    theirs = np.load(logits_path)
    assert theirs.shape == (len(fed), cfg["vocab_size"]), theirs.shape
    ours = forward(cfg, w, fed).numpy()
    diff = float(np.abs(theirs - ours).max())
    scale = float(np.abs(ours).max())
    steps = ours[prompt_len - 1:]
    reference_tokens = steps.argmax(-1).tolist()
    print(f"{name}: {len(fed)} positions, max |logit diff| {diff:.2e} (logits up to {scale:.2f}), "
          f"generated {generated}")
    assert diff < tolerance, f"{name}: max logit difference {diff} over {tolerance}"
    # Every generated token is the reference's argmax at its position (the
    # reference ran on the same tokens), except where the reference's two
    # best logits are closer than the tolerance: a tie that rounding may break
    # either way.
    for i, (token, best) in enumerate(zip(generated, reference_tokens)):
        top2 = np.sort(steps[i])[-2:]
        assert token == best or top2[1] - top2[0] < tolerance, \
            f"{name}: step {i}: nuvec chose {token}, the reference {best} by {top2[1] - top2[0]:.2e}"


def synthetic_prompt(length, vocab):
    """tools/lm_prompt.cc's synthetic_prompt: splitmix64 from a fixed state."""
    mask = (1 << 64) - 1
    state, ids = 0x6E75766563, []
    for _ in range(length):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        ids.append((z ^ (z >> 31)) % vocab)
    return ids


def main():
    nuvec = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="nuvec_lm_ref_") as tmp:
        for case in CASES:
            run_case(nuvec, tmp, *case)
    print("ok")


if __name__ == "__main__":
    main()
