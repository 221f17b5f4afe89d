"""headrace info FILE: how each frame would be read now, and why, as the engine routes it (nothing read)."""

from __future__ import annotations

import json
import os

import pytest

import headrace
from headrace import _ext, page_cache, probe, routes
from headrace.cli.main import main


def o_direct_here(path) -> bool:
    return _ext.backend_unavailable_reason("direct", str(path)) is None


def evicted(path) -> bool:
    return page_cache.evict_from_page_cache([str(path)]) == "fadvise"


def test_a_cached_file_is_read_from_the_page_cache_and_frames_routed_alike_are_one_run(codec_files):
    paths, _ = codec_files
    found = routes.explain(paths["none"], "cpu")
    assert found.device == "cpu" and found.file == str(paths["none"])
    assert [(run.field, run.first_frame, run.last_frame) for run in found.runs] == [("particles", 0, 3)]
    (group,) = found.runs[0].groups
    assert (group.read, group.transfer) == ("page-cache", "host")  # just written
    assert group.stored_bytes == group.raw_bytes == 4 * 30000 * 32
    assert "cached pages" in found.details["page-cache"] and "host memory" in found.details["host"]
    assert "no probe kept" in found.rates["disk"]
    assert found.as_dict()["runs"][0]["frames"] == [0, 3]
    packed = routes.explain(paths["zstd"], "cpu")
    assert {g.transfer for run in packed.runs for g in run.groups} == {"host-decode"}
    assert "zstd" in packed.details["host-decode"]


def test_an_evicted_file_is_read_from_the_disk_and_keep_says_it_would_keep_it(codec_files):
    paths, _ = codec_files
    path = paths["none"]
    if not o_direct_here(path) or not evicted(path):
        pytest.skip("no O_DIRECT or no eviction on this file system")
    assert {g.read for run in routes.explain(path, "cpu").runs for g in run.groups} == {"disk"}
    index_pages = _ext.page_cache_resident_bytes(str(path))  # opening the file read its header and index
    kept = routes.explain(path, "cpu", cache_policy="keep")
    assert {g.read for run in kept.runs for g in run.groups} == {"kept"}
    assert "kept: its" in kept.why and "read ahead" in kept.details["kept"]
    assert _ext.page_cache_resident_bytes(str(path)) == index_pages  # explaining read no chunk, nothing ahead


def test_the_rates_come_from_the_probe_kept_for_the_files_file_system(codec_files, tmp_path):
    paths, _ = codec_files
    point = probe.ProbePoint("sequential", 1 << 20, 32, 4, 1 << 30, 1024, 0.5, 2.0, 2048.0, "uring O_DIRECT", "uring",
                             True, "cold", "")
    ahead = probe.ReadAheadRate(2.2, 1 << 30, (1 << 30) / 2.2e9, 4, 4 << 20, 512 << 20, "cold")
    (tmp_path / "probe.bin").write_bytes(b"\0" * 4096)  # probed on the same file system as the containers
    probe.keep(probe.ProbeResult(str(tmp_path / "probe.bin"), True, (point,), 0, ahead))
    found = routes.explain(paths["none"], "cpu")
    assert found.probe is not None and found.probe["ceiling"]["gigabytes_per_second"] == 2.0
    assert found.rates["disk"].startswith("2.00 GB/s, O_DIRECT") and found.rates["kept"].startswith("2.20 GB/s, buffered")


def _kept_engine_routes(tmp_path, direct: float, buffered: float) -> None:
    """A probe kept for the file system of tmp_path (the containers'), its engine routes as given."""
    point = probe.ProbePoint("sequential", 1 << 20, 32, 4, 1 << 30, 1024, 0.5, 2.0, 2048.0, "uring O_DIRECT", "uring",
                             True, "cold", "")
    (tmp_path / "probe.bin").write_bytes(b"\0" * 4096)
    probe.keep(probe.ProbeResult(str(tmp_path / "probe.bin"), True, (point,), 0),
               probe.EngineRoutes(direct, buffered, 1 << 30, "host"))


def test_cold_reads_take_the_engines_faster_route_the_kept_probe_measured(codec_files, tmp_path):
    paths, _ = codec_files
    path = str(paths["none"])
    assert probe.cold_reads(path, "auto", "auto") == (None, "")  # nothing kept: O_DIRECT
    _kept_engine_routes(tmp_path, direct=1.6, buffered=1.62)
    assert probe.cold_reads(path, "auto", "auto") == (None, "")  # within the margin: O_DIRECT, which fills no cache
    _kept_engine_routes(tmp_path, direct=1.6, buffered=2.1)
    policy, why = probe.cold_reads(path, "auto", "auto")
    assert policy == "keep" and "2.10 GB/s against O_DIRECT's 1.60" in why
    assert probe.cold_reads(path, "bypass", "auto") == (None, "")  # the user's own policy stands
    assert probe.cold_reads(path, "auto", "posix") == (None, "")  # a forced backend reads as it does
    found = routes.explain(path, "cpu")
    assert "cold reads buffered and kept" in found.why and "through the engine into host: 2.10 GB/s" in found.rates["kept"]
    if o_direct_here(path) and evicted(path):
        assert {g.read for run in routes.explain(path, "cpu").runs for g in run.groups} == {"kept"}
        assert {g.read for run in routes.explain(path, "cpu", cache_policy="bypass").runs for g in run.groups} == {"disk"}


def test_the_engines_routes_are_measured_cold_into_the_destination(tmp_path):
    path = tmp_path / "probe.bin"
    path.write_bytes(os.urandom(8 << 20))
    measured = routes.measure_engine_routes(path, "cpu", request_bytes=1 << 20)
    assert measured.destination == "host" and measured.bytes == 8 << 20
    assert measured.direct_gigabytes_per_second > 0 and measured.buffered_gigabytes_per_second > 0
    assert measured.faster in ("direct", "buffered") and "cold reads take" in measured.describe()
    with pytest.raises(headrace.UsageError, match="fewer than"):
        routes.measure_engine_routes(path, "cpu", request_bytes=16 << 20)


@pytest.mark.gpu
def test_the_engines_routes_are_measured_into_gpu_memory_where_there_is_one(tmp_path):
    # The destination is made before any queue holds the GPU's context: the buffer holds it itself.
    path = tmp_path / "probe.bin"
    path.write_bytes(os.urandom(8 << 20))
    measured = routes.measure_engine_routes(path, request_bytes=1 << 20)
    assert measured.destination == "gpu 0" and measured.bytes == 8 << 20
    assert measured.direct_gigabytes_per_second > 0 and measured.buffered_gigabytes_per_second > 0


def test_info_with_a_file_prints_its_routes_and_json(codec_files, capsys):
    paths, _ = codec_files
    assert main(["info", str(paths["lz4"]), "--device", "cpu"]) == 0
    said = capsys.readouterr().out
    assert "frames by route" in said and "host-decode" in said and "engine: queue read-path=auto" in said
    assert main(["info", str(paths["lz4"]), "--device", "cpu", "--json", "--cache-policy", "bypass"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runs"][0]["routes"][0]["read"] == "disk" or not o_direct_here(paths["lz4"])
    assert report["file_system"]["key"] == f"{os.major(os.stat(paths['lz4']).st_dev)}:{os.minor(os.stat(paths['lz4']).st_dev)}"


def test_engine_options_without_a_file_are_a_usage_error(capsys):
    assert main(["info", "--cache-policy", "keep"]) == 2
    assert "cache_policy" in capsys.readouterr().err


def test_info_of_a_missing_file_is_a_usage_error(tmp_path, capsys):
    assert main(["info", str(tmp_path / "missing.hrc")]) in (1, 2)
    assert "missing.hrc" in capsys.readouterr().err
