#!/usr/bin/env python3
"""nuvec against Hugging Face transformers on the same checkpoints.

For each supported architecture (Llama, Mistral, Qwen2) this builds a small
model from a config with random weights (transformers' own initialisation,
then random biases and norm weights so that every parameter matters), saves it
with `save_pretrained` as safetensors in float32 and in bfloat16, and runs

  * nuvec (`nuvec run --dump-logits`, on the CPU): a 64-token prompt, then 64
    greedy decode steps, dumping the logits of every token it is fed;
  * transformers in float32 on the same checkpoint: one forward pass over the
    prompt and nuvec's generated tokens (the logits of every position), and
    its own greedy `generate` with its KV cache (the tokens).

It reports top-1 agreement at every prompt position and every decode step,
whether the greedy tokens are identical, and the largest absolute logit
difference. Targets: identical greedy tokens; max logit difference < 1e-3 for
float32 weights, < 5e-2 for bfloat16. bf16 checkpoints run twice in nuvec: as
it runs by default (prompt activations rounded to bf16 where the CPU has
AVX-512 BF16) and with --exact (f32 products).

Usage: compare_transformers.py --nuvec PATH/TO/nuvec [--json OUT.json]
Needs torch, transformers and numpy; downloads nothing.
"""
import argparse
import inspect
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

transformers.utils.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

PROMPT = 64
DECODE_STEPS = 64
SMALL = dict(vocab_size=1000, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=512,
             rms_norm_eps=1e-5, initializer_range=0.05)


def rope(config_class, theta, llama3=None):
    """RoPE arguments in the spelling this transformers version takes."""
    params = inspect.signature(config_class.__init__).parameters
    if "rope_parameters" in params:  # transformers 5
        p = {"rope_type": "llama3" if llama3 else "default", "rope_theta": theta}
        p.update(llama3 or {})
        return {"rope_parameters": p}
    out = {"rope_theta": theta}
    if llama3:
        out["rope_scaling"] = dict(rope_type="llama3", **llama3)
    return out


def configs():
    from transformers import LlamaConfig, MistralConfig, Qwen2Config
    llama3 = dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=64)
    return [
        ("llama", "Llama, GQA, Llama 3 RoPE scaling",
         LlamaConfig(**SMALL, **rope(LlamaConfig, 500000.0, llama3), tie_word_embeddings=False)),
        ("mistral", "Mistral, GQA, sliding window 48",
         MistralConfig(**SMALL, **rope(MistralConfig, 10000.0), sliding_window=48, tie_word_embeddings=False)),
        ("qwen2", "Qwen2, q/k/v biases, tied embeddings",
         Qwen2Config(**SMALL, **rope(Qwen2Config, 1000000.0), tie_word_embeddings=True, use_sliding_window=False)),
    ]


def build_model(config, seed):
    # No end-of-sequence token: generate() must not stop early, nor be told
    # to avoid one (min_new_tokens would change the logits it picks from).
    config.bos_token_id = config.eos_token_id = config.pad_token_id = None
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.05)  # transformers zero-initialises biases
            elif "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))  # and sets norms to one
    return model


def load_reference(directory):
    try:
        model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32)
    except TypeError:  # transformers 4.x
        model = AutoModelForCausalLM.from_pretrained(directory, torch_dtype=torch.float32)
    return model.eval()


def run_nuvec(nuvec, directory, prompt, extra):
    with tempfile.NamedTemporaryFile(suffix=".npy") as f:
        t = time.perf_counter()
        out = subprocess.run([nuvec, "run", directory, "--prompt-ids", ",".join(map(str, prompt)),
                              "--max-new", str(DECODE_STEPS + 1), "--dump-logits", f.name, "--json"] + extra,
                             check=True, capture_output=True, text=True)
        seconds = time.perf_counter() - t
        return json.loads(out.stdout)["generated"], np.load(f.name), seconds


def compare(reference, nuvec_tokens, nuvec_logits, prompt, hf_tokens):
    fed = prompt + nuvec_tokens[:-1]  # the tokens nuvec was fed, one logits row each
    with torch.no_grad():
        ref = reference(torch.tensor([fed])).logits[0].float().numpy()
    diff = np.abs(nuvec_logits - ref)
    agree = nuvec_logits.argmax(-1) == ref.argmax(-1)
    # Where the top-1 differs, how close the reference's two best were: a
    # margin below the logit difference is a near tie that any rounding flips.
    top2 = np.sort(ref, -1)[:, -2:]
    margins = (top2[:, 1] - top2[:, 0])[~agree]
    return {
        "top1_flip_margins": [float(m) for m in margins],
        "median_top1_margin": float(np.median(top2[:, 1] - top2[:, 0])),
        "prefill_top1": int(agree[:PROMPT].sum()),
        "decode_top1": int(agree[PROMPT:].sum()),
        "greedy_identical": nuvec_tokens == hf_tokens,
        "first_divergence": next((i for i, (a, b) in enumerate(zip(nuvec_tokens, hf_tokens)) if a != b), None),
        "max_diff_prefill": float(diff[:PROMPT].max()),
        "max_diff_decode": float(diff[PROMPT:].max()),
        "logit_scale": float(np.abs(ref).max()),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nuvec", required=True)
    ap.add_argument("--json")
    args = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, numpy {np.__version__}, "
          f"{platform.machine()} with {os.cpu_count()} CPUs; nuvec: {args.nuvec}")
    print(f"{PROMPT}-token prompt, {DECODE_STEPS} greedy decode steps; transformers in float32 on the CPU\n")
    rng = np.random.default_rng(0)
    rows, failures = [], []
    with tempfile.TemporaryDirectory(prefix="nuvec_vs_hf_") as tmp:
        for seed, (name, what, config) in enumerate(configs()):
            model = build_model(config, seed)
            prompt = rng.integers(0, config.vocab_size, PROMPT).tolist()
            for dtype in ("f32", "bf16"):
                directory = os.path.join(tmp, f"{name}-{dtype}")
                (model if dtype == "f32" else model.to(torch.bfloat16)).save_pretrained(directory)
                model.float()
                reference = load_reference(directory)
                with torch.no_grad():
                    generated = reference.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, PROMPT,
                                                   dtype=torch.long), max_new_tokens=DECODE_STEPS + 1,
                                                   do_sample=False)
                hf_tokens = generated[0, PROMPT:].tolist()
                for mode, extra in ([("default", [])] if dtype == "f32"
                                    else [("default", []), ("exact", ["--exact"])]):
                    tokens, logits, seconds = run_nuvec(args.nuvec, directory, prompt, extra)
                    r = compare(reference, tokens, logits, prompt, hf_tokens)
                    limit = 1e-3 if dtype == "f32" else 5e-2
                    r.update(arch=name, what=what, dtype=dtype, nuvec_mode=mode, limit=limit, nuvec_seconds=seconds,
                             files=sorted(os.listdir(directory)))
                    worst = max(r["max_diff_prefill"], r["max_diff_decode"])
                    r["meets_targets"] = bool(r["greedy_identical"] and worst < limit)
                    rows.append(r)
                    if not r["meets_targets"]:
                        failures.append(f"{name} {dtype} {mode}")
                    print(f"{name:8} {dtype:5} nuvec {mode:8} top-1 prefill {r['prefill_top1']}/{PROMPT} "
                          f"decode {r['decode_top1']}/{DECODE_STEPS}  greedy tokens "
                          f"{'identical' if r['greedy_identical'] else 'differ from ' + str(r['first_divergence'])}"
                          f"  max |diff| prefill {r['max_diff_prefill']:.2e} decode {r['max_diff_decode']:.2e} "
                          f"(logits up to {r['logit_scale']:.2f}; target < {limit:g})  "
                          f"{'met' if r['meets_targets'] else 'MISSED'}")
                    if r["top1_flip_margins"]:
                        print(f"{'':23}top-1 differs where the reference's best two logits are "
                              f"{', '.join(f'{m:.1e}' for m in r['top1_flip_margins'])} apart "
                              f"(median margin {r['median_top1_margin']:.1e})")
            print(f"         ({what}; files: {', '.join(rows[-1]['files'])})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "rows": rows}, f,
                      indent=2)
    print("\nall targets met" if not failures else f"\ntargets missed: {', '.join(failures)}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
