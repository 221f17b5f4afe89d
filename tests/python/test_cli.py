"""The info, inspect, verify, read and demo commands end to end on small data."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import headrace.cli.render as render_command
from headrace import errors
from headrace.cli.main import main


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_info_reports_backends_and_gpu_state(capsys, tmp_path):
    info = run_json(capsys, "info", "--path", str(tmp_path))
    assert set(info["backends"]) == {"posix", "direct", "mmap", "uring", "ram"}
    assert info["backends"]["posix"] == {"available": True, "why": ""}
    assert info["liburing"] == info["backends"]["uring"]["available"]
    assert info["cufile_mode"] in ("unavailable", "compatibility", "gds")
    engine = info["engine"]  # the engine's defaults and memory bounds, stated
    assert engine["queue"]["backend"] == "auto" and engine["queue"]["staging_bytes"] == 256 << 20
    assert engine["staging_bytes"] == (256 + 64) << 20  # the disk's ring and the page cache's
    assert engine["pin_budget_bytes"] > 0 and engine["spare_slot_bytes"] > 0 and engine["max_shared_engines"] >= 1
    if not info["gpus"]:  # the CPU machine: every GPU piece says why it is not there
        assert info["cufile_mode"] == "unavailable" and info["cufile_mode_reason"]
        assert info["cuda_driver"]["available"] is False and info["cuda_driver"]["why"]
    assert info["settings"]["queue_depth"] >= 1


def test_inspect_lists_every_chunk_with_ranges(capsys, particle_file):
    path, frames = particle_file
    info = run_json(capsys, "inspect", str(path))
    assert info["version"] == "1.0" and len(info["frames"]) == 3
    assert info["frames"][2]["elements"] == {"particles": 5000}
    assert sum(c["element_count"] for c in info["chunks"] if c["frame"] == 1) == 5000
    assert all(c["offset"] % 4096 == 0 for c in info["chunks"])
    first = info["chunks"][0]
    assert first["min"][0] == pytest.approx(float(frames[0][: first["element_count"], 0].min()))
    assert main(["inspect", str(path), "--chunks"]) == 0
    assert "particles" in capsys.readouterr().out


def test_verify_exit_status_follows_the_checksums(capsys, particle_file):
    path, _ = particle_file
    assert run_json(capsys, "verify", str(path))["chunks"] == 30
    offset = run_json(capsys, "inspect", str(path))["chunks"][7]["offset"]
    with open(path, "r+b") as f:
        f.seek(offset + 100)
        f.write(b"\xde\xad")
    assert main(["verify", str(path)]) == 1
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and str(path) in error and f"offset {offset}" in error and "checksum" in error


@pytest.mark.parametrize("backend", ["posix", "direct", "mmap", "uring", "ram"])
def test_read_reports_throughput_of_checked_bytes(capsys, particle_file, backend):
    path, _ = particle_file
    result = run_json(capsys, "read", str(path), "--backend", backend, "--threads", "3", "--cache", "hot",
                      "--repeats", "2")
    assert result["bytes"] == 3 * 5000 * 32
    assert result["best_gbps"] > 0 and result["repeats"] == 2 and result["verify"] is True
    assert result["cache"] == "hot"


def test_read_usage_and_data_errors(capsys, tmp_path):
    assert main(["read", "x.hrc", "--backend", "floppy"]) == 2
    assert main(["read", str(tmp_path / "absent.hrc"), "--backend", "posix"]) == 1
    assert "absent.hrc" in capsys.readouterr().err
    assert main(["read", str(tmp_path / "absent.hrc"), "--backend", "posix", "--threads", "0"]) == 2


def test_demo_verifies_and_charts_every_backend(capsys, tmp_path):
    out = tmp_path / "demo"
    report = run_json(capsys, "demo", "--out", str(out), "--particles", "20000", "--frames", "2", "--repeats", "1")
    measured = {(r["backend"], r["cache"]) for r in report["results"]}
    assert ("posix", "cold") in measured and ("posix", "hot") in measured and ("ram", "hot") in measured
    assert all(r["bytes"] == 20000 * 32 * 2 for r in report["results"])
    assert (out / "backends.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "backends.csv").read_text().count("\n") == len(report["results"]) + 1
    assert (out / "frame0.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert report["render"]["particles"] == 20000 and report["image"] == str(out / "frame0.png")


def test_an_unavailable_gpu_path_gets_the_command_lines_hint(capsys, monkeypatch, particle_file, tmp_path):
    """The library says what is missing in its terms; the command line adds the flag that avoids it."""
    def unavailable(args):
        raise errors.UnavailableError("the sphere renderer's kernels were not built: render on the CPU instead")

    monkeypatch.setattr(render_command, "run", unavailable)
    assert main(["render", str(particle_file), "--frame", "0", "--device", "0", "--out", str(tmp_path / "x.png")]) == 1
    assert capsys.readouterr().err.strip() == ("headrace render: the sphere renderer's kernels were not built: render on "
                                               "the CPU instead (--device cpu runs it on the host)")
    assert main(["render", str(particle_file), "--frame", "0", "--device", "cpu", "--out", str(tmp_path / "x.png")]) == 1
    assert capsys.readouterr().err.strip().endswith("render on the CPU instead")


def test_importing_headrace_loads_no_converter_or_generator():
    """Every command pays `import headrace`: the converters and generators (a quarter of a second on the CPU
    machine) load only where a command converts or generates."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, headrace; print(' '.join(sorted(m for m in sys.modules "
                             "if m.startswith(('headrace.convert', 'headrace.generate')))))"],
                            check=True, capture_output=True, text=True).stdout.split()
    assert loaded == []
