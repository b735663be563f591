#!/usr/bin/env python3
"""Records PyTorch CUDA memory snapshots of real workloads, for nuvec's replay.

    record_torch_traces.py WORKLOAD --out DIR [--max-entries N]

WORKLOAD is one of:

  llama_generate    a Llama-architecture model (random weights, bf16) is
                    moved to the GPU, then generate() prefills 512 tokens and
                    decodes 64 new ones (greedy, KV cache)
  llama_train_step  the same architecture in float32: 3 training steps of
                    forward, backward and AdamW on batches of 4 x 512 tokens

Each run writes DIR/WORKLOAD.pickle.gz: the dictionary of
torch.cuda.memory._snapshot() (what _dump_snapshot() pickles), gzip-compressed,
plus a key 'nuvec_marks': the phases ([{'name', 'time_us'}]) on the
snapshot's own clock, which tools/trace_from_torch.py turns into mark events.
Recording starts before the model reaches the GPU, so every block the
workload allocates is in the trace. No weights are downloaded: models are built
from a config. Needs torch and transformers, and a CUDA device.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import os
import pickle
import sys
import time

import torch

# A probe allocation of this odd size ties the recorder's clock to the one
# PyTorch stamps on trace entries (time_us); see Marks.
_PROBE_BYTES = 12347


def llama_config(**overrides):
    from transformers import LlamaConfig
    cfg = dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
               num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
               max_position_embeddings=2048, pad_token_id=0, bos_token_id=1,
               eos_token_id=2, tie_word_embeddings=False)
    cfg.update(overrides)
    return LlamaConfig(**cfg)


class Marks:
    """Phase starts, stamped with a host clock and moved onto time_us's clock.

    The offset between the two clocks is read from a probe: the host time just
    before a probe allocation, against the time_us PyTorch stamps on it.
    """

    def __init__(self):
        self.host = []  # (name, host microseconds)
        self.probe_host_us = None

    @staticmethod
    def now_us() -> int:
        return time.time_ns() // 1000

    def probe(self):
        torch.cuda.synchronize()
        self.probe_host_us = self.now_us()
        torch.empty(_PROBE_BYTES, dtype=torch.uint8, device="cuda")  # freed at once

    def mark(self, name: str):
        torch.cuda.synchronize()
        self.host.append((name, self.now_us()))
        print(f"record: phase {name}", flush=True)

    def on_trace_clock(self, trace: list) -> list:
        probe = next((e for e in trace if e.get("action") == "alloc"
                      and e.get("size") == _PROBE_BYTES), None)
        if probe is None or "time_us" not in probe:
            print("record: probe allocation not found; marks keep host time", flush=True)
            offset = 0
        else:
            offset = int(probe["time_us"]) - self.probe_host_us
        print(f"record: time_us - host clock = {offset} us", flush=True)
        return [{"name": n, "time_us": t + offset, "device": 0} for n, t in self.host]


def llama_generate(marks: Marks, args):
    from transformers import LlamaForCausalLM
    torch.manual_seed(0)
    model = LlamaForCausalLM(llama_config()).eval()  # built on the CPU, not traced
    prompt = torch.randint(3, 32000, (1, args.prompt_tokens))

    start_recording(args)
    marks.probe()
    marks.mark("load")
    model = model.to(device="cuda", dtype=torch.bfloat16)
    input_ids = prompt.cuda()
    attention_mask = torch.ones_like(input_ids)

    try:
        from transformers.generation.streamers import BaseStreamer
    except ImportError:
        BaseStreamer = object

    class PhaseStreamer(BaseStreamer):
        """generate() calls put() with the prompt, then once per new token."""
        def __init__(self):
            self.calls = 0

        def put(self, _ids):
            self.calls += 1
            if self.calls == 2:  # the prefill has produced the first token
                marks.mark("decode")

        def end(self):
            pass

    marks.mark("prefill")
    with torch.inference_mode():
        out = model.generate(input_ids=input_ids, attention_mask=attention_mask,
                             max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                             do_sample=False, use_cache=True, pad_token_id=0,
                             streamer=PhaseStreamer())
    torch.cuda.synchronize()
    marks.mark("free")
    print(f"record: generated {out.shape[1] - input_ids.shape[1]} tokens", flush=True)
    del out, input_ids, attention_mask, model
    gc.collect()


def llama_train_step(marks: Marks, args):
    from transformers import LlamaForCausalLM
    torch.manual_seed(0)
    model = LlamaForCausalLM(llama_config()).train()  # float32, built on the CPU
    batches = [torch.randint(3, 32000, (args.batch, args.prompt_tokens))
               for _ in range(args.steps)]

    start_recording(args)
    marks.probe()
    marks.mark("load")
    model = model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step, batch in enumerate(batches, 1):
        marks.mark(f"fwd {step}")
        ids = batch.cuda()
        loss = model(input_ids=ids, labels=ids).loss
        marks.mark(f"bwd {step}")
        loss.backward()
        marks.mark(f"adamw {step}")
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(f"record: step {step} loss {loss.item():.3f}", flush=True)
        del loss, ids
    torch.cuda.synchronize()
    marks.mark("free")
    del opt, model
    gc.collect()


WORKLOADS = {"llama_generate": llama_generate, "llama_train_step": llama_train_step}


def start_recording(args):
    # No stack traces (context=None): the converter needs none, and they make
    # the pickle hundreds of times larger.
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                             max_entries=args.max_entries)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workload", choices=sorted(WORKLOADS))
    p.add_argument("--out", required=True, help="folder for WORKLOAD.pickle.gz")
    p.add_argument("--max-entries", type=int, default=2_000_000)
    p.add_argument("--prompt-tokens", type=int, default=512)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=3)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("record: no CUDA device", file=sys.stderr)
        return 1

    import transformers
    print(f"record: {args.workload} on {torch.cuda.get_device_name()} with torch "
          f"{torch.__version__}, transformers {transformers.__version__}", flush=True)
    marks = Marks()
    t = time.perf_counter()
    WORKLOADS[args.workload](marks, args)
    torch.cuda.synchronize()
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    trace = snapshot["device_traces"][torch.cuda.current_device()]
    snapshot["nuvec_marks"] = marks.on_trace_clock(trace)
    snapshot["nuvec_recording"] = {
        "workload": args.workload, "torch": str(torch.__version__),
        "transformers": str(transformers.__version__), "gpu": torch.cuda.get_device_name(),
        "max_entries": args.max_entries, "argv": sys.argv[1:],
        "date": time.strftime("%Y-%m-%d", time.gmtime())}
    if trace and "time_us" in trace[0]:
        print(f"record: the trace spans {(trace[-1]['time_us'] - trace[0]['time_us']) / 1e6:.3f} "
              f"s of time_us; the host saw {(marks.host[-1][1] - marks.probe_host_us) / 1e6:.3f} "
              "s from the probe to the last mark", flush=True)
    if len(trace) >= args.max_entries:
        print(f"record: WARNING the trace filled max_entries ({args.max_entries}); the "
              "oldest entries are lost", flush=True)
    print(f"record: {len(trace)} entries in {time.perf_counter() - t:.1f} s; "
          f"max_memory_allocated {torch.cuda.max_memory_allocated()} bytes, "
          f"max_memory_reserved {torch.cuda.max_memory_reserved()} bytes; "
          f"snapshot keys {sorted(snapshot)}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{args.workload}.pickle.gz")
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                 mtime=0) as f:
        pickle.dump(snapshot, f, protocol=4)
    print(f"record: wrote {path} ({os.path.getsize(path)} bytes)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
