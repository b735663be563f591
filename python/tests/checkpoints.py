"""Small checkpoint files written byte by byte, so the tests depend on no
other reader or writer: safetensors (aligned or not), GGUF."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

SAFETENSORS_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64",
                      np.dtype(np.uint8): "U8", np.dtype(np.int32): "I32"}


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], *, header_alignment: int = 256,
                      metadata: dict[str, str] | None = None, raw_dtypes: dict[str, str] | None = None) -> Path:
    """Writes `tensors` in order. The header is padded so the data starts at a
    multiple of `header_alignment` (1: not padded, so the tensors land at
    whatever offset the header's length gives: an unaligned file).
    raw_dtypes names a dtype for a tensor whose array holds its bits (BF16 as uint16)."""
    header: dict = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    blobs = []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        dtype = (raw_dtypes or {}).get(name) or SAFETENSORS_DTYPES[array.dtype]
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    if header_alignment > 1:
        text += b" " * ((-(8 + len(text))) % header_alignment)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return path


def _gguf_string(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(path: Path, f32: np.ndarray, q8_0_blocks: bytes) -> Path:
    """A GGUF v3 file: two metadata values, one F32 tensor `f32` (2-D) and one
    Q8_0 tensor of 32 elements (one block: 2 bytes of scale, 32 of quants)."""
    assert len(q8_0_blocks) == 34
    kv = _gguf_string("general.name") + struct.pack("<I", 8) + _gguf_string("tiny")
    kv += _gguf_string("tiny.layers") + struct.pack("<I", 4) + struct.pack("<I", 3)
    rows, cols = f32.shape
    infos = _gguf_string("weight") + struct.pack("<I", 2) + struct.pack("<QQ", cols, rows) + struct.pack("<I", 0)
    infos += struct.pack("<Q", 0)
    f32_bytes = np.ascontiguousarray(f32, dtype=np.float32).tobytes()
    q_offset = (len(f32_bytes) + 31) // 32 * 32
    infos += _gguf_string("quantized") + struct.pack("<I", 1) + struct.pack("<Q", 32) + struct.pack("<I", 8)
    infos += struct.pack("<Q", q_offset)
    head = b"GGUF" + struct.pack("<IQQ", 3, 2, 2) + kv + infos
    head += b"\0" * ((-len(head)) % 32)
    data = f32_bytes + b"\0" * (q_offset - len(f32_bytes)) + q8_0_blocks
    path.write_bytes(head + data)
    return path


def mapped_ranges(path: Path) -> list[tuple[int, int]]:
    """The address ranges this process has mapped from `path` (/proc/self/maps)."""
    target = str(Path(path).resolve())
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].strip() == target:
                begin, end = (int(x, 16) for x in parts[0].split("-"))
                ranges.append((begin, end))
    return ranges


def inside(address: int, nbytes: int, ranges: list[tuple[int, int]]) -> bool:
    return any(begin <= address and address + nbytes <= end for begin, end in ranges)
