"""The user-level benchmark's arithmetic on the CPU: medians, the ratio per round against KvikIO's best
mode (by medians) and against its better mode of each round, and the effect of a reader's position in
the turned order."""

from __future__ import annotations

import pytest

from headrace.bench.cases.user_stream import summarize
from headrace.bench.harness import Measurement


def measurement(case: str, gbps: float, r: int, position: int) -> Measurement:
    return Measurement(case, int(gbps * 1e9), [1.0], "cold", "drop", {"state": "cold", "round": r, "position": position})


def test_the_paired_ratio_takes_kvikios_best_mode_and_positions_are_compared():
    # Round 0: headrace first; round 1: KvikIO POSIX first; round 2: KvikIO cuFile first.
    rows = [measurement("headrace defaults", 2.0, 0, 0), measurement("kvikio posix", 1.8, 0, 1),
            measurement("kvikio cufile", 2.2, 0, 2),
            measurement("kvikio posix", 2.0, 1, 0), measurement("kvikio cufile", 1.6, 1, 1),
            measurement("headrace defaults", 2.4, 1, 2),
            measurement("kvikio cufile", 2.1, 2, 0), measurement("headrace defaults", 2.2, 2, 1),
            measurement("kvikio posix", 2.2, 2, 2)]
    cold = summarize(rows, h2d=50.0, disk=2.0, reopen={})["cold"]
    assert cold["headrace_median_gbps"] == pytest.approx(2.2)
    assert cold["kvikio_best_mode"] == "kvikio cufile"  # medians 2.1 against POSIX's 2.0
    assert cold["x_kvikio"] == pytest.approx(2.2 / 2.1)
    assert cold["x_kvikio_paired"] == pytest.approx([2.0 / 2.2, 2.4 / 1.6, 2.2 / 2.1])
    assert cold["x_kvikio_paired_median"] == pytest.approx(2.2 / 2.1)
    # Round 1's better mode is POSIX (2.0), round 2's POSIX (2.2): the larger of two passes.
    assert cold["x_kvikio_paired_round_best_median"] == pytest.approx(1.0)
    assert cold["x_disk"] == pytest.approx(1.1)
    assert set(cold["position_effect"]) == {0, 1, 2}


def test_what_a_gb_costs_the_cpu_is_set_against_kvikios_best_mode():
    def costing(case: str, gbps: float, r: int, cpu_seconds: float) -> Measurement:
        m = measurement(case, gbps, r, 0)
        m.cpu_user_seconds, m.cpu_system_seconds = [cpu_seconds * 0.75], [cpu_seconds * 0.25]
        return m

    rows = [costing("headrace defaults", 2.0, r, 0.2) for r in range(3)] + \
           [costing("kvikio posix", 1.8, r, 0.8) for r in range(3)] + [costing("kvikio cufile", 1.0, r, 0.1) for r in range(3)]
    for r, row in enumerate(rows[:3]):  # the engine's stages, as stream_pass records them
        row.parameters.update(cpu_io_s=0.01 * (r + 1), cpu_finish_s=0.04, cpu_engine_s=0.02, cpu_other_s=0.13)
    cold = summarize(rows, h2d=50.0, disk=2.0, reopen={})["cold"]
    assert cold["headrace_cpu_s_per_gb_by_stage"] == pytest.approx({"io": 0.02 / 2.0, "finish": 0.04 / 2.0,
                                                                     "engine": 0.02 / 2.0, "other": 0.13 / 2.0})
    assert cold["cpu_s_per_gb"]["headrace defaults"] == pytest.approx(0.2 / 2.0)
    assert cold["cpu_s_per_gb"]["kvikio posix"] == pytest.approx(0.8 / 1.8)
    assert cold["cpu_x_kvikio"] == pytest.approx((0.2 / 2.0) / (0.8 / 1.8))  # against the faster mode, POSIX
