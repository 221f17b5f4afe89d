"""``headrace convert``'s speed and memory, every reader:

    python3 -m headrace.bench.cases.convert_speed DIR SIZE [--frame BYTES] [FORMAT ...] [--csv out.csv]

(sizes in bytes or with K/M/G) makes each input in a child process, converts it in another, timed there
by the harness, and prints the input's GB/s and the conversion's peak memory, then removes both. The
input was just written, so it is read from the page cache (hot): the numbers are the converter's, not
the disk's. A ``--frame`` larger than the peak memory shows a frame converting in
pieces (bounded memory); VTK files are read whole by the vtk library, a frame at a time.

``make_<format>(path, size)`` writes an input of about ``size`` bytes of values at ``path`` with the
format's own library (or layout), a slab at a time where the format allows (so an input larger than
memory can be made), and returns the path to convert; ``CONVERT_OPTIONS[format]`` are the options
``headrace.convert.convert`` needs for it. Grids are float32 frames of ``frame_bytes`` (64 MiB) unless the
size is smaller (one frame then); values are seeded uniform noise, so compressed chunks stay their size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from headrace.bench.harness import Measurement, measure, write_csv
from headrace.sizes import parse_size
from headrace.testing.mmpld_writer import ColourType, MmpldFrame, ParticleList, VertexType, write_mmpld

__all__ = ["CONVERT_OPTIONS", "MAKERS", "main"]

FRAME_BYTES = 64 << 20  # a 256^3 float32 grid
SLAB_BYTES = 32 << 20  # written at a time

CONVERT_OPTIONS: dict[str, dict[str, object]] = {
    "hdf5": {"dataset": "/step_*/density"},
    "h5part": {},
    "netcdf": {},
    "zarr": {},
    "raw-particles": {"frames": 4},
    "mmpld": {},
    "npy": {},
    "bov": {},
    "vti": {},
    "vtp": {},
}


def _grid(size: int, frame_bytes: int) -> tuple[int, tuple[int, int, int]]:
    """(frames, (Z, Y, X)) of float32 grids of about ``frame_bytes`` holding about ``size`` bytes."""
    points = max(1, min(size, frame_bytes) // 4)
    side = max(1, round(points ** (1 / 3)))
    shape = (max(1, points // (side * side)), side, side)
    return max(1, size // (4 * shape[0] * side * side)), shape


def _slabs(shape: tuple[int, int, int], seed: int) -> Iterator[tuple[slice, np.ndarray]]:
    """The grid's z slabs of about :data:`SLAB_BYTES`, as (z range, values)."""
    rng = np.random.default_rng(seed)
    planes = max(1, SLAB_BYTES // (shape[1] * shape[2] * 4))
    for start in range(0, shape[0], planes):
        stop = min(start + planes, shape[0])
        yield slice(start, stop), rng.random((stop - start, shape[1], shape[2]), dtype=np.float32)


def make_hdf5(path: Path, size: int, frame_bytes: int = FRAME_BYTES) -> Path:
    """``/step_N/density`` datasets, one float32 grid per step, contiguous."""
    # Deferred: h5py is optional; only this format's input needs it.
    import h5py  # type: ignore[import-untyped]

    frames, shape = _grid(size, frame_bytes)
    with h5py.File(path, "w") as file:
        for step in range(frames):
            dataset = file.create_dataset(f"step_{step}/density", shape=shape, dtype="f4")
            for where, values in _slabs(shape, step):
                dataset[where] = values
    return path


def make_h5part(path: Path, size: int, steps: int = 4) -> Path:
    """H5Part steps of particles: x, y, z, vx, vy, vz float32 and id int64 (32 bytes a particle)."""
    # Deferred: h5py is optional; only this format's input needs it.
    import h5py

    particles = max(1, size // (32 * steps))
    chunk = SLAB_BYTES // 32
    with h5py.File(path, "w") as file:
        for step in range(steps):
            rng = np.random.default_rng(step)
            group = file.create_group(f"Step#{step}")
            columns = {name: group.create_dataset(name, shape=(particles,), dtype="f4") for name in
                       ("x", "y", "z", "vx", "vy", "vz")}
            ids = group.create_dataset("id", shape=(particles,), dtype="i8")
            for start in range(0, particles, chunk):
                stop = min(start + chunk, particles)
                for column in columns.values():
                    column[start:stop] = rng.random(stop - start, dtype=np.float32)
                ids[start:stop] = np.arange(start, stop)
    return path


def make_netcdf(path: Path, size: int, frame_bytes: int = FRAME_BYTES) -> Path:
    """NetCDF-4 ``density(time, z, y, x)`` float32 over an unlimited time, with uniform coordinates, in
    chunks of about 32 MiB one frame deep."""
    # Deferred: netCDF4 is optional; only this format's input needs it.
    import netCDF4

    frames, shape = _grid(size, frame_bytes)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as dataset:
        dataset.createDimension("time", None)
        for name, length in zip(("z", "y", "x"), shape):
            dataset.createDimension(name, length)
            dataset.createVariable(name, "f8", (name,))[:] = np.arange(length) * 0.5
        times = dataset.createVariable("time", "f8", ("time",))
        times.units = "seconds since 2000-01-01"
        planes = max(1, min(shape[0], SLAB_BYTES // (shape[1] * shape[2] * 4)))
        density = dataset.createVariable("density", "f4", ("time", "z", "y", "x"), chunksizes=(1, planes, *shape[1:]))
        for step in range(frames):
            times[step] = float(step)
            for where, values in _slabs(shape, step):
                density[step, where] = values
    return path


def make_zarr(path: Path, size: int, frame_bytes: int = FRAME_BYTES) -> Path:
    """A zarr format 3 group with ``density(time, z, y, x)`` float32, chunked one frame deep (default codecs)."""
    # Deferred: zarr is optional; only this format's input needs it.
    import zarr

    frames, shape = _grid(size, frame_bytes)
    group = zarr.open_group(path, mode="w")
    planes = max(1, min(shape[0], SLAB_BYTES // (shape[1] * shape[2] * 4)))
    density = group.create_array("density", shape=(frames, *shape), chunks=(1, planes, *shape[1:]), dtype="f4")
    for step in range(frames):
        for where, values in _slabs(shape, step):
            density[step, where] = values
    return path


def make_raw_particles(path: Path, size: int) -> Path:
    """Raw particles (x, y, z, radius, r, g, b, a float32), four frames."""
    particles = max(4, size // 32 // 4 * 4)
    rng = np.random.default_rng(0)
    with open(path, "wb") as out:
        for start in range(0, particles, SLAB_BYTES // 32):
            out.write(rng.random((min(SLAB_BYTES // 32, particles - start), 8), dtype=np.float32).tobytes())
    return path


def make_mmpld(path: Path, size: int, frames: int = 4) -> Path:
    """MegaMol MMPLD 1.3: ``frames`` frames of one list, float xyz and uint8 rgba (16 bytes a particle)."""
    particles = max(1, size // (16 * frames))
    rng = np.random.default_rng(0)
    lists = [MmpldFrame([ParticleList(VertexType.FLOAT_XYZ, ColourType.UINT8_RGBA,
                                      rng.random((particles, 3), dtype=np.float32),
                                      rng.integers(0, 256, (particles, 4), dtype=np.uint8))], timestamp=float(t))
             for t in range(frames)]
    write_mmpld(path, lists, version=103)
    return path


def make_npy(path: Path, size: int, frame_bytes: int = FRAME_BYTES) -> Path:
    """A folder of ``.npy`` grids, one a frame, written through a memory map a slab at a time."""
    frames, shape = _grid(size, frame_bytes)
    path.mkdir()
    for step in range(frames):
        grid = np.lib.format.open_memmap(path / f"density_{step}.npy", mode="w+", dtype=np.float32, shape=shape)
        for where, values in _slabs(shape, step):
            grid[where] = values
        grid.flush()
        del grid
    return path


def make_bov(path: Path, size: int, frame_bytes: int = FRAME_BYTES) -> Path:
    """A folder of BOV bricks (a header and a raw float32 file each), one a frame."""
    frames, (nz, ny, nx) = _grid(size, frame_bytes)
    path.mkdir()
    for step in range(frames):
        with open(path / f"density_{step}.raw", "wb") as out:
            for _, values in _slabs((nz, ny, nx), step):
                out.write(values.tobytes())
        (path / f"density_{step}.bov").write_text(
            f"TIME: {step}\nDATA_FILE: density_{step}.raw\nDATA_SIZE: {nx} {ny} {nz}\nDATA_FORMAT: FLOAT\n"
            "VARIABLE: density\nDATA_ENDIAN: LITTLE\nCENTERING: nodal\nBRICK_ORIGIN: 0 0 0\nBRICK_SIZE: 1 1 1\n")
    return path


def _write_raw(writer: Any, path: Path, data: Any) -> None:
    """Writes ``data`` with a VTK XML writer as raw appended data, uncompressed (read as it lies)."""
    writer.SetFileName(str(path))
    writer.SetInputData(data)
    writer.SetDataModeToAppended()
    writer.EncodeAppendedDataOff()
    writer.SetCompressorTypeToNone()
    writer.Write()


def make_vti(path: Path, size: int, frame_bytes: int = FRAME_BYTES) -> Path:
    """A folder of ``.vti`` images (raw appended data), one a frame: vtk holds a frame whole."""
    # Deferred: vtk is optional and slow to import; only this format's input needs it.
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    frames, (nz, ny, nx) = _grid(size, frame_bytes)
    path.mkdir()
    for step in range(frames):
        image = vtkImageData()
        image.SetDimensions(nx, ny, nz)
        values = np.random.default_rng(step).random(nx * ny * nz, dtype=np.float32)
        array = numpy_to_vtk(values, deep=True)
        array.SetName("density")
        image.GetPointData().AddArray(array)
        _write_raw(vtkXMLImageDataWriter(), path / f"density_{step}.vti", image)
    return path


def make_vtp(path: Path, size: int, frames: int = 4) -> Path:
    """A folder of ``.vtp`` point sets (float32 points, a float32 x 3 velocity, raw appended data), one a
    frame, 24 bytes a point: vtk holds a frame whole."""
    # Deferred: vtk is optional and slow to import; only this format's input needs it.
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonCore import vtkPoints
    from vtkmodules.vtkCommonDataModel import vtkPolyData
    from vtkmodules.vtkIOXML import vtkXMLPolyDataWriter

    count = max(1, size // (24 * frames))
    path.mkdir()
    for step in range(frames):
        rng = np.random.default_rng(step)
        points = vtkPoints()
        points.SetData(numpy_to_vtk(rng.random((count, 3), dtype=np.float32), deep=True))
        poly = vtkPolyData()
        poly.SetPoints(points)
        velocity = numpy_to_vtk(rng.random((count, 3), dtype=np.float32), deep=True)
        velocity.SetName("velocity")
        poly.GetPointData().AddArray(velocity)
        _write_raw(vtkXMLPolyDataWriter(), path / f"points_{step}.vtp", poly)
    return path


MAKERS: dict[str, Callable[[Path, int], Path]] = {
    "hdf5": make_hdf5, "h5part": make_h5part, "netcdf": make_netcdf, "zarr": make_zarr,
    "raw-particles": make_raw_particles, "mmpld": make_mmpld, "npy": make_npy, "bov": make_bov, "vti": make_vti,
    "vtp": make_vtp,
}
SUFFIXES = {"hdf5": ".h5", "h5part": ".h5part", "netcdf": ".nc", "zarr": ".zarr", "raw-particles": ".raw",
            "mmpld": ".mmpld", "npy": "", "bov": "", "vti": "", "vtp": ""}
FRAMED = ("hdf5", "netcdf", "zarr", "npy", "bov", "vti")  # grids: frame_bytes applies


def _converted(code: str) -> tuple[Measurement, int, int]:
    """Runs ``code`` (which prints its measurement as JSON) in a child process; returns the measurement and
    the child's peak anonymous memory (its own: buffers, arrays) and peak resident set (with the file pages
    it mapped, which the kernel can take back), sampled from /proc every 20 ms."""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    anonymous = resident = 0
    while child.poll() is None:
        try:
            status = Path(f"/proc/{child.pid}/status").read_text()
        except OSError:
            break
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        anonymous = max(anonymous, int(fields.get("RssAnon", "0 kB").split()[0]) * 1024)
        resident = max(resident, int(fields.get("VmHWM", "0 kB").split()[0]) * 1024)
        time.sleep(0.02)
    out, _ = child.communicate()
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, code)
    return Measurement(**json.loads(out.splitlines()[-1])), anonymous, resident


def _input_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file())
    return path.stat().st_size


def write_ceiling(folder: str, size: int) -> Measurement:
    """Writing ``size`` bytes to a file in ``folder`` and fsyncing it: a conversion writes its output so,
    so it cannot be faster (the ratio each conversion is printed against)."""
    path = Path(folder) / "ceiling.bin"
    block = np.random.default_rng(0).bytes(SLAB_BYTES)

    def write() -> int:
        with open(path, "wb") as out:
            for _ in range(max(1, size // SLAB_BYTES)):
                out.write(block)
            out.flush()
            os.fsync(out.fileno())
        return path.stat().st_size

    try:
        return measure("write ceiling", write, files=[], cache="hot", repeats=1, prepare_cache=lambda: "a write, fsynced")
    finally:
        os.remove(path)


# The child that converts: the harness's clock around headrace.convert.convert, its input just written
# (in the page cache: the numbers are the converter's, not the disk's), the measurement as JSON.
CONVERT = """
import dataclasses, json
from headrace.bench.harness import measure
from headrace.convert import convert
def body():
    convert({given!r}, {output!r}, format={name!r}, **{options!r})
    return {bytes_in}
measured = measure({name!r}, body, files=[], cache="hot", repeats=1, prepare_cache=lambda: "written just before")
print(json.dumps(dataclasses.asdict(measured)))
"""


def run(folder: str, size: int, frame_bytes: int, formats: list[str]) -> list[Measurement]:
    """Make each input in one child process and convert it in another, which reports its time and peak
    memory (a child keeps the peak of the process it was forked from, so this one stays small)."""
    ceiling = write_ceiling(folder, size)
    print(f"ceiling: writing and fsyncing {ceiling.bytes / 1e9:.3f} GB here at {ceiling.best_gbps:.2f} GB/s")
    measurements = [ceiling]
    for name in formats or list(MAKERS):
        source = Path(folder) / f"input{SUFFIXES[name]}"
        output = Path(folder) / f"{name}.hrc"
        make = (f"from pathlib import Path; from headrace.bench.cases.convert_speed import MAKERS; "
                f"MAKERS[{name!r}](Path({str(source)!r}), {size}"
                + (f", frame_bytes={frame_bytes})" if name in FRAMED else ")"))
        subprocess.run([sys.executable, "-c", make], check=True)
        given = source / "*.bov" if name == "bov" else source  # the headers, not their data files
        measured, anonymous, resident = _converted(CONVERT.format(
            given=str(given), output=str(output), name=name, options=CONVERT_OPTIONS[name], bytes_in=_input_bytes(source)))
        measured.parameters.update(peak_anonymous_bytes=anonymous, peak_resident_bytes=resident)
        measurements.append(measured)
        gbps = measured.best_gbps
        print(f"{name}: {measured.bytes / 1e9:.3f} GB in {min(measured.seconds):.2f} s = {gbps:.2f} GB/s "
              f"({gbps / ceiling.best_gbps:.2f} x the ceiling); peak memory "
              f"{anonymous / 2**20:.0f} MiB of its own ({resident / 2**20:.0f} MiB resident with mapped input pages)")
        os.remove(output)
        shutil.rmtree(source) if source.is_dir() else os.remove(source)
    return measurements


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="where the inputs and outputs are written (and removed)")
    parser.add_argument("size", type=parse_size, help="bytes of values per input (64M, 4G, ...)")
    parser.add_argument("--frame", type=parse_size, default=FRAME_BYTES, help="bytes of a grid frame")
    parser.add_argument("--csv", help="every measurement (the ceiling and each conversion), one row each")
    parser.add_argument("formats", nargs="*", metavar="FORMAT", help=f"of {', '.join(MAKERS)} (default: all)")
    args = parser.parse_intermixed_args(argv)
    if set(args.formats) - set(MAKERS):
        parser.error(f"unknown formats {', '.join(sorted(set(args.formats) - set(MAKERS)))}")
    measurements = run(args.folder, args.size, args.frame, args.formats)
    if args.csv:
        write_csv(args.csv, measurements)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
