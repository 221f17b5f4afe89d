"""Moved to :mod:`headrace.tuning` (the search and its factor space, in the product); these names warn
for one release."""

from __future__ import annotations

from headrace._deprecated import moved

__getattr__ = moved(__name__, {name: "headrace.tuning" for name in (
    "Tuning", "NothingRan", "tune", "default_configuration", "profile_path", "load_profile", "save_profile", "machine_key",
    "FACTORS")})
