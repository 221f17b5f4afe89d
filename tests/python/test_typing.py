"""A user's script type-checks against headrace's stubs (``_ext.pyi`` from nanobind's stubgen, and the
package's annotations; ``py.typed``) as mypy sees an installed headrace: the examples pass, a stub type
is real (not ``Any``), and a wrong call is caught."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import headrace
from headrace import _ext

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The package as a wheel installs it: the sources and the generated stub side by side."""
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(Path(headrace.__file__).parent, site / "headrace", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    stub = Path(_ext.__file__).with_name("_ext.pyi")
    assert stub.exists(), f"the build installs _ext.pyi beside the extension: {stub}"
    shutil.copy(stub, site / "headrace" / "_ext.pyi")
    return site


def _mypy(site: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    # follow-imports=silent: errors inside headrace are not the user's, as for any installed package.
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
                           "--python-version", "3.10", *paths], cwd=ROOT, capture_output=True, text=True,
                          env={"MYPYPATH": str(site), "PATH": "/usr/bin:/bin"}, timeout=300)


def test_the_examples_type_check(installed):
    result = _mypy(installed, *sorted(str(p) for p in (ROOT / "examples").glob("*.py")))
    assert result.returncode == 0, result.stdout + result.stderr


def test_stub_types_are_real_and_a_wrong_call_is_caught(installed, tmp_path):
    script = tmp_path / "user.py"
    script.write_text(
        "import headrace\n"
        "ds = headrace.open('p.hrc')\n"
        "reveal_type(ds.container)\n"
        "reveal_type(headrace.QueueOptions().staging_bytes)\n"
        "headrace.open('p.hrc').container.field_index(3)\n")
    result = _mypy(installed, str(script))
    assert "headrace._ext.Container" in result.stdout and 'Revealed type is "int"' in result.stdout
    assert 'Argument 1 to "field_index" of "Container" has incompatible type "int"' in result.stdout
