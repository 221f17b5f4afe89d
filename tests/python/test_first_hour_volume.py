"""Issue 35: an iso value outside the data draws an empty image; the renderer says so (``IsoOutsideRangeWarning``
and ``iso_warning`` in Python, one line on stderr from ``headrace render`` and ``headrace play``) naming the value
and the field's range from the index, and ``--iso`` alone draws the iso-surface."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import headrace
from headrace.cli.main import main
from headrace.generate import generate_amr, generate_volume
from headrace.imaging import recorded_range
from headrace.workloads.volume import IsoOutsideRangeWarning, VolumeRenderer

SMALL = dict(width=16, height=12, device="cpu")


@pytest.fixture(scope="module")
def volume(tmp_path_factory):
    return generate_volume(tmp_path_factory.mktemp("volume") / "vol.hrc", dims=(12, 10, 8), frames=2)


def data_range(path, field: str = "scalar") -> tuple[float, float]:
    """The field's values over every frame, read: what the index's chunk ranges must say."""
    ds = headrace.open(path)
    values = np.concatenate([ds.read(frame, field).reshape(-1) for frame in range(len(ds.frames))])
    return float(values.min()), float(values.max())


def expected(path, iso: float, field: str = "scalar", frames: int = 2) -> str:
    lo, hi = data_range(path, field)
    return (f"{path}: iso value {iso:g} lies outside the values of field '{field}', {lo:g} to {hi:g} over its "
            f"{frames} frames (from the index's chunk ranges): the images show no surface; choose an iso value in "
            "that range")


@pytest.mark.parametrize("iso", [1e9, -1e9])
def test_an_iso_value_outside_the_data_warns_and_draws_only_the_background(volume, iso):
    with pytest.warns(IsoOutsideRangeWarning) as caught:
        renderer = VolumeRenderer(volume, mode="iso", iso=iso, background=(10, 20, 30), **SMALL)

    assert [str(w.message) for w in caught] == [expected(volume, iso)] and issubclass(IsoOutsideRangeWarning, UserWarning)
    assert renderer.iso_warning == expected(volume, iso)
    image = renderer.render(0)
    assert (image == np.array([10, 20, 30, 255], np.uint8)).all()  # what the warning says: no surface


def test_the_range_named_is_the_datas_from_the_index(volume):
    assert recorded_range(headrace.open(volume), "scalar") == data_range(volume)


@pytest.mark.parametrize("options", [dict(mode="iso", iso=None), dict(mode="iso", iso="inside"),
                                     dict(mode="dvr", iso=1e9)], ids=["mid-range", "inside", "dvr"])
def test_an_iso_value_in_the_data_or_unused_says_nothing(volume, options):
    lo, hi = data_range(volume)
    iso = (lo + 3 * hi) / 4 if options["iso"] == "inside" else options["iso"]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        renderer = VolumeRenderer(volume, mode=options["mode"], iso=iso, **SMALL)

    assert renderer.iso_warning is None


def test_amr_warns_the_same(tmp_path):
    source = generate_amr(tmp_path / "a.hrc", cells=3000, levels=2, frames=1, brick=4)

    with pytest.warns(IsoOutsideRangeWarning, match="iso value 5 lies outside"):
        renderer = VolumeRenderer(headrace.open(source), mode="iso", iso=5.0, **SMALL)

    assert renderer.iso_warning == expected(source, 5.0, frames=1).replace("1 frames", "1 frame")


@pytest.mark.parametrize("command", [["render", "--frame", "0", "--out", "{t}/iso.png"], ["play", "--render-only", "0"]])
def test_the_cli_says_it_in_one_line_and_still_draws(volume, tmp_path, capfd, command):
    argv = [command[0], str(volume), *(part.format(t=tmp_path) for part in command[1:]), "--mode", "iso", "--iso", "1e9",
            "--device", "cpu", "--width", "16", "--height", "12"]

    assert main(argv) == 0

    assert capfd.readouterr().err == f"headrace {command[0]}: {expected(volume, 1e9)}\n"
    assert command[0] != "render" or (tmp_path / "iso.png").is_file()


def test_iso_alone_draws_the_iso_surface_and_iso_with_dvr_is_refused(volume, tmp_path, capfd):
    lo, hi = data_range(volume)
    out = tmp_path / "iso.png"
    common = [str(volume), "--frame", "0", "--out", str(out), "--device", "cpu", "--width", "16", "--height", "12"]

    assert main(["render", *common, "--iso", f"{(lo + hi) / 2!r}"]) == 0
    assert "iso on the CPU" in capfd.readouterr().out
    assert main(["render", *common, "--iso", "0.5", "--mode", "dvr"]) == 2
    assert capfd.readouterr().err == ("headrace render: --iso 0.5: an iso value is drawn by --mode iso, not --mode dvr "
                                      "(leave --mode out or give --mode iso)\n")
