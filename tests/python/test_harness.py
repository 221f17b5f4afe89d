"""The harness: cache preparation order, statistics and CSV."""

from __future__ import annotations

import csv
import statistics
import time

import pytest

from headrace import page_cache
from headrace.bench import harness


def test_setup_runs_before_the_cache_is_dropped_and_body_after(monkeypatch, tmp_path):
    # Guards the mmap "cold" reads that were hot: a backend must be (re)opened before the drop.
    events: list[str] = []
    monkeypatch.setattr(page_cache, "drop_page_cache", lambda files, everything=False: events.append("drop") or "fake")
    result = harness.measure("case", lambda: events.append("body") or 1000, files=[], cache="cold", repeats=2,
                             setup=lambda: events.append("setup"))
    assert events == ["setup", "drop", "body", "setup", "drop", "body"]
    assert result.cache_method == "fake" and result.bytes == 1000 and len(result.seconds) == 2


def test_hot_fills_the_cache_once(monkeypatch):
    events: list[str] = []
    monkeypatch.setattr(page_cache, "warm_page_cache", lambda files: events.append("warm") or "preread")
    harness.measure("case", lambda: events.append("body") or 1, files=[], cache="hot", repeats=3)
    assert events == ["warm", "body", "body", "body"]


def test_statistics_and_csv(tmp_path):
    m = harness.Measurement("read/x", 2_000_000_000, [2.0, 1.0, 4.0], "cold", "fadvise", {"backend": "x"})
    assert m.best_gbps == pytest.approx(2.0) and m.median_gbps == pytest.approx(1.0)
    assert m.spread == pytest.approx(1.5)
    out = tmp_path / "r.csv"
    harness.write_csv(str(out), [m])
    rows = list(csv.DictReader(out.open()))
    assert rows[0]["backend"] == "x" and float(rows[0]["best_gbps"]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        harness.measure("case", lambda: 1, files=[], cache="hot", repeats=0)


def test_each_repeat_records_what_it_cost_the_cpu_on_every_thread(tmp_path):
    import threading

    def busy() -> int:
        def spin() -> None:
            until = time.thread_time() + 0.05
            while time.thread_time() < until:
                pass
        workers = [threading.Thread(target=spin) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return 500_000_000

    m = harness.measure("spin", busy, files=[], cache="hot", repeats=2)
    assert len(m.cpu_user_seconds) == len(m.cpu_system_seconds) == 2
    assert min(u + s for u, s in zip(m.cpu_user_seconds, m.cpu_system_seconds)) >= 0.09  # both threads' 0.05 s
    assert m.cpu_seconds_per_gb == pytest.approx(statistics.median(
        [u + s for u, s in zip(m.cpu_user_seconds, m.cpu_system_seconds)]) / 0.5)
    harness.write_csv(str(tmp_path / "r.csv"), [m])
    row = next(csv.DictReader((tmp_path / "r.csv").open()))
    assert float(row["cpu_s_per_gb"]) > 0 and "cpu_user_s_median" in row
    assert harness.Measurement("x", 1, [1.0], "hot", "").cpu_seconds_per_gb is None  # not recorded


def test_cold_eviction_works_without_privileges(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 65536)
    assert harness.drop_page_cache([str(path)]) in ("drop_caches", "fadvise")


def test_cold_evicts_only_the_file_and_says_what_stayed(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(b"\x01" * (1 << 20))
    path.read_bytes()  # in the page cache now
    other = tmp_path / "other.bin"
    other.write_bytes(b"\x02" * (1 << 20))
    other.read_bytes()
    from headrace import _ext

    assert harness.evict_from_page_cache([str(path)]) == "fadvise"
    assert _ext.page_cache_resident_bytes(str(path)) == 0
    assert _ext.page_cache_resident_bytes(str(other)) > 0  # nothing else was touched
    with open(path, "rb") as f:  # a mapping keeps its pages: said, not hidden
        import mmap

        mapped = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        mapped.madvise(mmap.MADV_WILLNEED)
        sum(mapped[i] for i in range(0, len(mapped), 4096))
        assert "still cached" in harness.evict_from_page_cache([str(path)])
        mapped.close()


def test_a_stopwatch_times_laps_that_add_up_and_stamps_taken_elsewhere():
    whole, watch = harness.Stopwatch(), harness.Stopwatch()
    laps = [watch.lap() for _ in range(3)]
    stamp = time.perf_counter()  # as the viewer's protocol client stamps an image
    after = watch.seconds()
    assert all(lap >= 0 for lap in laps) and sum(laps) <= whole.seconds()
    assert 0 <= watch.seconds_to(stamp) <= after
