#!/usr/bin/env python3
"""Checks that the library's includes follow its layers (docs/architecture.md).

The layers and what each depends on and sees are read from the nuvec_layer()
lines of CMakeLists.txt, so this test and the build share one table. A file of
layer L may include
  - the public headers (include/nuvec/...) of L and of the layers L depends
    on, directly or through others;
  - the private headers (src/<dir>/...) of L and of the layers L SEES.
A layer's dependencies must not form a cycle. The `nuvec` command (tools/)
sits above every layer and may include only public headers (and its own).
Anything else is reported with the file, the line and the rule, and the
test fails.

Usage: layering_test.py [SOURCE_DIR]   (default: the repository of this file)
       layering_test.py --self-test    (checks that a bad include is caught)
"""
import os
import re
import sys
import tempfile

LAYER_LINE = re.compile(r"^\s*nuvec_layer\((\w+)\s+DIR\s+(\w+)((?:\s+\w+)*)\)", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# Public headers that belong to a layer other than the core (every other
# header under include/nuvec/ is the core's).
PUBLIC_OWNERS = [("nuvec/io/", "io"), ("nuvec/lm/", "lm"), ("nuvec/text/", "text"), ("nuvec/trace/", "trace"),
                 ("nuvec/cuda.h", "cuda"), ("nuvec/cuda_upload.h", "cuda")]
# Files directly under src/ belong to the core.
TOP_LEVEL_LAYER = "core"


def read_layers(root):
    text = open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8").read()
    layers = {}
    for name, folder, rest in LAYER_LINE.findall(text):
        words = rest.split()
        depends, sees, current = [], [], None
        for w in words:
            if w in ("DEPENDS", "SEES"):
                current = depends if w == "DEPENDS" else sees
            elif current is not None:
                current.append(w)
        layers[name] = {"dir": folder, "depends": depends, "sees": sees}
    if "core" not in layers:
        raise SystemExit(f"layering_test: no nuvec_layer(core ...) line in {root}/CMakeLists.txt")
    return layers


def below(layers, name, seen=None):
    """Every layer `name` depends on, directly or not; raises on a cycle."""
    seen = seen or []
    if name in seen:
        raise ValueError("the layers' dependencies form a cycle: " + " -> ".join(seen + [name]))
    out = set()
    for d in layers[name]["depends"]:
        if d not in layers:
            raise ValueError(f"layer {name} depends on {d}, which is no layer")
        out.add(d)
        out |= below(layers, d, seen + [name])
    return out


def public_owner(header):
    for prefix, layer in PUBLIC_OWNERS:
        if header == prefix or (prefix.endswith("/") and header.startswith(prefix)):
            return layer
    return "core"


def check(root):
    layers = read_layers(root)
    problems = []
    try:
        reach = {name: below(layers, name) | {name} for name in layers}
    except ValueError as e:
        return [str(e)]
    by_dir = {info["dir"]: name for name, info in layers.items()}
    src = os.path.join(root, "src")

    def layer_of_private(path):
        rel = os.path.relpath(path, src)
        if rel.startswith(".."):
            return None
        top = rel.split(os.sep)[0]
        return by_dir.get(top, TOP_LEVEL_LAYER if os.sep not in rel else None)

    files = []
    for base in ("src", "include"):
        for folder, _, names in os.walk(os.path.join(root, base)):
            files += [os.path.join(folder, n) for n in names if n.endswith((".h", ".cc", ".inc"))]
    for path in sorted(files):
        rel = os.path.relpath(path, root)
        if rel.startswith("include" + os.sep):
            layer = public_owner(os.path.relpath(path, os.path.join(root, "include")))
        else:
            layer = layer_of_private(path)
        if layer is None or layer not in layers:
            continue  # a folder of src/ that is no layer's: not the library
        text = open(path, encoding="utf-8", errors="replace").read()
        for match in INCLUDE.finditer(text):
            header = match.group(1)
            line = text.count("\n", 0, match.start()) + 1
            where = f"{rel}:{line}: #include \"{header}\""
            if header.startswith("nuvec/"):
                owner = public_owner(header)
                if owner not in reach[layer]:
                    problems.append(f"{where}: layer {layer} includes a public header of layer {owner}, "
                                    f"which it does not depend on (depends on: {sorted(reach[layer] - {layer})})")
                continue
            # As the compiler resolves a quoted include: beside the file first.
            beside = os.path.normpath(os.path.join(os.path.dirname(path), header))
            if os.path.exists(beside):
                target = layer_of_private(beside) if beside.startswith(src + os.sep) else None
            elif os.path.exists(os.path.join(src, header)):
                target = layer_of_private(os.path.join(src, header))
            else:
                continue  # not ours (a system or third-party header, or a generated one)
            if target is None or target == layer:
                continue
            if rel.startswith("include" + os.sep):
                problems.append(f"{where}: a public header includes a private one (of layer {target})")
            elif target not in layers[layer]["sees"]:
                hint = ("it is above" if layer in reach[target] else
                        f"add SEES {target} to nuvec_layer({layer} ...)" if target in reach[layer] else
                        "it is no layer below")
                problems.append(f"{where}: layer {layer} includes a private header of layer {target} ({hint})")
    problems += check_tools(root, layer_of_private, src)
    return problems


def check_tools(root, layer_of_private, src):
    """tools/: public headers and its own only (its build has no layer's private root)."""
    problems = []
    tools = os.path.join(root, "tools")
    for folder, _, names in os.walk(tools):
        for name in sorted(names):
            if not name.endswith((".h", ".cc", ".inc", ".in")):
                continue
            path = os.path.join(folder, name)
            text = open(path, encoding="utf-8", errors="replace").read()
            for match in INCLUDE.finditer(text):
                header = match.group(1)
                if header.startswith("nuvec/") or os.path.exists(os.path.join(folder, header)):
                    continue
                if os.path.exists(os.path.join(src, header)):
                    line = text.count("\n", 0, match.start()) + 1
                    layer = layer_of_private(os.path.join(src, header))
                    problems.append(f"{os.path.relpath(path, root)}:{line}: #include \"{header}\": the nuvec command "
                                    f"includes a private header of layer {layer} (give that layer public API in "
                                    f"include/nuvec/ instead)")
    return problems


def self_test():
    """A tree with one include against the direction must fail, its fix pass."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "src", "memory"))
        os.makedirs(os.path.join(root, "src", "io"))
        os.makedirs(os.path.join(root, "include", "nuvec", "io"))
        with open(os.path.join(root, "CMakeLists.txt"), "w") as f:
            f.write("nuvec_layer(core DIR memory)\nnuvec_layer(io DIR io DEPENDS core SEES core)\n")
        open(os.path.join(root, "src", "io", "loader.h"), "w").close()
        open(os.path.join(root, "include", "nuvec", "io", "loader.h"), "w").close()
        with open(os.path.join(root, "src", "memory", "allocator.cc"), "w") as f:
            f.write('#include "io/loader.h"\n#include "nuvec/io/loader.h"\n')
        problems = check(root)
        assert len(problems) == 2, problems
        assert "private header of layer io" in problems[0] and "public header of layer io" in problems[1], problems
        with open(os.path.join(root, "src", "memory", "allocator.cc"), "w") as f:
            f.write('#include "memory/allocator.h"\n')
        with open(os.path.join(root, "src", "io", "loader.cc"), "w") as f:
            f.write('#include "memory/allocator.cc"\n#include "nuvec/io/loader.h"\n')
        assert check(root) == [], check(root)
        os.makedirs(os.path.join(root, "tools"))
        with open(os.path.join(root, "tools", "main.cc"), "w") as f:
            f.write('#include "nuvec/io/loader.h"\n#include "io/loader.h"\n')
        problems = check(root)
        assert len(problems) == 1 and "nuvec command includes a private header of layer io" in problems[0], problems
        os.remove(os.path.join(root, "tools", "main.cc"))
        with open(os.path.join(root, "CMakeLists.txt"), "a") as f:
            f.write("nuvec_layer(cycle DIR cycle DEPENDS cycle)\n")
        assert "cycle" in check(root)[0], check(root)
    print("layering_test --self-test: a bad include (in a layer and in tools/) and a cycle are caught, the fixed tree passes")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"layering_test: {len(problems)} include(s) against the layers (docs/architecture.md, 'Layers')",
              file=sys.stderr)
        return 1
    print(f"layering_test: every include of src/, include/ and tools/ follows the layers of {root}/CMakeLists.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
