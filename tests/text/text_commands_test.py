#!/usr/bin/env python3
"""`nuvec tokenize` and `nuvec run --prompt` end to end, on a real tokenizer
(fetched by scripts/fetch_tokenizers.sh) and a tiny random-weight model with
its 32,000-token vocabulary: ids as the fixtures have them, text of ids,
JSON, the streamed text equal to the decoded ids, stopping at EOS, and clear
errors. Usage: text_commands_test.py NUVEC TOKENIZER_CACHE
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = ["--vocab", "32000", "--hidden", "64", "--intermediate", "128", "--layers", "1", "--heads", "4",
        "--kv-heads", "2", "--context", "256", "--init-std", "0.1"]


def run(nuvec, *args, check=True, stdin=None):
    p = subprocess.run([nuvec, *args], capture_output=True, input=stdin)
    if check and p.returncode != 0:
        raise AssertionError(f"nuvec {' '.join(args)} failed ({p.returncode}): {p.stderr.decode()}")
    return p


def main():
    nuvec, cache = sys.argv[1], sys.argv[2]
    llama2 = os.path.join(cache, "llama2")
    if not os.path.exists(os.path.join(llama2, "tokenizer.json")):
        print(f"{llama2} has no tokenizer.json: run scripts/fetch_tokenizers.sh", file=sys.stderr)
        return 1
    fixture = json.load(open(os.path.join(HERE, "fixtures", "llama2.json")))
    prose = next(c for c in fixture["cases"] if c["name"] == "prose")
    text = bytes.fromhex(prose["text_hex"]).decode()

    # tokenize: ids with and without special tokens, from --text, a file and stdin.
    out = run(nuvec, "tokenize", llama2, "--text", text).stdout.decode().strip()
    assert out == ",".join(map(str, prose["ids"])), out
    out = run(nuvec, "tokenize", llama2, "--no-special", stdin=text.encode()).stdout.decode().strip()
    assert out == ",".join(map(str, prose["ids_no_special"])), out
    j = json.loads(run(nuvec, "tokenize", llama2, "--text", text, "--json").stdout)
    assert j["ids"] == prose["ids"] and j["count"] == len(prose["ids"]) and j["tokens"][0] == "<s>", j
    out = run(nuvec, "tokenize", llama2, "--ids", ",".join(map(str, prose["ids"]))).stdout.decode()
    assert out == prose["decoded"] + "\n", out
    p = run(nuvec, "tokenize", llama2, "--ids", "1,32000", check=False)
    assert p.returncode == 1 and b"outside the vocabulary" in p.stderr, p.stderr

    work = tempfile.mkdtemp()
    try:
        model = os.path.join(work, "tiny")
        run(nuvec, "demo-model", model, *TINY)
        p = run(nuvec, "run", model, "--prompt", "Hello", check=False)
        assert p.returncode == 1 and b"--tokenizer" in p.stderr, p.stderr  # no tokenizer: says how to give one
        for f in ["tokenizer.json", "tokenizer_config.json"]:
            shutil.copy(os.path.join(llama2, f), model)

        # The streamed text is the decoded text of the generated ids.
        args = ["run", model, "--prompt", "The quick brown fox", "--max-new", "12", "--ignore-eos"]
        j = json.loads(run(nuvec, *args, "--json").stdout)
        assert j["prompt_ids"] == json.loads(run(nuvec, "tokenize", llama2, "--text", "The quick brown fox",
                                                 "--json").stdout)["ids"], j
        assert len(j["generated"]) == 12, j
        streamed = run(nuvec, *args).stdout.decode()
        assert streamed == j["text"] + "\n", (streamed, j["text"])
        ids_text = run(nuvec, "tokenize", llama2, "--ids", ",".join(map(str, j["generated"])),
                       "--no-special").stdout.decode()
        assert ids_text == j["text"] + "\n", (ids_text, j["text"])
        # The same from a prompt file and from stdin.
        prompt_file = os.path.join(work, "prompt.txt")
        with open(prompt_file, "w") as f:
            f.write("The quick brown fox")
        assert run(nuvec, *args[:2], "--prompt-file", prompt_file, *args[4:]).stdout.decode() == streamed
        assert run(nuvec, *args[:2], "--prompt", "-", *args[4:], stdin=b"The quick brown fox").stdout.decode() == streamed

        # Generation stops at EOS: make the greedy first token the EOS token.
        first = j["generated"][0]
        eos = json.loads(run(nuvec, "tokenize", llama2, "--ids", str(first), "--json").stdout)
        spelling = json.load(open(os.path.join(llama2, "tokenizer.json")))["model"]["vocab"]
        eos_text = next(k for k, v in spelling.items() if v == first)
        config = json.load(open(os.path.join(llama2, "tokenizer_config.json")))
        config["eos_token"] = eos_text
        with open(os.path.join(model, "tokenizer_config.json"), "w") as f:
            json.dump(config, f)
        stopped = json.loads(run(nuvec, *args[:-1], "--json").stdout)
        assert stopped["generated"] == [first] and stopped["stopped_at_eos"] and stopped["text"] == "", (stopped, eos)
        assert len(json.loads(run(nuvec, *args, "--json").stdout)["generated"]) == 12  # --ignore-eos runs on

        # A model directory with a SentencePiece tokenizer.model and no tokenizer.json.
        spm_model = os.path.join(work, "tiny-spm")
        shutil.copytree(model, spm_model)
        for f in ["tokenizer.json", "tokenizer_config.json"]:
            os.remove(os.path.join(spm_model, f))
        shutil.copy(os.path.join(cache, "sentencepiece-llama2", "tokenizer.model"), spm_model)
        spm = json.loads(run(nuvec, "run", spm_model, "--prompt", "The quick brown fox", "--max-new", "4",
                             "--ignore-eos", "--json").stdout)
        assert spm["prompt_ids"][:5] == [1, 450, 4996, 17354, 1701], spm  # <s> ▁The ▁quick ▁brown ▁fo(x)

        # The flags every model command shares; stderr is not a terminal here, so no progress line.
        p = run(nuvec, "run", model, "--prompt", "Hi", "--max-new", "2", "--threads", "1", "--mlock", "--quiet")
        assert b"prefill 1/" not in p.stderr and b"\r" not in p.stderr, p.stderr
        p = run(nuvec, "run", model, "--prompt", "Hi", "--max-new", "2", "--memory-limit", "64KiB", check=False)
        assert p.returncode == 1 and b"--memory-limit SIZE" in p.stderr and b"NUVEC_MEMORY_LIMIT" in p.stderr, p.stderr
        # A mistyped flag names the one meant.
        p = run(nuvec, "run", model, "--prompt", "Hi", "--max-nwe", "2", check=False)
        assert p.returncode == 2 and b"did you mean --max-new?" in p.stderr, p.stderr
        p = run(nuvec, "chat", model, "--tempreature=1", check=False)
        assert p.returncode == 2 and b"did you mean --temperature?" in p.stderr, p.stderr
    finally:
        shutil.rmtree(work)
    print("text commands: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
