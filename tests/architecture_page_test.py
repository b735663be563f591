#!/usr/bin/env python3
"""docs/architecture.md names the code it describes, so that a reader can
follow the hit path, the free path and each statistic into the tree: a
`file:Class::function` names a function in that file, and a bare
`Class::function` one that the page placed in a file before (or that some
file of src/ defines). This test fails when one of those names is no longer
in the tree, so the page cannot drift from the code unnoticed.

Usage: architecture_page_test.py ROOT        (checks ROOT/docs/architecture.md)
       architecture_page_test.py --self-test (shows it catches a stale name)
"""
import os
import re
import sys
import tempfile

# `path:Name::name` or `path:name`, and bare `Name::name` (both in backticks).
FILE_FUNCTION = re.compile(r"`((?:src|include|tests|tools|bench)/[\w./-]+\.(?:h|cc|cu|cuh|py)):([A-Za-z_]\w*(?:::~?\w+)*)`")
QUALIFIED = re.compile(r"`([A-Z]\w*::~?[a-z_]\w*)`")
# A plain path the page names, to exist as a file or folder.
PATH = re.compile(r"`((?:src|include|tests|tools|bench|cmake|scripts|examples)/[\w./-]+)`")
# The page must keep naming this much of the code (a rewrite that drops the
# names would otherwise pass).
MIN_FILE_FUNCTIONS = 20


def defines(text, name):
    """Whether `text` (a source file) declares or defines `name`
    (`Class::function`, or a free `function`)."""
    parts = name.split("::")
    function = parts[-1]
    if len(parts) == 1:
        return re.search(r"\b%s\s*[(<]" % re.escape(function), text) is not None
    owner = parts[-2]
    # Defined out of line (`Owner::function(`), or declared inside the class.
    if re.search(r"\b%s::%s\s*\(" % (re.escape(owner), re.escape(function)), text):
        return True
    match = re.search(r"\b(?:class|struct)\s+%s\b[^;{]*\{" % re.escape(owner), text)
    if match is None:
        return False
    body = class_body(text, match.end() - 1)
    # A member function, or a field (`CpuBackendOptions::thread_cache_max`).
    return re.search(r"[\s*&]%s\s*[(;={]" % re.escape(function), body) is not None


def class_body(text, brace):
    depth = 0
    for i in range(brace, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[brace:i]
    return text[brace:]


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def src_files(root):
    for top in ("src", "include"):
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith((".h", ".cc", ".cu", ".cuh")):
                    yield os.path.join(folder, name)


def check(root, page):
    """The page's stale names, as messages (empty: all there)."""
    text = read(page)
    problems = []
    named = FILE_FUNCTION.findall(text)
    if len(named) < MIN_FILE_FUNCTIONS:
        problems.append(f"{page}: names {len(named)} file:function pairs, fewer than {MIN_FILE_FUNCTIONS}")
    owners_files = {}  # Class -> the files the page put its functions in
    for path, name in named:
        full = os.path.join(root, path)
        if not os.path.isfile(full):
            problems.append(f"`{path}:{name}`: no file {path}")
            continue
        if not defines(read(full), name):
            problems.append(f"`{path}:{name}`: {path} has no {name}")
        if "::" in name:
            owners_files.setdefault(name.split("::")[-2], set()).add(full)
    for path in PATH.findall(text):
        path = path.rstrip("/.")
        if not os.path.exists(os.path.join(root, path)):
            problems.append(f"`{path}`: not in the tree")
    sources = None
    for name in sorted(set(QUALIFIED.findall(text))):
        owner = name.split("::")[-2]
        if owner.isupper():
            continue  # a CMake target (`CUDA::cudart`), not C++
        files = owners_files.get(owner)
        if files and any(defines(read(f), name) for f in files):
            continue
        if sources is None:
            sources = {f: read(f) for f in src_files(root)}
        if not any(defines(t, name) for t in sources.values()):
            problems.append(f"`{name}`: defined nowhere in src/ or include/")
    return problems


def self_test():
    """A page with a stale name of each kind fails; the same page fixed passes."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "src/memory"))
        with open(os.path.join(root, "src/memory/cache.h"), "w") as f:
            f.write("class Cache {\n public:\n  Block* take(int size) { return nullptr; }\n};\n")
        with open(os.path.join(root, "src/memory/cache.cc"), "w") as f:
            f.write("void Cache::put(Block& b) {}\nint helper(int x) { return x; }\n")
        good = ["`src/memory/cache.h:Cache::take`", "`src/memory/cache.cc:Cache::put`",
                "`src/memory/cache.cc:helper`", "`Cache::put`", "`src/memory/cache.h`"]
        stale = {"`src/memory/cache.h:Cache::keep`": "has no Cache::keep",
                 "`src/memory/gone.cc:Cache::put`": "no file",
                 "`src/memory/cache.cc:Cache::take`": "has no Cache::take",
                 "`Cache::flush`": "defined nowhere",
                 "`src/memory/gone.h`": "not in the tree"}
        page = os.path.join(root, "page.md")
        global MIN_FILE_FUNCTIONS
        MIN_FILE_FUNCTIONS = 3
        with open(page, "w") as f:
            f.write("\n".join(good) + "\n")
        if check(root, page):
            print("self-test: a page naming only what exists failed:", check(root, page))
            return 1
        for name, why in stale.items():
            with open(page, "w") as f:
                f.write("\n".join(good + [name]) + "\n")
            problems = check(root, page)
            if len(problems) != 1 or why not in problems[0]:
                print(f"self-test: {name} gave {problems}, expected one '{why}'")
                return 1
        with open(page, "w") as f:
            f.write("`src/memory/cache.h:Cache::take`\n")
        if not any("fewer than" in p for p in check(root, page)):
            print("self-test: a page naming too little passed")
            return 1
    print("self-test: stale names are caught")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = sys.argv[1]
    page = os.path.join(root, "docs", "architecture.md")
    problems = check(root, page)
    for p in problems:
        print(f"docs/architecture.md: {p}")
    if problems:
        return 1
    print(f"docs/architecture.md: {len(FILE_FUNCTION.findall(read(page)))} file:function names, all in the tree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
