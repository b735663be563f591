#!/usr/bin/env python3
"""Renders each conversation of conversations.json with each tokenizer's
chat template through transformers' apply_chat_template(tokenize=False),
with and without the generation prompt, into chat_reference.json: the
reference that tests/text/render_jinja.py (python3-jinja2, as nuvec's tests
run it) is checked against. Run where transformers is installed:
  python3 tests/text/chat_reference.py --tokenizers DIR --out tests/text/fixtures/chat_transformers.json
"""
import argparse
import json
import os

import transformers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizers", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    conversations = json.load(open(os.path.join(here, "conversations.json")))
    out = {"reference": "transformers " + transformers.__version__, "renders": []}
    for name in ["llama3", "qwen3"]:
        tok = transformers.AutoTokenizer.from_pretrained(os.path.join(a.tokenizers, name))
        for c in conversations:
            for gen in [False, True]:
                try:
                    text = tok.apply_chat_template(c["messages"], tokenize=False, add_generation_prompt=gen)
                except Exception as e:  # noqa: BLE001
                    text = None
                    print(name, c["name"], "error:", e)
                out["renders"].append({"tokenizer": name, "conversation": c["name"],
                                       "add_generation_prompt": gen, "text": text})
    json.dump(out, open(a.out, "w"), ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
