#!/usr/bin/env python3
"""The C++ include check: every `#include "headrace/..."` under cpp/ follows the data's flow.

format -> io -> queue -> staging -> codec -> engine -> workloads. A header or source includes its own
layer, the layers to its left and the shared base (error.hpp, detail/, settings.hpp, shim/, gpu/, each
only what lies below it in that order), never a layer to its right. workloads/<a> includes no other
workload but workloads/common/. probe/ is the lab: it may include every layer, and nothing in cpp/
includes it. A quoted include of a file beside the source ("stages.hpp") never climbs out of its folder.

python/bindings/ and tests/cpp/ sit above every layer and are not checked. Run alone
(`python3 scripts/check_includes.py`, exit 1 on a wrong include) or through ctest (cpp_include_flow).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("cpp/include/headrace", "cpp/src")
SUFFIXES = {".hpp", ".cpp", ".cu", ".cuh", ".h", ".inc"}

# The one table. The shared base, bottom first: each part includes itself and the parts before it.
BASE = ("error.hpp", "detail", "settings.hpp", "shim", "gpu")
# The pipe, in the data's flow: each layer includes itself, the layers before it and the whole base.
LAYERS = ("format", "io", "queue", "staging", "codec", "engine", "workloads")
# The lab: includes any of the above; nothing above includes it.
LAB = "probe"
# workloads/<name> includes workloads/<name> and workloads/common, no other workload.
SHARED_WORKLOAD = "common"

HEADRACE_INCLUDE = re.compile(r'^\s*#\s*include\s+"headrace/([^"]+)"', re.MULTILINE)
LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"(?!headrace/)([^"]+)"', re.MULTILINE)


def part_of(relative: str) -> str:
    """The part a path under headrace/ belongs to: 'error.hpp', 'io', 'workloads/volume', ..."""
    pieces = relative.split("/")
    if pieces[0] == "workloads" and len(pieces) > 2:
        return f"workloads/{pieces[1]}"
    return pieces[0].replace(".cpp", ".hpp")


def allowed(source: str, target: str) -> bool:
    """Whether part `source` may include part `target`."""
    if source == LAB:
        return True
    if target == LAB:
        return False
    if source.startswith("workloads/") and target.startswith("workloads/"):
        return target in (source, f"workloads/{SHARED_WORKLOAD}")
    source_layer, target_layer = source.split("/")[0], target.split("/")[0]
    if source_layer in BASE:
        return target_layer in BASE and BASE.index(target_layer) <= BASE.index(source_layer)
    if target_layer in BASE:
        return True
    return LAYERS.index(target_layer) <= LAYERS.index(source_layer)


def known_parts(source: str) -> bool:
    layer = source.split("/")[0]
    return layer in BASE or layer in LAYERS or layer == LAB


def violations(root: Path = ROOT) -> list[str]:
    """The includes against the flow, one line each."""
    found = []
    for folder in SOURCES:
        base = root / folder
        for path in sorted(base.rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            relative = path.relative_to(base).as_posix()
            source = part_of(relative)
            where = path.relative_to(root).as_posix()
            if not known_parts(source):
                found.append(f"{where}: '{source}' is in no layer of scripts/check_includes.py's table")
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for included in HEADRACE_INCLUDE.findall(text):
                target = part_of(included)
                if not known_parts(target):
                    found.append(f"{where}: includes headrace/{included}, in no layer of the table")
                elif not allowed(source, target):
                    found.append(f"{where}: {source} includes {target} (headrace/{included}), against the flow")
            for included in LOCAL_INCLUDE.findall(text):
                if ".." in included.split("/"):
                    found.append(f'{where}: "{included}" climbs out of its folder; include it as "headrace/..."')
    return found


def main() -> int:
    found = violations()
    for line in found:
        print(line)
    if found:
        print(f"check_includes: {len(found)} include(s) against the flow ({' -> '.join(LAYERS)}; base {', '.join(BASE)})")
        return 1
    print("check_includes: every include follows the flow")
    return 0


if __name__ == "__main__":
    sys.exit(main())
