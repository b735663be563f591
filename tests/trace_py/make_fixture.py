#!/usr/bin/env python3
"""Writes torch_snapshot.pickle: a small, hand-built PyTorch memory snapshot.

It has the structure torch.cuda.memory._dump_snapshot() writes (torch 2.x:
'segments', 'device_traces', 'allocator_settings'; trace entries with
'action', 'addr', 'size', 'stream', 'time_us', 'frames'; 'device_free'
instead of 'addr' on 'oom'), plus the 'nuvec_marks' key that
tools/record_torch_traces.py adds. The story, on device 0 (device 1 is empty):

  a block allocated before recording began is freed      -> dropped, counted
  mark "load"
  cudaMalloc of a 2 MiB segment, then alloc A (1000000)  -> allocate id 1, miss
  alloc B (4096), a snapshot entry                       -> allocate id 2, hit
  mark "compute"
  alloc C (512) on stream 7                              -> allocate id 3 (the peak)
  free A (requested, then completed)                     -> free id 1
  alloc D (800000) at A's old address                    -> allocate id 4, new id
  out of memory asking for 1 TiB                         -> refuse
  free C, free D, a segment_free of another segment      -> free id 3, free id 4
  mark "end"; B is still live

Run it again only to change the fixture: `python3 make_fixture.py` (the output
is byte-for-byte the same each time) and update trace_from_torch_test.py.
"""

import os
import pickle

SEG = 0x7F3A_0000_0000          # the 2 MiB segment
OLD = 0x7F39_0000_0000          # a block from before recording
OTHER_SEG = 0x7F38_0000_0000


def frames(name, line):
    return [{"filename": "/work/model.py", "line": line, "name": name},
            {"filename": "??", "line": 0, "name": "at::native::empty_cuda"}]


def entry(action, addr, size, t, stream=0, fr=None):
    e = {"action": action, "addr": addr, "size": size, "stream": stream, "time_us": t}
    e["frames"] = fr if fr is not None else []
    return e


def snapshot():
    trace = [
        entry("free_requested", OLD, 65536, 1000),
        entry("free_completed", OLD, 65536, 1000),
        entry("segment_alloc", SEG, 2097152, 1010, fr=frames("load", 10)),
        entry("alloc", SEG, 1000000, 1011, fr=frames("load", 10)),
        entry("alloc", SEG + 1000448, 4096, 1020, fr=frames("load", 11)),
        {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 1030,
         "frames": []},
        entry("alloc", SEG + 1004544, 512, 1050, stream=7, fr=frames("compute", 20)),
        entry("free_requested", SEG, 1000000, 1060),
        entry("free_completed", SEG, 1000000, 1061),
        entry("alloc", SEG, 800000, 1070, fr=frames("compute", 22)),
        {"action": "oom", "device_free": 123456789, "size": 1 << 40, "stream": 0,
         "time_us": 1080, "frames": frames("compute", 23)},
        entry("free_requested", SEG + 1004544, 512, 1090, stream=7),
        entry("free_completed", SEG + 1004544, 512, 1091, stream=7),
        entry("free_requested", SEG, 800000, 1100),
        entry("free_completed", SEG, 800000, 1100),
        entry("segment_free", OTHER_SEG, 2097152, 1110),
    ]
    segment = {
        "device": 0, "address": SEG, "total_size": 2097152, "allocated_size": 4096,
        "active_size": 4096, "requested_size": 4096, "stream": 0,
        "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
        "frames": frames("load", 10),
        "blocks": [
            {"address": SEG, "size": 1000448, "requested_size": 800000, "state": "inactive",
             "frames": []},
            {"address": SEG + 1000448, "size": 4096, "requested_size": 4096,
             "state": "active_allocated", "frames": frames("load", 11)},
            {"address": SEG + 1004544, "size": 1092608, "requested_size": 0,
             "state": "inactive", "frames": []},
        ],
    }
    return {
        "segments": [segment],
        "device_traces": [trace, []],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                               "garbage_collection_threshold": 0.0,
                               "expandable_segments": False,
                               "pinned_num_register_threads": 1,
                               "release_lock_on_cudamalloc": False,
                               "pinned_use_cuda_host_register": False,
                               "roundup_power2_divisions": {}},
        "nuvec_marks": [{"name": "load", "time_us": 1000, "device": 0},
                        {"name": "compute", "time_us": 1040, "device": 0},
                        {"name": "end", "time_us": 2000, "device": 0}],
    }


if __name__ == "__main__":
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_snapshot.pickle")
    with open(path, "wb") as f:
        pickle.dump(snapshot(), f, protocol=4)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")
