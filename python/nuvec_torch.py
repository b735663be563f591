"""PyTorch's CUDA memory through nuvec.

    import nuvec_torch
    nuvec_torch.install()                      # before anything touches CUDA memory
    nuvec_torch.set_memory_limit(40 << 30)     # a hard limit: past it, allocation raises
    ... run the model ...
    print(nuvec_torch.stats())                 # {'active': ..., 'peak': ..., 'peak_held': ..., ...}

install() loads libnuvec_torch_alloc.so (built with the CUDA backend: see
docs/cuda.md) as torch.cuda.memory.CUDAPluggableAllocator and makes it the
current allocator; it must run before the first CUDA allocation of the
process (PyTorch refuses to swap an allocator that has been used). The
statistics are nuvec's MemoryStats for that GPU, with the same field names
(docs/memory-stats.md), plus `peak_held`: the highest active + cache (what
nuvec held from the GPU, PyTorch's "reserved"), sampled after every
allocation, and `committed`/`peak_committed`: the device memory nuvec holds
physically (2 MiB granules, shared by small blocks). An allocation nuvec refuses raises RuntimeError with nuvec's
message (what was asked, the limit, how to change it).
"""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path

LIBRARY_NAME = "libnuvec_torch_alloc.so"
_library: ctypes.CDLL | None = None


def find_library() -> Path:
    """The plugin: $NUVEC_TORCH_ALLOC, else the first build directory that has one."""
    explicit = os.environ.get("NUVEC_TORCH_ALLOC")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise FileNotFoundError(f"NUVEC_TORCH_ALLOC={explicit}: no such file")
        return path
    root = Path(__file__).resolve().parent.parent
    candidates = sorted((root / "build").glob(f"*/{LIBRARY_NAME}"))
    if not candidates:
        raise FileNotFoundError(
            f"{LIBRARY_NAME} not found under {root / 'build'}; build the target nuvec_torch_alloc "
            "(the CUDA toolkit must be installed) or set NUVEC_TORCH_ALLOC to its path")
    return candidates[0]


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    lib.nuvec_last_error.restype = ctypes.c_char_p
    lib.nuvec_device_count.restype = ctypes.c_int
    lib.nuvec_stats_json.restype = ctypes.c_long
    lib.nuvec_stats_json.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    for name in ("nuvec_set_memory_limit", "nuvec_set_cache_limit", "nuvec_set_wired_limit"):
        f = getattr(lib, name)
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)]
    lib.nuvec_call_times.restype = ctypes.c_int
    lib.nuvec_call_times.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
    lib.nuvec_peak_held.restype = ctypes.c_int
    lib.nuvec_peak_held.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
    lib.nuvec_committed.restype = ctypes.c_int
    lib.nuvec_committed.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
    lib.nuvec_reservations.restype = ctypes.c_int
    lib.nuvec_reservations.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
    for name in ("nuvec_reset_peak", "nuvec_clear_cache"):
        f = getattr(lib, name)
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int]
    return lib


def install(library: str | os.PathLike | None = None) -> Path:
    """Makes nuvec PyTorch's CUDA allocator; returns the library's path."""
    global _library
    import torch

    path = Path(library) if library is not None else find_library()
    if _library is None:
        allocator = torch.cuda.memory.CUDAPluggableAllocator(str(path), "nuvec_malloc", "nuvec_free")
        torch.cuda.memory.change_current_allocator(allocator)
        _library = _load(path)  # the same library: dlopen hands back the loaded copy
    return path


def _lib() -> ctypes.CDLL:
    if _library is None:
        raise RuntimeError("nuvec_torch.install() has not been called")
    return _library


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"nuvec: {what}: {_lib().nuvec_last_error().decode(errors='replace')}")


def stats(device: int = 0) -> dict[str, int]:
    """The GPU's MemoryStats as a dict (active, peak, peak_with_mapped, cache, limits, ...) and its counters.

    system_allocations counts cache misses (requests the cache could not serve from memory it held, also
    when the arena served them from reserved address space never used); beside it, from Device::counters():
    peak_held, committed and peak_committed, reservations and reserved_bytes.
    """
    lib = _lib()
    length = lib.nuvec_stats_json(device, None, 0)
    _check(0 if length >= 0 else -1, f"stats of device {device}")
    buffer = ctypes.create_string_buffer(length + 1)
    _check(0 if lib.nuvec_stats_json(device, buffer, length + 1) == length else -1, f"stats of device {device}")
    result = json.loads(buffer.value.decode())
    result["peak_held"] = peak_held(device)
    result.update(committed(device))
    result.update(reservations(device))
    return result


def reservations(device: int = 0) -> dict[str, int]:
    """The address-space reservations the device holds now ('reservations') and their bytes ('reserved_bytes')."""
    out = (ctypes.c_uint64 * 2)()
    _check(_lib().nuvec_reservations(device, out), f"reservations of device {device}")
    return {"reservations": out[0], "reserved_bytes": out[1]}


def committed(device: int = 0) -> dict[str, int]:
    """Device memory nuvec holds physically ('committed') and its peak ('peak_committed', restarted by reset_peak()).

    With the arena (the default), the 2 MiB granules mapped for blocks, which small blocks share: at least
    active + cache, and what the GPU itself counts. With whole blocks (NUVEC_CUDA_ARENA=0), cudaMalloc'd bytes.
    """
    out = (ctypes.c_uint64 * 2)()
    _check(_lib().nuvec_committed(device, out), f"committed memory of device {device}")
    return {"committed": out[0], "peak_committed": out[1]}


def peak_held(device: int = 0) -> int:
    """The highest active + cache since the start or reset_peak() (PyTorch's max_memory_reserved)."""
    out = ctypes.c_uint64(0)
    _check(_lib().nuvec_peak_held(device, ctypes.byref(out)), f"peak_held of device {device}")
    return out.value


def call_times(device: int = 0) -> dict[str, int]:
    """Calls of PyTorch's malloc and free through nuvec on `device`, and the nanoseconds spent in them
    (all 0 unless the environment had NUVEC_TORCH_CALL_TIMES=1 when the library loaded)."""
    out = (ctypes.c_uint64 * 4)()
    _check(_lib().nuvec_call_times(device, out), f"call_times of device {device}")
    return {"mallocs": out[0], "malloc_ns": out[1], "frees": out[2], "free_ns": out[3]}


def _set(name: str, device: int, value: int) -> int:
    previous = ctypes.c_uint64(0)
    _check(getattr(_lib(), name)(device, int(value), ctypes.byref(previous)), f"{name}({value}) on device {device}")
    return previous.value


def set_memory_limit(bytes_: int, device: int = 0) -> int:
    """Past this, an allocation raises instead of taking memory; returns the previous limit."""
    return _set("nuvec_set_memory_limit", device, bytes_)


def set_cache_limit(bytes_: int, device: int = 0) -> int:
    return _set("nuvec_set_cache_limit", device, bytes_)


def set_wired_limit(bytes_: int, device: int = 0) -> int:
    return _set("nuvec_set_wired_limit", device, bytes_)


def reset_peak(device: int = 0) -> None:
    """Restarts peak, peak_with_mapped and peak_held from the current figures."""
    _check(_lib().nuvec_reset_peak(device), f"reset_peak on device {device}")


def clear_cache(device: int = 0) -> None:
    _check(_lib().nuvec_clear_cache(device), f"clear_cache on device {device}")
