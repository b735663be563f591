#!/usr/bin/env python3
"""PyTorch's side of the LM runtime on the GPU: transformers' LlamaForCausalLM on the same checkpoint
directory that `nuvec profile --device cuda` runs (config.json and model.safetensors, bf16 as stored,
attention through SDPA), on GPU 0, batch 1, under torch.no_grad(), PyTorch's own caching allocator.

Memory, phase by phase as `nuvec profile` reports it (load, then a prefill of --prompt tokens, then
--decode greedy steps after it, with torch.cuda.reset_peak_memory_stats() between the phases):
max_memory_allocated and max_memory_reserved of each phase. Speed, after that, warm, as llama-bench
and nuvec_gpu_session_bench measure: prefill of --prompt tokens with a fresh KV cache (logits of the
last position only, as nuvec computes them), and --decode greedy steps from a one-token context, one
token a step with the KV cache; medians of --repetitions after one untimed pass.
Prints one JSON object. Needs torch and transformers; downloads nothing.

    python3 bench/cuda/torch_sdpa_bench.py MODEL_DIR [--prompt 512] [--decode 128] [--repetitions 5]
"""
import argparse
import json
import statistics
import time

import torch
import transformers
from transformers import AutoModelForCausalLM

transformers.utils.logging.set_verbosity_error()


def memory():
    return {"max_allocated": torch.cuda.max_memory_allocated(), "max_reserved": torch.cuda.max_memory_reserved()}


def prefill(model, ids):
    return model(input_ids=ids, use_cache=True, logits_to_keep=1)


def decode(model, out, steps):
    """`steps` greedy steps after a forward pass whose output is `out`; the last token's id."""
    past = out.past_key_values
    token = out.logits[:, -1:].argmax(-1)
    for _ in range(steps):
        out = model(input_ids=token, past_key_values=past, use_cache=True)
        past = out.past_key_values
        token = out.logits[:, -1:].argmax(-1)
    return int(token.item())  # waits for the GPU, as nuvec's step waits for its token


def timed(fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    result = fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start, result


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--decode", type=int, default=128)
    p.add_argument("--repetitions", type=int, default=5)
    a = p.parse_args()
    if a.prompt < 1 or a.decode < 1 or a.repetitions < 1:
        raise SystemExit("--prompt, --decode and --repetitions take whole numbers of at least 1")

    torch.cuda.init()
    torch.cuda.reset_peak_memory_stats()
    load_s, model = timed(lambda: AutoModelForCausalLM.from_pretrained(
        a.model, dtype=torch.bfloat16, attn_implementation="sdpa", device_map="cuda").eval())
    phases = {"load": dict(memory(), seconds=load_s)}
    vocab = model.config.vocab_size
    ids = torch.tensor([[(i * 7919 + 1) % vocab for i in range(a.prompt)]], device="cuda")
    one = ids[:, :1]
    with torch.no_grad():
        torch.cuda.reset_peak_memory_stats()
        s, out = timed(lambda: prefill(model, ids))
        phases["prefill"] = dict(memory(), seconds=s)
        torch.cuda.reset_peak_memory_stats()
        s, _ = timed(lambda: decode(model, out, a.decode))
        phases["decode"] = dict(memory(), seconds=s)
        del out

        pp, tg = [], []
        for r in range(a.repetitions + 1):  # the first of each is untimed
            s, out = timed(lambda: prefill(model, ids))
            del out
            if r:
                pp.append(a.prompt / s)
            out = prefill(model, one)
            s, _ = timed(lambda: decode(model, out, a.decode))
            del out
            if r:
                tg.append(a.decode / s)
    print(json.dumps({
        "model": a.model, "torch": torch.__version__, "transformers": transformers.__version__,
        "gpu": torch.cuda.get_device_name(0), "attention": getattr(model.config, "_attn_implementation", None),
        "prompt": a.prompt, "decode": a.decode, "repetitions": a.repetitions, "phases": phases,
        "prefill_tokens_per_s": statistics.median(pp), "decode_tokens_per_s": statistics.median(tg),
        "prefill_runs": pp, "decode_runs": tg}, indent=2))


if __name__ == "__main__":
    main()
