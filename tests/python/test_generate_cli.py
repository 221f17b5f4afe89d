"""``headrace generate`` end to end through ``headrace.cli.main.main``: the interface contract."""

from __future__ import annotations

import json

import numpy as np

import headrace
from headrace.cli.main import main


def test_generate_particles(tmp_path, capsys):
    output = tmp_path / "p.hrc"

    assert main(["generate", "particles", str(output), "--particles", "1000", "--frames", "4", "--seed", "7",
                 "--codec", "zstd", "--json"]) == 0

    summary = json.loads(capsys.readouterr().out)
    assert (summary["generator"], summary["seed"], summary["frames"]) == ("particles", 7, 4)
    assert summary["fields"] == [{"name": "particles", "dtype": "float32", "components": 8, "elements": 4000}]
    ds = headrace.open(output)
    np.testing.assert_array_equal(ds.read(3, "particles"), ds.read(0, "particles"))


def test_generate_volume(tmp_path, capsys):
    output = tmp_path / "v.hrc"

    assert main(["generate", "volume", str(output), "--dims", "8", "6", "4", "--frames", "2"]) == 0

    assert "wrote" in capsys.readouterr().out
    ds = headrace.open(output)
    assert list(ds.attributes["grid_dims"]) == [8, 6, 4]
    assert ds.read(1, "scalar").shape == (4, 6, 8)  # (z, y, x)


def test_generate_flow(tmp_path, capsys):
    output = tmp_path / "f.hrc"

    assert main(["generate", "flow", str(output), "--dims", "8", "8", "8", "--block", "4", "4", "2", "--seed", "1",
                 "--json"]) == 0

    summary = json.loads(capsys.readouterr().out)
    assert summary["attributes"]["block_dims"] == [4, 4, 2]
    assert summary["attributes"]["layout"] == "blocks"


def test_generate_an_unsteady_flow_at_a_chosen_time_step(tmp_path, capsys):
    output = tmp_path / "g.hrc"
    assert main(["generate", "flow", str(output), "--dims", "9", "5", "5", "--frames", "3", "--kind", "double-gyre",
                 "--dt", "0.5"]) == 0
    assert [frame.time for frame in headrace.open(output).frames] == [0.0, 0.5, 1.0]
    assert main(["generate", "flow", str(tmp_path / "h.hrc"), "--dims", "4", "4", "4", "--dt", "0"]) == 2
    assert "--dt" in capsys.readouterr().err and not (tmp_path / "h.hrc").exists()


def test_a_block_that_does_not_divide_the_grid_leaves_partial_blocks_at_the_edges(tmp_path):
    output = tmp_path / "f.hrc"
    assert main(["generate", "flow", str(output), "--dims", "8", "8", "8", "--block", "3", "4", "4"]) == 0
    assert headrace.open(output).element_count(0, "velocity") == 3 * 2 * 2 * 48  # ceil(8 / 3) = 3 blocks along x


def test_missing_required_option_exits_2(tmp_path):
    assert main(["generate", "particles", str(tmp_path / "p.hrc"), "--frames", "2"]) == 2
