"""Checkpoints as numpy arrays: zero-copy views of the file's mapping,
read-only, with the statistics the C++ library reports."""

import json
import subprocess

import numpy as np
import pytest

import nuvec
from checkpoints import inside, mapped_ranges, write_gguf, write_safetensors


@pytest.fixture
def aligned(tmp_path):
    tensors = {"embed": np.arange(64 * 8, dtype=np.float32).reshape(64, 8),
               "ids": np.arange(10, dtype=np.int64), "half": np.linspace(0, 1, 6, dtype=np.float16).reshape(2, 3)}
    return write_safetensors(tmp_path / "model.safetensors", tensors, metadata={"format": "pt"}), tensors


def test_safetensors_arrays_view_the_mapping(device, aligned):
    path, expected = aligned
    arrays = nuvec.load_safetensors(path, device)
    assert list(arrays) == list(expected)
    ranges = mapped_ranges(path)
    assert ranges, "the file is not mapped"
    for name, array in arrays.items():
        np.testing.assert_array_equal(array, expected[name])
        assert array.dtype == expected[name].dtype and array.shape == expected[name].shape
        assert inside(array.ctypes.data, array.nbytes, ranges), f"{name} is not in the mapping"
        assert not array.flags.writeable and not array.flags.owndata
    # Views of one mapping share its memory.
    whole = np.frombuffer(nuvec.map_file(path, nuvec.create_cpu()), dtype=np.uint8)
    assert not np.shares_memory(arrays["embed"], whole)  # another mapping
    embed_again = arrays["embed"].view(np.uint8).reshape(-1)
    assert np.shares_memory(arrays["embed"], embed_again)


def test_writes_are_refused(device, aligned):
    path, _ = aligned
    array = nuvec.load_safetensors(path, device)["embed"]
    with pytest.raises(ValueError, match="read-only"):
        array[0, 0] = 1.0
    with pytest.raises(ValueError):
        array.setflags(write=True)
    with pytest.raises(ValueError, match="read-only"):
        np.add(array, 1, out=array)


def test_statistics_after_a_load_equal_the_cpp_figures(device, aligned, nuvec_tool):
    path, _ = aligned
    predicted = nuvec.footprint(path)
    inspected = json.loads(subprocess.run([nuvec_tool, "inspect", "--json", str(path)], check=True,
                                          capture_output=True, text=True).stdout)[0]
    arrays = nuvec.load_safetensors(path, device)
    stats = device.memory()
    assert stats.mapped == nuvec.mapping_size(path.stat().st_size) == inspected["adds"]["mapped"]
    assert stats.active == inspected["adds"]["active"] == 0
    assert stats.peak_with_mapped == inspected["adds"]["peak_with_mapped"]
    assert predicted.as_dict() == inspected["adds"]
    assert inspected["load_path"] == "mapped"
    del arrays
    assert device.memory().mapped == 0 and device.memory().peak_with_mapped == stats.peak_with_mapped


def test_unaligned_file_is_read_into_one_buffer(device, tmp_path, nuvec_tool):
    expected = {"a": np.arange(3, dtype=np.uint8), "b": np.arange(5, dtype=np.float32)}
    path = write_safetensors(tmp_path / "unaligned.safetensors", expected, header_alignment=1)
    inspected = json.loads(subprocess.run([nuvec_tool, "inspect", "--json", str(path)], check=True,
                                          capture_output=True, text=True).stdout)[0]
    assert inspected["load_path"] == "read"
    arrays = nuvec.load_safetensors(path, device)
    stats = device.memory()
    assert stats.mapped == 0 and stats.active == inspected["adds"]["active"] > 0
    for name, array in arrays.items():
        np.testing.assert_array_equal(array, expected[name])
        assert not array.flags.writeable
    assert not mapped_ranges(path)
    del arrays, array
    assert device.memory().active == 0


def test_bf16_comes_back_as_its_bits(device, tmp_path):
    bits = np.array([0x3F80, 0x4000], dtype=np.uint16)  # 1.0, 2.0
    path = write_safetensors(tmp_path / "bf16.safetensors", {"w": bits}, raw_dtypes={"w": "BF16"})
    array = nuvec.load_safetensors(path, device)["w"]
    assert array.dtype == np.uint16 and list(array) == [0x3F80, 0x4000]


def test_npy_views_the_mapping(device, tmp_path):
    path = tmp_path / "x.npy"
    expected = np.arange(1000, dtype=np.float64).reshape(10, 100)
    np.save(path, expected)
    array = nuvec.load_npy(path, device)
    np.testing.assert_array_equal(array, expected)
    assert inside(array.ctypes.data, array.nbytes, mapped_ranges(path))
    assert not array.flags.writeable
    assert device.memory().mapped == nuvec.mapping_size(path.stat().st_size)


def test_npy_fortran_order_refused_unless_asked(device, tmp_path):
    path = tmp_path / "f.npy"
    np.save(path, np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)))
    with pytest.raises(nuvec.FormatError, match="Fortran"):
        nuvec.load_npy(path, device)
    assert device.memory().mapped == 0
    transposed = nuvec.load_npy(path, device, transpose_fortran=True)
    np.testing.assert_array_equal(transposed, np.arange(6, dtype=np.int32).reshape(2, 3).T)


def test_gguf_tensors_and_metadata(device, tmp_path):
    weight = np.arange(12, dtype=np.float32).reshape(3, 4)
    q8 = bytes([0, 60]) + bytes(range(32))
    path = write_gguf(tmp_path / "tiny.gguf", weight, q8)
    model = nuvec.load_gguf(path, device)
    assert model.metadata == {"general.name": "tiny", "tiny.layers": 3}
    np.testing.assert_array_equal(model.tensors["weight"], weight)
    assert model.ggml_types == {"quantized": "Q8_0"}
    assert model.tensors["quantized"].dtype == np.uint8 and bytes(model.tensors["quantized"]) == q8
    assert inside(model.tensors["weight"].ctypes.data, 48, mapped_ranges(path))
    assert not model.tensors["weight"].flags.writeable


def test_trace_records_marks_and_loads(device, aligned, tmp_path):
    path, _ = aligned
    device.start_trace()
    device.mark("load")
    arrays = nuvec.load_safetensors(path, device)
    del arrays
    out = tmp_path / "trace.jsonl"
    events = device.save_trace(out)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = [line.get("event") or line.get("kind") for line in lines[1:]]
    assert events == len(lines) - 1 and "mark" in kinds and "map" in kinds and "unmap" in kinds
