#!/usr/bin/env python3
"""PyTorch's CPU bf16 prefill and decode on a nuvec checkpoint directory.

The peer side of bench/lm/run_amx_device.sh: transformers' LlamaForCausalLM
loads the same config.json and model.safetensors that `nuvec profile` runs
(bf16, no conversion), and for each thread count (torch.set_num_threads)
times, under torch.no_grad():

  * prefill: one forward pass over a prompt of --prompt-len random token ids
    with a fresh KV cache, logits of the last position only
    (logits_to_keep=1, as nuvec computes them), median of --repeats after one
    untimed pass;
  * decode: --max-new greedy steps after such a prefill, one token a step
    with the KV cache; tokens per second over the steps (--max-new 0: none).

With --gemm it also times F.linear (oneDNN inside PyTorch) on the models'
prompt-sized products, m x k x n with bf16 x and W, median of 9 after one.
Prints one JSON object per line. Needs torch and transformers; downloads
nothing.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F
import transformers
from transformers import AutoModelForCausalLM

transformers.utils.logging.set_verbosity_error()


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def prefill_seconds(model, ids):
    start = time.perf_counter()
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    return time.perf_counter() - start, out


def decode_rate(model, ids, steps):
    _, out = prefill_seconds(model, ids)
    past = out.past_key_values
    token = out.logits[:, -1:].argmax(-1)
    start = time.perf_counter()
    for _ in range(steps):
        out = model(input_ids=token, past_key_values=past, use_cache=True)
        past = out.past_key_values
        token = out.logits[:, -1:].argmax(-1)
    return steps / (time.perf_counter() - start)


def gemm_rates(threads, shapes):
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(1)
    for m, k, n in shapes:
        x = (torch.rand(m, k, generator=gen) * 2 - 1).to(torch.bfloat16)
        w = ((torch.rand(n, k, generator=gen) * 2 - 1) * 0.05).to(torch.bfloat16)
        F.linear(x, w)
        times = []
        for _ in range(9):
            start = time.perf_counter()
            F.linear(x, w)
            times.append(time.perf_counter() - start)
        print(json.dumps({"what": "torch F.linear bf16", "threads": threads, "m": m, "k": k, "n": n,
                          "gflops": 2 * m * k * n / median(times) / 1e9}), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--threads", type=int, nargs="+", default=[4, 16])
    p.add_argument("--prompt-len", type=int, default=512)
    p.add_argument("--max-new", type=int, default=16)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--gemm", action="store_true")
    a = p.parse_args()
    with torch.no_grad():
        if a.gemm:
            shapes = [(512, 1024, 1024), (512, 1024, 256), (512, 1024, 2816), (512, 2816, 1024),
                      (512, 2048, 2048), (512, 2048, 256), (512, 2048, 5632), (512, 5632, 2048)]
            for t in a.threads:
                gemm_rates(t, shapes)
            return
        start = time.perf_counter()
        model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16).eval()
        load = time.perf_counter() - start
        vocab = model.config.vocab_size
        ids = torch.randint(0, vocab, (1, a.prompt_len), generator=torch.Generator().manual_seed(1))
        for t in a.threads:
            torch.set_num_threads(t)
            prefill_seconds(model, ids)  # untimed
            seconds = median([prefill_seconds(model, ids)[0] for _ in range(a.repeats)])
            rate = decode_rate(model, ids, a.max_new) if a.max_new > 0 else float("nan")
            print(json.dumps({"what": "torch prefill", "model": a.model, "threads": t, "prompt": a.prompt_len,
                              "prefill_seconds": seconds, "prefill_tokens_per_s": a.prompt_len / seconds,
                              "decode_tokens_per_s": rate, "load_seconds": load,
                              "attention": getattr(model.config, "_attn_implementation", None),
                              "torch": torch.__version__, "transformers": transformers.__version__}),
                  flush=True)


if __name__ == "__main__":
    main()
