"""The input formats ``headrace convert`` reads, in one table, and how an input names its files.

:class:`InputFormat` is the registry: each member is one format's :class:`Converter`, its ``--format``
name, the reader that opens it (whose keyword-only parameters are the options the format takes) and how
it is told apart: file name suffixes, a file's first bytes, a folder's content. The CLI's ``--format``
choices, guessing a format (:func:`guess_format`), listing a directory's inputs (:func:`resolve_inputs`)
and ``open_source``'s option check all read it; docs/converters.md lists the same names (a test holds
them equal). A new format is a reader module and one member here (docs/architecture.md).

Raw files have no magic: a ``.raw`` or ``.f32`` file is a raw grid or raw particles as
``raw_grid.raw_kind`` decides (:data:`InputFormat.RAW_PARTICLES`, which owns the suffixes, stands for both
until then).
"""

from __future__ import annotations

import glob
import inspect
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Union

from headrace import errors
from headrace._deprecated import moved
from headrace.convert.amrex import is_amrex_plotfile, is_plotfile_folder, open_amrex
from headrace.convert.bov import looks_like_bov_header, open_bov
from headrace.convert.h5part import open_h5part
from headrace.convert.hdf5 import open_hdf5
from headrace.convert.hdf5_file import has_hdf5_signature
from headrace.convert.mmpld import has_mmpld_magic, open_mmpld
from headrace.convert.netcdf import has_netcdf_classic_magic, open_netcdf
from headrace.convert.npy import has_npy_magic, open_npy
from headrace.convert.raw_grid import open_raw_grid
from headrace.convert.raw_particles import open_raw_particles
from headrace.convert.source import Source, natural_key
from headrace.convert.vtk import VtkKind, open_pvd, open_vtk
from headrace.convert.zarr import is_store_folder, is_zarr_store, open_zarr

__all__ = ["Converter", "InputFormat", "InputSpec", "resolve_inputs", "guess_format"]

# Each format's marks moved beside its reader.
__getattr__ = moved("headrace.convert.formats", {"HDF5_SIGNATURE": "headrace.convert.hdf5_file",
                                                 "NETCDF_CLASSIC_MAGICS": "headrace.convert.netcdf",
                                                 "ZARR_STORE_MARKERS": "headrace.convert.zarr"})

InputSpec = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]

# Bytes read from a file to tell its format (a BOV header's DATA_FILE line lies within them).
_SNIFF_BYTES = 4096


@dataclass(frozen=True)
class Converter:
    """What ``headrace convert`` knows of one input format."""

    name: str  # the --format name
    open: Callable[..., Source]  # (paths, **options), or (path, **options) with one_input
    suffixes: tuple[str, ...] = ()  # file (or folder) name suffixes, lower case
    magic: Callable[[bytes], bool] | None = None  # a file's first bytes say it is this format
    folder: Callable[[Path], bool] | None = None  # a folder's content says it is an input of this format
    input_folder: Callable[[Path], bool] | None = None  # a folder taken as one input (its reader says what it lacks)
    one_input: str | None = None  # converts one input at a time, named so ("file", "store") in the refusal

    @property
    def options(self) -> tuple[str, ...]:
        """The options this format takes beyond the writer's: its reader's keyword-only parameters."""
        bound = getattr(self.open, "keywords", {})  # those a partial fixes are not the user's
        return tuple(name for name, parameter in inspect.signature(self.open).parameters.items()
                     if parameter.kind is parameter.KEYWORD_ONLY and name not in bound)


class InputFormat(Enum):
    """The formats ``headrace convert`` reads; the values are the CLI's ``--format`` names, the order is
    that of the choices and of the tries of the first bytes."""

    _value_: str
    converter: Converter

    def __new__(cls, converter: Converter) -> InputFormat:
        member = object.__new__(cls)
        member._value_ = converter.name
        member.converter = converter
        return member

    @classmethod
    def named(cls, name: InputFormat | str) -> InputFormat:
        """The format ``name`` (a ``--format`` name, or a member); ``UsageError`` naming the choices otherwise."""
        found = next((kind for kind in cls if name in (kind, kind.value)), None)
        if found is None:
            raise errors.UsageError(f"unknown input format {name!r} (one of {', '.join(kind.value for kind in cls)})")
        return found

    RAW_PARTICLES = Converter("raw-particles", open_raw_particles, (".raw", ".f32"), one_input="file")
    RAW = Converter("raw", open_raw_grid)
    MMPLD = Converter("mmpld", open_mmpld, suffixes=(".mmpld",), magic=has_mmpld_magic, one_input="file")
    BOV = Converter("bov", open_bov, suffixes=(".bov",), magic=looks_like_bov_header)
    NPY = Converter("npy", open_npy, (".npy", ".npz"), magic=has_npy_magic)
    VTI = Converter("vti", partial(open_vtk, kind=VtkKind.IMAGE), suffixes=(".vti",))
    VTP = Converter("vtp", partial(open_vtk, kind=VtkKind.POINTS), suffixes=(".vtp",))
    PVD = Converter("pvd", open_pvd, suffixes=(".pvd",), one_input="collection")
    HDF5 = Converter("hdf5", open_hdf5, (".h5", ".hdf5"), magic=has_hdf5_signature)
    H5PART = Converter("h5part", open_h5part, suffixes=(".h5part",))
    NETCDF = Converter("netcdf", open_netcdf, (".nc",), magic=has_netcdf_classic_magic)
    ZARR = Converter("zarr", open_zarr, (".zarr",), folder=is_zarr_store, input_folder=is_store_folder,
                     one_input="store")
    AMREX = Converter("amrex", open_amrex, folder=is_amrex_plotfile, input_folder=is_plotfile_folder)


_BY_SUFFIX = {suffix: kind for kind in InputFormat for suffix in kind.converter.suffixes}
# Folders of these formats, in a directory or a glob, are inputs one frame each (a zarr store is a whole input).
_FOLDER_SERIES = tuple(kind for kind in InputFormat if kind.converter.folder and not kind.converter.one_input)


def _is_input_folder(path: Path) -> bool:
    """A folder that is one input, not a folder of inputs (a zarr store, a plotfile)."""
    return any(kind.converter.input_folder(path) for kind in InputFormat if kind.converter.input_folder)


def _series_folder(path: Path) -> bool:
    """A folder that is one frame of a series (a plotfile in a folder of plotfiles)."""
    return any(kind.converter.folder(path) for kind in _FOLDER_SERIES)  # type: ignore[misc]


def resolve_inputs(spec: InputSpec) -> list[Path]:
    """The input files, in frame order.

    A sequence is taken as given; a directory means its files of one format (by suffix) or its folders
    of one frame each (AMReX plotfiles) in natural order (a zarr store or a plotfile itself is one
    input); a path with ``*``, ``?`` or ``[`` that names no file is a glob, expanded in natural order.
    Raises ``FileOpenError`` when nothing matches or a path is missing.
    """
    if isinstance(spec, (str, os.PathLike)):
        path = Path(spec)
        if _is_input_folder(path):
            return [path]
        if path.is_dir():
            folders = [entry for entry in path.iterdir() if _series_folder(entry)]
            files = [entry for entry in path.iterdir() if entry.suffix.lower() in _BY_SUFFIX and entry.is_file()]
            kinds = {_BY_SUFFIX[entry.suffix.lower()] for entry in files}
            if folders and files:
                names = ", ".join(kind.value for kind in _FOLDER_SERIES)
                raise errors.UsageError(f"{path}: directory mixes {names} folders and other inputs; "
                                        "give them explicitly")
            if folders:
                return sorted(folders, key=natural_key)
            if not files:
                suffixes = [suffix for suffix, kind in _BY_SUFFIX.items() if kind.converter.input_folder is None]
                raise errors.FileOpenError(f"{path}: directory holds no input files ({', '.join(suffixes)}) nor "
                                           f"{', '.join(kind.value for kind in _FOLDER_SERIES)} folders")
            if len(kinds) > 1:
                raise errors.UsageError(f"{path}: directory mixes input formats; give the files explicitly")
            if kinds == {InputFormat.NPY} and {entry.suffix.lower() for entry in files} == {".npy", ".npz"}:
                raise errors.UsageError(f"{path}: directory mixes .npy and .npz files; give the files explicitly")
            return sorted(files, key=natural_key)
        if not path.exists() and any(character in os.fspath(spec) for character in "*?["):
            matches = [Path(match) for match in glob.glob(os.fspath(spec))
                       if Path(match).is_file() or _series_folder(Path(match))]
            if not matches:
                raise errors.FileOpenError(f"{spec}: no files match")
            return sorted(matches, key=natural_key)
        paths = [path]
    else:
        paths = [Path(item) for item in spec]
        if not paths:
            raise errors.UsageError("no input files given")
    for path in paths:
        if not path.is_file() and not _is_input_folder(path):
            reason = "is not a regular file" if path.exists() else "No such file or directory"
            raise errors.FileOpenError(f"{path}: cannot open for reading: {reason}")
    return paths


def guess_format(paths: Sequence[Path]) -> InputFormat:
    """Tell the format of ``paths`` (all of one format) from their suffix, content or first bytes."""
    kinds = {_guess_one(path) for path in paths}
    if None in kinds:
        bad = next(path for path in paths if _guess_one(path) is None)
        names = "|".join(f.value for f in InputFormat)
        raise errors.UsageError(f"{bad}: cannot tell the input format from its name or first bytes; pass --format {names}")
    if len(kinds) > 1:
        raise errors.UsageError(f"inputs mix formats ({', '.join(sorted(k.value for k in kinds))})")  # type: ignore[union-attr]
    return kinds.pop()  # type: ignore[return-value]


def _guess_one(path: Path) -> InputFormat | None:
    by_suffix = _BY_SUFFIX.get(path.suffix.lower())
    if by_suffix is not None:
        return by_suffix
    for kind in InputFormat:
        if kind.converter.folder is not None and kind.converter.folder(path):
            return kind
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return None
    return next((kind for kind in InputFormat if kind.converter.magic is not None and kind.converter.magic(head)), None)
