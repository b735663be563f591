#!/usr/bin/env python3
"""nuvec against numpy's .npy files.

Needs python3 with numpy, and nuvec's npy_dump (built with the tests:
cmake --preset release && cmake --build --preset release --target npy_dump).

  1. numpy.save writes arrays of every dtype nuvec reads (bool, int8..int64,
     uint8..uint64, float16/32/64, complex64), little- and big-endian, each
     0-d, empty and 1-d to 4-d (and a 1 MiB one); nuvec loads each and must
     report the file's stem as name, the same dtype (numpy float16 -> F16...),
     shape and bytes (sha256 of numpy's C-order bytes in native order: big-
     endian data is converted), and map the native-order files (nothing
     counted in `active`) and read the big-endian ones (nothing mapped).
  2. numpy.lib.format.write_array with version=(1,0), (2,0) and (3,0): nuvec
     sees the version numpy wrote and loads the same array.
  3. Fortran order (numpy.asfortranarray): refused by default with a
     FormatError that says so; with --transposed, the same bytes as the
     C-order transpose and the shape reversed. --transposed leaves a C-order
     file as it is.
  4. dtypes nuvec does not read (complex128, longdouble, strings, datetimes,
     structured, object), and a structured dtype whose header is long enough
     that numpy.save itself picks version 2.0: refused with a FormatError.

Prints one line per check and a JSON summary; exits 1 if any check failed.

  python3 tools/interop/npy_interop.py \
      [--dump build/release/tests/io/npy/npy_dump] [--keep DIR]
"""
import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# numpy's dtype name (the same for either byte order) -> nuvec's.
NUVEC_DTYPE = {
    "bool": "BOOL", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64",
    "float16": "F16", "float32": "F32", "float64": "F64", "complex64": "C64",
}
SHAPES = [(), (0, 3), (7,), (3, 5), (2, 3, 4), (2, 1, 3, 2)]

results = []


def check(name, ok, detail=""):
    results.append({"check": name, "ok": bool(ok), "detail": detail})
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail and not ok else ""), flush=True)
    return ok


def run_dump(dump, *args):
    proc = subprocess.run([dump, *map(str, args)], capture_output=True, text=True)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        out = {"error": "no JSON", "stdout": proc.stdout, "stderr": proc.stderr}
    return proc.returncode, out


def native_bytes(arr):
    """numpy's C-order bytes of `arr`, in native byte order."""
    return np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("=")).tobytes()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def descr(dtype):
    return np.lib.format.dtype_to_descr(np.dtype(dtype))


def make_array(dtype, shape, seed):
    """Deterministic values of `dtype` (any byte order); floats include inf, -0.0 and nan."""
    dtype = np.dtype(dtype)
    native = dtype.newbyteorder("=")
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype.kind == "b":
        flat = rng.integers(0, 2, n).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(native)
        flat = rng.integers(info.min, info.max, n, dtype=native, endpoint=True)
    elif dtype.kind == "f":
        flat = (rng.standard_normal(n) * 1000).astype(native)
        flat[:3] = [np.inf, -0.0, np.nan][:min(3, n)]
    else:
        flat = (rng.standard_normal(n) * 1000 + 1j * rng.standard_normal(n)).astype(native)
    return flat.astype(dtype).reshape(shape)


def numpy_header(path):
    """(version, shape, fortran_order, dtype, data offset) as numpy reads the file."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran_order, dtype = read(f, max_header_size=1 << 20)
        return version, shape, fortran_order, dtype, f.tell()


def expect_load(label, dump, path, arr, *, transposed=False, version=None):
    """nuvec loads `path` (written from `arr`) as numpy reads it: one check."""
    code, out = run_dump(dump, path, *(["--transposed"] if transposed else []))
    if code != 0 or "error" in out:
        return check(label, False, json.dumps(out)[:500])
    problems = []
    loaded = np.load(path)  # numpy's own reading, as a sanity check on the writer
    if loaded.dtype != arr.dtype or loaded.shape != arr.shape or loaded.tobytes() != arr.tobytes():
        problems.append("numpy.load does not return the array written")
    expected_array = arr.T if transposed else arr
    want = {
        "name": os.path.splitext(os.path.basename(path))[0],
        "dtype": NUVEC_DTYPE[arr.dtype.name],
        "shape": list(expected_array.shape),
        "nbytes": arr.nbytes,
        "sha256": sha256(native_bytes(expected_array)),
    }
    for key, value in want.items():
        if out.get(key) != value:
            problems.append(f"{key} {out.get(key)!r}, want {value!r}")
    np_version, _, np_fortran, _, np_offset = numpy_header(path)
    header = out["header"]
    want_header = {"version": f"{np_version[0]}.{np_version[1]}", "big_endian": arr.dtype.byteorder == ">",
                   "fortran_order": np_fortran, "data_offset": np_offset}
    if version is not None and np_version != version:
        problems.append(f"numpy wrote version {np_version}, asked for {version}")
    for key, value in want_header.items():
        if header.get(key) != value:
            problems.append(f"header {key} {header.get(key)!r}, want {value!r}")
    native_order = arr.dtype.isnative or arr.dtype.itemsize == 1
    want_path = "mapped" if native_order and np_offset % arr.dtype.itemsize == 0 else "read"
    if out["load_path"] != want_path:
        problems.append(f"load path {out['load_path']}, want {want_path}")
    elif want_path == "mapped" and (out["active_bytes"] != 0 or out["mapped_bytes"] < os.path.getsize(path)):
        problems.append(f"mapped, yet active {out['active_bytes']}, mapped {out['mapped_bytes']}")
    elif want_path == "read" and (out["mapped_bytes"] != 0 or out["active_bytes"] < arr.nbytes):
        problems.append(f"read, yet mapped {out['mapped_bytes']}, active {out['active_bytes']}")
    return check(f"{label} -> {want['dtype']} {want['shape']}, {want_path}", not problems, "; ".join(problems))


def expect_refusal(label, dump, path, must_say, *args):
    code, out = run_dump(dump, path, *args)
    message = out.get("message", "")
    ok = code == 1 and out.get("error") == "FormatError" and must_say.lower() in message.lower() \
        and os.path.basename(path) in message
    check(label, ok, json.dumps(out)[:500])
    return message


def numpy_save_every_dtype(dump, work):
    seed = 0
    for name in NUVEC_DTYPE:
        base = np.dtype(name)
        orders = ["|"] if base.itemsize == 1 else ["<", ">"]
        for order in orders:
            dtype = base if order == "|" else base.newbyteorder(order)
            for shape in SHAPES:
                seed += 1
                arr = make_array(dtype, shape, seed)
                path = os.path.join(work, f"save_{descr(dtype)[1:]}_{order.replace('|', 'n').replace('<', 'le').replace('>', 'be')}"
                                          f"_{'x'.join(map(str, shape)) or 'scalar'}.npy")
                np.save(path, arr)
                expect_load(f"numpy.save {descr(dtype)} {shape}", dump, path, arr)
    for order in "<>":
        arr = make_array(np.dtype("f4").newbyteorder(order), (512, 512), 1000 + ord(order))
        path = os.path.join(work, f"save_large_{'le' if order == '<' else 'be'}.npy")
        np.save(path, arr)
        expect_load(f"numpy.save {descr(arr.dtype)} (512, 512), 1 MiB", dump, path, arr)


def write_array_versions(dump, work):
    arrays = [("<f4", (3, 4)), (">i8", (5,)), ("|b1", (2, 2)), ("<c8", (0,)), ("<u2", ()), (">f2", (2, 3, 2))]
    seed = 500
    for version in [(1, 0), (2, 0), (3, 0)]:
        for dtype, shape in arrays:
            seed += 1
            arr = make_array(dtype, shape, seed)
            path = os.path.join(work, f"v{version[0]}_{dtype[1:]}_{'x'.join(map(str, shape)) or 'scalar'}.npy")
            with open(path, "wb") as f:
                np.lib.format.write_array(f, arr, version=version)
            with open(path, "rb") as f:
                magic = f.read(8)
            ok_magic = magic[:6] == b"\x93NUMPY" and (magic[6], magic[7]) == version
            if not check(f"write_array version={version} {dtype} {shape}: file says {magic[6]}.{magic[7]}", ok_magic,
                         repr(magic)):
                continue
            expect_load(f"write_array version={version} {dtype} {shape}", dump, path, arr, version=version)


def fortran_order(dump, work):
    for dtype, shape in [("<f4", (2, 3, 4)), (">i2", (3, 5)), ("|u1", (4, 6)), ("<c8", (3, 2, 2, 2)),
                         (">f8", (2, 3))]:
        arr = np.asfortranarray(make_array(dtype, shape, 700 + len(shape)))
        path = os.path.join(work, f"fortran_{dtype[1:]}_{'x'.join(map(str, shape))}.npy")
        np.save(path, arr)
        _, _, np_fortran, _, _ = numpy_header(path)
        if not check(f"numpy.save writes {dtype} {shape} in Fortran order", np_fortran):
            continue
        message = expect_refusal(f"Fortran order {dtype} {shape}: refused by default", dump, path, "Fortran")
        if dtype == "<f4":
            print(f"note: nuvec's message: {message.replace(work + os.sep, '')}")
        expect_load(f"Fortran order {dtype} {shape}, --transposed", dump, path, arr, transposed=True)
        # The transposed view's bytes are exactly the file's data.
        with open(path, "rb") as f:
            data = f.read()[numpy_header(path)[4]:]
        if arr.dtype.isnative or arr.dtype.itemsize == 1:
            check(f"Fortran order {dtype} {shape}, --transposed: the file's data bytes as they are",
                  run_dump(dump, path, "--transposed")[1].get("sha256") == sha256(data))
    arr = make_array("<f4", (2, 3), 799)
    path = os.path.join(work, "c_order_f4_2x3.npy")
    np.save(path, arr)
    code, out = run_dump(dump, path, "--transposed")
    check("C order <f4 (2, 3), --transposed: loaded as it is (shape [2, 3], same bytes)",
          code == 0 and out.get("shape") == [2, 3] and out.get("sha256") == sha256(native_bytes(arr)),
          json.dumps(out)[:300])


def refusals(dump, work):
    cases = [
        ("complex128", np.array([1 + 2j, 3 - 4j], dtype="<c16")),
        ("longdouble", np.array([1.5, 2.5], dtype=np.longdouble)),
        ("unicode string", np.array(["ab", "cde"], dtype="<U3")),
        ("byte string", np.array([b"ab", b"cd"], dtype="|S2")),
        ("datetime64", np.array(["2024-01-01", "2025-06-30"], dtype="datetime64[D]")),
        ("timedelta64", np.array([1, 2], dtype="timedelta64[ns]")),
        ("structured", np.zeros(3, dtype=[("a", "<i4"), ("b", "<f4")])),
        ("object", np.array([1, "a", None], dtype=object)),
    ]
    for label, arr in cases:
        path = os.path.join(work, f"refuse_{label.replace(' ', '_')}.npy")
        np.save(path, arr, allow_pickle=True)
        expect_refusal(f"{label} ({descr(arr.dtype) if arr.dtype.names is None else 'fields'}): refused", dump, path, "")

    # A header over 65535 bytes: numpy.save itself switches to version 2.0.
    fields = [(f"field_{i:05d}", "<f4") for i in range(5000)]
    arr = np.zeros(2, dtype=fields)
    path = os.path.join(work, "refuse_long_header.npy")
    with warnings.catch_warnings():  # "Stored array in format 2.0": the point of this file
        warnings.simplefilter("ignore", UserWarning)
        np.save(path, arr)
    version, _, _, _, offset = numpy_header(path)
    if check(f"numpy.save picks version 2.0 for a {offset}-byte header", version == (2, 0) and offset > 65535,
             f"version {version}, offset {offset}"):
        message = expect_refusal("structured dtype in a version 2.0 header over 64 KiB: refused", dump, path, "")
        print(f"note: nuvec's message: {message.replace(work + os.sep, '')[:300]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", default=os.path.join(REPO, "build/release/tests/io/npy/npy_dump"))
    parser.add_argument("--keep", help="write the files here and keep them")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {platform.machine()} {sys.byteorder}-endian")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        numpy_save_every_dtype(args.dump, work)
        write_array_versions(args.dump, work)
        fortran_order(args.dump, work)
        refusals(args.dump, work)
    failed = [r for r in results if not r["ok"]]
    print(json.dumps({"checks": len(results), "failed": len(failed), "versions": {
        "numpy": np.__version__, "python": sys.version.split()[0]}, "byteorder": sys.byteorder}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
