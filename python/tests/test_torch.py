"""nuvec.torch.load_file on the CPU: tensors that view the mapping, as
safetensors.torch.load_file would return them (values, dtypes, shapes)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import nuvec  # noqa: E402
import nuvec.torch  # noqa: E402
from checkpoints import inside, mapped_ranges, write_safetensors  # noqa: E402


def test_cpu_tensors_view_the_mapping(tmp_path):
    expected = {"w": np.arange(256, dtype=np.float32).reshape(16, 16), "ids": np.arange(7, dtype=np.int64),
                "empty": np.zeros((0, 4), dtype=np.float16)}
    path = write_safetensors(tmp_path / "m.safetensors", expected)
    before = nuvec.cpu().memory().mapped
    tensors = nuvec.torch.load_file(path)
    assert list(tensors) == list(expected)
    ranges = mapped_ranges(path)
    for name, tensor in tensors.items():
        assert tensor.device.type == "cpu"
        assert tuple(tensor.shape) == expected[name].shape
        np.testing.assert_array_equal(tensor.numpy(), expected[name])
        if tensor.numel():
            assert inside(tensor.data_ptr(), tensor.numel() * tensor.element_size(), ranges)
    assert nuvec.cpu().memory().mapped - before == nuvec.mapping_size(path.stat().st_size)
    del tensors, tensor
    assert nuvec.cpu().memory().mapped == before


def test_bf16_is_torch_bfloat16(tmp_path):
    bits = np.array([0x3F80, 0x4000, 0xC040], dtype=np.uint16)  # 1, 2, -3
    path = write_safetensors(tmp_path / "bf16.safetensors", {"w": bits}, raw_dtypes={"w": "BF16"})
    w = nuvec.torch.load_file(path, device="cpu")["w"]
    assert w.dtype == torch.bfloat16 and w.float().tolist() == [1.0, 2.0, -3.0]


def test_other_devices_are_refused(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", {"w": np.zeros(4, dtype=np.float32)})
    with pytest.raises(nuvec.InvalidArgument, match="neither cpu nor cuda"):
        nuvec.torch.load_file(path, device="meta")

