"""The compiled module as other libraries in the process see it: it exports its init function and nothing of the
static libraries in it (the C++ runtime when linked in, liburing, nanobind). Exported, they bound the C++ runtime
of a shared library loaded beside it (libsnappy's libstdc++) to the module's copy, and matplotlib's Agg
extension, loaded after headrace, crashed (the GPU machine, whose compiler links its runtime statically)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from headrace import _ext


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm (binutils)")
def test_the_module_exports_its_init_function_only():
    listed = subprocess.run(["nm", "-D", "--defined-only", _ext.__file__], capture_output=True, text=True, check=True).stdout
    functions = sorted(line.split()[2] for line in listed.splitlines() if line.split()[1:2] == ["T"])
    assert functions == ["PyInit__ext"]


def test_matplotlib_draws_after_headrace_is_imported():
    done = subprocess.run([sys.executable, "-c", "import headrace\nimport matplotlib\nmatplotlib.use('Agg')\n"
                           "import matplotlib.pyplot as plt\nfigure, axes = plt.subplots()\nfigure.canvas.draw()\n"
                           "print('drawn')"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "drawn" in done.stdout, done.stderr
