"""Names that moved: a module's ``__getattr__`` that hands out each one from its new place with a
:class:`DeprecationWarning` naming that place (kept for one release)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved", "warn_moved"]


def warn_moved(old: str, new: str, stacklevel: int = 3) -> None:
    """A DeprecationWarning that ``old`` is now ``new``, pointing at the caller of the caller."""
    warnings.warn(f"{old} is deprecated: use {new}", DeprecationWarning, stacklevel=stacklevel)


def moved(module: str, places: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``module``: each name of ``places`` comes from the module its
    value names (``"headrace.imaging"``; ``"headrace.imaging:value_range"`` where it was renamed), with a
    warning."""

    def __getattr__(name: str) -> Any:
        place = places.get(name)
        if place is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        where, _, renamed = place.partition(":")
        new_name = renamed or name
        warn_moved(f"{module}.{name}", f"{where}.{new_name}")
        return getattr(importlib.import_module(where), new_name)

    return __getattr__
