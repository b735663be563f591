#!/usr/bin/env python3
"""Encoding throughput, one thread, nuvec beside Hugging Face `tokenizers`
on the same corpus in one run: for each tokenizer, `rounds` alternating
rounds of nuvec_tokenize_bench (median of `repeats` encodes after a warm-up)
and tokenizers' Tokenizer.encode (the same), then the median of the rounds.
Also checks that both give the same ids for the corpus (same_ids: every id
of the last rounds' encodes equal, and as many).

`tokenizers` runs as its Python package, or with --node-modules DIR as its
official Node binding (the same Rust core; bench/text/hf_encode.mjs), as on a
machine without the Python package.

  python3 bench/text/make_corpus.py CORPUS.txt
  python3 bench/text/run_tokenize_bench.py --bench BUILD/bench/nuvec_tokenize_bench \
      --tokenizers DIR --corpus CORPUS.txt [--node-modules DIR] > result.json
"""
import argparse
import json
import os
import statistics
import subprocess
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))


def hf_round(tok, corpus, repeats):
    tok.encode(corpus, add_special_tokens=False)  # warm-up: fills its cache
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        ids = tok.encode(corpus, add_special_tokens=False).ids
        times.append(time.perf_counter() - t)
    return statistics.median(times), ids


def node_round(modules, path, corpus_path, repeats):
    ids_file = "/tmp/hf_ids.json"
    out = subprocess.run(["node", os.path.join(HERE, "hf_encode.mjs"), modules, path, corpus_path, str(repeats), ids_file],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return r["median_s"], json.load(open(ids_file)), r["version"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--tokenizers", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--names", default="llama2,llama3,qwen3,gpt2")
    ap.add_argument("--node-modules", help="run tokenizers' Node binding from this node_modules folder")
    a = ap.parse_args()
    if not a.node_modules:
        import tokenizers
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})  # one core for both, the child inherits it
    raw = open(a.corpus, "rb").read()  # no newline translation: the same bytes nuvec reads
    nbytes = len(raw)
    corpus = raw.decode("utf-8", "replace")  # invalid bytes as nuvec reads them (maximal subparts to U+FFFD)
    results = {"corpus_bytes": nbytes, "rows": [],
               "reference": "node binding" if a.node_modules else "python package"}
    for name in a.names.split(","):
        path = os.path.join(a.tokenizers, name, "tokenizer.json")
        tok = None if a.node_modules else tokenizers.Tokenizer.from_file(path)
        nuvec_s, hf_s = [], []
        ids_file = f"/tmp/nuvec_ids_{name}.json"
        for _ in range(a.rounds):
            out = subprocess.run([a.bench, path, a.corpus, str(a.repeats), "--ids", ids_file],
                                 check=True, capture_output=True, text=True).stdout
            nuvec_s.append(json.loads(out)["median_s"])
            if a.node_modules:
                s, hf_ids, results["tokenizers_version"] = node_round(a.node_modules, path, a.corpus, a.repeats)
            else:
                s, hf_ids = hf_round(tok, corpus, a.repeats)
                results["tokenizers_version"] = tokenizers.__version__
            hf_s.append(s)
        nuvec_ids = json.load(open(ids_file))
        first_diff = next((i for i, (x, y) in enumerate(zip(nuvec_ids, hf_ids)) if x != y), None)
        if first_diff is None and len(nuvec_ids) != len(hf_ids):
            first_diff = min(len(nuvec_ids), len(hf_ids))
        n, h = statistics.median(nuvec_s), statistics.median(hf_s)
        results["rows"].append({
            "tokenizer": name, "tokens_hf": len(hf_ids), "tokens_nuvec": len(nuvec_ids),
            "same_ids": first_diff is None, "first_difference": first_diff,
            "nuvec_mb_s": nbytes / n / 1e6, "tokenizers_mb_s": nbytes / h / 1e6, "ratio": h / n,
            "nuvec_rounds_s": nuvec_s, "tokenizers_rounds_s": hf_s,
        })
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
