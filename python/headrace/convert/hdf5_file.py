"""What the HDF5 readers share through h5py: opening a file (a cut or foreign file as a one-line error),
reading a dataset's selection, frame times from attributes, and one open file at a time while frames
are read."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from headrace import errors
from headrace.convert import _arrays
from headrace.convert._arrays import Selection, bad_dataset
from headrace.convert.source import bad_data, open_error

__all__ = ["HDF5_SIGNATURE", "has_hdf5_signature", "open_hdf5_file", "dataset_reader", "time_values", "time_attribute",
           "OpenFiles", "show_names"]

# The HDF5 signature, at 0 or after a user block of 512, 1024 or 2048 bytes.
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_SIGNATURE_OFFSETS = (0, 512, 1024, 2048)


def has_hdf5_signature(head: bytes) -> bool:
    """Whether a file's first bytes hold the HDF5 signature where HDF5 puts it."""
    return any(head[offset:].startswith(HDF5_SIGNATURE) for offset in _SIGNATURE_OFFSETS)


def open_hdf5_file(path: Path) -> Any:
    """``path`` as an ``h5py.File``, with a chunk cache that holds a slab's chunks; an HDF5 file cut
    short or not HDF5 at all is a one-line error."""
    # h5py (optional): loaded only when an HDF5 file is read
    import h5py  # type: ignore[import-untyped]

    try:
        return h5py.File(path, "r", rdcc_nbytes=2 * _arrays.SLICE_BYTES)
    except OSError as error:
        text = str(error)
        if "truncated file" in text:
            ends = re.search(r"eof = (\d+).*stored_eof = (\d+)", text)
            if ends is None:
                raise bad_data(errors.TruncatedFileError, path, 0, "a whole HDF5 file", text) from None
            size, end = ends.groups()
            raise bad_data(errors.TruncatedFileError, path, int(size),
                           f"{end} bytes (the end its superblock records)", f"{size} bytes") from None
        if "signature not found" in text:
            with open(path, "rb") as handle:
                head = handle.read(len(HDF5_SIGNATURE))
            raise bad_data(errors.BadMagicError, path, 0, "the HDF5 signature '\\x89HDF\\r\\n\\x1a\\n'",
                           repr(head)) from None
        if error.errno is not None:
            raise open_error(path, error) from None
        raise bad_data(errors.BadDataError, path, 0, "a readable HDF5 file", text) from None


def dataset_reader(path: Path, dataset: Any, layout: _arrays.ArrayLayout | None = None,
                   step: int | None = None) -> Callable[[Selection], np.ndarray]:
    """Reads a selection of ``dataset`` (of the frame at ``step`` along the ``layout``'s time axis); a
    failed read (a broken chunk, a missing block) names it."""
    def read(selection: Selection) -> np.ndarray:
        try:
            if layout is not None:
                selection = layout.select(step, selection, dataset.ndim)
            return dataset[selection]
        except OSError as error:
            raise bad_dataset(errors.BadDataError, path, f"dataset {dataset.name}", "values HDF5 can read",
                              f"an error ({error})") from None

    return read


# Attributes that hold a frame's time, in order of precedence (any case): H5Part's, then the plain name.
_TIME_ATTRIBUTES = ("timevalue", "time")


def time_values(node: Any, names: Sequence[str] = _TIME_ATTRIBUTES) -> np.ndarray | None:
    """The numeric attribute of ``node`` named first in ``names`` (any case), as float64 values."""
    found = {key.lower(): key for key in node.attrs}
    for name in names:
        if name in found:
            value = np.asarray(node.attrs[found[name]])
            if value.dtype.kind in "iuf" and value.ndim <= 1 and value.size:
                return value.astype(np.float64).reshape(-1)
    return None


def time_attribute(node: Any) -> float | None:
    """A numeric scalar attribute ``TimeValue`` (H5Part's) or ``time`` (any case) of ``node``, else ``None``."""
    values = time_values(node)
    return float(values[0]) if values is not None and values.size == 1 else None


class OpenFiles:
    """One HDF5 file open at a time while frames are read: the one the next dataset is in."""

    def __init__(self) -> None:
        self._path: Path | None = None
        self._file: Any = None

    def get(self, path: Path) -> Any:
        if path != self._path:
            self.close()
            self._file, self._path = open_hdf5_file(path), path
        return self._file

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file = self._path = None


def show_names(names: Sequence[str], most: int = 6) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "") if names else "none"
