"""The lab's cases that run on a CPU machine, end to end through the harness: what they record."""

from __future__ import annotations

import csv

from headrace.bench.cases import convert_speed


def test_convert_speed_times_each_conversion_beside_the_write_ceiling_and_cleans_up(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    assert convert_speed.main([str(tmp_path), "1M", "npy", "raw-particles", "--csv", str(out)]) == 0
    rows = {row["case"]: row for row in csv.DictReader(out.open())}
    assert list(rows) == ["write ceiling", "npy", "raw-particles"]
    assert all(int(rows[name]["bytes"]) >= 1 << 20 and float(rows[name]["best_gbps"]) > 0 for name in rows)
    assert rows["npy"]["cache_method"] == "written just before" and int(rows["npy"]["peak_anonymous_bytes"]) > 0
    assert "raw-particles: " in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]  # inputs and containers removed
