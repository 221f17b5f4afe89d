"""The README's examples run as written (issue 35): every line of its command-line block, in order, in a
fresh folder, on this machine's CPU; then its Python block. The data a user brings (HDF5, H5Part, NetCDF,
.npy, raw, VTK files) is written first by the real libraries under the names the README uses. The block
of GPU lines runs only where there is a GPU. Each line must exit 0 without a traceback."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).parents[2] / "README.md"


def blocks(marker: str) -> list[str]:
    """The code blocks placed right after ``<!-- test: MARKER -->`` in the README."""
    text = README.read_text()
    return re.findall(rf"<!-- test: {marker} -->\s*```\w+\n(.*?)```", text, flags=re.S)


def command_lines(block: str) -> list[str]:
    """The block's commands, one a line (comments and blank lines dropped; a trailing comment kept out)."""
    lines = []
    for line in block.splitlines():
        command = re.sub(r"\s+#\s.*$", "", line).strip()
        if command and not command.startswith("#"):
            lines.append(command)
    return lines


def users_files(folder: Path) -> None:
    """What the README's first lines convert: files written by h5py, netCDF4/xarray, numpy and vtk."""
    import h5py
    import pandas
    import vtk
    import xarray
    from vtk.util import numpy_support

    rng = np.random.default_rng(35)
    with h5py.File(folder / "run.h5", "w") as f:  # a step group per time step, one dataset each
        for step in range(3):
            group = f.create_group(f"step{step}")
            group["density"] = rng.random((12, 10, 8), dtype=np.float32)
            group.attrs["time"] = 0.25 * step
    with h5py.File(folder / "run.h5part", "w") as f:  # H5Part: Step#n groups of x, y, z and fields, TimeValue
        for step in range(3):
            group = f.create_group(f"Step#{step}")
            group.attrs["TimeValue"] = 0.5 * step
            for axis in "xyz":
                group[axis] = rng.random(500)
            for axis in ("vx", "vy", "vz"):
                group[axis] = rng.standard_normal(500).astype(np.float32)
    times = pandas.date_range("2024-01-01", periods=4, freq="6h")
    xarray.Dataset({"t2m": (("time", "lat", "lon"), rng.random((4, 16, 32), dtype=np.float32))},
                   coords={"time": times}).to_netcdf(folder / "era.nc")
    np.save(folder / "series.npy", rng.random((5, 6, 7, 8), dtype=np.float32))  # (t, z, y, x)
    (rng.random(16 ** 3) * 255).astype(np.uint8).tofile(folder / "bonsai_16x16x16_uint8.raw")
    image = vtk.vtkImageData()  # CFD output: a scalar and a float64 velocity on a grid
    image.SetDimensions(24, 20, 16)
    points = 24 * 20 * 16
    z, y, x = np.meshgrid(np.arange(16), np.arange(20), np.arange(24), indexing="ij")
    velocity = np.stack([-(y - 10.0), x - 12.0, np.full(x.shape, 0.1)], axis=-1).reshape(points, 3)
    for name, values in (("density", rng.random(points)), ("velocity", velocity)):
        array = numpy_support.numpy_to_vtk(np.ascontiguousarray(values), deep=True)
        array.SetName(name)
        image.GetPointData().AddArray(array)
    writer = vtk.vtkXMLImageDataWriter()
    writer.SetFileName(str(folder / "flow.vti"))
    writer.SetInputData(image)
    assert writer.Write() == 1


def run_line(line: str, folder: Path, env: dict[str, str]) -> None:
    if line.startswith("headrace view"):  # serves until stopped: it must answer, then it is stopped
        server = subprocess.Popen(line, shell=True, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, start_new_session=True)
        try:
            port = int(re.search(r"--port (\d+)", line).group(1)) if "--port" in line else 8765
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as page:
                        assert page.status == 200
                        break
                except OSError:
                    assert server.poll() is None, f"{line}: exited {server.returncode}: {server.stderr.read()}"
                    assert time.monotonic() < deadline, f"{line}: no page within 60 s"
                    time.sleep(0.5)
        finally:
            os.killpg(server.pid, 15)
            server.wait(timeout=30)
        return
    done = subprocess.run(line, shell=True, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{line}\nexit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, f"{line}\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    """A folder where the README's command-line block ran line by line, and the environment it ran in."""
    for library in ("h5py", "pandas", "vtk", "xarray", "netCDF4"):
        pytest.importorskip(library, reason=f"the README's inputs are written with {library} (scripts/setup.sh installs it)")
    folder = tmp_path_factory.mktemp("readme")
    users_files(folder)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "HEADRACE_PROFILES": str(folder / "profiles.json"), "HEADRACE_PROBES": str(folder / "probes.json")}
    assert shutil.which("headrace", path=env["PATH"]), "the console script is not on PATH"
    (cpu,) = blocks("cpu")
    for line in command_lines(cpu):
        run_line(line, folder, env)
    return folder, env


def test_the_command_line_block_runs_as_written(walked):
    folder, _ = walked
    for made in ("d.hrc", "pts.hrc", "era.hrc", "s.hrc", "b.hrc", "p.hrc", "lines.vtp", "frame.png", "p.png"):
        assert (folder / made).is_file(), made


def test_the_python_block_runs_as_written(walked):
    folder, env = walked
    (python,) = blocks("python")
    done = subprocess.run([sys.executable, "-c", python], cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.gpu
def test_the_gpu_block_runs_as_written(walked):
    folder, env = walked
    (gpu,) = blocks("gpu")
    for line in command_lines(gpu):
        run_line(line, folder, env)
