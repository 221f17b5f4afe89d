"""Frames that hold nothing (format 1.2): a simulation gains and loses particles, and MegaMol writes frames
without any. Written, read, streamed (host and GPU) and rendered through every layer: an empty frame is
a zero-length array and renders as background."""

from __future__ import annotations

import numpy as np
import pytest

import headrace
from headrace.workloads.particles import render_frame
from headrace.cli.main import main

COUNTS = [300, 0, 120, 0, 0, 50]  # empty frames in the middle, at the end, two in a row


@pytest.fixture(scope="module", params=["none", "lz4"])
def series(request, tmp_path_factory):
    """Particles (x, y, z, radius, r, g, b, a) and ids, frame t holding COUNTS[t]; the frames' values."""
    path = tmp_path_factory.mktemp("empty") / f"series-{request.param}.hrc"
    rng = np.random.default_rng(3)
    frames = []
    fields = [headrace.FieldSpec("particles", "float32", 8), headrace.FieldSpec("id", "int64", 1)]
    with headrace.Writer(path, fields, codec=request.param, chunk_size_bytes=4096) as writer:
        for t, count in enumerate(COUNTS):
            particles = rng.random((count, 8), dtype=np.float32)
            particles[:, 3] = 0.02
            ids = np.arange(count, dtype=np.int64)
            frame = writer.add_frame(time=float(t))
            writer.write(frame, "particles", particles)
            writer.write(frame, "id", ids)
            frames.append((particles, ids))
    return path, frames


def test_empty_frames_are_written_as_format_1_2_and_read_as_zero_length_arrays(series):
    path, frames = series
    ds = headrace.open(path)
    assert [ds.element_count(t, "particles") for t in range(len(COUNTS))] == COUNTS
    for t, (particles, ids) in enumerate(frames):
        got = ds.read(t, "particles")
        assert got.shape == (COUNTS[t], 8) and got.dtype == np.float32
        np.testing.assert_array_equal(got, particles)
        np.testing.assert_array_equal(ds.read(t, "id").reshape(-1), ids)
    assert main(["verify", str(path)]) == 0


def test_a_file_without_empty_frames_stays_format_1_0(tmp_path):
    """Old readers open what they can: only a file that holds an empty frame says 1.2."""
    path = tmp_path / "full.hrc"
    with headrace.Writer(path, [headrace.FieldSpec("v", "float32", 1)]) as writer:
        writer.write(writer.add_frame(time=0.0), "v", np.ones(4, dtype=np.float32))
    assert path.read_bytes()[10:12] == b"\x00\x00"  # version_minor
    empty = tmp_path / "empty.hrc"
    with headrace.Writer(empty, [headrace.FieldSpec("v", "float32", 1)]) as writer:
        writer.write(writer.add_frame(time=0.0), "v", np.ones(4, dtype=np.float32))
        writer.write(writer.add_frame(time=1.0), "v", np.ones(0, dtype=np.float32))
    assert empty.read_bytes()[10:12] == b"\x02\x00"


def test_a_frame_never_written_is_still_an_error(tmp_path):
    """Empty means written with nothing, not forgotten."""
    with pytest.raises(headrace.errors.EmptyFieldError, match="frame 1 field 'v' was never written"):
        with headrace.Writer(tmp_path / "x.hrc", [headrace.FieldSpec("v", "float32", 1)]) as writer:
            writer.write(writer.add_frame(time=0.0), "v", np.ones(4, dtype=np.float32))
            writer.add_frame(time=1.0)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("device", ["cpu", pytest.param(0, marks=pytest.mark.gpu)])
def test_a_stream_delivers_empty_frames_as_zero_length_arrays(series, device):
    path, frames = series
    seen = []
    for frame in headrace.open(path).stream(device=device, prefetch=2):
        if device == "cpu":
            particles = np.asarray(frame["particles"])
        else:
            import cupy

            particles = cupy.from_dlpack(frame["particles"]).get()
        assert particles.shape == (COUNTS[frame.index], 8)
        np.testing.assert_array_equal(particles, frames[frame.index][0])
        seen.append(frame.index)
        frame.release()
    assert seen == list(range(len(COUNTS)))


@pytest.mark.parametrize("device", ["cpu", pytest.param(0, marks=pytest.mark.gpu)])
def test_an_empty_frame_renders_as_background_and_the_camera_frames_the_data(series, device):
    path, _ = series
    options = dict(device=device, width=64, height=48, batch=64, segments=2)
    drawn = render_frame(path, 0, **options)
    empty = render_frame(path, 1, **options)
    assert (drawn[..., :3].sum(-1) > 0).any()
    assert not empty[..., :3].any()
    if device != "cpu":
        np.testing.assert_array_equal(drawn, render_frame(path, 0, **{**options, "device": "cpu"}))


def test_commands_take_empty_frames(series, tmp_path, capsys):
    path, _ = series
    assert main(["stream", str(path), "--device", "cpu"]) == 0
    assert main(["render", str(path), "--frames", "0:6", "--device", "cpu", "--width", "32", "--height", "24",
                 "--out", str(tmp_path / "frames")]) == 0
    assert len(list((tmp_path / "frames").glob("*.png"))) == len(COUNTS)
    assert main(["inspect", str(path), "--json"]) == 0
    assert "particles" in capsys.readouterr().out
    # The lab: seed 000's algorithm 3 over a series with empty frames measures, and no row fails.
    out = tmp_path / "lab.csv"
    assert main(["bench", "particles", str(path), "--device", "cpu", "--methods", "auto", "--batch", "64",
                 "--wall-seconds", "0.02", "--width", "32", "--height", "24", "--out", str(out)]) == 0
    rows = out.read_text().splitlines()
    assert len(rows) >= 2 and "error" not in rows[0].split(",")


def test_empty_frames_export_to_vtk_as_point_sets_of_no_points(series, tmp_path):
    vtk = pytest.importorskip("vtkmodules.vtkIOXML", reason="VTK export needs the vtk package")
    from headrace.export import to_vtk

    path, frames = series
    result = to_vtk(path, tmp_path / "out")
    counts = []
    for file in result.files:
        reader = vtk.vtkXMLPolyDataReader()
        reader.SetFileName(str(file))
        reader.Update()
        counts.append(reader.GetOutput().GetNumberOfPoints())
    assert counts == COUNTS
