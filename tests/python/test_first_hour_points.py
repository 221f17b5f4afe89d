"""Issue 35, the first hour: a user's own point sets drawn. H5Part (h5py), .vtp (vtk, float64 points), .npy
and HDF5 point clouds converted by ``headrace convert`` and rendered through the command line and the API on
the CPU: the image shows each point where the data puts it, coloured by the field as the colour map says;
missing and ambiguous fields are refused naming the choices; ``--frame -1`` is the last frame; an image's
missing folder is made for ``--frame`` as for ``--frames``; the viewer's scene of a point set draws."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import headrace
from headrace import errors
from headrace.cli.main import main
from headrace.imaging import colour_table, parse_camera
from headrace.viewer.scenes import describe_file, make_scene
from headrace.workloads.particles import render_frame, render_particles, render_streamed
from headrace.workloads.points import PointSet, PointSetRenderer, PointSetScene, default_radius, upload

h5py = pytest.importorskip("h5py", reason="H5Part files are written with h5py (scripts/setup.sh installs it)")

SIZE = 100
# Looking down -z at the plane z = 0.5 from 2.5 away, +y up: a point (x, y, 0.5) lands at pixel
# ((sx + 1) / 2 * SIZE, (1 - sy) / 2 * SIZE), s = (x - 0.5, y - 0.5) / (tan(22.5 deg) * 2.5).
CAMERA = "lookat:0.5,0.5,3:0.5,0.5,0.5"
SCALE = math.tan(math.radians(22.5)) * 2.5


def _pixel(x: float, y: float) -> tuple[float, float]:
    return ((x - 0.5) / SCALE + 1) / 2 * SIZE, (1 - (y - 0.5) / SCALE) / 2 * SIZE


def _lit(image: np.ndarray) -> np.ndarray:
    """(row, column) of every pixel that is not the black background."""
    return np.argwhere(image[..., :3].any(axis=2))


def write_h5part(path: Path, steps: list[dict[str, np.ndarray]]) -> Path:
    """``Step#N`` groups of datasets as H5Part writes them (x, y, z and one dataset a field)."""
    with h5py.File(path, "w") as file:
        for number, step in enumerate(steps):
            group = file.create_group(f"Step#{number}")
            group.attrs["TimeValue"] = 0.5 * number
            for name, array in step.items():
                group[name] = array
    return path


def convert(source: Path, *options: str) -> Path:
    out = source.with_suffix(".hrc")
    assert main(["convert", str(source), str(out), *options]) == 0
    return out


def _corner_steps() -> list[dict[str, np.ndarray]]:
    """Two steps of float64 points: step 0 one point near the top-right corner, step 1 near the bottom left."""
    return [{"x": np.array([0.9]), "y": np.array([0.9]), "z": np.array([0.5]), "temperature": np.array([2.0])},
            {"x": np.array([0.1]), "y": np.array([0.15]), "z": np.array([0.5]), "temperature": np.array([3.0])}]


@pytest.fixture
def corner(tmp_path) -> Path:
    return convert(write_h5part(tmp_path / "corner.h5part", _corner_steps()))


def _render_cli(path: Path, out: Path, *options: str) -> int:
    return main(["render", str(path), "--out", str(out), "--camera", CAMERA, "--width", str(SIZE), "--height", str(SIZE),
                 "--device", "cpu", *options])


def _assert_only_near(image: np.ndarray, x: float, y: float, radius: float) -> None:
    """Pixels lit around the point's projection, within its projected radius (plus a pixel), none elsewhere."""
    column, row = _pixel(x, y)
    lit = _lit(image)
    assert len(lit) > 10, "the point is drawn"
    reach = radius / SCALE * SIZE / 2 + 1.5
    distance = np.hypot(lit[:, 0] + 0.5 - row, lit[:, 1] + 0.5 - column)
    assert distance.max() <= reach, (distance.max(), reach)
    assert image[int(row), int(column), :3].any(), "the projected centre is lit"


# ---- H5Part through the command line ----

def test_an_h5part_file_renders_each_point_where_the_data_puts_it(corner, tmp_path, capsys):
    assert [(f.name, f.dtype, f.components) for f in headrace.open(corner).fields] == [
        ("position", "float64", 3), ("temperature", "float64", 1)]
    for frame, (x, y) in ((0, (0.9, 0.9)), (1, (0.1, 0.15)), (-1, (0.1, 0.15))):
        out = tmp_path / f"frame{frame}.png"
        assert _render_cli(corner, out, "--frame", str(frame), "--radius", "0.08") == 0
        said = capsys.readouterr().out
        assert "positions position (float64)" in said and "radius 0.08 (given)" in said
        with Image.open(out) as picture:
            _assert_only_near(np.asarray(picture), x, y, 0.08)


def test_the_last_frame_is_frame_minus_one_and_a_frame_past_either_end_is_named(corner, tmp_path, capsys):
    assert _render_cli(corner, tmp_path / "last.png", "--frame", "-1") == 0
    assert _render_cli(corner, tmp_path / "one.png", "--frame", "1") == 0
    with Image.open(tmp_path / "last.png") as last, Image.open(tmp_path / "one.png") as one:
        np.testing.assert_array_equal(np.asarray(last), np.asarray(one))
    capsys.readouterr()
    for frame in ("-3", "2"):
        assert _render_cli(corner, tmp_path / "none.png", "--frame", frame) == 2
        err = capsys.readouterr().err.strip()
        assert err.endswith(f"no frame {frame} (2 frames: 0 to 1, or -2 to -1 from the end)") and "\n" not in err
    assert not (tmp_path / "none.png").exists()
    with pytest.raises(IndexError, match="no frame -3"):  # an OutOfRangeError, from the API too
        render_frame(corner, -3, width=8, height=8)


def test_the_default_radius_comes_from_the_box_and_the_count_and_is_said(tmp_path, capsys):
    rng = np.random.default_rng(3)
    steps = [{axis: rng.uniform(0, 1, 1000) for axis in "xyz"}]
    path = convert(write_h5part(tmp_path / "cloud.h5part", steps))
    assert _render_cli(path, tmp_path / "c.png", "--frame", "0", "--stats") == 0
    out = capsys.readouterr().out
    box = headrace.open(path).frames[0].bbox
    expected = default_radius(box, 1000)
    spacing = float(np.prod(np.subtract(box[1], box[0])) / 1000) ** (1 / 3)
    assert expected == pytest.approx(0.3 * spacing)
    assert f"radius {expected:.6g} (from the first frame's box and point count; --radius sets it)" in out
    assert "frame 0:" in out and "1000 points" in out  # --stats
    with Image.open(tmp_path / "c.png") as picture:
        assert len(_lit(np.asarray(picture))) > 500


def test_colour_by_a_field_colours_each_point_as_the_colour_map_says(tmp_path):
    steps = [{"x": np.array([0.2, 0.8]), "y": np.array([0.5, 0.5]), "z": np.array([0.5, 0.5]),
              "temperature": np.array([10.0, 20.0])}]
    path = convert(write_h5part(tmp_path / "two.h5part", steps))
    assert _render_cli(path, tmp_path / "t.png", "--frame", "0", "--radius", "0.1", "--colour-by", "temperature",
                       "--colour-map", "viridis", "--colour-range", "10:20") == 0
    with Image.open(tmp_path / "t.png") as picture:
        image = np.asarray(picture)
    points = np.array([[0.2, 0.5, 0.5], [0.8, 0.5, 0.5]])
    np.testing.assert_array_equal(image, _reference(points, 0.1, np.array([10.0, 20.0]), 10.0, 20.0))
    left, right = (image[:, :SIZE // 2, :3], image[:, SIZE // 2:, :3])
    left, right = (half[half.any(axis=2)].mean(axis=0) for half in (left, right))
    assert left[2] > left[1] and right[1] > right[2]  # viridis: purple-blue at the low end, yellow at the high


# ---- .vtp (vtk) through the API: exact against the reference renderer ----

def _write_vtp(path: Path, points: np.ndarray, arrays: dict[str, np.ndarray]) -> Path:
    vtk_util = pytest.importorskip("vtkmodules.util.numpy_support", reason="the .vtp is written with vtk")
    from vtkmodules.vtkCommonCore import vtkPoints
    from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
    from vtkmodules.vtkIOXML import vtkXMLPolyDataWriter

    poly = vtkPolyData()
    vtk_points = vtkPoints()
    vtk_points.SetData(vtk_util.numpy_to_vtk(points, deep=True))
    poly.SetPoints(vtk_points)
    cells = vtkCellArray()
    for k in range(len(points)):
        cells.InsertNextCell(1)
        cells.InsertCellPoint(k)
    poly.SetVerts(cells)
    for name, array in arrays.items():
        vtk_array = vtk_util.numpy_to_vtk(array, deep=True)
        vtk_array.SetName(name)
        poly.GetPointData().AddArray(vtk_array)
    writer = vtkXMLPolyDataWriter()
    writer.SetFileName(str(path))
    writer.SetInputData(poly)
    assert writer.Write() == 1
    return path


@pytest.fixture(scope="module")
def vtp(tmp_path_factory) -> tuple[Path, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(35)
    points = rng.uniform(0, 1, (400, 3))  # float64, as ParaView writes them
    temperature = rng.uniform(-5, 5, 400)
    velocity = rng.normal(size=(400, 3))
    folder = tmp_path_factory.mktemp("vtp")
    source = _write_vtp(folder / "cloud.vtp", points, {"temperature": temperature, "velocity": velocity})
    return convert(source), points, temperature, velocity


def _reference(points: np.ndarray, radius: float, values: np.ndarray | None, lo: float, hi: float,
               colour=(0.8, 0.8, 0.8, 1.0)) -> np.ndarray:
    """The records as the renderer's look colours them (sphere_glyphs_shared.hpp's styled), drawn by the reference."""
    records = np.empty((len(points), 8), dtype=np.float32)
    records[:, :3] = points
    records[:, 3] = radius
    records[:, 4:8] = colour
    if values is not None:
        u = (values.astype(np.float32) - np.float32(lo)) / (np.float32(hi) - np.float32(lo))
        u = np.where(u >= 0, np.minimum(u, np.float32(1)), np.float32(0)).astype(np.float32)
        records[:, 4:7] = colour_table("viridis")[np.minimum(u * np.float32(256), np.float32(255)).astype(np.int32), :3]
    view = parse_camera(CAMERA, ((0, 0, 0), (1, 1, 1)))
    return render_particles(records, width=SIZE, height=SIZE, **view)


@pytest.mark.parametrize("colour_by", [None, "temperature", "velocity:1", "velocity:magnitude"])
def test_a_vtp_of_float64_points_draws_what_the_reference_draws_of_its_records(vtp, colour_by):
    path, points, temperature, velocity = vtp
    fields = {f.name: (f.dtype, f.components) for f in headrace.open(path).fields}
    assert fields["position"] == ("float64", 3)
    image, stats = render_streamed(path, 0, device="cpu", camera=CAMERA, width=SIZE, height=SIZE, radius=0.03,
                                          colour_by=colour_by)
    assert stats["points"] == 400
    values = {None: None, "temperature": temperature, "velocity:1": velocity[:, 1],
              "velocity:magnitude": np.linalg.norm(velocity, axis=1)}[colour_by]
    lo = hi = 0.0
    if values is not None:
        lo, hi = PointSet(headrace.open(path), colour_by=colour_by).colour_range
        assert lo <= values.min() and values.max() <= hi  # the index's range holds every value
        if colour_by != "velocity:magnitude":
            assert (lo, hi) == (pytest.approx(values.min()), pytest.approx(values.max()))
    np.testing.assert_array_equal(image, _reference(points, 0.03, values, lo, hi))
    assert len(_lit(image)) > 1000
    if values is not None:
        assert len({tuple(p) for p in image.reshape(-1, 4)[:, :3].tolist()}) > 200  # coloured, not flat


def test_a_constant_colour_and_a_colour_range_given(vtp):
    path, points, temperature, _ = vtp
    image = render_frame(path, 0, device="cpu", camera=CAMERA, width=SIZE, height=SIZE, radius=0.03,
                                colour=(1.0, 0.5, 0.0))
    np.testing.assert_array_equal(image, _reference(points, 0.03, None, 0, 1, colour=(1.0, 0.5, 0.0, 1.0)))
    image = render_frame(path, 0, device="cpu", camera=CAMERA, width=SIZE, height=SIZE, radius=0.03,
                                colour_by="temperature", colour_range=(0.0, 1.0))
    np.testing.assert_array_equal(image, _reference(points, 0.03, temperature, 0.0, 1.0))


# ---- .npy and HDF5 point clouds ----

def test_an_npy_point_cloud_named_points_is_found_and_another_name_is_asked_for(tmp_path, capsys):
    cloud = np.random.default_rng(1).uniform(0, 1, (300, 3))
    np.save(tmp_path / "points.npy", cloud)
    path = convert(tmp_path / "points.npy")
    image = render_frame(path, 0, device="cpu", width=SIZE, height=SIZE)
    assert len(_lit(image)) > 300
    np.save(tmp_path / "cloud.npy", cloud.astype(np.float32))
    other = convert(tmp_path / "cloud.npy")
    capsys.readouterr()
    assert main(["render", str(other), "--frame", "0", "--out", str(tmp_path / "c.png"), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no positions (a field of 3 components named position, positions, points, xyz or coordinates" in err
    assert err.endswith("fields of 3 components: cloud (--positions NAME picks one)") and "\n" not in err
    assert not (tmp_path / "c.png").exists()
    assert main(["render", str(other), "--frame", "0", "--out", str(tmp_path / "c.png"), "--device", "cpu",
                 "--positions", "cloud", "--width", "64", "--height", "48"]) == 0
    with Image.open(tmp_path / "c.png") as picture:
        assert picture.size == (64, 48) and len(_lit(np.asarray(picture))) > 100


def test_an_hdf5_point_cloud_with_a_colour_field_is_drawn_in_its_colours(tmp_path):
    points = np.array([[0.3, 0.3, 0.5], [0.7, 0.7, 0.5]])
    with h5py.File(tmp_path / "cloud.h5", "w") as file:
        file["xyz"] = points
        file["rgb"] = np.array([[255, 0, 0], [0, 0, 255]], dtype=np.uint8)
    path = convert(tmp_path / "cloud.h5", "--dataset", "xyz", "--dataset", "rgb")
    image = render_frame(path, 0, device="cpu", camera=CAMERA, width=SIZE, height=SIZE, radius=0.08)
    for (x, y, _), channel in zip(points, (0, 2)):  # uint8 colours span 0..255: red, then blue
        column, row = _pixel(x, y)
        pixel = image[int(row), int(column), :3]
        assert pixel[channel] > 200 and all(pixel[c] < pixel[channel] for c in range(3) if c != channel), pixel


# ---- refusals: missing and ambiguous fields ----

def test_missing_and_wrong_fields_are_refused_naming_the_choices(vtp, tmp_path, capsys):
    path = vtp[0]
    ds = headrace.open(path)
    with pytest.raises(errors.UnknownNameError, match=r"cannot colour by 'pressure' \(choices: position:0, position:1, "
                                                      r"position:2, position:magnitude, temperature, velocity:0"):
        PointSet(ds, colour_by="pressure")
    with pytest.raises(errors.UsageError, match="field 'velocity' has 3 components: colour by velocity:0 to velocity:2 "
                                                "or velocity:magnitude"):
        PointSet(ds, colour_by="velocity")
    with pytest.raises(errors.UsageError, match="'velocity:3': field 'velocity' has components 0 to 2"):
        PointSet(ds, colour_by="velocity:3")
    with pytest.raises(errors.UnknownNameError, match="no field 'size' for the radius .*: temperature"):
        PointSet(ds, radius="size")
    with pytest.raises(errors.UsageError, match="field 'velocity' is float64 x3; a radius field holds one number"):
        PointSet(ds, radius="velocity")
    with pytest.raises(errors.UsageError, match="field 'temperature' is float64 x1; positions are a field of 3 numbers"):
        PointSet(ds, positions="temperature")
    with pytest.raises(errors.UsageError, match="field 'temperature' is float64 x1; a colour field holds RGB or RGBA"):
        PointSet(ds, colour="temperature")
    with pytest.raises(errors.UsageError, match="method, batch: options of the streamed particles record"):
        render_frame(path, 0, method="pread", batch=10)
    for words, said in ((["--colour-by", "pressure"], "cannot colour by 'pressure' (choices: position:0"),
                        (["--colour-by", "velocity"], "field 'velocity' has 3 components"),
                        (["--radius", "size"], "no field 'size' for the radius"),
                        (["--tf", "magma"], "--tf: volume options; " + str(path) + " holds particles (points take "
                                            "--colour-map and --colour-range with --colour-by)"),
                        (["--method", "pread"], "--method: options of a streamed particles record"),
                        (["--colour-by", "temperature", "--colour-map", "rainbowish"], "colour map 'rainbowish'")):
        assert main(["render", str(path), "--frame", "0", "--out", str(tmp_path / "x.png"), "--device", "cpu", *words]) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and "\n" not in err and "Traceback" not in err, err
    assert not (tmp_path / "x.png").exists()


def test_ambiguous_positions_name_the_candidates(tmp_path, capsys):
    points = np.random.default_rng(2).uniform(0, 1, (30, 3))
    step = {"x": points[:, 0], "y": points[:, 1], "z": points[:, 2], "points": points}
    path = convert(write_h5part(tmp_path / "both.h5part", [step]))  # x, y, z become 'position'; 'points' too
    with pytest.raises(errors.UsageError, match=r"the positions could be 'position' or 'points': name one "
                                                r"\(--positions NAME\)"):
        PointSet(headrace.open(path))
    capsys.readouterr()
    assert main(["render", str(path), "--frame", "0", "--out", str(tmp_path / "x.png"), "--device", "cpu"]) == 2
    assert "the positions could be 'position' or 'points'" in capsys.readouterr().err
    image = render_frame(path, 0, device="cpu", positions="points", width=16, height=16)
    assert len(_lit(image)) > 0


# ---- output folders ----

def test_a_missing_folder_is_made_for_frame_frames_and_video_and_a_file_in_the_way_is_refused(corner, tmp_path, capsys):
    single = tmp_path / "new" / "deeper" / "x.png"
    assert _render_cli(corner, single, "--frame", "0") == 0 and single.is_file()
    series, video = tmp_path / "series" / "frames", tmp_path / "clips" / "c.gif"
    assert _render_cli(corner, series, "--frames", "0:2", "--video", str(video)) == 0
    assert sorted(p.name for p in series.iterdir()) == ["frame_00000.png", "frame_00001.png"] and video.is_file()
    (tmp_path / "plain").write_text("a file")
    capsys.readouterr()
    for words in (["--frame", "0", "--out", str(tmp_path / "plain" / "x.png")],
                  ["--frames", "0:2", "--out", str(tmp_path / "plain" / "frames")]):
        assert main(["render", str(corner), "--device", "cpu", *words]) == 2
        err = capsys.readouterr().err.strip()
        assert f"{tmp_path / 'plain'} is a file, not a folder" in err and "\n" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clips", "corner.h5part", "corner.hrc", "new", "plain", "series"]


# ---- the viewer's scene ----

def test_the_viewer_draws_a_point_set_and_colours_it_by_any_field(vtp):
    path, points, _, velocity = vtp
    ds = headrace.open(path)
    described = describe_file(ds)
    assert described["kind"] == "particles" and described["fields"] == ["position"]
    assert described["colour_by"][:2] == ["stored", "position:0"] and "velocity:magnitude" in described["colour_by"]
    scene = make_scene(ds, None, SIZE, SIZE)
    assert isinstance(scene, PointSetScene) and scene.host_frames
    camera = scene.home.orbited(20, 10)
    radius = scene.points.radius_value
    expected_box = ds.frames[0].bbox
    assert radius == pytest.approx(default_radius(expected_box, 400))

    def draw() -> tuple[np.ndarray, np.ndarray]:
        with ds.stream(fields=scene.fields, device="cpu") as stream:
            frame = next(stream)
            scene.prepare(frame, 0)
            frame.release()  # the scene keeps its own copies
            return scene.render(None, camera, 0), scene.render(None, camera.zoomed(0.5), 0)

    def reference(values, lo, hi, look_camera):
        records = np.empty((400, 8), dtype=np.float32)
        records[:, :3], records[:, 3], records[:, 4:8] = points, radius * 1.5, (0.8, 0.8, 0.8, 1.0)
        if values is not None:
            u = np.clip((values.astype(np.float32) - np.float32(lo)) / (np.float32(hi) - np.float32(lo)), 0, 1)
            records[:, 4:7] = colour_table("magma")[np.minimum(u * np.float32(256), 255).astype(np.int32), :3]
        return render_particles(records, width=SIZE, height=SIZE, target=look_camera.target,
                                       orbit=(look_camera.distance, look_camera.azimuth, look_camera.elevation))

    assert scene.set_style({"radius_scale": 1.5, "colour_map": "magma"}, 0) is False
    plain, near = draw()
    np.testing.assert_array_equal(plain, reference(None, 0, 1, camera))
    np.testing.assert_array_equal(near, reference(None, 0, 1, camera.zoomed(0.5)))
    assert scene.set_style({"colour_by": "velocity:magnitude"}, 0) is True  # a field to stream
    assert scene.fields == ["position", "velocity"]
    coloured, _ = draw()
    lo, hi = PointSet(ds, colour_by="velocity:magnitude").colour_range
    np.testing.assert_array_equal(coloured, reference(np.linalg.norm(velocity, axis=1), lo, hi, camera))
    assert scene.set_style({"colour_by": "velocity:2"}, 0) is False  # the same field: the frame on screen repainted
    lo, hi = PointSet(ds, colour_by="velocity:2").colour_range
    np.testing.assert_array_equal(scene.render(None, camera, 0), reference(velocity[:, 2], lo, hi, camera))
    with pytest.raises(errors.UsageError, match=r"cannot colour by 'speed' \(choices: stored, position:0"):
        scene.set_style({"colour_by": "speed"}, 0)


def test_the_viewer_serves_a_point_set_file(vtp):
    pytest.importorskip("aiohttp", reason="the viewer's server needs aiohttp (scripts/setup.sh installs it)")
    from headrace.viewer import ViewerServer
    from headrace.viewer.session import Session, SessionSettings

    served = ViewerServer([str(vtp[0])], device="cpu", disk_rate=1e9).files[0]
    assert (served["kind"], served["fields"], served["frames"]) == ("particles", ["position"], 1)

    events: list[tuple[str, dict]] = []
    session = Session(0, [headrace.open(vtp[0])], SessionSettings(device=None, width=48, height=32),
                      lambda kind, message: events.append((kind, message)))
    try:
        deadline = time.monotonic() + 20
        while session.take_image() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [e for e in events if e[0] == "error"], events
        assert session.records and session.records[-1].frame == 0, events  # frame 0 drawn and encoded
    finally:
        session.close()


# ---- moving host bytes into the engine's memory ----

def test_upload_places_each_array_at_its_aligned_address():
    records = np.arange(40, dtype=np.float32).reshape(5, 8)
    scalars = np.arange(5, dtype=np.float32) + 0.5
    buffer, addresses = upload([records, scalars], None)  # a host engine: the same queue path as a GPU's
    base = buffer.ctypes.data
    assert [a - base for a in addresses] == [0, 256]
    np.testing.assert_array_equal(buffer[:160].view(np.float32).reshape(5, 8), records)
    np.testing.assert_array_equal(buffer[256:276].view(np.float32), scalars)


@pytest.mark.gpu
@pytest.mark.parametrize("colour_by", [None, "velocity:magnitude"])
def test_the_gpu_draws_the_cpus_image_of_a_point_set(vtp, colour_by):
    from headrace import _ext

    path = vtp[0]
    images = [render_frame(path, 0, device=device, camera=CAMERA, width=SIZE, height=SIZE, colour_by=colour_by)
              for device in ("cpu", 0)]
    np.testing.assert_array_equal(images[1], images[0])
    ds = headrace.open(path)
    drawn = []
    for device in (None, 0):
        scene = make_scene(ds, device, SIZE, SIZE)
        scene.set_style({"colour_by": colour_by or "stored"}, 0)
        cuda_stream = _ext.CudaStream(0) if device is not None else None
        handle = cuda_stream.handle if cuda_stream else 0
        with ds.stream(fields=scene.fields, device="cpu") as stream:
            frame = next(stream)
            scene.prepare(frame, handle)
            drawn.append(scene.render(frame, scene.home, handle))
    np.testing.assert_array_equal(drawn[1], drawn[0])


# ---- empty frames, the particles record coloured by a field, a .vtp through the command line ----

def test_an_empty_frame_of_a_point_set_is_the_background(tmp_path):
    steps = _corner_steps()
    with h5py.File(tmp_path / "gap.h5part", "w") as file:
        for number, step in enumerate([steps[0], None, steps[1]]):
            group = file.create_group(f"Step#{number}")
            for name, array in (step or {}).items():
                group[name] = array
    path = convert(tmp_path / "gap.h5part")
    assert headrace.open(path).element_count(1, "position") == 0
    renderer = PointSetRenderer(path, camera=CAMERA, width=SIZE, height=SIZE, colour_by="temperature", radius=0.08)
    assert renderer.render(1)["points"] == 0 and not len(_lit(renderer.image()))
    assert renderer.render(2)["points"] == 1
    _assert_only_near(renderer.image(), 0.1, 0.15, 0.08)


def test_the_particles_record_coloured_by_a_field_of_the_file(tmp_path, capsys):
    records = np.zeros((2, 8), dtype=np.float32)
    records[:, :3] = [[0.2, 0.5, 0.5], [0.8, 0.5, 0.5]]
    records[:, 3], records[:, 4:8] = 0.1, 1.0
    path = tmp_path / "p.hrc"
    with headrace.Writer(path, [headrace.FieldSpec("particles", "float32", 8),
                                headrace.FieldSpec("intensity", "float32", 1)]) as writer:
        frame = writer.add_frame(time=0.0, bbox=((0, 0, 0), (1, 1, 1)))
        writer.write(frame, "particles", records)
        writer.write(frame, "intensity", np.array([[10.0], [20.0]], dtype=np.float32))
    assert _render_cli(path, tmp_path / "i.png", "--frame", "0", "--colour-by", "intensity") == 0
    assert "positions particles (float32); radius the record's; colour by intensity over 10 to 20" in capsys.readouterr().out
    with Image.open(tmp_path / "i.png") as picture:
        np.testing.assert_array_equal(np.asarray(picture), _reference(records[:, :3], 0.1, np.array([10.0, 20.0]), 10, 20))
    assert _render_cli(path, tmp_path / "s.png", "--frame", "0") == 0  # no point option: the streamed record
    with Image.open(tmp_path / "s.png") as picture:
        np.testing.assert_array_equal(np.asarray(picture), render_particles(
            records, width=SIZE, height=SIZE, **parse_camera(CAMERA, ((0, 0, 0), (1, 1, 1)))))


def test_a_vtp_through_the_command_line_coloured_by_a_vectors_length(vtp, tmp_path, capsys):
    path, points, _, velocity = vtp
    out = tmp_path / "v" / "frames"
    assert _render_cli(path, out, "--frames", "0:", "--radius", "0.03", "--colour-by", "velocity:magnitude",
                       "--colour-range", "0:3", "--stats") == 0
    said = capsys.readouterr().out
    assert "colour by velocity:magnitude over 0 to 3 (viridis)" in said and "400 points" in said
    with Image.open(out / "frame_00000.png") as picture:
        np.testing.assert_array_equal(np.asarray(picture), _reference(points, 0.03, np.linalg.norm(velocity, axis=1), 0, 3))


def test_separate_x_y_z_fields_of_npz_archives_are_positions_and_one_of_them_a_colour(tmp_path):
    folder = tmp_path / "steps"
    folder.mkdir()
    rng = np.random.default_rng(8)
    clouds = [rng.uniform(0, 1, (200, 3)).astype(np.float32) for _ in range(2)]
    for number, cloud in enumerate(clouds):  # an archive a step, a member a field
        np.savez(folder / f"step{number}.npz", x=cloud[:, 0], y=cloud[:, 1], z=cloud[:, 2])
    out = tmp_path / "steps.hrc"
    assert main(["convert", str(folder), str(out)]) == 0
    assert [f.name for f in headrace.open(out).fields] == ["x", "y", "z"]
    points = PointSet(headrace.open(out), colour_by="x")
    assert points.positions == ["x", "y", "z"] and points.fields == ["x", "y", "z"]
    image = render_frame(out, -1, device="cpu", camera=CAMERA, width=SIZE, height=SIZE, radius=0.03, colour_by="x")
    np.testing.assert_array_equal(image, _reference(clouds[1], 0.03, clouds[1][:, 0], *points.colour_range))
