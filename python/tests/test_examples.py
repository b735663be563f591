"""The README's Python example, examples/python/quickstart.py, as it is run."""

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "quickstart.py"


def test_quickstart_runs(tmp_path):
    run = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "embed (1024, 1024) float32 sum 1048576.0 writeable False"
    assert lines[1] == "mapped 4198400 bytes; footprint predicted 4198400"
    assert lines[2] == "write refused: assignment destination is read-only"
    assert lines[3].startswith("refused: cannot map") and "memory limit" in lines[3]
