"""``headrace convert`` end to end through ``headrace.cli.main.main``: exit codes, messages, --json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace.cli.main import main
from headrace.testing.mmpld_writer import ColourType, MmpldFrame, VertexType, random_list, write_mmpld
from convert_support import assert_no_output


def mmpld_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    frames = [MmpldFrame([random_list(VertexType.FLOAT_XYZ, ColourType.FLOAT_I, 30, rng)], timestamp=t) for t in (1, 2)]
    return write_mmpld(tmp_path / "in.mmpld", frames, version=103)


def test_convert_mmpld_with_json_summary(tmp_path, capsys):
    source = mmpld_file(tmp_path)
    output = tmp_path / "out.hrc"

    assert main(["convert", str(source), str(output), "--codec", "lz4", "--chunk-size", "64K", "--json"]) == 0

    summary = json.loads(capsys.readouterr().out)
    assert summary["frames"] == 2
    assert summary["format"] == "mmpld"
    assert [(f["name"], f["components"], f["elements"]) for f in summary["fields"]] == [
        ("particles", 8, 60), ("intensity", 1, 60)
    ]
    assert summary["output"] == str(output)
    assert headrace.open(output).read(1, "particles").shape == (30, 8)


def test_convert_prints_a_line_without_json(tmp_path, capsys):
    source = tmp_path / "p.raw"
    np.zeros((16, 8), np.float32).tofile(source)

    assert main(["convert", str(source), str(tmp_path / "out.hrc"), "--format", "raw-particles", "--frames", "2"]) == 0

    assert "2 frames of particles float32x8" in capsys.readouterr().out


def test_several_inputs_become_frames(tmp_path):
    for i in range(3):
        np.save(tmp_path / f"rho_{i}.npy", np.full((5, 2), i, np.int32))

    paths = [str(tmp_path / f"rho_{i}.npy") for i in range(3)]
    assert main(["convert", *paths, str(tmp_path / "out.hrc"), "--field", "rho"]) == 0

    ds = headrace.open(tmp_path / "out.hrc")
    assert [f.name for f in ds.fields] == ["rho"]
    np.testing.assert_array_equal(ds.read(2, "rho"), np.full((5, 2), 2))


def test_bad_data_exits_1_with_one_line_naming_file_and_offset(tmp_path, capsys):
    source = mmpld_file(tmp_path)
    source.write_bytes(source.read_bytes()[:200])
    output = tmp_path / "out.hrc"

    assert main(["convert", str(source), str(output)]) == 1

    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert error.startswith(f"headrace convert: {source}: offset ")
    assert "expected" in error and "found" in error
    assert_no_output(output)


def test_missing_input_exits_1(tmp_path, capsys):
    assert main(["convert", str(tmp_path / "nothing.bov"), str(tmp_path / "out.hrc")]) == 1
    assert "nothing.bov: cannot open" in capsys.readouterr().err
    assert_no_output(tmp_path / "out.hrc")


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--field", "x"], "--field does not apply to format mmpld"),
        (["--chunk-size", "0"], "--chunk-size"),  # refused as it is parsed
    ],
)
def test_usage_errors_exit_2(tmp_path, capsys, extra, message):
    source = mmpld_file(tmp_path)
    output = tmp_path / "out.hrc"

    assert main(["convert", str(source), str(output), *extra]) == 2
    assert message in capsys.readouterr().err
    assert_no_output(output)


def test_unknown_format_exits_2(tmp_path, capsys):
    source = tmp_path / "mystery.bin"
    source.write_bytes(b"\1\2\3\4" * 8)

    assert main(["convert", str(source), str(tmp_path / "out.hrc")]) == 2
    assert "--format" in capsys.readouterr().err
