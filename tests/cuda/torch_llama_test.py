#!/usr/bin/env python3
"""PyTorch on nuvec's allocator: a Llama-architecture model from transformers,
with random weights from a config (nothing is downloaded), runs prefill and
greedy generate() once on PyTorch's own CUDA allocator and once on nuvec's,
each in a fresh process; the tokens and the prefill logits must be identical.
On nuvec the run also checks the statistics (what is live is counted; the
peak is at least that) and the hard limit (an allocation past it raises with
nuvec's message and changes no statistic).

Needs a GPU, torch and transformers (run on the H200 machine):
    PYTHONPATH=build/release/python python3 tests/cuda/torch_llama_test.py [--json out.json]
Exit status 0 when every check passes.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

def model_run(allocator: str) -> dict:
    # Deterministic kernels: the same inputs give the same bits in both processes.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if allocator == "nuvec":
        import nuvec.torch as nuvec_torch

        nuvec_torch.install()  # before anything touches CUDA memory
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=8192, hidden_size=768, intermediate_size=2048, num_hidden_layers=6,
                         num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=1024,
                         pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    generator = torch.Generator().manual_seed(1)
    prompt = torch.randint(3, config.vocab_size, (4, 48), generator=generator).cuda()
    mask = torch.ones_like(prompt)

    with torch.no_grad():
        torch.cuda.synchronize()
        start = time.perf_counter()
        logits = model(prompt, attention_mask=mask).logits
        torch.cuda.synchronize()
        prefill_s = time.perf_counter() - start
        prefill_sha = hashlib.sha256(logits.float().cpu().numpy().tobytes()).hexdigest()
        del logits
        start = time.perf_counter()
        out = model.generate(prompt, attention_mask=mask, max_new_tokens=64, do_sample=False, min_new_tokens=64)
        torch.cuda.synchronize()
        generate_s = time.perf_counter() - start

    result = {"allocator": allocator, "tokens": out.tolist(), "prefill_sha256": prefill_sha,
              "prefill_s": prefill_s, "generate_s": generate_s, "checks": {}}
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    if allocator == "nuvec":
        stats = nuvec_torch.stats()
        result["stats"] = stats
        checks = result["checks"]
        checks["active counts the weights"] = stats["active"] >= params
        checks["peak >= active"] = stats["peak"] >= stats["active"]
        checks["peak_with_mapped >= peak"] = stats["peak_with_mapped"] >= stats["peak"]
        # The hard limit: 1 GiB past what is live now.
        before = nuvec_torch.stats()
        nuvec_torch.set_memory_limit(before["active"] + (1 << 30))
        before = nuvec_torch.stats()
        try:
            torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
            checks["an allocation past the limit raises"] = False
        except RuntimeError as e:
            checks["an allocation past the limit raises"] = "memory limit" in str(e)
            result["refusal_message"] = str(e).splitlines()[0][:300]
        checks["a refusal changes no statistic"] = nuvec_torch.stats() == before
        small = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")  # under the limit: still fine
        checks["under the limit still allocates"] = small.numel() == 1 << 20
    else:
        result["torch_max_allocated"] = torch.cuda.max_memory_allocated()
        result["torch_max_reserved"] = torch.cuda.max_memory_reserved()
    result["parameter_bytes"] = params
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", choices=["torch", "nuvec"], help=argparse.SUPPRESS)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    if args.child:
        print(json.dumps(model_run(args.child)))
        return 0

    runs = {}
    for allocator in ("torch", "nuvec"):
        # A fresh process each: the allocator is chosen before CUDA is touched.
        done = subprocess.run([sys.executable, __file__, "--child", allocator],
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{allocator} run failed:\n{done.stderr[-4000:]}", file=sys.stderr)
            return 1
        runs[allocator] = json.loads(done.stdout.strip().splitlines()[-1])

    torch_run, nuvec_run = runs["torch"], runs["nuvec"]
    checks = dict(nuvec_run["checks"])
    checks["generate tokens identical"] = torch_run["tokens"] == nuvec_run["tokens"]
    checks["prefill logits identical"] = torch_run["prefill_sha256"] == nuvec_run["prefill_sha256"]
    summary = {
        "checks": checks,
        "new_tokens": len(torch_run["tokens"][0]) - 48,
        "parameter_bytes": torch_run["parameter_bytes"],
        "torch": {k: torch_run[k] for k in ("prefill_s", "generate_s", "torch_max_allocated", "torch_max_reserved")},
        "nuvec": {"prefill_s": nuvec_run["prefill_s"], "generate_s": nuvec_run["generate_s"],
                  "stats": nuvec_run["stats"], "refusal_message": nuvec_run.get("refusal_message")},
    }
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    failed = [name for name, ok in checks.items() if not ok]
    for name in failed:
        print(f"FAILED: {name}", file=sys.stderr)
    print("PASSED" if not failed else f"{len(failed)} check(s) FAILED")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
