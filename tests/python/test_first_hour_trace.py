"""Issue 35, streamlines: `trace` takes the user's data. A file holding a scalar and a velocity (a .vti,
zarr or HDF5 file, the usual CFD output) traces its velocity (``--field``, or the one that looks like
one); float64 velocities are traced in float32, said once; three scalar fields make a velocity
(``--field u,v,w``); blocks made on the fly fit a small ``--cache-bytes``; a small grid's Hilbert
partitions are fitted (or ``--hilbert-bits`` is named); a seed lattice's count is said. Files are
written by vtk, zarr, h5py and numpy, converted with ``headrace convert``, and traced on the CPU through
the command line and the API; the lines are compared with those of the same field stored float32 by
hand (``numpy.array_equal``) and with lines known in closed form."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace import errors
from headrace.workloads import streamlines
from headrace.cli.main import main

DIMS = (24, 20, 16)  # x, y, z: points of the grid, spacing 1 (as an .npy, a zarr or HDF5 array converts)
SPACING = 1.0
AXIS = (11.5, 9.5)  # the rotation's axis (x, y)
TRACE = ["--steps", "60", "--step-size", "0.05"]
SEEDS = streamlines.rake_seeds((7.0, 6.0, 2.0), (15.0, 13.0, 10.0), 7)


def rotation() -> np.ndarray:
    """Rigid rotation about the axis x, y = AXIS with a drift along z, (Z, Y, X, 3) float64: linear, so
    trilinear interpolation is exact."""
    nx, ny, nz = DIMS
    z, y, x = np.meshgrid(*(np.arange(n) * SPACING for n in (nz, ny, nx)), indexing="ij")
    return np.stack([-(y - AXIS[1]), x - AXIS[0], 0.5 + 0.0 * x], axis=-1)


def density() -> np.ndarray:
    nx, ny, nz = DIMS
    return np.arange(nx * ny * nz, dtype=np.float64).reshape(nz, ny, nx)


def write_vti(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    vtk = pytest.importorskip("vtk")
    from vtk.util import numpy_support

    image = vtk.vtkImageData()
    image.SetDimensions(*DIMS)
    image.SetSpacing(SPACING, SPACING, SPACING)
    for name, array in arrays.items():
        components = array.shape[3] if array.ndim == 4 else 1
        data = numpy_support.numpy_to_vtk(np.ascontiguousarray(array).reshape(-1, components), deep=True)
        data.SetName(name)
        image.GetPointData().AddArray(data)
    writer = vtk.vtkXMLImageDataWriter()
    writer.SetFileName(str(path))
    writer.SetInputData(image)
    assert writer.Write() == 1
    return path


def write_zarr(path: Path) -> Path:
    zarr = pytest.importorskip("zarr")
    group = zarr.open_group(str(path), mode="w")
    group.create_array("density", data=density(), dimension_names=("z", "y", "x"))
    group.create_array("velocity", data=rotation(), dimension_names=("z", "y", "x", "c"))
    return path


def write_hdf5(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    h5py = pytest.importorskip("h5py")
    with h5py.File(path, "w") as f:
        for name, array in arrays.items():
            f[name] = array
    return path


def traced(capsys, path: Path, out: Path, *options: str) -> tuple[dict[str, np.ndarray], str]:
    """The lines `headrace trace` wrote and what it said on stderr."""
    capsys.readouterr()
    assert main(["trace", str(path), "--seeds", str(out.with_suffix(".seeds.npy")), *TRACE, *options, "--out", str(out)]) == 0
    said = capsys.readouterr().err
    with np.load(out) as lines:
        return {key: lines[key] for key in ("points", "offsets", "ends")}, said


def refused(capsys, *command: str) -> str:
    """The one line a refused `headrace trace` prints (exit status 2, no traceback)."""
    capsys.readouterr()
    assert main(["trace", *command]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("headrace trace: ") and "Traceback" not in err, err
    return err


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The rotation stored float32 by hand (an .npy converted as a grid of 3 components) and its lines."""
    folder = tmp_path_factory.mktemp("reference")
    np.save(folder / "velocity.npy", rotation().astype(np.float32))
    assert main(["convert", str(folder / "velocity.npy"), str(folder / "grid.hrc"), "--components", "3", "--json"]) == 0
    grid = headrace.open(folder / "grid.hrc")
    assert grid.fields[0].dtype == "float32" and grid.attributes["grid_dims"] == list(DIMS)
    with pytest.warns(streamlines.TraceNote):
        result = streamlines.trace_run(folder / "grid.hrc", SEEDS, steps=60, step_size=0.05)
    return result


def float64_files(folder: Path) -> dict[str, tuple[Path, list[str]]]:
    """Each format's file holding density and a float64 velocity, and how `headrace convert` takes it."""
    np.save(folder / "velocity.npy", rotation())
    return {"vti": (write_vti(folder / "flow.vti", {"density": density(), "velocity": rotation()}), []),
            "zarr": (write_zarr(folder / "flow.zarr"), []),
            "hdf5": (write_hdf5(folder / "flow.h5", {"density": density(), "velocity": rotation()}),
                     ["--dataset", "density", "--dataset", "velocity"]),
            "npy": (folder / "velocity.npy", ["--components", "3"])}


@pytest.mark.parametrize("kind", ["vti", "zarr", "hdf5", "npy"])
def test_a_float64_velocity_beside_a_scalar_traces_as_the_same_field_stored_float32(tmp_path, capsys, reference, kind):
    """Converted with `headrace convert`, traced by the command (the velocity found, its cast said once on
    stderr) and by the API: the lines of the float32 field stored by hand, bit for bit."""
    source, options = float64_files(tmp_path)[kind]
    converted = tmp_path / f"{kind}.hrc"
    assert main(["convert", str(source), str(converted), *options, "--json"]) == 0
    assert headrace.open(converted).field("velocity").dtype == "float64"
    np.save(tmp_path / "lines.seeds.npy", SEEDS)
    lines, said = traced(capsys, converted, tmp_path / "lines.npz")
    np.testing.assert_array_equal(lines["points"], reference.points)
    np.testing.assert_array_equal(lines["offsets"], reference.offsets)
    assert said.count("velocity is float64: traced in float32") == 1, said
    assert f"headrace trace: {converted}: velocity is float64: traced in float32" in said
    assert "from its field velocity" in said

    for source_of_api in (converted, source):  # the container, and the user's file converted on the fly
        with pytest.warns(streamlines.TraceNote) as notes:
            result = streamlines.trace_run(source_of_api, SEEDS, field="velocity" if kind != "npy" else None,
                                           steps=60, step_size=0.05)
        said = [str(note.message) for note in notes]
        assert said[0] == f"{source_of_api}: velocity is float64: traced in float32" and len(said) == 2, said
        assert said[1].startswith(f"{source_of_api}: a flow field in grid order, traced through native blocks")
        np.testing.assert_array_equal(result.points, reference.points)
        assert result.stats["file"] == str(source_of_api) and result.ends == reference.ends
        np.testing.assert_array_equal(result.velocities(), reference.velocities())  # sampled before the blocks went


def test_the_users_file_traces_in_one_command_with_field(tmp_path, capsys, reference):
    """A .vti, zarr store or HDF5 file traced directly (converted on the fly): the same lines."""
    files = float64_files(tmp_path)
    np.save(tmp_path / "lines.seeds.npy", SEEDS)
    for kind, field in (("vti", []), ("zarr", ["--field", "velocity"]), ("hdf5", ["--field", "velocity"]), ("npy", [])):
        lines, said = traced(capsys, files[kind][0], tmp_path / "lines.npz", *field)
        np.testing.assert_array_equal(lines["points"], reference.points, err_msg=kind)
        assert said.count("traced in float32") == 1 and "headrace-trace-" not in said, said
        assert f"`headrace convert {files[kind][0]} GRID.hrc`" in said  # how to make the blocks once
    # HDF5 with two datasets and no --field: the fix named is trace's own
    err = refused(capsys, str(files["hdf5"][0]), "--seeds", "uniform:8", "--out", str(tmp_path / "x.npz"))
    assert "--field NAME (or U,V,W) names the velocity's datasets" in err and "/density, /velocity" in err


def test_uniform_flow_ends_where_it_must(tmp_path, capsys):
    """A uniform float64 flow in an .npy: every line is straight, its end the seed plus steps x step x v."""
    nx, ny, nz = DIMS
    velocity = np.broadcast_to(np.array([1.0, 0.5, 0.25]), (nz, ny, nx, 3))
    np.save(tmp_path / "uniform.npy", velocity)
    seeds = np.array([[0.5, 0.5, 0.5], [10.0, 2.0, 1.0], [2.0, 1.0, 9.25]], np.float32)
    np.save(tmp_path / "lines.seeds.npy", seeds)
    lines, _ = traced(capsys, tmp_path / "uniform.npy", tmp_path / "lines.npz", "--steps", "40", "--step-size", "0.1")
    ends = lines["points"][lines["offsets"][1:] - 1]
    np.testing.assert_allclose(ends, seeds + 40 * 0.1 * np.array([1.0, 0.5, 0.25]), atol=2e-5)
    assert list(lines["ends"]) == ["max_steps/max_steps"] * 3  # (backward/forward)


def test_rigid_rotation_turns_each_seed_about_the_axis(reference):
    """The rotation's lines keep their radius and turn by the time traced (RK4, 60 steps of 0.05)."""
    for line in range(len(SEEDS)):
        points = reference.points[reference.offsets[line]:reference.offsets[line + 1]]
        if reference.ends[line] != "max_steps/max_steps":
            continue
        start, end = points[0].astype(np.float64), points[-1].astype(np.float64)
        angle = 60 * 0.05
        dx, dy = start[0] - AXIS[0], start[1] - AXIS[1]
        want = (AXIS[0] + dx * np.cos(angle) - dy * np.sin(angle), AXIS[1] + dx * np.sin(angle) + dy * np.cos(angle),
                start[2] + 0.5 * angle)
        np.testing.assert_allclose(end, want, atol=1e-4)
    assert reference.ends.count("max_steps/max_steps") >= 3


def test_three_scalar_fields_make_a_velocity(tmp_path, capsys, reference):
    """u, v, w (HDF5 datasets, .vti arrays, float64): `--field u,v,w`, or found by their names."""
    velocity = rotation()
    scalars = {name: velocity[..., axis] for axis, name in enumerate("uvw")}
    np.save(tmp_path / "lines.seeds.npy", SEEDS)
    h5 = write_hdf5(tmp_path / "uvw.h5", {"density": density(), **scalars})
    lines, said = traced(capsys, h5, tmp_path / "lines.npz", "--field", "u,v,w")
    np.testing.assert_array_equal(lines["points"], reference.points)
    assert "from its fields u,v,w" in said
    vti = write_vti(tmp_path / "uvw.vti", {"density": density(), **scalars})
    lines, said = traced(capsys, vti, tmp_path / "lines.npz")  # found by their names
    np.testing.assert_array_equal(lines["points"], reference.points)
    assert "from its fields u,v,w" in said
    with pytest.warns(streamlines.TraceNote):
        result = streamlines.trace_run(vti, SEEDS, field=("u", "v", "w"), steps=60, step_size=0.05)
    np.testing.assert_array_equal(result.points, reference.points)


def test_a_missing_or_ambiguous_velocity_names_the_candidates(tmp_path, capsys):
    nx, ny, nz = DIMS
    both = write_vti(tmp_path / "two.vti", {"density": density(), "a": rotation(), "b": rotation() * 2})
    converted = tmp_path / "two.hrc"
    assert main(["convert", str(both), str(converted), "--json"]) == 0
    out = str(tmp_path / "x.npz")
    fields = "fields: density (float64 x 1), a (float64 x 3), b (float64 x 3)"
    assert refused(capsys, str(converted), "--seeds", "uniform:8", "--out", out) == (
        f"headrace trace: {converted}: which field is the velocity? several could be ({fields}): --field NAME for one "
        "of its fields of 3 components (a, b)")
    assert refused(capsys, str(converted), "--field", "nope", "--seeds", "uniform:8", "--out", out) == (
        f"headrace trace: {converted}: no field 'nope' ({fields})")
    assert refused(capsys, str(converted), "--field", "density", "--seeds", "uniform:8", "--out", out) == (
        f"headrace trace: {converted}: field 'density' is float64 x 1; a velocity has 3 components: --field NAME for "
        "one of its fields of 3 components (a, b)")
    assert refused(capsys, str(both), "--field", "a,b", "--seeds", "uniform:8", "--out", out).endswith(
        "'a,b': a velocity is one field of 3 components (NAME) or three scalar fields (U,V,W)")
    with pytest.raises(errors.UnknownNameError, match=r"no field 'nope' \(fields: density") as caught:
        streamlines.trace_run(both, SEEDS, field="nope")
    assert isinstance(caught.value, KeyError) and str(both) in str(caught.value)
    with pytest.raises(errors.UsageError, match="which field is the velocity"):
        streamlines.trace_run(converted, SEEDS)
    assert streamlines.velocity_of(converted, "b") == ("b",)
    scalar = write_vti(tmp_path / "scalar.vti", {"density": density()})
    assert refused(capsys, str(scalar), "--seeds", "uniform:8", "--out", out) == (
        f"headrace trace: {scalar}: which field is the velocity? none is of 3 components (fields: density (float64 x 1)): "
        "--field U,V,W for three of its scalar fields")
    assert not list(tmp_path.glob("x.npz*"))


def test_errors_name_the_users_file_never_a_temporary_one(tmp_path, capsys):
    np.save(tmp_path / "velocity.npy", rotation())
    capsys.readouterr()
    assert main(["trace", str(tmp_path / "velocity.npy"), "--frame", "3", "--seeds", "uniform:8",
                 "--out", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err  # what was made said, then the error, naming the user's file
    assert err.strip().splitlines()[-1] == f"headrace trace: {tmp_path / 'velocity.npy'}: no frame 3 (1 frames)", err
    assert "headrace-trace-" not in err and "blocks.hrc" not in err and "Traceback" not in err, err
    np.save(tmp_path / "ints.npy", rotation().astype(np.int32))
    err = refused(capsys, str(tmp_path / "ints.npy"), "--seeds", "uniform:8", "--out", str(tmp_path / "x.npz"))
    assert err == (f"headrace trace: {tmp_path / 'ints.npy'}: field 'ints' is int32; a velocity is floating point "
                   "(float16, float32 or float64)")


@pytest.mark.parametrize("manager", ["user", "resident"])
def test_a_cache_smaller_than_one_block_makes_smaller_blocks(tmp_path, capsys, manager):
    """The issue's case: a 40^3 .npy traced with --cache-bytes 368640 (less than one 32^3 block): blocks
    small enough for the cache, said once, and the lines of a big cache; 4 KiB works too; a cache too
    small for even 2x2x2 blocks is refused naming the --cache-bytes that works."""
    n = 40
    z, y, x = np.meshgrid(*(np.arange(n) * 0.1,) * 3, indexing="ij")
    np.save(tmp_path / "flow.npy", np.stack([-(y - 2), x - 2, 0.1 + 0 * x], axis=-1).astype(np.float32))
    seeds = streamlines.rake_seeds((1.0, 1.2, 0.5), (3.0, 2.5, 3.0), 9)
    np.save(tmp_path / "lines.seeds.npy", seeds)
    common = ["--manager", manager, "--steps", "200", "--step-size", "0.02"]
    big, said = traced(capsys, tmp_path / "flow.npy", tmp_path / "lines.npz", *common)
    assert "native blocks of 32x32x32 points" in said and "--cache-bytes" not in said
    for cache, block, fit in (("368640", "8x8x4", 120), ("4096", "2x2x2", 42)):
        lines, said = traced(capsys, tmp_path / "flow.npy", tmp_path / "lines.npz", *common, "--cache-bytes", cache)
        np.testing.assert_array_equal(lines["points"], big["points"])
        np.testing.assert_array_equal(lines["offsets"], big["offsets"])
        assert said.count("--cache-bytes") == 1 and f"blocks of {block} ({fit} of them fit)" in said, said
    err = refused(capsys, str(tmp_path / "flow.npy"), "--seeds", "uniform:8", "--cache-bytes", "4096", "--banks", "64",
                  "--out", str(tmp_path / "x.npz"))
    assert err.endswith("holds 42 blocks of even 2x2x2 points (96 bytes); a trace needs 64 (one per bank: --banks 64): "
                        "--cache-bytes 6144 or more"), err
    result = streamlines.trace_run(tmp_path / "flow.npy", seeds, steps=200, step_size=0.02, manager=manager,
                                   cache_bytes=368640, say=lambda text: None)
    np.testing.assert_array_equal(result.points, big["points"])


def test_a_container_in_blocks_too_big_for_the_cache_names_the_cache_that_works(tmp_path, capsys):
    n = 40
    np.save(tmp_path / "flow.npy", np.ones((n, n, n, 3), np.float32))
    assert main(["convert", str(tmp_path / "flow.npy"), str(tmp_path / "grid.hrc"), "--components", "3", "--json"]) == 0
    assert main(["convert", str(tmp_path / "grid.hrc"), str(tmp_path / "b.hrc"), "--layout", "blocks", "--json"]) == 0
    blocks, out = str(tmp_path / "b.hrc"), str(tmp_path / "x.npz")
    assert refused(capsys, blocks, "--seeds", "uniform:8", "--cache-bytes", "368640", "--manager", "resident",
                   "--out", out) == (
        f"headrace trace: {blocks}: --cache-bytes 368,640 holds 0 blocks of 32x32x32 points (393,216 bytes); the "
        "resident cache needs 8, the corners of a cell: --cache-bytes 3145728 or more, or smaller blocks (headrace "
        "convert --block)")
    assert main(["trace", blocks, "--seeds", "uniform:8", "--steps", "5", "--cache-bytes", "3145728", "--manager",
                 "resident", "--out", out]) == 0


def test_a_small_grid_gets_hilbert_partitions_that_fit(tmp_path, capsys, reference):
    np.save(tmp_path / "velocity.npy", rotation().astype(np.float32))
    grid = tmp_path / "grid.hrc"
    assert main(["convert", str(tmp_path / "velocity.npy"), str(grid), "--components", "3", "--json"]) == 0
    capsys.readouterr()
    assert main(["convert", str(grid), str(tmp_path / "h.hrc"), "--layout", "hilbert", "--chunk-pages", "3"]) == 0
    assert capsys.readouterr().err == (f"headrace convert: {grid}: Hilbert partitions of 16 points a side "
                                       "(--hilbert-bits 4), the largest that fit its 24x20x16 grid (the default is 64)\n")
    assert headrace.open(tmp_path / "h.hrc").attributes["hilbert_bits"] == [4]
    result = streamlines.trace_run(tmp_path / "h.hrc", SEEDS, steps=60, step_size=0.05, unit_pages=3)
    np.testing.assert_array_equal(result.points, reference.points)
    assert main(["convert", str(grid), str(tmp_path / "h5.hrc"), "--layout", "hilbert", "--hilbert-bits", "5"]) == 2
    assert capsys.readouterr().err == (f"headrace convert: {grid}: Hilbert partitions of 32 points a side do not fit "
                                       "its 24x20x16 grid (no larger than its largest side, 24): --hilbert-bits 4 or less\n")
    assert not (tmp_path / "h5.hrc").exists()


def test_a_seed_lattice_says_the_count_it_placed(tmp_path, capsys):
    nx = ny = nz = 17
    np.save(tmp_path / "cube.npy", np.ones((nz, ny, nx, 3), np.float32))
    capsys.readouterr()
    assert main(["trace", str(tmp_path / "cube.npy"), "--seeds", "uniform:8192", "--steps", "2",
                 "--out", str(tmp_path / "l.npz")]) == 0
    said = capsys.readouterr().err
    assert said.count("placed") == 1 and ("--seeds uniform:8192: placed 8,000 seeds, a 20 x 20 x 20 lattice of one "
                                          "spacing along every axis (the nearest such lattice to 8,192)") in said, said
    assert len(np.load(tmp_path / "l.npz")["offsets"]) == 8001
    assert main(["trace", str(tmp_path / "cube.npy"), "--seeds", "uniform:27", "--steps", "2",
                 "--out", str(tmp_path / "l.npz")]) == 0
    assert "placed" not in capsys.readouterr().err
    assert len(np.load(tmp_path / "l.npz")["offsets"]) == 28


def test_json_keeps_stdout_for_the_statistics(tmp_path, capsys):
    import json

    np.save(tmp_path / "velocity.npy", rotation())
    capsys.readouterr()
    assert main(["trace", str(tmp_path / "velocity.npy"), "--seeds", "uniform:8", "--steps", "5", "--json",
                 "--out", str(tmp_path / "l.npz")]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["file"] == str(tmp_path / "velocity.npy")
    assert "traced in float32" in captured.err


def test_converting_to_blocks_once_picks_and_casts_the_velocity_as_trace_does(tmp_path, capsys, reference):
    """`headrace convert GRID.hrc FLOW.hrc --layout blocks` on a converted .vti (density + float64 velocity):
    the velocity found, stored float32 (said), the same lines; a blocks container takes no other --field."""
    vti = write_vti(tmp_path / "flow.vti", {"density": density(), "velocity": rotation()})
    grid, blocks = tmp_path / "grid.hrc", tmp_path / "blocks.hrc"
    assert main(["convert", str(vti), str(grid), "--json"]) == 0
    capsys.readouterr()
    assert main(["convert", str(grid), str(blocks), "--layout", "blocks", "--block", "8", "8", "8"]) == 0
    assert capsys.readouterr().err == f"headrace convert: {grid}: velocity is float64: stored as float32\n"
    ds = headrace.open(blocks)
    assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("velocity", "float32", 3)]
    result = streamlines.trace_run(blocks, SEEDS, steps=60, step_size=0.05)
    np.testing.assert_array_equal(result.points, reference.points)
    assert refused(capsys, str(blocks), "--field", "u,v,w", "--seeds", "uniform:8", "--out", str(tmp_path / "x.npz")) == (
        f"headrace trace: {blocks}: a flow in the blocks layout is traced through its field 'velocity'; --field u,v,w "
        "needs the field in grid order (`headrace convert` the original file)")
    with streamlines.traceable(vti, field="velocity", say=lambda text: None) as flow:  # blocks kept for several runs
        assert "headrace-trace-" in flow
        again = streamlines.trace_run(flow, SEEDS, steps=60, step_size=0.05)
        assert len(streamlines.uniform_seeds(flow, 24)) == 24  # a 4 x 3 x 2 lattice on the 23 x 19 x 15 box
    np.testing.assert_array_equal(again.points, reference.points)
    assert not Path(flow).exists()
