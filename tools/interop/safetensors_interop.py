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
     (torch and numpy) must list exactly the tensors written, no more, with
     the same dtype, shape and bytes, and the same metadata; every tensor at
     a multiple of its element size.
  4. Byte for byte: nuvec re-saving what save_file wrote (torch and numpy
     writers, odd names included), and aligning an MLX-style file of the same
     tensors, must give save_file's bytes.
  5. transformers: a tiny Llama saved by save_pretrained in shards; the same
     shards in nuvec's old padded layout (extra __nuvec_padding_ tensors),
     which transformers and load_state_dict(strict=True) trip on; `nuvec
     align --dry-run` then `nuvec align` on that directory must give back
     save_pretrained's bytes, and from_pretrained must then report no
     missing or unexpected keys. A model nuvec writes (`nuvec demo-model`,
     sharded) must load the same way, and in numpy.

Prints one line per check and a JSON summary; exits 1 if any check failed.

  python3 tools/interop/safetensors_interop.py \
      [--dump build/release/tests/io/safetensors/safetensors_dump] \
      [--nuvec build/release/tools/nuvec] [--keep DIR]
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


def element_size(dtype):
    return {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "I16": 2, "F16": 2, "BF16": 2,
            "U32": 4, "I32": 4, "F32": 4, "U64": 8, "I64": 8, "F64": 8, "C64": 8}[dtype]


def check_layout(label, path):
    """The reference layout: header padded to 8, each tensor at a multiple of its element size, no gap."""
    n, header = raw_header(path)
    check(label + ": header padded to a multiple of 8", n % 8 == 0, str(n))
    entries = sorted((v["data_offsets"], k, v["dtype"]) for k, v in header.items() if k != "__metadata__")
    aligned = all((8 + n + off[0]) % element_size(d) == 0 for off, _, d in entries)
    check(label + ": every tensor at a multiple of its element size", aligned)
    check(label + ": no padding tensors", not any(k.startswith(PADDING_PREFIX) for k in header))


def nuvec_writes(dump, work, mlx_path):
    def read_back(label, path, expected_tensors, expected_metadata):
        check_layout(label, path)
        _, header = raw_header(path)
        got = {}
        with safe_open(path, framework="pt") as f:
            keys = list(f.keys())
            for key in keys:
                data = tensor_bytes(f.get_tensor(key))
                got[key] = (header[key]["dtype"], list(header[key]["shape"]), hashlib.sha256(data).hexdigest())
            metadata = f.metadata() or {}
        check(label + ": safe_open lists exactly the tensors written", sorted(keys) == sorted(expected_tensors),
              f"extra: {sorted(set(keys) - set(expected_tensors))}, missing: {sorted(set(expected_tensors) - set(keys))}")
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


def odd_tensors(seed):
    """Tensors of several dtypes under names that test the JSON writer and the sort."""
    names = ["b", "B", "a.10", "a.9", "ünïcode.weight", 'quote"d', "back\\slash", "tab\tand\nnewline",
             "ctrl\x01\x1f", "del\x7f", "emoji.🙂", "slash/name"]
    dtypes = [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int8, torch.bool, torch.float64,
              torch.int32, torch.uint8, torch.int16, torch.float32, torch.float16]
    shapes = [[3, 5], [7], [], [2, 3], [9], [5], [1, 3], [4], [11], [3, 3], [0, 2], [13]]
    return {n: make_tensor(d, s, seed + i) for i, (n, d, s) in enumerate(zip(names, dtypes, shapes))}


def byte_for_byte(dump, work):
    """What nuvec writes for the tensors save_file wrote, against save_file's bytes."""
    import safetensors.numpy as stnp
    cases = {}
    t = odd_tensors(300)
    p = os.path.join(work, "ref_torch.safetensors")
    save_file(t, p, metadata={"format": "pt"})
    cases["torch save_file, odd names, one metadata key"] = p
    p = os.path.join(work, "ref_torch_nometa.safetensors")
    save_file(odd_tensors(400), p)
    cases["torch save_file, no metadata"] = p
    arrays = {"w": np.arange(15, dtype=np.float32).reshape(3, 5), "h": np.arange(7, dtype=np.float16),
              "ids": np.array([1, -2, 3], dtype=np.int64), "m": np.array([True, False, True]),
              "u": np.arange(5, dtype=np.uint16), "d": np.linspace(0, 1, 3), "i8": np.arange(-3, 4, dtype=np.int8),
              "e": np.zeros((0, 4), dtype=np.float32)}
    p = os.path.join(work, "ref_numpy.safetensors")
    stnp.save_file(arrays, p, metadata={"format": "np"})
    cases["numpy save_file"] = p
    for label, ref in cases.items():
        out = ref.replace(".safetensors", ".nuvec.safetensors")
        code, res = run_dump(dump, "--resave", ref, out)
        with open(ref, "rb") as a:
            want = a.read()
        got = open(out, "rb").read() if code == 0 else b""
        check(f"byte for byte: nuvec save_safetensors = {label}", got == want,
              f"{json.dumps(res)[:200]} ref {want[:200]!r} nuvec {got[:200]!r}")
    # numpy reads what nuvec wrote, exactly.
    loaded = stnp.load_file(os.path.join(work, "ref_numpy.nuvec.safetensors"))
    check("numpy load_file reads exactly the arrays nuvec wrote", sorted(loaded) == sorted(arrays) and all(
        loaded[k].dtype == arrays[k].dtype and loaded[k].shape == arrays[k].shape and np.array_equal(loaded[k], arrays[k])
        for k in arrays))
    # An MLX-style file of the same tensors, aligned by nuvec: save_file's bytes again.
    doc, data = {"__metadata__": {"format": "pt"}}, b""
    for name, tensor in sorted(t.items()):
        raw = tensor_bytes(tensor)
        dtype = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.int64: "I64",
                 torch.int8: "I8", torch.bool: "BOOL", torch.float64: "F64", torch.int32: "I32", torch.uint8: "U8",
                 torch.int16: "I16"}[tensor.dtype]
        doc[name] = {"data_offsets": [len(data), len(data) + len(raw)], "dtype": dtype, "shape": list(tensor.shape)}
        data += raw
    header = json.dumps(doc, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()
    mlx = os.path.join(work, "odd_mlx.safetensors")
    with open(mlx, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    out = os.path.join(work, "odd_mlx.aligned.safetensors")
    code, res = run_dump(dump, "--align", mlx, out)
    check("byte for byte: nuvec align_safetensors of an MLX-style file = save_file",
          code == 0 and open(out, "rb").read() == open(cases["torch save_file, odd names, one metadata key"], "rb").read(),
          json.dumps(res)[:300])


def write_old_padded(path, src):
    """src (a reference-layout file) rewritten as nuvec's save_safetensors wrote before: header order kept,
    each tensor at a 256-byte boundary, every gap declared as a U8 tensor "__nuvec_padding_<begin>__"
    (tests/io/safetensors/fixtures/nuvec_padded.safetensors is such a file from that writer)."""
    n, header = raw_header(src)
    with open(src, "rb") as f:
        blob = f.read()
    meta = header.pop("__metadata__", None)
    parts = ['"__metadata__":' + json.dumps(dict(sorted(meta.items())), separators=(",", ":"), ensure_ascii=False)] if meta else []
    data = b""
    names = sorted(header, key=lambda k: header[k]["data_offsets"])
    for i, k in enumerate(names):
        e = header[k]
        b0, b1 = e["data_offsets"]
        at = len(data)
        data += blob[8 + n + b0:8 + n + b1]
        parts.append(json.dumps(k, ensure_ascii=False) + ':{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}' % (
            e["dtype"], json.dumps(e["shape"], separators=(",", ":")), at, len(data)))
        nxt = (len(data) + 255) // 256 * 256
        if i + 1 < len(names) and nxt != len(data):
            parts.append('"__nuvec_padding_%d__":{"dtype":"U8","shape":[%d],"data_offsets":[%d,%d]}' % (
                len(data), nxt - len(data), len(data), nxt))
            data += bytes(nxt - len(data))
    text = ("{" + ",".join(parts) + "}").encode()
    text += b" " * ((8 + len(text) + 255) // 256 * 256 - 8 - len(text))
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def shard_files(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))


def strict_load(model_cls, config, d):
    """load_state_dict(strict=True) of every shard's tensors, as safetensors.torch.load_file gives them."""
    from safetensors.torch import load_file
    state = {}
    for f in shard_files(d):
        state.update(load_file(os.path.join(d, f)))
    model = model_cls(config)
    try:
        model.load_state_dict(state, strict=True)
        return True, model, ""
    except Exception as e:
        return False, None, str(e).splitlines()[0][:200]


def transformers_checks(nuvec, work):
    import shutil
    import transformers
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
    print(f"transformers {transformers.__version__}")
    transformers.logging.set_verbosity_error()

    def run_nuvec(*args):
        proc = subprocess.run([nuvec, *map(str, args)], capture_output=True, text=True)
        print("$ nuvec " + " ".join(map(str, args)))
        print((proc.stdout + proc.stderr).rstrip())
        return proc.returncode

    def loading_info(d):
        model, info = AutoModelForCausalLM.from_pretrained(d, output_loading_info=True)
        bad = {k: v for k, v in info.items() if v}
        return model, bad

    def digests(d):
        return {f: hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest() for f in sorted(os.listdir(d))}

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    reference = LlamaForCausalLM(config)
    hf = os.path.join(work, "hf_sharded")
    reference.save_pretrained(hf, max_shard_size="20KB", safe_serialization=True)
    shards = shard_files(hf)
    check(f"save_pretrained wrote {len(shards)} shards and an index",
          len(shards) > 1 and os.path.exists(os.path.join(hf, "model.safetensors.index.json")))
    before = digests(hf)
    run_nuvec("align", "--dry-run", hf)
    check("nuvec align --dry-run on save_pretrained's shards: nothing to change, nothing written",
          digests(hf) == before and run_nuvec("align", hf) == 0 and digests(hf) == before)

    old = os.path.join(work, "old_padded")
    shutil.copytree(hf, old)
    for f in shards:
        write_old_padded(os.path.join(old, f), os.path.join(hf, f))
    try:
        _, bad = loading_info(old)
        said = str(bad)
        tripped = any(k.startswith(PADDING_PREFIX) for k in bad.get("unexpected_keys", []))
    except Exception as e:  # a transformers that refuses unexpected keys outright
        said, tripped = f"{type(e).__name__}: {e}", PADDING_PREFIX in str(e)
    check("the old padded shards: transformers reports the padding tensors as unexpected keys (or refuses)", tripped,
          said[:200])
    print(f"  (transformers says: {said[:300]})")
    ok, _, why = strict_load(LlamaForCausalLM, config, old)
    check("the old padded shards: load_state_dict(strict=True) fails", not ok)
    print(f"  (load_state_dict says: {why})")

    before = digests(old)
    code = run_nuvec("align", "--dry-run", old)
    check("nuvec align --dry-run on the old padded shards writes nothing", code == 0 and digests(old) == before)
    code = run_nuvec("align", old)
    after = digests(old)
    rewritten = [f for f in shards if after[f] != before[f]]
    check(f"nuvec align rewrites the old padded shards that declare padding ({len(rewritten)} of {len(shards)})",
          code == 0 and rewritten)
    check("the rewritten shards are byte for byte save_pretrained's",
          all(open(os.path.join(old, f), "rb").read() == open(os.path.join(hf, f), "rb").read() for f in rewritten))
    check("the shards left as they were declare no padding tensor (one tensor each, a longer header padding)",
          all(not any(k.startswith(PADDING_PREFIX) for k in raw_header(os.path.join(old, f))[1])
              for f in shards if f not in rewritten))
    model, bad = loading_info(old)
    check("aligned shards: from_pretrained reports no missing, unexpected or mismatched keys", not bad, str(bad)[:200])
    same = all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), reference.state_dict().values()))
    check("aligned shards: every parameter equals the saved model's", same)
    ok, _, why = strict_load(LlamaForCausalLM, config, old)
    check("aligned shards: load_state_dict(strict=True) succeeds", ok, why)

    # A model nuvec writes itself, sharded.
    demo = os.path.join(work, "nuvec_demo")
    code = run_nuvec("demo-model", demo, "--layers", "2", "--hidden", "64", "--intermediate", "128", "--heads", "4",
                     "--kv-heads", "2", "--vocab", "256", "--context", "128", "--dtype", "f16", "--shard-size", "40000")
    check("nuvec demo-model writes a sharded model", code == 0 and len(shard_files(demo)) > 1)
    for f in shard_files(demo):
        check_layout("nuvec demo-model " + f, os.path.join(demo, f))
    model, bad = loading_info(demo)
    check("nuvec demo-model: from_pretrained reports no missing, unexpected or mismatched keys", not bad, str(bad)[:200])
    ok, _, why = strict_load(type(model), model.config, demo)
    check("nuvec demo-model: load_state_dict(strict=True) succeeds", ok, why)
    import safetensors.numpy as stnp
    from safetensors.torch import load_file
    names, equal = set(), True
    for f in shard_files(demo):
        arrays, tensors = stnp.load_file(os.path.join(demo, f)), load_file(os.path.join(demo, f))
        names |= set(arrays)
        equal &= sorted(arrays) == sorted(tensors) and all(np.array_equal(arrays[k], tensors[k].numpy()) for k in arrays)
    with open(os.path.join(demo, "model.safetensors.index.json")) as f:
        listed = set(json.load(f)["weight_map"])
    check("nuvec demo-model: numpy load_file reads exactly the index's tensors, as torch does",
          names == listed and equal)
    run_nuvec("align", "--dry-run", demo)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", default=os.path.join(REPO, "build/release/tests/io/safetensors/safetensors_dump"))
    parser.add_argument("--nuvec", default=os.path.join(REPO, "build/release/tools/nuvec"))
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
        byte_for_byte(args.dump, work)
        transformers_checks(args.nuvec, work)
    failed = [r for r in results if not r["ok"]]
    import transformers
    print(json.dumps({"checks": len(results), "failed": len(failed), "versions": {
        "torch": torch.__version__, "safetensors": safetensors.__version__, "numpy": np.__version__,
        "transformers": transformers.__version__}}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
