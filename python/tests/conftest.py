import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # checkpoints.py

import nuvec  # noqa: E402


@pytest.fixture
def device():
    """A fresh CPU device: its statistics start at zero and are this test's own."""
    return nuvec.create_cpu()


@pytest.fixture
def nuvec_tool():
    """The C++ `nuvec` command of the same build (ctest sets NUVEC_TOOL)."""
    tool = os.environ.get("NUVEC_TOOL")
    if not tool:
        pytest.skip("NUVEC_TOOL is not set (ctest sets it to the build's nuvec command)")
    return tool
