"""A user's script type-checks against headrace's stubs (``_ext.pyi`` from nanobind's stubgen, and the
package's annotations; ``py.typed``) as mypy and pyright see an installed headrace: the examples pass, a
stub type is real (not ``Any``), and a wrong call is caught. headrace's own sources pass both checkers too."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
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


def _mypy(site: Path, project: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    """mypy with ``site`` searched first (MYPYPATH), run in ``project``, a folder without configuration."""
    # follow-imports=silent: errors inside headrace are not the user's, as for any installed package.
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
                           "--python-version", "3.10", *paths], cwd=project, capture_output=True, text=True,
                          env={"MYPYPATH": str(site), "PATH": "/usr/bin:/bin"}, timeout=300)


def _pyright(site: Path, project: Path, *paths: str, verbose: bool = False) -> subprocess.CompletedProcess[str]:
    """pyright (standard mode) with ``site`` searched before the environment, so ``headrace`` is the
    copy there, not the editable install. Errors are reported only for ``paths``, as mypy's
    follow-imports=silent does."""
    config = project / "pyrightconfig.json"
    # reportMissingModuleSource: the copy has the stub but not the compiled module it describes.
    config.write_text(json.dumps({"pythonVersion": "3.10", "typeCheckingMode": "standard",
                                  "extraPaths": [str(site)], "reportMissingModuleSource": "none"}))
    # --pythonpath: this interpreter's packages (NumPy's stubs); the warnings off: no version check online.
    return subprocess.run([sys.executable, "-m", "pyright", "--pythonpath", sys.executable, "-p", str(config),
                           *(["--verbose"] if verbose else []), *paths], cwd=project, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}, timeout=300)


CHECKERS: dict[str, Callable[..., subprocess.CompletedProcess[str]]] = {"mypy": _mypy, "pyright": _pyright}


@pytest.mark.parametrize("checker", CHECKERS)
def test_the_examples_type_check(installed, tmp_path, checker):
    result = CHECKERS[checker](installed, tmp_path, *sorted(str(p) for p in (ROOT / "examples").glob("*.py")))
    assert result.returncode == 0, result.stdout + result.stderr


USER_SCRIPT = (
    "import headrace\n"
    "ds = headrace.open('p.hrc')\n"
    "reveal_type(ds.container)\n"
    "reveal_type(headrace.QueueOptions().staging_bytes)\n"
    "headrace.open('p.hrc').container.field_index(3)\n"
)
# What each checker says of USER_SCRIPT: the two stub types, then the wrong call.
USER_SCRIPT_FINDINGS = {
    "mypy": ['Revealed type is "headrace._ext.Container"', 'Revealed type is "int"',
             'Argument 1 to "field_index" of "Container" has incompatible type "int"; expected "str"'],
    "pyright": ['Type of "ds.container" is "Container"', 'Type of "headrace.QueueOptions().staging_bytes" is "int"',
                'Argument of type "Literal[3]" cannot be assigned to parameter "name" of type "str" in function '
                '"field_index"'],
}


@pytest.mark.parametrize("checker", CHECKERS)
def test_stub_types_are_real_and_a_wrong_call_is_caught(installed, tmp_path, checker):
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT)
    result = CHECKERS[checker](installed, tmp_path, str(script))
    lines = result.stdout.splitlines()
    for line_number, finding in enumerate(USER_SCRIPT_FINDINGS[checker], start=3):
        assert any(f"user.py:{line_number}:" in line and finding in line for line in lines), (finding, result.stdout)
    assert result.returncode == 1, result.stdout + result.stderr  # errors found; 2 and up: the checker failed


def test_pyright_takes_headrace_from_the_installed_copy(installed, tmp_path):
    """The copy comes before the interpreter's paths, which hold the editable install (python/)."""
    script = tmp_path / "user.py"
    script.write_text("import headrace\n")
    result = _pyright(installed, tmp_path, str(script), verbose=True)
    lines = result.stdout.splitlines()
    listed = itertools.takewhile(lambda line: line.startswith("    "), lines[lines.index("  Search paths:") + 1:])
    search_paths = [line.strip() for line in listed]
    assert str(installed) in search_paths, result.stdout
    editable = [i for i, path in enumerate(search_paths) if Path(path, "headrace", "__init__.py").exists()
                and Path(path) != installed]
    assert all(search_paths.index(str(installed)) < i for i in editable), search_paths
    assert result.returncode == 0, result.stdout + result.stderr


def _own_sources(site: Path) -> list[str]:
    return sorted(str(path) for path in (site / "headrace").rglob("*.py"))


@pytest.mark.parametrize("checker", CHECKERS)
def test_headrace_itself_type_checks(installed, tmp_path, checker):
    """Every source of the package against its own stub, as installed."""
    sources = _own_sources(installed)
    assert len(sources) > 30, sources
    result = CHECKERS[checker](installed, tmp_path, *sources)
    assert result.returncode == 0, result.stdout.replace(str(installed), "") + result.stderr
