#!/usr/bin/env python3
"""nuvec against Python's safetensors, both ways.

Needs python3 with safetensors, torch and numpy, and nuvec's
safetensors_dump (built with the tests: cmake --preset release &&
cmake --build --preset release --target safetensors_dump).

  1. Python writes (safetensors.torch.save_file, and an unpadded file as MLX
     writes them, and a sharded directory with an index); nuvec loads each
     and must report the same names, dtypes, shapes and bytes (sha256), and
     map the aligned files and read the unaligned one.
  2. The fixture tests/io/safetensors/fixtures/pytorch_reference.safetensors,
     made by hand, must equal byte for byte what save_file writes for it.
  3. nuvec writes (save_safetensors, align_safetensors); safetensors.safe_open
     must read every tensor with the same dtype, shape and bytes, and the
     same metadata. Padding tensors nuvec declares in gaps must be zeros.

Prints one line per check and a JSON summary; exits 1 if any check failed.

  python3 tools/interop/safetensors_interop.py \
      [--dump build/release/tests/io/safetensors/safetensors_dump] [--keep DIR]
"""
import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import safetensors
from safetensors import safe_open
from safetensors.torch import save_file

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PADDING_PREFIX = "__nuvec_padding_"

results = []


def check(name, ok, detail=""):
    results.append({"check": name, "ok": bool(ok), "detail": detail})
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail and not ok else ""), flush=True)
    return ok


def tensor_bytes(t):
    """The tensor's bytes, as they lie in a safetensors file."""
    t = t.contiguous()
    if t.numel() == 0:
        return b""
    flat = t.reshape(-1)
    try:
        return flat.view(torch.uint8).numpy().tobytes()
    except Exception:
        pass
    try:
        return flat.numpy().tobytes()
    except Exception:
        pass
    # Last resort: the storage itself.
    storage = t.untyped_storage()
    start = t.storage_offset() * t.element_size()
    return bytes(storage)[start:start + t.numel() * t.element_size()]


def raw_header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return n, json.loads(f.read(n))


def run_dump(dump, *args):
    proc = subprocess.run([dump, *map(str, args)], capture_output=True, text=True)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        out = {"error": "no JSON", "stdout": proc.stdout, "stderr": proc.stderr}
    return proc.returncode, out


def expected_from_python(path):
    """name -> (dtype, shape, sha256) as Python's safetensors reads the file."""
    _, header = raw_header(path)
    expected = {}
    with safe_open(path, framework="pt") as f:
        for key in f.keys():
            t = f.get_tensor(key)
            expected[key] = (header[key]["dtype"], list(header[key]["shape"]), hashlib.sha256(tensor_bytes(t)).hexdigest())
        metadata = f.metadata() or {}
    return expected, metadata


def compare_dump(label, dump_out, expected, metadata, load_paths):
    if "error" in dump_out:
        return check(label, False, json.dumps(dump_out)[:500])
    got = {t["name"]: (t["dtype"], t["shape"], t["sha256"]) for t in dump_out["tensors"]}
    ok = check(label + ": same tensors", got == expected,
               f"only nuvec: {sorted(set(got) - set(expected))}, only python: {sorted(set(expected) - set(got))}, "
               f"differ: {[k for k in got if k in expected and got[k] != expected[k]]}")
    ok &= check(label + ": same metadata", dump_out["metadata"] == metadata, f"{dump_out['metadata']} vs {metadata}")
    paths = [s["load_path"] for s in dump_out["sources"]]
    ok &= check(label + f": load paths {load_paths}", paths == load_paths, f"got {paths}")
    ok &= check(label + ": footprint equals the measured change", dump_out["footprint"] == dump_out["measured"],
                f"{dump_out['footprint']} vs {dump_out['measured']}")
    return ok


def torch_dtypes():
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
             "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"]
    return [(n, getattr(torch, n)) for n in names if hasattr(torch, n)]


def make_tensor(dtype, shape, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    raw = torch.randint(0, 256, (int(np.prod(shape)) * torch.empty((), dtype=dtype).element_size(),),
                        dtype=torch.uint8, generator=g)
    if raw.numel() == 0:
        return torch.empty(shape, dtype=dtype)
    try:
        return raw.view(dtype).reshape(shape)
    except Exception:  # dtypes torch cannot view into: go through numpy
        return torch.from_numpy(raw.numpy().view(np.dtype(str(dtype).split(".")[-1]))).reshape(shape)


def python_writes(dump, work):
    # 1a. One file of every dtype torch and safetensors share, odd sizes included.
    tensors, seed = {}, 0
    for name, dtype in torch_dtypes():
        for shape in ([3, 5], [7], []):
            seed += 1
            try:
                tensors[f"{name}.{len(shape)}d.{seed}"] = make_tensor(dtype, shape, seed)
            except Exception as e:  # a dtype this torch cannot make
                print(f"note: skipping {name} {shape}: {e}")
    tensors["empty"] = torch.empty((0, 3), dtype=torch.float16)
    path = os.path.join(work, "torch_all.safetensors")
    try:
        save_file(tensors, path, metadata={"format": "pt"})
    except Exception as e:  # e.g. unsigned dtypes on an older safetensors
        print(f"note: save_file refused the unsigned dtypes ({e}); retrying without them")
        tensors = {k: v for k, v in tensors.items() if not k.startswith("uint") or k.startswith("uint8")}
        save_file(tensors, path, metadata={"format": "pt"})
    expected, metadata = expected_from_python(path)
    _, out = run_dump(dump, path)
    compare_dump("save_file, every dtype", out, expected, metadata, ["mapped"])
    _, out = run_dump(dump, path, "--only", sorted(expected)[0])
    check("save_file, filtered load", "error" not in out and len(out.get("tensors", [])) == 1
          and out["footprint"] == out["measured"], json.dumps(out)[:300])

    # 1b. A sharded directory as transformers writes one.
    shard_dir = os.path.join(work, "sharded")
    os.makedirs(shard_dir, exist_ok=True)
    shards = {
        "model-00001-of-00002.safetensors": {"layers.0.w": make_tensor(torch.bfloat16, [64, 33], 101),
                                             "embed": make_tensor(torch.float32, [17], 102)},
        "model-00002-of-00002.safetensors": {"layers.1.w": make_tensor(torch.bfloat16, [64, 33], 103),
                                             "norm": make_tensor(torch.float16, [9], 104)},
    }
    weight_map, expected_all = {}, {}
    for file, ts in shards.items():
        save_file(ts, os.path.join(shard_dir, file), metadata={"format": "pt"})
        weight_map.update({k: file for k in ts})
        e, _ = expected_from_python(os.path.join(shard_dir, file))
        expected_all.update(e)
    with open(os.path.join(shard_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
    _, out = run_dump(dump, shard_dir)
    compare_dump("save_file, sharded directory", out, expected_all, {"format": "pt"}, ["mapped", "mapped"])

    # 1c. An unpadded header as MLX writes them: tensors misaligned, so read.
    arrays = [("w", "F32", [2, 3], make_tensor(torch.float32, [2, 3], 201)),
              ("flag", "BOOL", [3], make_tensor(torch.bool, [3], 202)),
              ("b", "F16", [5], make_tensor(torch.float16, [5], 203)),
              ("ids", "I64", [3], make_tensor(torch.int64, [3], 204))]
    doc, data = {"__metadata__": {"format": "mlx"}}, b""
    for name, dtype, shape, t in arrays:
        raw = tensor_bytes(t)
        doc[name] = {"data_offsets": [len(data), len(data) + len(raw)], "dtype": dtype, "shape": shape}
        data += raw
    # "w" (F32) is aligned only if the data start is even, and then "b" (F16,
    # 27 bytes further) is not: the file is never aligned, whatever its header.
    header = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    mlx_path = os.path.join(work, "mlx_style.safetensors")
    with open(mlx_path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    expected, metadata = expected_from_python(mlx_path)
    _, out = run_dump(dump, mlx_path)
    compare_dump("unpadded (MLX-style) file", out, expected, metadata, ["read"])
    return mlx_path


def fixture_matches_save_file(work):
    path = os.path.join(work, "pytorch_reference.safetensors")
    save_file({
        "embed.weight": torch.arange(6, dtype=torch.float32).reshape(2, 3),
        "layer.bias": torch.tensor([1.0, -2.0, 0.5], dtype=torch.float16),
        "mask": torch.tensor([True, False, True, True, False]),
        "step": torch.tensor(7, dtype=torch.int64),
        "scale": torch.tensor([1.0, -1.5], dtype=torch.bfloat16),
    }, path, metadata={"format": "pt"})
    fixture = os.path.join(REPO, "tests/io/safetensors/fixtures/pytorch_reference.safetensors")
    with open(path, "rb") as a, open(fixture, "rb") as b:
        written, committed = a.read(), b.read()
    check("fixture pytorch_reference equals save_file's bytes", written == committed,
          f"save_file wrote {written[:400]!r}...")


def nuvec_writes(dump, work, mlx_path):
    def read_back(label, path, expected_tensors, expected_metadata):
        n, header = raw_header(path)
        check(label + ": data starts at a 256-byte boundary", (8 + n) % 256 == 0, str(8 + n))
        aligned = all(v["data_offsets"][0] % 256 == 0 for k, v in header.items()
                      if k != "__metadata__" and not k.startswith(PADDING_PREFIX))
        check(label + ": every tensor at a 256-byte boundary", aligned)
        got, padding_ok = {}, True
        with safe_open(path, framework="pt") as f:
            for key in f.keys():
                data = tensor_bytes(f.get_tensor(key))
                if key.startswith(PADDING_PREFIX):
                    padding_ok &= data == bytes(len(data))
                    continue
                got[key] = (header[key]["dtype"], list(header[key]["shape"]), hashlib.sha256(data).hexdigest())
            metadata = f.metadata() or {}
        check(label + ": padding tensors are zeros", padding_ok)
        check(label + ": safe_open reads the same tensors", got == expected_tensors,
              f"differ: {[k for k in expected_tensors if got.get(k) != expected_tensors[k]]}")
        check(label + ": safe_open reads the same metadata", metadata == expected_metadata,
              f"{metadata} vs {expected_metadata}")

    sample = os.path.join(work, "nuvec_sample.safetensors")
    code, out = run_dump(dump, "--write-sample", sample)
    if check("nuvec writes a sample", code == 0, json.dumps(out)[:300]):
        expected = {t["name"]: (t["dtype"], t["shape"], t["sha256"]) for t in out["tensors"]}
        read_back("nuvec save_safetensors", sample, expected, out["metadata"])

    c64 = os.path.join(work, "nuvec_c64.safetensors")
    code, out = run_dump(dump, "--write-c64", c64)
    try:
        with safe_open(c64, framework="pt") as f:
            f.keys()
        expected = {t["name"]: (t["dtype"], t["shape"], t["sha256"]) for t in out["tensors"]}
        read_back("nuvec save_safetensors, C64", c64, expected, out["metadata"])
    except Exception as e:
        print(f"note: this safetensors ({safetensors.__version__}) cannot read C64 ({e}); C64 checked by nuvec only")

    aligned = os.path.join(work, "mlx_style_aligned.safetensors")
    code, out = run_dump(dump, "--align", mlx_path, aligned)
    if check("nuvec aligns the MLX-style file", code == 0 and out["sources"][0]["load_path"] == "mapped",
             json.dumps(out)[:300]):
        expected, metadata = expected_from_python(mlx_path)
        read_back("nuvec align_safetensors", aligned, expected, metadata)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", default=os.path.join(REPO, "build/release/tests/io/safetensors/safetensors_dump"))
    parser.add_argument("--keep", help="write the files here and keep them")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}, safetensors {safetensors.__version__}, "
          f"numpy {np.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        mlx_path = python_writes(args.dump, work)
        fixture_matches_save_file(work)
        nuvec_writes(args.dump, work, mlx_path)
    failed = [r for r in results if not r["ok"]]
    print(json.dumps({"checks": len(results), "failed": len(failed), "versions": {
        "torch": torch.__version__, "safetensors": safetensors.__version__, "numpy": np.__version__}}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
