"""Builds nuvec._nuvec with CMake (the library and python/src), for the
interpreter running this, and puts it into the package. Nothing is
downloaded: CMake, a C++20 compiler, pybind11 and the library's
dependencies come from the system (scripts/install-deps.sh).

NUVEC_CMAKE_ARGS adds arguments to the configure step (e.g. -DNUVEC_WITH_CUDA=OFF);
the build directory is build/python-<version> under the source tree, kept
between installs so a second install recompiles only what changed.
NUVEC_BUILD_DIR=<dir> uses a build directory configured already (its
configuration untouched: scripts/test-package.sh installs from the release build).
"""

import os
import shlex
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        given = os.environ.get("NUVEC_BUILD_DIR")
        build = Path(given).resolve() if given else ROOT / "build" / f"python-{sys.version_info.major}.{sys.version_info.minor}"
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
            f"-DNUVEC_PYTHON_EXECUTABLE={sys.executable}",
            # Only the library and the module: no tests, benchmarks, command or LM runtime.
            "-DNUVEC_BUILD_TESTS=OFF", "-DNUVEC_BUILD_BENCHMARKS=OFF", "-DNUVEC_BUILD_TOOLS=OFF",
            "-DNUVEC_WITH_LM=OFF",
            *shlex.split(os.environ.get("NUVEC_CMAKE_ARGS", "")),
        ]
        if not given:
            subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "nuvec_python"], check=True)
        built = next((build / "python" / "nuvec").glob("_nuvec*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        self.copy_file(str(built), str(target))


setup(ext_modules=[Extension("nuvec._nuvec", sources=[])], cmdclass={"build_ext": CMakeBuild})
