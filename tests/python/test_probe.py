"""headrace probe from Python and the command line: CSV columns, a valid PNG, JSON, exit statuses.

Every run is tiny (an 8 MiB file, exact bytes per point) so the file takes about a second.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import struct
import zlib

import pytest

from headrace import errors
from headrace import probe as probe_api
from headrace.cli.main import main

KiB = 1 << 10
MiB = 1 << 20
TINY = dict(file_size_bytes=8 * MiB, block_sizes_bytes=[4 * KiB, 64 * KiB], queue_depths=[1, 4],
            thread_counts=[1, 2], bytes_per_point=256 * KiB)
TINY_ARGS = ["--size", "8M", "--block-sizes", "4K,64K", "--queue-depths", "1,4", "--threads", "1,2",
             "--bytes-per-point", "256K"]


def png_size(path) -> tuple[int, int]:
    """Checks the signature, the IHDR chunk's CRC and the IEND chunk; returns (width, height)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    body = data[16:16 + length]
    (crc,) = struct.unpack(">I", data[16 + length:20 + length])
    assert crc == zlib.crc32(kind + body)
    assert data[-12:] == b"\x00\x00\x00\x00IEND\xaeB`\x82"
    return struct.unpack(">II", body[:8])


def test_tiny_probe_writes_csv_with_the_documented_columns_and_bytes_that_add_up(tmp_path):
    seen = []
    result = probe_api.probe(tmp_path, progress=lambda done, total, point: seen.append((done, total, point)), **TINY)
    assert result.file == str(tmp_path / "headrace-probe.bin")
    assert result.created and os.path.getsize(result.file) == 8 * MiB
    assert len(result.points) == 2 * 2 * 2 * 2
    assert [done for done, _, _ in seen] == list(range(1, 17))
    assert all(total == 16 and isinstance(point, probe_api.ProbePoint) for _, total, point in seen)

    out = tmp_path / "probe.csv"
    result.to_csv(out)
    with open(out, newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    assert tuple(reader.fieldnames) == probe_api.CSV_COLUMNS
    assert len(rows) == 16
    for row in rows:
        block = int(row["block_size_bytes"])
        assert int(row["bytes"]) == int(row["reads"]) * block == -(-256 * KiB // block) * block
        assert float(row["gigabytes_per_second"]) > 0 and float(row["iops"]) > 0
        assert float(row["gigabytes_per_second"]) == pytest.approx(int(row["bytes"]) / float(row["seconds"]) / 1e9)
        assert row["cache_state"] in ("cold", "hot") and row["path"] and row["file"] == result.file
        if row["cache_state"] == "hot":
            assert row["note"], "a hot point must say why"

    ceiling = result.ceiling
    assert ceiling.pattern == "sequential"
    sequential = [p.gigabytes_per_second for p in result.points if p.pattern == "sequential"]
    assert ceiling.gigabytes_per_second == max(sequential)
    assert result.ceiling_line().startswith(
        f"device ceiling: {ceiling.gigabytes_per_second:.2f} GB/s (sequential, block ")

    if result.points[0].cache_state == "cold":  # beside a cold grid, buffered reads with the kernel reading ahead
        ahead = result.read_ahead
        assert ahead is not None and ahead.bytes == 8 * MiB and ahead.gigabytes_per_second > 0
        assert ahead.gigabytes_per_second == pytest.approx(ahead.bytes / ahead.seconds / 1e9)
        assert ahead.describe().startswith("buffered read-ahead: ")
        assert result.as_dict()["read_ahead"]["threads"] == 4

    again = probe_api.probe(tmp_path, **{**TINY, "patterns": ["random"], "thread_counts": [1]}, read_ahead=False)
    assert again.read_ahead is None
    assert not again.created, "the test file is reused when its size matches"
    assert again.ceiling is None
    assert again.ceiling_line() == "device ceiling: none (no sequential points were measured)"


def test_heatmap_is_a_valid_png(tmp_path):
    result = probe_api.probe(tmp_path, **TINY)
    out = tmp_path / "probe.png"
    result.plot_heatmap(out)
    width, height = png_size(out)
    assert width > 300 and height > 200


def test_cli_prints_the_table_and_the_ceiling_and_writes_csv_and_png(tmp_path, capsys):
    csv_path, png_path = tmp_path / "out.csv", tmp_path / "out.png"
    assert main(["probe", str(tmp_path), *TINY_ARGS, "--csv", str(csv_path), "--png", str(png_path)]) == 0
    output = capsys.readouterr().out
    last = output.strip().splitlines()[-1]
    assert last.startswith("device ceiling: ") and "(sequential, block " in last
    assert "QD 4" in output
    assert csv_path.read_text().splitlines()[0] == ",".join(probe_api.CSV_COLUMNS)
    png_size(png_path)


def test_cli_json_holds_every_point_and_the_ceiling(tmp_path, capsys):
    assert main(["probe", str(tmp_path), *TINY_ARGS, "--patterns", "sequential", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["points"]) == 8
    assert report["ceiling"]["gigabytes_per_second"] == max(p["gigabytes_per_second"] for p in report["points"])
    assert report["ceiling_line"].startswith("device ceiling: ")
    # kept for the file system of the test file, where headrace info FILE finds it
    assert report["kept_in"] == os.environ["HEADRACE_PROBES"]
    kept = probe_api.kept_probe(tmp_path)
    assert kept is not None and kept["ceiling"] == report["ceiling"] and kept["file"] == os.path.abspath(report["file"])
    assert kept["key"] == f"{os.major(os.stat(tmp_path).st_dev)}:{os.minor(os.stat(tmp_path).st_dev)}"
    assert kept["read_ahead"] == report["read_ahead"]
    # where the grid ran cold, the engine's own cold routes too, which cache_policy auto chooses between
    assert kept["engine_routes"] == report["engine_routes"]
    assert (report["engine_routes"] is None) == (report["read_ahead"] is None)


def test_a_budget_stops_the_probe_and_keeps_the_points_measured(tmp_path, capsys):
    csv_path = tmp_path / "out.csv"
    assert main(["probe", str(tmp_path), *TINY_ARGS, "--patterns", "sequential", "--budget", "0.000001",
                 "--csv", str(csv_path)]) == 0
    said = capsys.readouterr().out
    assert "budget of 1e-06 s spent: 1 of 8 points measured" in said and "device ceiling: " in said
    assert len(csv_path.read_text().splitlines()) == 2  # the header and the one point
    told = []
    result = probe_api.probe(tmp_path, **TINY, patterns=["random"],
                             progress=lambda done, total, point: told.append(done) or done < 2)
    assert told == [1, 2] and len(result.points) == 2


def test_bad_block_size_is_a_usage_error_naming_it(tmp_path, capsys):
    with pytest.raises(errors.UsageError, match="block size 6000 bytes is not a positive multiple of 4096"):
        probe_api.probe(tmp_path, **{**TINY, "block_sizes_bytes": [6000]})
    assert main(["probe", str(tmp_path), *TINY_ARGS, "--block-sizes", "6000"]) == 2
    assert "6000" in capsys.readouterr().err


def test_file_in_ram_is_hot_and_strict_refuses_it():
    with open("/proc/mounts") as mounts:
        if not any(line.split()[1] == "/dev/shm" and line.split()[2] == "tmpfs" for line in mounts):
            pytest.skip("/dev/shm is not a tmpfs on this machine")
    path = f"/dev/shm/headrace-probe-pytest-{os.getpid()}.bin"
    try:
        small = {**TINY, "block_sizes_bytes": [64 * KiB], "queue_depths": [4], "thread_counts": [1]}
        result = probe_api.probe(path, **small)
        assert {point.cache_state for point in result.points} == {"hot"}
        assert "tmpfs" in result.points[0].note
        assert result.cache_description.startswith("hot: ")
        with pytest.raises(errors.UnavailableError, match="tmpfs"):
            probe_api.probe(path, strict=True, **small)
    finally:
        if os.path.exists(path):
            os.unlink(path)


def test_sizes_take_binary_units():
    from headrace.cli._shared import Size

    size = Size(1, 1 << 40)
    assert size("268435456") == 256 * MiB
    assert size("256M") == size("256MiB") == size("256 mib") == 256 * MiB
    assert size("4K") == 4 * KiB
    with pytest.raises(argparse.ArgumentTypeError, match="expected a size"):
        size("4 parsecs")
    with pytest.raises(argparse.ArgumentTypeError, match="expected a size"):
        size("0")
