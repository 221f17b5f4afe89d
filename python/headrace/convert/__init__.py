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

from headrace import errors
from headrace.convert.formats import Converter, InputFormat, InputSpec, guess_format, resolve_inputs
from headrace.convert.raw_grid import raw_kind
from headrace.convert.source import ConversionNote, Source
from headrace.writer import Codec, FieldSpec, Writer

__all__ = ["convert", "open_source", "write_source", "check_output", "InputFormat", "Converter", "ProgressCallback",
           "ConversionNote"]

# Called with the input bytes done so far (the total is the source's ``total_bytes``), as
# the CLI's byte progress bar takes it.
ProgressCallback = Callable[[int], None]


def open_source(input: InputSpec, format: InputFormat | str | None = None, **options: object) -> Source:
    """Open and check ``input`` as ``format`` (guessed when ``None``); ``options`` are the format's own.

    Raises ``UsageError`` for an unknown format or an option the format does not take, and the format
    reader's ``BadDataError`` subclasses for bad input.
    """
    paths = resolve_inputs(input)
    given = {name: value for name, value in options.items() if value is not None}
    if format is None:
        kind = guess_format(paths)
        if kind is InputFormat.RAW_PARTICLES:  # a .raw or .f32 file: a grid or particles, never guessed
            kind = InputFormat.RAW if raw_kind(paths[0], given) == "grid" else InputFormat.RAW_PARTICLES
    else:
        kind = InputFormat.named(format)
    converter = kind.converter
    unknown = sorted(set(given) - set(converter.options))
    if unknown:
        flags = ", ".join("--" + name.replace("_", "-") for name in unknown)
        raise errors.UsageError(f"{flags} does not apply to format {kind.value}")
    if converter.one_input is None:
        return converter.open(paths, **given)
    if len(paths) != 1:
        raise errors.UsageError(f"format {kind.value} converts one {converter.one_input} at a time, got {len(paths)}")
    return converter.open(paths[0], **given)


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
    specs = [FieldSpec(info.name, info.dtype.name, info.components) for info in source.fields]
    done = 0
    with Writer(output, fields=specs, chunk_size_bytes=chunk_size_bytes, codec=codec,
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

    ``format`` is an :class:`InputFormat` or its name (``InputFormat.X.value``, the CLI's ``--format``);
    ``None`` guesses it (a ``.raw`` file is a grid or particles only as its options or name say).
    Format options (those each format takes: ``InputFormat.X.converter.options``): ``particles_per_frame``
    or ``frames``, ``dims`` ``(X, Y, Z)``, ``dtype``, ``field``, ``dataset`` (a pattern or a list of them),
    ``variables``, ``time_dim``, ``time_axis`` (the axis of time, one frame per index) and ``components``
    (a 4-D array whose last axis is that many is a grid of as many components, not a time series). An array's time axis otherwise
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
