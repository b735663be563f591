#!/usr/bin/env python3
"""`nuvec chat TOKENIZER --render MESSAGES.json [--add-generation-prompt]`
against Debian's python3-jinja2 rendering the same chat template as
transformers' apply_chat_template(..., tokenize=False) sets it up
(ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, its
tojson and raise_exception): every conversation of conversations.json, with
and without the generation prompt, for each real tokenizer with a template
(fetched by scripts/fetch_tokenizers.sh), the templates that the GGUF files
of Llama 2, Llama 3, Mistral, Mixtral and Qwen2 carry (as
@huggingface/ollama-utils records them, fetched by the same script), plus
templates of our own that use the rest of the subset. The strings must be
equal; where jinja2 raises (a template's raise_exception), nuvec must fail
too, with the template's message.

Usage: chat_template_test.py NUVEC TOKENIZER_CACHE
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))

# Templates of our own, for the constructs the real ones do not use.
OWN_TEMPLATES = {
    "subset": (
        "{#- a comment -#}\n"
        "{%- set ns = namespace(count=0, seen=[]) -%}\n"
        "{%- for m in messages if m.role != 'system' -%}\n"
        "  {{ loop.index }}/{{ loop.length }} {{ m.role }}{% if loop.last %}.{% else %}, {% endif %}\n"
        "{%- else -%}\n"
        "  nothing\n"
        "{%- endfor -%}\n"
        "{%- for k, v in {'x': 1, 'y': 2}.items() %} {{ k }}={{ v }}{% endfor %}\n"
        "{% if messages[0].role == 'system' %}{{ raise_exception('no system messages') }}{% endif %}"
    ),
    "features": (
        "{{ bos_token }}{% for message in messages %}\n"
        "  {% if loop.first %}[{{ loop.length }} messages]{% endif %}\n"
        "  {%- set ns = namespace(n=loop.index) %}\n"
        "  {{ ns.n }}/{{ loop.revindex0 }} {{ message.role | upper }}: {{ message['content'] | trim | replace('o', '0') }}"
        "{{ ' (' ~ (message.content | length) ~ ' chars)' }}\n"
        "  {%- if message.role == 'user' and 'Good' in message.content %} greeting{% elif loop.index0 % 2 == 0 %} even"
        "{% else %} odd{% endif %}\n"
        "{% endfor %}{{ messages | map_missing | default('-') if false else (messages | length) * 2 }}"
        "{{ messages[-1].content[:5] }}|{{ messages[::-1][0].role }}|{{ [1, 2, 3] | join(', ') }}|"
        "{{ {'a': 1, 'b': [true, none]} | tojson }}|{{ 'x,y,,z'.split(',') }}|{{ '  pad  '.strip() }}|"
        "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ 1.5 + 1 }} {{ 10 / 4 }}|{{ range(3) | list }}|"
        "{{ messages[0].get('missing', 'fallback') }}|{{ undefined_name is defined }}|{{ none is none }}|"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
        "{# it's a comment, with }} and \" in it #}{{ \"{{\\\"x\\\": 1}} %}\" ~ '}}' }}"
    ),
}


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


# The chat templates of GGUF files (tokenizer.chat_template), by the Ollama
# library entry that @huggingface/ollama-utils records them under, and the
# tokenizer folder whose BOS/EOS they are rendered with.
GGUF_TEMPLATES = {
    "llama2": ("library/llama2:7b", "llama2"),
    "llama3-gguf": ("library/llama3:8b", "llama3"),
    "mistral": ("library/mistral:7b-instruct-fp16", "llama2"),
    "mixtral": ("library/mixtral:8x7b", "llama2"),
    "mistral-small": ("library/mistral-small:24b", "llama2"),
    "mistral-large": ("library/mistral-large:123b", "llama2"),
    "qwen2": ("library/qwen2:0.5b", "qwen3"),
    "qwen2.5": ("library/qwen2.5:0.5b", "qwen3"),
}


def gguf_templates(cache):
    path = os.path.join(cache, "chat-templates", "chat-template-automap.ts")
    text = open(path, encoding="utf-8").read()
    # Each entry: model: "library/...", gguf: "<a JavaScript string literal>".
    found = {m.group(1): m.group(2) for m in re.finditer(r'model: "([^"]+)",\s*gguf: ("(?:[^"\\]|\\.)*")', text)}
    out = {}
    for label, (entry, tokenizer) in GGUF_TEMPLATES.items():
        if entry not in found:
            raise SystemExit(f"{path} has no template for {entry}: rerun scripts/fetch_tokenizers.sh")
        out[label] = (json.loads(found[entry]), tokenizer)
    return out


def config_token(config, key):
    v = config.get(key)
    if isinstance(v, dict):
        return v.get("content", "")
    return v or ""


def main():
    nuvec, cache = sys.argv[1], sys.argv[2]
    conversations = json.load(open(os.path.join(HERE, "conversations.json")))
    env = environment()
    cases = []  # (label, template, bos, eos, tokenizer dir)
    for name in ["llama3", "qwen3"]:
        d = os.path.join(cache, name)
        if not os.path.exists(os.path.join(d, "tokenizer.json")):
            print(f"{d} has no tokenizer.json: run scripts/fetch_tokenizers.sh", file=sys.stderr)
            return 1
        config = json.load(open(os.path.join(d, "tokenizer_config.json")))
        cases.append((name, config["chat_template"], config_token(config, "bos_token"), config_token(config, "eos_token"), d, None))
    work = tempfile.mkdtemp()
    for label, (text, tokenizer_name) in gguf_templates(cache).items():
        path = os.path.join(work, label + ".jinja")
        with open(path, "w") as f:
            f.write(text)
        d = os.path.join(cache, tokenizer_name)
        config = json.load(open(os.path.join(d, "tokenizer_config.json")))
        cases.append((label, text, config_token(config, "bos_token"), config_token(config, "eos_token"), d, path))
    for label, text in OWN_TEMPLATES.items():
        path = os.path.join(work, label + ".jinja")
        with open(path, "w") as f:
            f.write(text)
        config = json.load(open(os.path.join(cache, "llama2", "tokenizer_config.json")))
        cases.append((label, text, config_token(config, "bos_token"), config_token(config, "eos_token"),
                      os.path.join(cache, "llama2"), path))
    failures = 0
    checked = 0
    for label, template, bos, eos, tokenizer, template_file in cases:
        compiled = env.from_string(template)
        for c in conversations:
            messages_path = os.path.join(work, c["name"] + ".json")
            with open(messages_path, "w") as f:
                json.dump(c["messages"], f, ensure_ascii=False)
            for gen in [False, True]:
                refusal = None
                try:
                    want = compiled.render(messages=c["messages"], tools=None, documents=None,
                                           add_generation_prompt=gen, bos_token=bos, eos_token=eos)
                except jinja2.exceptions.TemplateError as e:
                    want, refusal = None, str(e)
                cmd = [nuvec, "chat", tokenizer, "--render", messages_path]
                if gen:
                    cmd.append("--add-generation-prompt")
                if template_file:
                    cmd += ["--template", template_file]
                r = subprocess.run(cmd, capture_output=True)
                got = r.stdout.decode() if r.returncode == 0 else None
                checked += 1
                if want is None and got is None and refusal not in r.stderr.decode():
                    failures += 1
                    print(f"FAIL {label}/{c['name']}: nuvec refused without the template's message {refusal!r}: "
                          f"{r.stderr.decode().strip()}")
                if got != want:
                    failures += 1
                    print(f"FAIL {label}/{c['name']} generation_prompt={gen}: rc={r.returncode} "
                          f"{r.stderr.decode().strip()}\n  want {want!r}\n  got  {got!r}")
    # A construct outside the subset is an error that names it.
    bad = os.path.join(work, "macro.jinja")
    with open(bad, "w") as f:
        f.write("{% macro x() %}{% endmacro %}")
    r = subprocess.run([nuvec, "chat", os.path.join(cache, "llama2"), "--render", os.path.join(work, "single_user.json"),
                        "--template", bad], capture_output=True)
    if r.returncode == 0 or b"'{% macro %}'" not in r.stderr:
        failures += 1
        print("FAIL: a macro was not refused by name:", r.stderr.decode())
    print(f"{checked} renders compared with jinja2 {jinja2.__version__}, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
