"""The I/O knobs by name: one list (the fields of the bound Settings), unknown names, wrong types and
out-of-range values are UsageErrors naming the knob, and the command line exits 2 for them."""

from __future__ import annotations

import pytest

import headrace
from headrace.cli.main import main
from headrace.settings import KNOBS, io_settings


def test_the_knobs_are_the_fields_of_settings():
    assert {"threads", "queue_depth", "task_size_bytes", "submit_batch", "uring_o_direct", "uring_register_buffers",
            "uring_register_files", "mmap_mode", "mmap_window_segments", "mmap_dontneed_bytes"} == set(KNOBS)
    settings = io_settings(threads=3, submit_batch=4, mmap_mode="window")
    assert (settings.threads, settings.submit_batch, settings.mmap_mode) == (3, 4, "window")


@pytest.mark.parametrize("knobs, message", [
    ({"thread": 4}, "unknown I/O knob 'thread'"),
    ({"threads": -1}, "threads=-1: expected a non-negative int"),
    ({"queue_depth": 0}, "queue_depth must be in 1..4096"),
    ({"mmap_mode": "sometimes"}, "expected whole|segment|window"),
    ({"uring_o_direct": "yes"}, "uring_o_direct='yes': expected a bool"),
])
def test_bad_knobs_are_usage_errors_naming_them(knobs, message):
    with pytest.raises(headrace.UsageError, match=message.replace("|", r"\|").replace("(", r"\(")):
        io_settings(**knobs)


def test_the_queue_and_the_stream_take_every_knob_by_name(particle_file):
    path, frames = particle_file
    ds = headrace.open(path)
    with ds.stream(device="cpu", submit_batch=2, uring_register_buffers=True, uring_register_files=False,
                   mmap_dontneed_bytes=1 << 20) as stream:
        assert len(list(stream)) == 3
    with pytest.raises(headrace.UsageError, match="queue options nonsense=3"):
        headrace.Queue(nonsense=3)


@pytest.mark.parametrize("argv", [["--submit-batch", "4"], ["--register-buffers"], ["--no-register-files"],
                                  ["--mmap-dontneed-bytes", "4096"]])
def test_every_stream_knob_on_the_command_line_works(particle_file, argv, capsys):
    path, _ = particle_file
    assert main(["stream", str(path), "--device", "cpu", *argv]) == 0


@pytest.mark.parametrize("argv, message", [(["--threads", "-1"], "threads=-1"), (["--queue-depth", "0"], "queue_depth")])
def test_a_bad_knob_on_the_command_line_exits_2_naming_it(particle_file, argv, message, capsys):
    path, _ = particle_file
    assert main(["stream", str(path), "--device", "cpu", *argv]) == 2
    assert message in capsys.readouterr().err
