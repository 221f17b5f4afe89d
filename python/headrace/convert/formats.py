"""Input formats, and how an input (a path, a glob, a list of paths, a directory) names its files.

The format is taken from the file name extension when it is one of ``.mmpld``, ``.bov``, ``.npy``,
``.npz``, ``.raw``, ``.f32`` (and ``.vti``, ``.vtp``, ``.pvd`` for VTK); otherwise from the first bytes (MMPLD and NumPy magic, a zip archive, a
text header with a ``DATA_FILE`` key). Raw files have no magic: a ``.raw`` or ``.f32`` file is a raw grid
or raw particles as ``raw_grid.raw_kind`` decides (:data:`InputFormat.RAW_PARTICLES` stands for both until
then), any other name takes ``--format raw`` or ``--format raw-particles``.
HDF5 (``.h5``, ``.hdf5``, ``.h5part``), NetCDF (``.nc``) and zarr (a ``.zarr`` folder, or any folder holding
a store's root metadata) are known by name too, HDF5 and NetCDF classic files also by their signatures.
An AMReX plotfile is a folder holding ``Header`` (first line ``HyperCLaw...``, or a ``Level_0`` folder beside
it); a folder holding plotfile folders is a time series of them.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Union

from headrace.convert.amrex import is_amrex_plotfile, is_plotfile_folder
from headrace.convert.source import natural_key

__all__ = ["InputFormat", "InputSpec", "resolve_inputs", "guess_format", "is_zarr_store", "is_amrex_plotfile",
           "HDF5_SIGNATURE", "NETCDF_CLASSIC_MAGICS", "ZARR_STORE_MARKERS"]

InputSpec = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]

_SNIFF_BYTES = 4096


class InputFormat(Enum):
    """The formats ``headrace convert`` reads; the values are the CLI's ``--format`` names."""

    RAW_PARTICLES = "raw-particles"
    RAW = "raw"
    MMPLD = "mmpld"
    BOV = "bov"
    NPY = "npy"
    VTI = "vti"
    VTP = "vtp"
    PVD = "pvd"
    HDF5 = "hdf5"
    H5PART = "h5part"
    NETCDF = "netcdf"
    ZARR = "zarr"
    AMREX = "amrex"


_BY_SUFFIX = {
    ".mmpld": InputFormat.MMPLD,
    ".bov": InputFormat.BOV,
    ".npy": InputFormat.NPY,
    ".npz": InputFormat.NPY,
    ".raw": InputFormat.RAW_PARTICLES,
    ".f32": InputFormat.RAW_PARTICLES,
    ".vti": InputFormat.VTI,
    ".vtp": InputFormat.VTP,
    ".pvd": InputFormat.PVD,
    ".h5": InputFormat.HDF5,
    ".hdf5": InputFormat.HDF5,
    ".h5part": InputFormat.H5PART,
    ".nc": InputFormat.NETCDF,
    ".zarr": InputFormat.ZARR,
}
# First bytes: the HDF5 signature (at 0, or after a user block of 512, 1024, 2048 bytes) and NetCDF
# classic, 64-bit offset and 64-bit data files.
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_HDF5_SIGNATURE_OFFSETS = (0, 512, 1024, 2048)
NETCDF_CLASSIC_MAGICS = (b"CDF\x01", b"CDF\x02", b"CDF\x05")
# Root metadata of a zarr store (a folder that is one input): format 3, then format 2's group and array.
ZARR_STORE_MARKERS = ("zarr.json", ".zgroup", ".zarray")


def is_zarr_store(path: Path) -> bool:
    """Whether ``path`` is a folder holding a zarr store (one of its root metadata files)."""
    return path.is_dir() and any((path / marker).is_file() for marker in ZARR_STORE_MARKERS)


def _is_store_folder(path: Path) -> bool:
    """A zarr store, or a ``.zarr`` folder meant as one (its reader says what it lacks)."""
    return is_zarr_store(path) or (path.is_dir() and path.suffix.lower() == ".zarr")


def resolve_inputs(spec: InputSpec) -> list[Path]:
    """The input files, in frame order.

    A sequence is taken as given; a directory means its ``.bov``, ``.npy``, ``.npz`` or ``.mmpld`` files
    (whichever kind it holds) or its AMReX plotfile folders in natural order (a plotfile itself is one
    input); a path with ``*``, ``?`` or ``[`` that names no file is a
    glob, expanded in natural order. Raises ``FileOpenError`` when nothing matches or a path is missing.
    """
    from headrace import errors

    if isinstance(spec, (str, os.PathLike)):
        path = Path(spec)
        if _is_store_folder(path) or is_plotfile_folder(path):
            return [path]  # a zarr store or a plotfile is one input, not a folder of inputs
        if path.is_dir():
            plotfiles = [entry for entry in path.iterdir() if is_amrex_plotfile(entry)]
            files = [entry for entry in path.iterdir() if entry.suffix.lower() in _BY_SUFFIX and entry.is_file()]
            kinds = {_BY_SUFFIX[entry.suffix.lower()] for entry in files}
            if plotfiles and files:
                raise errors.UsageError(f"{path}: directory mixes AMReX plotfiles and other inputs; give them explicitly")
            if plotfiles:
                return sorted(plotfiles, key=natural_key)
            if not files:
                raise errors.FileOpenError(f"{path}: directory holds no .bov, .npy, .npz, .mmpld or .raw files "
                                           "nor AMReX plotfile folders")
            if len(kinds) > 1:
                raise errors.UsageError(f"{path}: directory mixes input formats; give the files explicitly")
            if kinds == {InputFormat.NPY} and {e.suffix.lower() for e in files} == {".npy", ".npz"}:
                raise errors.UsageError(f"{path}: directory mixes .npy and .npz files; give the files explicitly")
            return sorted(files, key=natural_key)
        if not path.exists() and any(character in os.fspath(spec) for character in "*?["):
            matches = [Path(match) for match in glob.glob(os.fspath(spec))
                       if Path(match).is_file() or is_amrex_plotfile(Path(match))]
            if not matches:
                raise errors.FileOpenError(f"{spec}: no files match")
            return sorted(matches, key=natural_key)
        paths = [path]
    else:
        paths = [Path(item) for item in spec]
        if not paths:
            raise errors.UsageError("no input files given")
    for path in paths:
        if not path.is_file() and not _is_store_folder(path) and not is_plotfile_folder(path):
            reason = "is not a regular file" if path.exists() else "No such file or directory"
            raise errors.FileOpenError(f"{path}: cannot open for reading: {reason}")
    return paths


def guess_format(paths: Sequence[Path]) -> InputFormat:
    """Tell the format of ``paths`` (all of one format) from their extension or first bytes."""
    from headrace import errors

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
    if is_zarr_store(path):
        return InputFormat.ZARR
    if is_amrex_plotfile(path):
        return InputFormat.AMREX
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return None
    if head.startswith(b"MMPLD\0"):
        return InputFormat.MMPLD
    if head.startswith(b"\x93NUMPY") or head.startswith(b"PK\x03\x04"):
        return InputFormat.NPY
    if b"DATA_FILE" in head.upper() and b"\0" not in head:
        return InputFormat.BOV
    if any(head[offset:].startswith(HDF5_SIGNATURE) for offset in _HDF5_SIGNATURE_OFFSETS):
        return InputFormat.HDF5
    if head[:4] in NETCDF_CLASSIC_MAGICS:
        return InputFormat.NETCDF
    return None
