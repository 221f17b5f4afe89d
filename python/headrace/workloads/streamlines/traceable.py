"""A path the tracer reads, made from any flow field: a container in native blocks or the Hilbert
layout as it is, anything else in grid order converted into native blocks for as long as a ``with`` lasts
(:func:`traceable`)."""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import headrace
from headrace import errors
from headrace.errors import UsageError
from headrace.workloads.streamlines.flow import asked_fields, path_of, sides_text, velocity_dtype, velocity_of
from headrace.workloads.streamlines.layouts import convert_linear_flow, fitted_block
from headrace.workloads.streamlines.notes import say_note

__all__ = ["TRACED_LAYOUTS", "traceable"]


TRACED_LAYOUTS = ("blocks", "hilbert")


def _converted(path: str, folder: str, asked: tuple[str, ...] | None, say: Callable[[str], None]) -> str:
    """A user's file (not a container) converted into ``folder``, as ``headrace convert`` would, with what a
    velocity settles: a 4-D array ending in 3 is a grid of 3 components; of HDF5, the datasets asked for."""
    # The converters load only where a file needs converting: `import headrace` took 0.25 s more with them.
    from headrace.convert import convert
    from headrace.convert.formats import InputFormat, guess_format, resolve_inputs
    from headrace.convert.source import ConversionNote

    kind = guess_format(resolve_inputs(path))
    options: dict[str, Any] = {}
    if kind in (InputFormat.NPY, InputFormat.HDF5, InputFormat.ZARR) and (asked is None or len(asked) == 1):
        options["components"] = 3
    if kind is InputFormat.HDF5 and asked is not None:
        options["dataset"] = list(asked)
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always", ConversionNote)
        try:
            grid = convert(path, Path(folder) / "grid.hrc", **options)
        except UsageError as why:
            if kind is InputFormat.HDF5 and asked is None:
                raise type(why)(f"{why} (trace converts {path} on the fly: --field NAME (or U,V,W) names the "
                                "velocity's datasets)") from None
            if "--" not in str(why):
                raise
            raise type(why)(f"{why} (trace converts {path} on the fly: `headrace convert` it with those options, "
                            "then trace the container)") from None
    for note in notes:
        if issubclass(note.category, ConversionNote):
            say(str(note.message))
        else:
            warnings.showwarning(note.message, note.category, note.filename, note.lineno)
    return os.fspath(grid)


def _expect_grid_order(ds: Any) -> None:
    """A ``UsageError`` unless ``ds`` is a grid in grid order (``layout = "linear"``, or a grid of no layout)."""
    layout = ds.attributes.get("layout", "linear")
    if layout != "linear" or "grid_dims" not in ds.attributes:
        found = f"layout {layout!r}" if "grid_dims" in ds.attributes else "no grid (no attribute grid_dims)"
        raise UsageError(f"{ds.path}: expected a flow field on a grid (layout blocks, hilbert or linear), found {found}")


# What opening a file that is not a container raises: another format's file, or a folder (a zarr store,
# an AMReX plotfile, a folder of .npy files).
_NOT_A_CONTAINER = (errors.BadMagicError, errors.NotAFileError)


def traced_as_is(path: str, field: str | Sequence[str] | None) -> bool:
    """Whether the tracer reads ``path`` itself: a container in native blocks or the Hilbert layout (whose
    velocity is its field ``velocity``, float32 x 3)."""
    try:
        ds = headrace.open(path)
    except _NOT_A_CONTAINER:
        return False
    layout = ds.attributes.get("layout")
    if layout not in TRACED_LAYOUTS:
        return False
    asked = asked_fields(field)
    if asked not in (None, ("velocity",)):
        raise UsageError(f"{path}: a flow in the {layout} layout is traced through its field 'velocity'; --field "
                         f"{','.join(asked or ())} needs the field in grid order (`headrace convert` the original file)")
    return True


@contextmanager
def traceable(source: os.PathLike | str, say: Callable[[str], None] | None = None, *,
              field: str | Sequence[str] | None = None, cache_bytes: int | None = None,
              banks: int = 1) -> Iterator[str]:
    """A path the tracer reads: ``source`` itself when it is a flow container in native blocks or the
    Hilbert layout; else, for a flow field in grid order (a container of ``layout = "linear"``, or any
    grid ``headrace convert`` reads: BOV, ``.npy``, ``.vti``, HDF5, zarr, ...), a container in native
    blocks made in a temporary folder for as long as the ``with`` lasts. The velocity is ``field``
    (:func:`velocity_of`: one field of 3 components, three scalar fields, or the one that looks like a
    velocity), any floating type, stored float32. Blocks are :func:`default_block`, or smaller where a
    cache of ``cache_bytes`` in ``banks`` banks would hold too few (:func:`fitted_block`). ``say`` is told
    once what was made and chosen, and how to skip it next time (default: a :class:`TraceNote` warning).
    Errors name ``source`` and its fields, never the temporary files."""
    say = say or say_note
    path = os.fspath(path_of(source))
    if traced_as_is(path, field):
        yield path
        return
    asked = asked_fields(field)
    with tempfile.TemporaryDirectory(prefix="headrace-trace-") as folder:
        started = time.perf_counter()
        try:
            _expect_grid_order(headrace.open(path))
            linear = path
        except _NOT_A_CONTAINER:  # a file (or a store's folder) headrace convert reads
            linear = _converted(path, folder, asked, say)
        grid = headrace.open(linear)
        if linear != path and asked is not None and len(grid.fields) == len(asked):
            asked = tuple(f.name for f in grid.fields)  # HDF5 datasets become fields of their last name
        names = velocity_of(grid, asked, label=path)
        dtype = velocity_dtype(grid, names)
        if dtype != "float32":
            say(f"{path}: velocity is {dtype}: traced in float32")
        block, smaller = fitted_block(grid.attributes["grid_dims"], cache_bytes, banks, label=path)
        blocks = Path(folder) / "blocks.hrc"
        convert_linear_flow(linear, blocks, layout="blocks", block=block, field=names, say=lambda text: None)
        which = names[0] if len(names) == 1 else ",".join(names)
        once = f"`headrace convert {path} FLOW.hrc --layout blocks --block {' '.join(map(str, block))}`"
        if linear != path:
            once = f"`headrace convert {path} GRID.hrc`, then {once.replace(path, 'GRID.hrc', 1)},"
        say(f"{path}: a flow field in grid order, traced through native blocks of {sides_text(block)} points made in a "
            f"temporary file from its field{'s' if len(names) > 1 else ''} {which} "
            f"({time.perf_counter() - started:.1f} s){f'; {smaller}' if smaller else ''}; {once} makes them once")
        try:
            yield os.fspath(blocks)
        except errors.Error as error:  # the tracer's errors name the file it read: name the user's
            text = str(error).replace(os.fspath(blocks), path)
            if text == str(error):
                raise
            try:
                renamed = type(error)(text)
            except TypeError:
                raise error from None
            raise renamed from None
