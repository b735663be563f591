"""Tags from Python: `with device.tag(name):` and `with nuvec.torch.tag(name):`
put the tag on every event the device traces inside (nuvec/trace_tag.h)."""

import json
import threading

import pytest

import nuvec


def traced_events(device, tmp_path):
    path = tmp_path / "trace.jsonl"
    device.save_trace(path)
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_a_tag_is_on_the_events_inside_its_with_and_nests(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"x" * 5000)
    device = nuvec.create_cpu()
    device.start_trace()
    with device.tag("weights"):
        assert nuvec.current_tag(device) == "weights"
        weights = device.map_file(tmp_path / "w.bin")
        with device.tag("kv_cache"):
            device.mark("inner")
        device.mark("outer")
    device.mark("none")
    assert nuvec.current_tag(device) == ""
    events = traced_events(device, tmp_path)
    assert [(e["event"], e.get("tag", "")) for e in events] == [
        ("map", "weights"), ("mark", "kv_cache"), ("mark", "weights"), ("mark", "")]
    del weights


def test_a_tag_is_entered_once_and_only_its_thread_may_end_it():
    device = nuvec.create_cpu()
    tag = device.tag("scratch")
    with tag:
        with pytest.raises(nuvec.InvalidArgument, match="already entered"):
            tag.__enter__()
    other = device.tag("logits")
    other.__enter__()
    errors = []
    thread = threading.Thread(target=lambda: errors.append(pytest.raises(nuvec.InvalidArgument, other.__exit__,
                                                                         None, None, None)))
    thread.start()
    thread.join()
    assert errors and "thread that entered it" in str(errors[0].value)
    other.__exit__(None, None, None)
    assert nuvec.current_tag(device) == ""


def test_nuvec_torch_tag_tags_the_given_device(tmp_path):
    pytest.importorskip("torch")
    import nuvec.torch
    (tmp_path / "o.bin").write_bytes(b"y" * 100)
    device = nuvec.create_cpu()
    device.start_trace()
    with nuvec.torch.tag("optimizer", device=device):
        state = device.map_file(tmp_path / "o.bin")
    with nuvec.torch.tag("optimizer"):  # by default nuvec.cpu()
        assert nuvec.current_tag(nuvec.cpu()) == "optimizer"
    assert nuvec.current_tag(nuvec.cpu()) == ""
    assert [e.get("tag") for e in traced_events(device, tmp_path) if e["event"] == "map"] == ["optimizer"]
    del state
