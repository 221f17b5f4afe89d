"""Writing streamlines: ``.npz`` or ``.vtp`` (ParaView opens it), with what ParaView's stream tracer
gives its lines (:func:`write_traced`)."""

from __future__ import annotations

import io
import os
import struct
import time
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from headrace._files import PieceWriter, replacing
from headrace.errors import UsageError
from headrace.workloads.streamlines.tracer import TraceResult

__all__ = ["TERMINATION_CODES", "speeds", "write_lines", "write_traced"]


# ParaView's codes for why a line ended (vtkStreamTracer's ReasonForTermination); "stopped" (a time
# budget) has none there and is 0; a pathline that reached the time it was traced to takes the code of
# reaching the largest propagation (OUT_OF_LENGTH), its limit in time.
TERMINATION_CODES = {"left_domain": 1, "end_time": 4, "max_steps": 5, "stagnant": 6, "stopped": 0}

_VTK_TYPES = {np.dtype("float32"): "Float32", np.dtype("float64"): "Float64", np.dtype("int64"): "Int64", np.dtype("int32"): "Int32"}


def _write_vtp(out: PieceWriter, points: np.ndarray, offsets: np.ndarray, point_data: dict[str, np.ndarray],
               line_data: dict[str, np.ndarray], cells: str = "Lines") -> None:
    """VTK XML PolyData with the lines (``cells="Verts"``: point sets) and their point and cell data, appended
    raw (UInt64 headers): ParaView opens it. The arrays go to ``out`` as they are, not gathered into one
    buffer first, side by side at their places."""
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
        f'<Piece NumberOfPoints="{len(points)}" NumberOf{cells}="{len(ends)}">\n'
        + (f"<PointData{vectors}>\n{described(point_data, 3)}</PointData>\n" if point_data else "")
        + (f"<CellData>\n{described(line_data, 3 + len(point_data))}</CellData>\n" if line_data else "")
        + f'<Points><DataArray type="Float32" NumberOfComponents="3" format="appended" offset="{head[0]}"/></Points>\n'
        f"<{cells}>\n"
        f'<DataArray type="Int64" Name="connectivity" format="appended" offset="{head[1]}"/>\n'
        f'<DataArray type="Int64" Name="offsets" format="appended" offset="{head[2]}"/>\n'
        f"</{cells}>\n</Piece>\n</PolyData>\n"
        '<AppendedData encoding="raw">\n_'
    )
    at = len(xml.encode())
    out.write_at(0, xml.encode())
    for array in arrays:
        out.write_at(at, np.uint64(array.nbytes).tobytes())
        out.write_at(at + 8, array.reshape(-1).view(np.uint8))
        at += 8 + array.nbytes
    out.write_at(at, b"\n</AppendedData>\n</VTKFile>\n")


def _write_npz(out: PieceWriter, arrays: dict[str, np.ndarray | Future]) -> None:
    """An uncompressed ``.npz`` (what ``np.savez`` writes: a ZIP64 archive of ``.npy`` entries) of ``arrays``,
    its entries written side by side by ``out``'s threads, each entry's CRC-32 computed beside the writes
    (zipfile computes it in the one thread that writes, which took a fifth of a trace's writing) and its
    header written once the CRC is known. An array still being made (a Future) is laid out last, once it
    is ready, so the others are on their way."""
    when = time.localtime()
    dos_time = (when.tm_hour << 11) | (when.tm_min << 5) | (when.tm_sec // 2)
    dos_date = ((max(when.tm_year, 1980) - 1980) << 9) | (when.tm_mon << 5) | when.tm_mday
    central = []
    at = 0
    for name, array in sorted(arrays.items(), key=lambda item: isinstance(item[1], Future)):
        ready = np.asanyarray(array.result() if isinstance(array, Future) else array)
        if ready.dtype.hasobject:
            raise UsageError(f"{name}: an .npz of lines holds no object arrays")
        ready = np.ascontiguousarray(ready)
        head = _npy_header(ready)
        data = ready.reshape(-1).view(np.uint8)
        entry = f"{name}.npy".encode()
        data_at = at + _LOCAL_HEADER.size + len(entry) + _LOCAL_ZIP64.size
        crc = out.submit(lambda h=head, d=data: zlib.crc32(d.data, zlib.crc32(h)))  # first: it takes longest
        out.write_at(data_at, head)
        out.write_at(data_at + len(head), data)
        central.append((entry, at, len(head) + data.nbytes, crc))
        at = data_at + len(head) + data.nbytes
    directory = bytearray()
    for entry, header_at, size, crc in central:
        out.write_at(header_at, _LOCAL_HEADER.pack(0x04034B50, _ZIP64_VERSION, 0, 0, dos_time, dos_date, crc.result(),
                                                   _ZIP64_SIZE, _ZIP64_SIZE, len(entry), _LOCAL_ZIP64.size)
                     + entry + _LOCAL_ZIP64.pack(1, 16, size, size))
        directory += _CENTRAL_HEADER.pack(0x02014B50, (3 << 8) | _ZIP64_VERSION, _ZIP64_VERSION, 0, 0, dos_time,
                                          dos_date, crc.result(), _ZIP64_SIZE, _ZIP64_SIZE, len(entry),
                                          _CENTRAL_ZIP64.size, 0, 0, 0, 0o644 << 16, _ZIP64_SIZE)
        directory += entry + _CENTRAL_ZIP64.pack(1, 24, size, size, header_at)
    count, end_at = len(central), at + len(directory)
    directory += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, (3 << 8) | _ZIP64_VERSION, _ZIP64_VERSION, 0, 0, count,
                             count, len(directory), at)
    directory += struct.pack("<IIQI", 0x07064B50, 0, end_at, 1)
    directory += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF),
                             _ZIP64_SIZE, _ZIP64_SIZE, 0)
    out.write_at(at, bytes(directory))


# ZIP64 records as APPNOTE.TXT 6.3 lays them out (sizes and offsets always in the ZIP64 extra field, as
# zipfile's force_zip64 writes them; version 4.5 needed).
_ZIP64_VERSION = 45
_ZIP64_SIZE = 0xFFFFFFFF  # "see the ZIP64 extra field"
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_ZIP64 = struct.Struct("<HHQQ")  # tag 1, its size, uncompressed and compressed size
_CENTRAL_HEADER = struct.Struct("<IHHHHHHIIIHHHHHII")
_CENTRAL_ZIP64 = struct.Struct("<HHQQQ")  # the same and the local header's offset


def _npy_header(array: np.ndarray) -> bytes:
    """The ``.npy`` header of a C-contiguous ``array``: version 1.0 where it fits, else 2.0, as
    ``np.save`` picks."""
    header, buffer = np.lib.format.header_data_from_array_1_0(array), io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(buffer, header)
    except ValueError:
        buffer = io.BytesIO()
        np.lib.format.write_array_header_2_0(buffer, header)
    return buffer.getvalue()


def write_lines(path: os.PathLike | str, points: np.ndarray, offsets: np.ndarray, *,
                point_data: dict[str, np.ndarray | Future] | None = None,
                line_data: dict[str, np.ndarray] | None = None, cells: str = "Lines", **extra: Any) -> Path:
    """Writes ``.npz`` (``points``, ``offsets``, the ``point_data`` and ``line_data`` arrays by name, and
    ``extra`` arrays) or ``.vtp`` (point data and cell data, one cell a line, or with ``cells="Verts"`` a set
    of points) through a temporary file and rename, so a failure leaves nothing. A point array may be a
    Future (made meanwhile, on another thread): an ``.npz`` writes the others first."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".npz", ".vtp"):
        raise UsageError(f"{path}: streamlines are written as .npz or .vtp, not {suffix or 'no extension'}")
    point_data, line_data = dict(point_data or {}), dict(line_data or {})
    with replacing(path) as partial:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            with PieceWriter(fd) as out:
                if suffix == ".npz":
                    _write_npz(out, {"points": np.asarray(points, dtype=np.float32),
                                     "offsets": np.asarray(offsets, dtype=np.int64), **point_data, **line_data, **extra})
                else:
                    ready = {name: a.result() if isinstance(a, Future) else a for name, a in point_data.items()}
                    _write_vtp(out, np.asarray(points), np.asarray(offsets), ready, line_data, cells)
        finally:
            os.close(fd)
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
    extra: dict[str, Any] = {"ends": np.array(result.ends)} if Path(path).suffix.lower() == ".npz" else {}
    # The velocities are sampled (a pass over the flow) while the lines' own arrays are written.
    with ThreadPoolExecutor(1, thread_name_prefix="headrace-sample") as sampler:
        velocities = sampler.submit(result.velocities, threads)
        speeds_made = sampler.submit(lambda: speeds(velocities.result()))
        point_data: dict[str, np.ndarray | Future] = {"IntegrationTime": np.asarray(result.times, dtype=np.float32),
                                                       "Velocity": velocities, "Speed": speeds_made}
        return write_lines(path, result.points, result.offsets, point_data=point_data, line_data=line_data, **extra)


def speeds(velocities: np.ndarray) -> np.ndarray:
    """Each vector's length in float32, summed x, y, z in that order (np.linalg.norm's, without its copies)."""
    x, y, z = (velocities[:, k].astype(np.float32, copy=False) for k in range(3))  # strided views, not copies
    return np.sqrt(x * x + y * y + z * z)
