"""Writing streamlines: ``.npz`` or ``.vtp`` (ParaView opens it), with what ParaView's stream tracer
gives its lines (:func:`write_traced`)."""

from __future__ import annotations

import os
import zipfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from headrace._files import replacing
from headrace.errors import UsageError
from headrace.workloads.streamlines.tracer import TraceResult

__all__ = ["TERMINATION_CODES", "write_lines", "write_traced"]


# ParaView's codes for why a line ended (vtkStreamTracer's ReasonForTermination); "stopped" (a time
# budget) has none there and is 0.
TERMINATION_CODES = {"left_domain": 1, "max_steps": 5, "stagnant": 6, "stopped": 0}

_VTK_TYPES = {np.dtype("float32"): "Float32", np.dtype("int64"): "Int64", np.dtype("int32"): "Int32"}


def _write_vtp(out: Any, points: np.ndarray, offsets: np.ndarray, point_data: dict[str, np.ndarray],
               line_data: dict[str, np.ndarray]) -> None:
    """VTK XML PolyData with the lines and their point and cell (line) data, appended raw (UInt64
    headers): ParaView opens it. The arrays go to ``out`` as they are, not gathered into one buffer first."""
    connectivity = np.arange(len(points), dtype=np.int64)
    ends = offsets[1:].astype(np.int64)
    arrays = [np.ascontiguousarray(a) for a in (np.asarray(points, dtype=np.float32), connectivity, ends,
                                                *point_data.values(), *line_data.values())]
    head = np.concatenate([[0], np.cumsum([8 + a.nbytes for a in arrays])[:-1]]).tolist()

    def described(data: dict[str, np.ndarray], first: int) -> str:
        return "".join(
            f'<DataArray type="{_VTK_TYPES[array.dtype]}" Name="{name}" '
            f'NumberOfComponents="{array.shape[1] if array.ndim == 2 else 1}" format="appended" offset="{head[first + n]}"/>\n'
            for n, (name, array) in enumerate(data.items()))

    vectors = next((f' Vectors="{name}"' for name, array in point_data.items() if array.ndim == 2), "")
    xml = (
        '<?xml version="1.0"?>\n'
        '<VTKFile type="PolyData" version="1.0" byte_order="LittleEndian" header_type="UInt64">\n'
        "<PolyData>\n"
        f'<Piece NumberOfPoints="{len(points)}" NumberOfLines="{len(ends)}">\n'
        + (f"<PointData{vectors}>\n{described(point_data, 3)}</PointData>\n" if point_data else "")
        + (f"<CellData>\n{described(line_data, 3 + len(point_data))}</CellData>\n" if line_data else "")
        + f'<Points><DataArray type="Float32" NumberOfComponents="3" format="appended" offset="{head[0]}"/></Points>\n'
        "<Lines>\n"
        f'<DataArray type="Int64" Name="connectivity" format="appended" offset="{head[1]}"/>\n'
        f'<DataArray type="Int64" Name="offsets" format="appended" offset="{head[2]}"/>\n'
        "</Lines>\n</Piece>\n</PolyData>\n"
        '<AppendedData encoding="raw">\n_'
    )
    out.write(xml.encode())
    for array in arrays:
        out.write(np.uint64(array.nbytes).tobytes())
        out.write(array.reshape(-1).view(np.uint8).data)
    out.write(b"\n</AppendedData>\n</VTKFile>\n")


def _write_npz(out: Any, arrays: dict[str, np.ndarray | Future]) -> None:
    """An uncompressed ``.npz`` (what ``np.savez`` writes) of ``arrays``, each written straight to ``out``; an
    array still being made (a Future) is written last, once it is ready, so the others are on their way."""
    with zipfile.ZipFile(out, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as npz:
        for name, array in sorted(arrays.items(), key=lambda item: isinstance(item[1], Future)):
            ready = np.asanyarray(array.result() if isinstance(array, Future) else array)
            with npz.open(f"{name}.npy", mode="w", force_zip64=True) as entry:
                _write_npy(entry, ready)


def _write_npy(entry: Any, array: np.ndarray) -> None:
    """``np.lib.format.write_array`` without its copy: a C-contiguous array's bytes go to ``entry`` as they
    are (write_array copies them chunk by chunk into bytes objects for a file it cannot ``tofile`` into)."""
    if array.dtype.hasobject or not array.flags.c_contiguous:
        np.lib.format.write_array(entry, array, allow_pickle=False)
        return
    header = np.lib.format.header_data_from_array_1_0(array)
    try:  # version 1.0 where the header fits it, else 2.0, as write_array picks (nothing written on refusal)
        np.lib.format.write_array_header_1_0(entry, header)
    except ValueError:
        np.lib.format.write_array_header_2_0(entry, header)
    entry.write(array.reshape(-1).view(np.uint8).data)


def write_lines(path: os.PathLike | str, points: np.ndarray, offsets: np.ndarray, *,
                point_data: dict[str, np.ndarray | Future] | None = None,
                line_data: dict[str, np.ndarray] | None = None, **extra: Any) -> Path:
    """Writes ``.npz`` (``points``, ``offsets``, the ``point_data`` and ``line_data`` arrays by name, and
    ``extra`` arrays) or ``.vtp`` (point data and cell data, one cell a line) through a temporary file and
    rename, so a failure leaves nothing. A point array may be a Future (made meanwhile, on another thread):
    an ``.npz`` writes the others first."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".npz", ".vtp"):
        raise UsageError(f"{path}: streamlines are written as .npz or .vtp, not {suffix or 'no extension'}")
    point_data, line_data = dict(point_data or {}), dict(line_data or {})
    with replacing(path) as partial:
        with open(partial, "wb") as out:
            if suffix == ".npz":
                _write_npz(out, {"points": np.asarray(points, dtype=np.float32),
                                 "offsets": np.asarray(offsets, dtype=np.int64), **point_data, **line_data, **extra})
            else:
                ready = {name: a.result() if isinstance(a, Future) else a for name, a in point_data.items()}
                _write_vtp(out, np.asarray(points), np.asarray(offsets), ready, line_data)
            out.flush()
            os.fsync(out.fileno())
    return path


def write_traced(path: os.PathLike | str, result: TraceResult, threads: int = 0) -> Path:
    """Writes a trace's lines with what ParaView's stream tracer gives them: per point
    ``IntegrationTime``, the sampled ``Velocity`` vectors and their magnitude ``Speed``; per line
    ``SeedIds`` and ``ReasonForTermination`` (ParaView's codes, :data:`TERMINATION_CODES`; the forward
    end, or the backward end of a backward trace; ``BackwardReasonForTermination`` too when both
    directions were traced). An ``.npz`` also keeps ``ends``, the reasons as text."""
    direction = result.stats.get("direction", "forward")

    def codes(side: int) -> np.ndarray:
        """Each line's code at one end ("backward/forward" when both were traced): side 0 the first, -1 the last."""
        coded = {end: TERMINATION_CODES[end.split("/")[side]] for end in set(result.ends)}  # a few kinds of end
        return np.fromiter((coded[end] for end in result.ends), dtype=np.int32, count=len(result.ends))

    line_data = {"SeedIds": np.arange(len(result.ends), dtype=np.int64),
                 "ReasonForTermination": codes(0 if direction == "backward" else -1)}
    if direction == "both":
        line_data["BackwardReasonForTermination"] = codes(0)
    extra = {"ends": np.array(result.ends)} if Path(path).suffix.lower() == ".npz" else {}
    # The velocities are sampled (a pass over the flow) while the lines' own arrays are written.
    with ThreadPoolExecutor(1, thread_name_prefix="headrace-sample") as sampler:
        velocities = sampler.submit(result.velocities, threads)
        speeds = sampler.submit(lambda: _speeds(velocities.result()))
        point_data: dict[str, np.ndarray | Future] = {"IntegrationTime": np.asarray(result.times, dtype=np.float32),
                                                       "Velocity": velocities, "Speed": speeds}
        return write_lines(path, result.points, result.offsets, point_data=point_data, line_data=line_data, **extra)


def _speeds(velocities: np.ndarray) -> np.ndarray:
    """Each vector's length in float32, summed x, y, z in that order (np.linalg.norm's, without its copies)."""
    x, y, z = (velocities[:, k].astype(np.float32, copy=False) for k in range(3))  # strided views, not copies
    return np.sqrt(x * x + y * y + z * z)
