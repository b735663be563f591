"""NVML's figure for this process, shared by the PyTorch benchmarks in bench/cuda."""

from __future__ import annotations

import os


def nvml_used(gpu: int) -> int | None:
    """NVML's used memory of this process on physical GPU `gpu`, or None where NVML cannot say."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(gpu)
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if p.pid == os.getpid() and p.usedGpuMemory is not None:
                return int(p.usedGpuMemory)
    except Exception:  # noqa: BLE001 - NVML missing or not answering: the figure is just absent
        return None
    return None
