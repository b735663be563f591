"""PyTorch's `python3 -m torch.cuda._memory_viz`, run as a user runs it, and its outputs read back.

Its flamegraph subcommands (segments, memory, compare) pipe their folded
stacks into Brendan Gregg's flamegraph.pl, which they download from GitHub
the first time: to /tmp/{uid}_flamegraph.pl in PyTorch 1.13 and early 2.x,
to ~/.cache/flamegraph.pl in later 2.x. CI has no network, and the test wants
the folded stacks themselves, so each run gets a folder of its own with a
stand-in renderer at both places: HOME points there, and os.getuid() answers
a path into it (read only by that f-string; the module is otherwise run as
`-m` runs it, as __main__). The stand-in prints its input: the output file
is then the folded stacks, one "frame;frame;... bytes" per line.
"""

import base64
import json
import os
import re
import stat
import subprocess

# Run as `python -m torch.cuda._memory_viz ARGS`, after torch is imported
# (so that nothing of torch's own start reads the answer of os.getuid).
_RUN_AS_MAIN = """
import os, runpy, sys
import torch.cuda
home = os.environ["HOME"]
os.getuid = lambda: os.path.relpath(os.path.join(home, "u"), "/tmp")
sys.argv[0] = "_memory_viz.py"
runpy.run_module("torch.cuda._memory_viz", run_name="__main__", alter_sys=True)
"""

_STAND_IN = "#!/bin/sh\n# flamegraph.pl's stand-in for nuvec's tests: the folded stacks as they come\nexec cat\n"

# What each PyTorch prints for the plots' kinds (torch/cuda/_memory_viz.py).
PLOT_KINDS = {"trace_plot": "Active Memory Timeline", "segment_plot": "Allocator State History"}


class MemoryViz:
    def __init__(self, python, folder):
        self.python = python
        self.home = folder
        os.makedirs(os.path.join(folder, ".cache"), exist_ok=True)
        for path in (os.path.join(folder, "u_flamegraph.pl"), os.path.join(folder, ".cache", "flamegraph.pl")):
            with open(path, "w") as f:
                f.write(_STAND_IN)
            os.chmod(path, stat.S_IRWXU)

    def run(self, *args):
        """The subcommand's CompletedProcess (text)."""
        env = {**os.environ, "HOME": self.home, "PYTHONWARNINGS": "ignore"}
        return subprocess.run([self.python, "-c", _RUN_AS_MAIN, *args], capture_output=True, text=True,
                              env=env, timeout=240)

    def subcommands(self):
        """The subcommands this PyTorch's viewer offers, from its usage line."""
        p = self.run("--help")
        m = re.search(r"\{([a-z_,]+)\}", p.stdout)
        if p.returncode != 0 or not m:
            raise AssertionError(f"no subcommands in _memory_viz --help: {p.stdout}{p.stderr}")
        return m.group(1).split(",")


def folded(path):
    """The folded stacks a flamegraph subcommand wrote: [(frames, bytes)]."""
    rows = []
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            rows.append((stack.split(";"), int(count)))
    return rows


def embedded_snapshot(html):
    """The pickle bytes that trace_plot and segment_plot put in their page
    (base64 in a JSON list of files, padded with NULs to a multiple of 3)."""
    m = re.search(r"const local_files = (\[.*?\])\n", html)
    if not m:
        raise AssertionError("no local_files in the page")
    files = json.loads(m.group(1))
    return base64.b64decode(files[0]["base64"])


def stats_113(stdout):
    """PyTorch 1.13's `stats`: the pprint of {state or total: Bytes, 'segments': N}, as strings."""
    return dict(re.findall(r"'(\w+)': ([^,}\n]+)", stdout))


def segsum(stdout):
    """PyTorch 2.x's `stats` (segsum): its closing totals, as strings."""
    return dict(re.findall(r"^(segments|total_reserved|total_allocated|total_free): (.*)$", stdout, re.M))
