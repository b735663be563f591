"""nuvec from Python: save a checkpoint, load it as zero-copy read-only numpy
arrays, read the statistics, and see a hard memory limit refuse a load.
Run from any folder: python3 quickstart.py [checkpoint path]"""

import sys

import numpy as np

import nuvec

path = sys.argv[1] if len(sys.argv) > 1 else "quickstart.safetensors"
nuvec.save_safetensors(path, {"embed": np.ones((1024, 1024), dtype=np.float32)})

cpu = nuvec.cpu()
embed = nuvec.load_safetensors(path)["embed"]     # a view of the file's mapping
print("embed", embed.shape, embed.dtype, "sum", embed.sum(), "writeable", embed.flags.writeable)
print("mapped", cpu.memory().mapped, "bytes; footprint predicted", nuvec.footprint(path).mapped)
try:
    embed[0, 0] = 2.0
except ValueError as error:
    print("write refused:", error)

previous = cpu.set_memory_limit(cpu.memory().active_with_mapped + (1 << 20))
try:
    nuvec.load_safetensors(path)                   # a second 4 MiB mapping: past the limit
except nuvec.OutOfMemory as error:                 # also a MemoryError
    print("refused:", error)
cpu.set_memory_limit(previous)
print(cpu.memory().as_dict())
