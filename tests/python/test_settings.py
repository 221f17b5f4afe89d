"""Options by name: one list each (the fields of the bound Settings and QueueOptions), each documented
and settable by HEADRACE_<NAME>; unknown names, wrong types and out-of-range values are UsageErrors
naming the option, and the command line exits 2 for them."""

from __future__ import annotations

from pathlib import Path

import pytest

import headrace
from headrace.cli.main import main
from headrace.settings import KNOBS, QUEUE_OPTIONS, io_settings, queue_options

SETTINGS_DOC = (Path(__file__).resolve().parents[2] / "docs" / "settings.md").read_text()


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
    with pytest.raises(headrace.UsageError, match="unknown option 'nonsense'; the queue options: backend, "):
        headrace.Queue(nonsense=3)


def test_the_queue_options_are_the_fields_of_queue_options_each_documented_with_its_variable():
    assert {"backend", "cache_policy", "pin_files", "pin_budget_bytes", "staging_bytes", "max_batch", "max_direct_bytes",
            "read_ahead_bytes", "decode_on", "decode_threads", "verify_checksums", "check_on", "staging_huge_pages", "stream_value_fences", "strict",
            "status_history", "device"} == set(QUEUE_OPTIONS)
    for name in QUEUE_OPTIONS + KNOBS:
        assert f"`{name}`" in SETTINGS_DOC or f"HEADRACE_{name.upper()}" in SETTINGS_DOC, name
        if name != "device":  # each stream's choice, not the process's
            assert f"`HEADRACE_{name.upper()}`" in SETTINGS_DOC, name


# A value other than the default for every option a variable sets.
ENVIRONMENT = {"backend": ("cufile", "cufile"), "cache_policy": ("bypass", "bypass"), "pin_files": ("off", "off"),
               "pin_budget_bytes": ("1048576", 1 << 20), "staging_bytes": ("1048576", 1 << 20), "max_batch": ("8", 8),
               "max_direct_bytes": ("65536", 65536), "read_ahead_bytes": ("0", 0), "decode_on": ("cpu", "cpu"), "decode_threads": ("3", 3),
               "verify_checksums": ("off", False), "check_on": ("host", "host"), "staging_huge_pages": ("off", False), "stream_value_fences": ("on", True), "strict": ("on", True),
               "status_history": ("2048", 2048)}


def test_every_queue_option_is_settable_by_its_variable_and_named_arguments_win(monkeypatch):
    assert set(ENVIRONMENT) == set(QUEUE_OPTIONS) - {"device"}
    defaults = headrace.QueueOptions()
    for name, (text, value) in ENVIRONMENT.items():
        assert getattr(defaults, name) != value, name
        monkeypatch.setenv(f"HEADRACE_{name.upper()}", text)
    from_environment = headrace.QueueOptions.from_environment()
    for name, (_, value) in ENVIRONMENT.items():
        assert getattr(from_environment, name) == value, name
    assert queue_options(max_batch=16, threads=3).max_batch == 16  # the named argument over the variable
    assert queue_options(threads=3).io.threads == 3
    monkeypatch.setenv("HEADRACE_MAX_BATCH", "0")
    with pytest.raises(headrace.UsageError, match="max_batch must be in 1..65536"):
        headrace.QueueOptions.from_environment()


@pytest.mark.parametrize("named, message", [
    ({"staging_bytes": -1}, "queue option staging_bytes=-1: expected a non-negative int"),
    ({"staging_bytes": 10}, "staging_bytes must be in 64 KiB..1 TiB, got 10"),
    ({"strict": "yes"}, "queue option strict='yes': expected a bool"),
    ({"pin_files": 2}, "queue option pin_files=2: expected auto, on, off or a bool"),
    ({"decode_on": "tpu"}, "decode_on 'tpu': expected gpu|cpu"),
    ({"backend": "nvme"}, "backend 'nvme': expected auto|posix"),
    ({"cache_policy": "maybe"}, "cache policy 'maybe': expected auto|bypass|use|keep"),
    ({"device": "gpu"}, "queue option device='gpu': expected a GPU number"),
    ({"queue_depth": 0}, "queue_depth must be in 1..4096"),
])
def test_bad_queue_options_are_usage_errors_naming_them(named, message):
    with pytest.raises(headrace.UsageError, match=message.replace("|", r"\|").replace("(", r"\(")):
        queue_options(**named)


def test_a_queue_an_engine_and_a_stream_take_the_typed_options(particle_file):
    path, frames = particle_file
    options = queue_options(staging_bytes=1 << 20, pin_files=False, threads=2)
    queue = headrace.Queue(options, device="cpu")
    assert (queue.options.staging_bytes, queue.options.pin_files, queue.options.io.threads) == (1 << 20, "off", 2)
    assert options.device == -1 and queue.device is None
    # Engines are told apart by the options in effect, not by how they were given.
    engine = headrace.shared_engine("cpu", options)
    assert headrace.shared_engine("cpu", staging_bytes=1 << 20, pin_files="off", threads=2) is engine
    assert headrace.shared_engine("cpu", staging_bytes=2 << 20) is not engine
    with headrace.open(path).stream(device="cpu", options=options) as stream:
        assert stream.engine is engine
        assert len(list(stream)) == len(frames)
    assert "staging_bytes=1048576" in repr(options) and options.to_dict()["io"]["threads"] == 2


@pytest.mark.parametrize("argv", [["--submit-batch", "4"], ["--uring-register-buffers"], ["--no-uring-register-files"],
                                  ["--mmap-dontneed-bytes", "4096"]])
def test_every_stream_knob_on_the_command_line_works(particle_file, argv, capsys):
    path, _ = particle_file
    assert main(["stream", str(path), "--device", "cpu", *argv]) == 0


@pytest.mark.parametrize("argv, message", [(["--threads", "-1"], "threads must be in 1..1024, got -1"), (["--queue-depth", "0"], "queue_depth"),
                                           (["--staging-bytes", "10"], "staging_bytes must be in 64 KiB..1 TiB")])
def test_a_bad_knob_on_the_command_line_exits_2_naming_it(particle_file, argv, message, capsys):
    path, _ = particle_file
    assert main(["stream", str(path), "--device", "cpu", *argv]) == 2
    assert message in capsys.readouterr().err


def test_the_stream_command_has_a_flag_for_every_option_and_knob_and_sizes_take_units(particle_file, capsys):
    from headrace.cli.main import build_parser

    stream = build_parser()._subparsers._group_actions[0].choices["stream"]
    flags = {option for action in stream._actions for option in action.option_strings}
    for name in QUEUE_OPTIONS + KNOBS:
        if name != "device":  # the command's own --device
            assert "--" + name.replace("_", "-") in flags, name
    path, _ = particle_file
    assert main(["stream", str(path), "--device", "cpu", "--staging-bytes", "64M", "--decode-on", "cpu",
                 "--no-verify-checksums", "--json"]) == 0
    assert "staging=64MiB" in capsys.readouterr().out
