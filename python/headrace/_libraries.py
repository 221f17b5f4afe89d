"""Tell the C++ loader where NVIDIA's pip wheels keep their shared libraries.

GPU libraries are loaded at run time (never linked), so headrace imports on a machine without them;
the wheels (nvidia-cufile, nvidia-libnvcomp-cu13, nvidia-cuda-runtime) put theirs under
``site-packages/nvidia/<name>/lib``, which no system search path covers.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["register_wheel_library_directories"]


def _nvidia_roots() -> list[Path]:
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def register_wheel_library_directories(add_directory) -> list[str]:
    """Calls ``add_directory`` for each ``nvidia/*/lib`` folder found; returns them."""
    found = []
    for root in _nvidia_roots():
        for lib in sorted(root.glob("*/lib")) + sorted(root.glob("*/lib64")):
            if lib.is_dir():
                add_directory(str(lib))
                found.append(str(lib))
    return found
