"""nuvec's C++ exceptions as Python exceptions of the matching built-in kinds,
with the C++ messages (compared with what the nuvec command prints)."""

import errno
import subprocess

import numpy as np
import pytest

import nuvec
from checkpoints import write_safetensors


def tool_error(tool, *args):
    run = subprocess.run([tool, *args], capture_output=True, text=True)
    assert run.returncode != 0
    prefix = "nuvec: error: "
    line = run.stderr.strip().splitlines()[-1]
    assert line.startswith(prefix), run.stderr
    return line[len(prefix):]


def test_exception_types():
    assert issubclass(nuvec.OutOfMemory, MemoryError) and issubclass(nuvec.OutOfMemory, nuvec.Error)
    assert issubclass(nuvec.IoError, OSError) and issubclass(nuvec.IoError, nuvec.Error)
    assert issubclass(nuvec.FormatError, ValueError) and issubclass(nuvec.FormatError, nuvec.Error)
    assert issubclass(nuvec.InvalidArgument, ValueError) and issubclass(nuvec.InvalidArgument, nuvec.Error)
    assert issubclass(nuvec.ReadOnly, PermissionError)


def test_format_error_has_the_cpp_message(device, tmp_path, nuvec_tool):
    path = tmp_path / "broken.safetensors"
    path.write_bytes(b"\xff" * 16)
    with pytest.raises(nuvec.FormatError) as caught:
        nuvec.load_safetensors(path, device)
    assert str(caught.value) == tool_error(nuvec_tool, "inspect", str(path))
    assert caught.value.file == str(path) and caught.value.offset == 0
    assert device.memory() == nuvec.create_cpu().memory()  # nothing counted


def test_io_error_is_an_os_error_with_errno(device, tmp_path, nuvec_tool):
    path = tmp_path / "missing.npy"
    with pytest.raises(OSError) as caught:
        nuvec.load_npy(path, device)
    assert isinstance(caught.value, nuvec.IoError)
    assert caught.value.errno == errno.ENOENT and caught.value.path == str(path)
    assert str(path) in str(caught.value)
    with pytest.raises(nuvec.IoError) as by_map:
        device.map_file(path)
    assert by_map.value.errno == errno.ENOENT


def test_out_of_memory_is_a_memory_error_and_changes_nothing(device, tmp_path):
    path = write_safetensors(tmp_path / "big.safetensors", {"w": np.zeros(1 << 16, dtype=np.float32)})
    device.set_memory_limit(64 << 10)
    before = device.memory()
    with pytest.raises(MemoryError) as caught:
        nuvec.load_safetensors(path, device)
    error = caught.value
    assert isinstance(error, nuvec.OutOfMemory)
    assert "memory limit" in str(error) and "set_memory_limit" in str(error)
    assert error.requested == nuvec.mapping_size(path.stat().st_size)
    assert error.stats == before.as_dict()
    assert device.memory() == before


def test_invalid_argument(device):
    with pytest.raises(nuvec.InvalidArgument, match="trace is off"):
        device.save_trace("/nonexistent/trace.jsonl")
