#!/usr/bin/env python3
"""Writes the tokenizer benchmark's corpus: this checkout's README.md,
docs/*.md and C++ sources (src/, include/, tools/; sorted by path), then the
texts of tests/text/corpus.json (prose, code, numbers, emoji, CJK, mixed
scripts, whitespace runs, special tokens, invalid UTF-8 as raw bytes).
Both tokenizers read this one file, so they encode the same bytes.

  python3 bench/text/make_corpus.py OUT.txt
"""
import glob
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def main():
    parts = []
    files = ["README.md"] + sorted(glob.glob("docs/*.md", root_dir=ROOT))
    for d in ["src", "include", "tools"]:
        files += sorted(p for p in glob.glob(f"{d}/**/*", root_dir=ROOT, recursive=True) if p.endswith((".cc", ".h")))
    for f in files:
        with open(os.path.join(ROOT, f), "rb") as src:
            parts.append(src.read())
    for c in json.load(open(os.path.join(ROOT, "tests", "text", "corpus.json"), encoding="utf-8")):
        parts.append(bytes.fromhex(c["hex"]) if "hex" in c else c["text"].encode())
    data = b"\n".join(parts)
    with open(sys.argv[1], "wb") as out:
        out.write(data)
    print(f"{len(data)} bytes from {len(files)} files and the text corpus", file=sys.stderr)


if __name__ == "__main__":
    main()
