"""scripts/check_includes.py: the C++ include check finds an include against the flow (ctest runs it on the tree)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_includes.py"


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("check_includes", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_tree_follows_the_flow(check):
    assert check.violations() == []


def test_an_include_against_the_flow_is_found(check, tmp_path):
    root = tree(tmp_path, {
        "cpp/include/headrace/io/backend.hpp": '#include "headrace/engine/queue.hpp"\n#include "headrace/format/container.hpp"\n',
        "cpp/src/workloads/volume/session.cpp": '#include "headrace/workloads/particles/camera.hpp"\n'
                                               '#include "headrace/workloads/common/camera.hpp"\n',
        "cpp/src/codec/registry.cpp": '#include "headrace/probe/probe.hpp"\n#include "../io/private.hpp"\n',
        "cpp/src/probe/probe.cpp": '#include "headrace/workloads/volume/volume_session.hpp"\n',
    })
    assert check.violations(root) == [
        "cpp/include/headrace/io/backend.hpp: io includes engine (headrace/engine/queue.hpp), against the flow",
        "cpp/src/codec/registry.cpp: codec includes probe (headrace/probe/probe.hpp), against the flow",
        'cpp/src/codec/registry.cpp: "../io/private.hpp" climbs out of its folder; include it as "headrace/..."',
        "cpp/src/workloads/volume/session.cpp: workloads/volume includes workloads/particles "
        "(headrace/workloads/particles/camera.hpp), against the flow",
    ]


def test_the_base_includes_only_what_lies_below_it(check):
    assert check.allowed("gpu", "shim") and check.allowed("shim", "detail") and check.allowed("engine", "gpu")
    assert not check.allowed("detail", "gpu") and not check.allowed("shim", "gpu") and not check.allowed("gpu", "io")
