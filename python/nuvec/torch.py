"""PyTorch through nuvec.

load_file is a drop-in for safetensors.torch.load_file:

    import nuvec.torch
    weights = nuvec.torch.load_file("model.safetensors")                  # CPU: views of the mapping
    weights = nuvec.torch.load_file("model.safetensors", device="cuda")   # uploaded through nuvec

On the CPU the tensors view the file's read-only mapping (no copy; counted in
nuvec.cpu()'s `mapped` until the last tensor is gone). PyTorch has no
read-only tensors: writing one of them in place faults (the pages are
read-only), so clone() a tensor before changing it. On a GPU the tensors
are nuvec buffers of nuvec.cuda(i) (counted in its `active`), filled by
nuvec's upload: bytes read from the file into page-locked staging (counted in
`wired`, within its wired limit) and copied to the device.

install() makes nuvec PyTorch's CUDA allocator (CUDAPluggableAllocator): from
then on PyTorch's CUDA tensors are nuvec buffers too, and nuvec.cuda(i)'s
memory(), limits and trace cover them. It must run before the first CUDA
allocation of the process (PyTorch refuses to swap an allocator it has used).
A refused allocation raises RuntimeError with nuvec's message.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Union

import torch

import nuvec
from nuvec import _nuvec

PathLike = Union[str, os.PathLike]


def _dtypes() -> dict[str, torch.dtype]:
    names = {
        "BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16",
        "U32": "uint32", "I32": "int32", "U64": "uint64", "I64": "int64",
        "F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64",
        "C64": "complex64", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
    }
    # Older PyTorch lacks the unsigned and float8 types: those dtypes are then refused by name.
    return {ours: getattr(torch, theirs) for ours, theirs in names.items() if hasattr(torch, theirs)}


TORCH_DTYPES: dict[str, torch.dtype] = _dtypes()


def _torch_dtype(name: str, tensor: str) -> torch.dtype:
    dtype = TORCH_DTYPES.get(name)
    if dtype is None:
        raise nuvec.InvalidArgument(
            f"tensor {tensor}: dtype {name} has no PyTorch type in torch {torch.__version__}; "
            "load it with nuvec.load_safetensors (numpy) instead")
    return dtype


def _host_tensor(view: nuvec.TensorView) -> torch.Tensor:
    dtype = _torch_dtype(view.dtype, view.name)
    if view.nbytes == 0:
        return torch.empty(view.shape, dtype=dtype)
    with warnings.catch_warnings():
        # "The given buffer is not writable": known, and said in the module's doc.
        warnings.simplefilter("ignore", UserWarning)
        flat = torch.frombuffer(view, dtype=dtype)
    return flat.reshape(view.shape)


def _device_tensor(t: nuvec.DeviceTensor, index: int) -> torch.Tensor:
    dtype = _torch_dtype(t.dtype, t.name)
    if t.nbytes == 0:
        return torch.empty(t.shape, dtype=dtype, device=torch.device("cuda", index))
    # Zero-copy: PyTorch keeps `t` (and so its nuvec buffer) alive with the tensor.
    raw = torch.as_tensor(t, device=torch.device("cuda", index))
    return raw.view(dtype).reshape(t.shape)


def load_file(filename: PathLike, device: Union[str, int, torch.device] = "cpu") -> dict[str, torch.Tensor]:
    """Loads a safetensors checkpoint as {name: tensor} on `device` ("cpu",
    "cuda", "cuda:1", an index, a torch.device), as safetensors.torch.load_file."""
    target = torch.device(f"cuda:{device}" if isinstance(device, int) else device)
    views, _metadata = nuvec.cpu()._load_safetensors(os.fspath(filename))
    if target.type == "cpu":
        return {v.name: _host_tensor(v) for v in views}
    if target.type != "cuda":
        raise nuvec.InvalidArgument(f"load_file({os.fspath(filename)!r}): device {target} is neither cpu nor cuda")
    index = target.index if target.index is not None else torch.cuda.current_device()
    tensors, report = _nuvec._upload(nuvec.cuda(index), views)
    global last_upload
    last_upload = report
    return {t.name: _device_tensor(t, index) for t in tensors}


# The report of the last load_file onto a GPU: bytes, staging, seconds per stage (nuvec/cuda_upload.h).
last_upload: dict | None = None


# ---- the allocator plugin ---------------------------------------------------

_installed = False


def install() -> None:
    """Makes nuvec PyTorch's CUDA allocator (before any CUDA allocation)."""
    global _installed
    if not _nuvec._has_torch_allocator:
        raise nuvec.InvalidArgument("nuvec was built without CUDA: there is no allocator to install "
                                    "(rebuild with the CUDA toolkit installed, NUVEC_WITH_CUDA=ON)")
    if _installed:
        return
    # The plugin lives in the extension module itself; dlopen hands back the loaded copy.
    allocator = torch.cuda.memory.CUDAPluggableAllocator(_nuvec.__file__, "nuvec_malloc", "nuvec_free")
    try:
        torch.cuda.memory.change_current_allocator(allocator)
    except RuntimeError as e:
        raise nuvec.InvalidArgument(
            f"nuvec.torch.install(): PyTorch refused to swap its CUDA allocator ({e}); call install() before "
            "the first CUDA allocation of the process (before any CUDA tensor, model.cuda() or "
            "torch.cuda.set_per_process_memory_fraction)") from e
    _installed = True


def installed() -> bool:
    return _installed


@contextlib.contextmanager
def tag(name: str, device: "nuvec.Device | None" = None):
    """Tags the memory PyTorch takes through nuvec inside the `with`:

        with nuvec.torch.tag("optimizer"):
            optimizer.step()

    Every event the devices trace on this thread meanwhile carries `name`
    (tags nest; the innermost counts), so `nuvec plot` stacks it apart.
    The devices: `device`, or by default nuvec.cpu() (load_file's mappings)
    and, once install() made nuvec PyTorch's allocator, the GPU PyTorch is
    using (nuvec.cuda(torch.cuda.current_device())).
    """
    if device is not None:
        devices = [device]
    else:
        devices = [nuvec.cpu()]
        if _installed:
            devices.append(nuvec.cuda(torch.cuda.current_device()))
    with contextlib.ExitStack() as stack:
        for d in devices:
            stack.enter_context(d.tag(name))
        yield


def stats(device: int = 0) -> dict[str, int]:
    """nuvec.cuda(device).memory() as a dict, with `peak_held` (the highest
    active + cache: PyTorch's max_memory_reserved) and `committed` /
    `peak_committed` (device memory nuvec holds physically, in 2 MiB granules)."""
    result = nuvec.cuda(device).memory().as_dict()
    if _nuvec._has_torch_allocator:
        result["peak_held"] = _nuvec._torch_peak_held(device)
        result["committed"], result["peak_committed"] = _nuvec._torch_committed(device)
    return result


def call_times(device: int = 0) -> dict[str, int]:
    """Calls of PyTorch's malloc and free through nuvec and the nanoseconds in
    them (all 0 unless NUVEC_TORCH_CALL_TIMES=1 was set when nuvec loaded)."""
    mallocs, malloc_ns, frees, free_ns = _nuvec._torch_call_times(device)
    return {"mallocs": mallocs, "malloc_ns": malloc_ns, "frees": frees, "free_ns": free_ns}


def set_memory_limit(bytes_: int, device: int = 0) -> int:
    """Past this, an allocation raises instead of taking memory; returns the previous limit."""
    return nuvec.cuda(device).set_memory_limit(bytes_)


def set_cache_limit(bytes_: int, device: int = 0) -> int:
    return nuvec.cuda(device).set_cache_limit(bytes_)


def set_wired_limit(bytes_: int, device: int = 0) -> int:
    return nuvec.cuda(device).set_wired_limit(bytes_)


def reset_peak(device: int = 0) -> None:
    """Restarts peak, peak_with_mapped and peak_held from the current figures."""
    nuvec.cuda(device).reset_peak()


def clear_cache(device: int = 0) -> None:
    nuvec.cuda(device).clear_cache()
