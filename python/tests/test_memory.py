"""Devices, statistics and limits from Python: the C++ contract, field by field."""

import numpy as np
import pytest

import nuvec

FIELDS = ("active", "peak", "active_with_mapped", "peak_with_mapped", "cache", "memory_limit", "cache_limit",
          "system_allocations", "wired_limit", "wired", "mapped", "wired_mapped")


def test_memory_has_the_twelve_fields_by_name(device):
    stats = device.memory()
    assert nuvec.MemoryStats.fields == FIELDS
    assert tuple(stats.as_dict()) == FIELDS
    for name in FIELDS:
        assert getattr(stats, name) == stats.as_dict()[name]
    assert stats.active == 0 and stats.mapped == 0 and stats.memory_limit > 0
    assert stats == device.memory()


def test_setters_return_the_previous_value(device):
    before = device.memory()
    assert device.set_memory_limit(1 << 30) == before.memory_limit
    assert device.set_memory_limit(2 << 30) == 1 << 30
    assert device.set_cache_limit(1 << 20) == before.cache_limit
    assert device.set_cache_limit(0) == 1 << 20
    assert device.set_wired_limit(0) == before.wired_limit
    after = device.memory()
    assert (after.memory_limit, after.cache_limit, after.wired_limit) == (2 << 30, 0, 0)


def test_reset_peak_sets_peaks_to_current_values(device, tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(b"x" * 10000)
    m = device.map_file(path)
    assert device.memory().peak_with_mapped == nuvec.mapping_size(10000)
    del m
    assert device.memory().peak_with_mapped == nuvec.mapping_size(10000)
    device.reset_peak()
    stats = device.memory()
    assert stats.peak == stats.active == 0
    assert stats.peak_with_mapped == stats.active_with_mapped == 0


def test_process_wide_devices(device):
    assert nuvec.cpu() is nuvec.cpu()
    assert nuvec.cpu().name == "cpu"
    assert nuvec.cuda_device_count() >= 0
    if nuvec.cuda_device_count() == 0:
        with pytest.raises(nuvec.InvalidArgument, match="there is no CUDA device 0"):
            nuvec.cuda(0)


def test_map_file_is_a_read_only_zero_copy_buffer(device, tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(256)) * 20)
    m = device.map_file(path)
    assert (m.file_size, m.mapped_bytes) == (5120, nuvec.mapping_size(5120))
    assert device.memory().mapped == m.mapped_bytes
    view = memoryview(m)
    assert view.readonly and view.nbytes == 5120
    array = np.frombuffer(m, dtype=np.uint8)
    assert array.ctypes.data == m.address and bytes(array[:4]) == b"\0\1\2\3"
    with pytest.raises(ValueError, match="read-only"):
        array[0] = 1
    with pytest.raises(TypeError):
        view[0] = 1
    mapped = m.mapped_bytes
    del m, view
    assert device.memory().mapped == mapped  # the array still holds the mapping
    del array
    assert device.memory().mapped == 0


def test_free_functions():
    assert nuvec.page_size() >= 4096
    assert nuvec.allocation_size(1) == 256
    assert nuvec.allocation_size(2**64 - 1) is None
    assert nuvec.mapping_size(1) == nuvec.page_size()
    assert nuvec.__version__ == "0.1.0"
