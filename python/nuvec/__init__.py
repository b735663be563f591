"""nuvec: a device allocator (CPU, CUDA) with exact memory statistics, and
checkpoints (safetensors, npy, GGUF) loaded as zero-copy views of a mapping.

    import nuvec
    cpu = nuvec.cpu()
    weights = nuvec.load_safetensors("model.safetensors")   # {name: read-only numpy array}
    print(cpu.memory().mapped, cpu.memory().as_dict())

Every figure is bytes of one device's allocator (docs/memory-stats.md).
Arrays the loaders return view the file's mapping (or, for a file whose
tensors are not aligned, one allocator buffer): no copy is made, writing one
raises ValueError, and the mapping stays counted in `mapped` until the last
array viewing it is gone. nuvec's C++ exceptions arrive as nuvec.Error
subclasses that are also the matching built-in: OutOfMemory (MemoryError),
IoError (OSError), FormatError and InvalidArgument (ValueError), ReadOnly
(PermissionError), with the C++ message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Union

import numpy as np

from ._nuvec import (  # noqa: F401  (re-exported)
    Device,
    DeviceTensor,
    Error,
    Footprint,
    FormatError,
    InvalidArgument,
    IoError,
    MappedFile,
    MemoryStats,
    OutOfMemory,
    ReadOnly,
    Tag,
    TensorView,
    __version__,
    allocation_size,
    cpu,
    create_cpu,
    cuda,
    cuda_device_count,
    current_tag,
    mapping_size,
    page_size,
    physical_memory,
)
from . import _nuvec

# numpy's dtype for each nuvec dtype. numpy has no bfloat16 or float8: those
# come back as unsigned integers of the same width holding the bits
# (nuvec.torch.load_file gives torch.bfloat16 and the float8 types).
NUMPY_DTYPES: Mapping[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
    "U16": np.dtype(np.uint16), "I16": np.dtype(np.int16),
    "U32": np.dtype(np.uint32), "I32": np.dtype(np.int32),
    "U64": np.dtype(np.uint64), "I64": np.dtype(np.int64),
    "F16": np.dtype(np.float16), "F32": np.dtype(np.float32), "F64": np.dtype(np.float64),
    "C64": np.dtype(np.complex64),
    "BF16": np.dtype(np.uint16),
    "F8_E4M3": np.dtype(np.uint8), "F8_E5M2": np.dtype(np.uint8),
}

PathLike = Union[str, os.PathLike]


def _host_device(device: Device | None) -> Device:
    return cpu() if device is None else device


def to_numpy(view: TensorView) -> np.ndarray:
    """The tensor as a read-only numpy array over the same memory (no copy).

    GGUF's quantized tensors (view.ggml_type set) come back as their raw
    blocks: a uint8 array of view.nbytes bytes.
    """
    raw = np.frombuffer(view, dtype=np.uint8)  # read-only: the buffer refuses writes
    if view.dtype == "GGML_BLOCK":
        return raw
    dtype = NUMPY_DTYPES[view.dtype]
    return raw.view(dtype).reshape(view.shape)


def load_safetensors(path: PathLike, device: Device | None = None) -> dict[str, np.ndarray]:
    """A safetensors checkpoint (a file, a directory holding model.safetensors or
    a sharded index, or such an index) as {name: read-only numpy array}, in file
    order, each viewing the mapping of its file. `device`: the nuvec device the
    mapping is counted on (default nuvec.cpu())."""
    views, _metadata = _host_device(device)._load_safetensors(os.fspath(path))
    return {v.name: to_numpy(v) for v in views}


def safetensors_metadata(path: PathLike, device: Device | None = None) -> dict[str, str]:
    """The __metadata__ of a safetensors checkpoint (every shard's, merged)."""
    return _host_device(device)._load_safetensors(os.fspath(path))[1]


def load_npy(path: PathLike, device: Device | None = None, *, transpose_fortran: bool = False) -> np.ndarray:
    """One .npy array, read-only, viewing the file's mapping where its data is
    aligned and in native byte order (numpy.save's files always are).
    Fortran-order arrays are refused unless transpose_fortran=True, which gives
    the C-order transpose (the same bytes, the shape reversed)."""
    return to_numpy(_host_device(device)._load_npy(os.fspath(path), transpose_fortran))


@dataclass
class GgufModel:
    """A loaded GGUF file: its tensors ({name: read-only numpy array}, shapes
    outermost first), its metadata ({key: value}), and for each quantized
    tensor its ggml block type ("Q4_K"); those tensors are raw uint8 blocks."""

    tensors: dict[str, np.ndarray]
    metadata: dict[str, Any]
    ggml_types: dict[str, str] = field(default_factory=dict)


def load_gguf(path: PathLike, device: Device | None = None) -> GgufModel:
    views, metadata = _host_device(device)._load_gguf(os.fspath(path))
    return GgufModel(tensors={v.name: to_numpy(v) for v in views}, metadata=metadata,
                     ggml_types={v.name: v.ggml_type for v in views if v.ggml_type})


def save_safetensors(path: PathLike, arrays: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None = None,
                     *, dtypes: Mapping[str, str] | None = None) -> None:
    """Writes {name: array} as a safetensors file, atomically, every tensor at a
    256-byte boundary (so it loads as views of its mapping). `dtypes` names the
    safetensors dtype of arrays that hold another type's bits ({"w": "BF16"}
    for a uint16 array)."""
    _nuvec._save_safetensors(os.fspath(path), dict(arrays), dict(metadata or {}), dict(dtypes or {}))


def map_file(path: PathLike, device: Device | None = None) -> MappedFile:
    """The whole file mapped read-only (a buffer: memoryview(m), numpy.frombuffer(m))."""
    return _host_device(device).map_file(os.fspath(path))


def footprint(paths: PathLike | Iterable[PathLike]) -> Footprint:
    """What loading these safetensors checkpoints will add to `mapped`,
    `active` and `peak_with_mapped`, from their headers alone."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return _nuvec.footprint([os.fspath(p) for p in paths])
