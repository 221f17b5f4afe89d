"""Convert particle and grid data into headrace containers (``headrace convert``).

>>> from headrace.convert import convert
>>> convert("run.mmpld", "run.hrc")                       # format from the extension or magic
>>> convert("particles.raw", "p.hrc", particles_per_frame=1_000_000, codec="zstd")
>>> convert("bonsai_256x256x256_uint8.raw", "bonsai.hrc")      # a raw grid: dims and type from the name
>>> convert("run.npy", "run.hrc", time_axis=0)                 # (t, Z, Y, X[, c]): one frame per step
>>> convert("density_*.bov", "density.hrc")              # several headers become frames
>>> convert("run.h5", "rho.hrc", dataset="/step_*/density")  # an HDF5 dataset per frame
>>> convert("run.pvd", "run.hrc")                        # a ParaView series of .vti or .vtp files
>>> convert("plotfiles/", "amr.hrc")                      # AMReX plotfile folders, one frame each

Every input is parsed and checked before the output is created where the format allows it; anything
found bad later aborts the writer's ``with`` block, which removes the partial output. Either way a failed
or interrupted conversion leaves no output file. Mapping rules: ``docs/converters.md``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from headrace.convert.amrex import open_amrex
from headrace.convert.bov import open_bov
from headrace.convert.formats import InputFormat, InputSpec, guess_format, resolve_inputs
from headrace.convert.hdf5 import open_h5part, open_hdf5
from headrace.convert.mmpld import open_mmpld
from headrace.convert.netcdf import open_netcdf
from headrace.convert.npy import open_npy
from headrace.convert.raw_grid import open_raw_grid, raw_kind
from headrace.convert.raw_particles import open_raw_particles
from headrace.convert.source import ConversionNote, Source
from headrace.convert.vtk import VtkKind, open_pvd, open_vtk
from headrace.convert.zarr import open_zarr
from headrace.writer import Codec

__all__ = ["convert", "open_source", "write_source", "check_output", "InputFormat", "ProgressCallback", "ConversionNote"]

# Called with the input bytes done so far (the total is the source's ``total_bytes``), as
# ``headrace.cli._output.byte_progress``'s update function takes it.
ProgressCallback = Callable[[int], None]

# Options each format accepts (beyond the writer's).
_FORMAT_OPTIONS = {
    InputFormat.RAW_PARTICLES: ("particles_per_frame", "frames"),
    InputFormat.RAW: ("dims", "dtype", "components", "field"),
    InputFormat.MMPLD: (),
    InputFormat.BOV: (),
    InputFormat.NPY: ("field", "time_axis", "components"),
    InputFormat.VTI: (),
    InputFormat.VTP: (),
    InputFormat.PVD: (),
    InputFormat.HDF5: ("dataset", "time_axis", "components"),
    InputFormat.H5PART: (),
    InputFormat.NETCDF: ("variables", "time_dim", "time_axis"),
    InputFormat.ZARR: ("variables", "time_axis", "components"),
    InputFormat.AMREX: (),
}


def open_source(input: InputSpec, format: InputFormat | str | None = None, **options: object) -> Source:
    """Open and check ``input`` as ``format`` (guessed when ``None``); ``options`` are the format's own.

    Raises ``UsageError`` for an unknown format or an option the format does not take, and the format
    reader's ``BadDataError`` subclasses for bad input.
    """
    from headrace import errors

    paths = resolve_inputs(input)
    given = {name: value for name, value in options.items() if value is not None}
    if format is None:
        kind = guess_format(paths)
        if kind is InputFormat.RAW_PARTICLES:  # a .raw or .f32 file: a grid or particles, never guessed
            kind = InputFormat.RAW if raw_kind(paths[0], given) == "grid" else InputFormat.RAW_PARTICLES
    else:
        try:
            kind = InputFormat(format)
        except ValueError:
            names = ", ".join(f.value for f in InputFormat)
            raise errors.UsageError(f"unknown input format {format!r} (one of {names})") from None
    unknown = sorted(set(given) - set(_FORMAT_OPTIONS[kind]))
    if unknown:
        flags = ", ".join("--" + name.replace("_", "-") for name in unknown)
        raise errors.UsageError(f"{flags} does not apply to format {kind.value}")
    if kind in (InputFormat.RAW_PARTICLES, InputFormat.MMPLD) and len(paths) != 1:
        raise errors.UsageError(f"format {kind.value} converts one file at a time, got {len(paths)}")
    if kind is InputFormat.RAW_PARTICLES:
        return open_raw_particles(paths[0], **given)  # type: ignore[arg-type]
    if kind is InputFormat.RAW:
        return open_raw_grid(paths, **given)  # type: ignore[arg-type]
    if kind is InputFormat.MMPLD:
        return open_mmpld(paths[0])
    if kind is InputFormat.BOV:
        return open_bov(paths)
    if kind is InputFormat.PVD:
        if len(paths) != 1:
            raise errors.UsageError(f"format pvd converts one collection at a time, got {len(paths)} files")
        return open_pvd(paths[0])
    if kind in (InputFormat.VTI, InputFormat.VTP):
        return open_vtk(paths, VtkKind(kind.value))
    if kind is InputFormat.HDF5:
        return open_hdf5(paths, **given)  # type: ignore[arg-type]
    if kind is InputFormat.H5PART:
        return open_h5part(paths)
    if kind is InputFormat.NETCDF:
        return open_netcdf(paths, **given)  # type: ignore[arg-type]
    if kind is InputFormat.ZARR:
        return open_zarr(paths, **given)  # type: ignore[arg-type]
    if kind is InputFormat.AMREX:
        return open_amrex(paths)
    return open_npy(paths, **given)  # type: ignore[arg-type]


def write_source(
    source: Source,
    output: os.PathLike | str,
    *,
    chunk_size_bytes: int | None = None,
    codec: Codec = "none",
    codec_level: int | None = None,
    progress: ProgressCallback | None = None,
) -> Path:
    """Write an opened source as a container at ``output`` and return its path."""
    import headrace

    specs = [headrace.FieldSpec(info.name, info.dtype.name, info.components) for info in source.fields]
    done = 0
    with headrace.Writer(output, fields=specs, chunk_size_bytes=chunk_size_bytes, codec=codec,
                         codec_level=codec_level) as writer:
        for name, value in source.attributes.items():
            writer.set_attribute(name, value)
        for frame in source.frames():
            handle = writer.add_frame(time=frame.time, bbox=frame.bbox)
            written = set()
            for piece in frame.pieces:
                writer.write(handle, piece.field, piece.array)
                written.add(piece.field)
                done += piece.source_bytes
                if progress is not None:
                    progress(done)
            for info in source.fields:  # no elements of a field in this frame: an empty frame (format 1.2)
                if info.name not in written:
                    writer.write(handle, info.name, np.empty((0, info.components), info.dtype))
    return Path(output)


def check_output(inputs: Sequence[Path], output: os.PathLike | str) -> None:
    """Raise ``UsageError`` when writing ``output`` would replace one of the ``inputs``."""
    from headrace import errors

    target = Path(output).resolve()
    if any(path.resolve() == target for path in inputs):
        raise errors.UsageError(f"{output}: the output would overwrite an input")


def convert(
    input: InputSpec,
    output: os.PathLike | str,
    format: InputFormat | str | None = None,
    *,
    chunk_size_bytes: int | None = None,
    codec: Codec = "none",
    codec_level: int | None = None,
    progress: ProgressCallback | None = None,
    **options: object,
) -> Path:
    """Convert ``input`` to a container at ``output`` and return ``output``'s path.

    ``format`` is an :class:`InputFormat` or its name (``raw-particles``, ``raw``, ``mmpld``, ``bov``, ``npy``,
    ``vti``, ``vtp``, ``pvd``, ``hdf5``, ``h5part``, ``netcdf``, ``zarr``, ``amrex``);
    ``None`` guesses it (a ``.raw`` file is a grid or particles only as its options or name say).
    Format options: ``particles_per_frame`` or ``frames`` (raw-particles), ``dims`` ``(X, Y, Z)``,
    ``dtype`` and ``components`` (raw), ``field`` (npy, raw), ``dataset`` (hdf5: a pattern or a list of
    them), ``variables`` (netcdf, zarr), ``time_dim`` (netcdf), ``time_axis`` (npy, hdf5, netcdf, zarr: the
    axis of time, one frame per index) and ``components`` (npy, hdf5, zarr: a 4-D array whose last axis
    is that many is a grid of as many components, not a time series). An array's time axis otherwise
    follows docs/converters.md ("Time in arrays"); a shape that may be either is a ``UsageError`` naming
    both options. Choices made without an option (a step pattern of HDF5 datasets) are said once as a
    :class:`ConversionNote` warning. ``chunk_size_bytes``, ``codec`` and
    ``codec_level`` go to the writer (its default chunk size when ``None``).
    """
    paths = resolve_inputs(input)
    check_output(paths, output)
    source = open_source(paths, format, **options)
    return write_source(
        source, output, chunk_size_bytes=chunk_size_bytes, codec=codec, codec_level=codec_level, progress=progress
    )
