"""Every option of every subcommand, driven with values it must refuse and values it must take.

Each valued option is parsed by a type of ``cli/_shared.py`` (or has fixed choices), which states its
range and the words it refuses; a refused word must end in a one-line usage error that names the option
(exit 2), with no traceback, before the command does any work.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

import pytest

import headrace
from headrace.cli._shared import Bounded, Device
from headrace.cli.main import build_parser, main

PARSER = build_parser()


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(the words naming a subcommand, its parser) for every subcommand that runs something."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, path + (name,))
    if "func" in parser._defaults:
        yield path, parser


def _valued_options(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if action.option_strings and action.nargs != 0 and not isinstance(
                action, (argparse._HelpAction, argparse._VersionAction, argparse.BooleanOptionalAction)):
            yield action


def _words(action: argparse.Action, word: str) -> list[str]:
    count = action.nargs if isinstance(action.nargs, int) else 1
    return [action.option_strings[-1]] + [word] * count


COMMANDS = list(_commands(PARSER))
OPTIONS = [(path, action) for path, parser in COMMANDS for action in _valued_options(parser)]
POSITIONALS = [(path, action) for path, parser in COMMANDS for action in parser._actions
               if not action.option_strings and not isinstance(action, argparse._SubParsersAction)]


def _id(path: tuple[str, ...], action: argparse.Action) -> str:
    return " ".join(path) + " " + (action.option_strings[-1] if action.option_strings else action.dest)


def test_every_subcommand_is_found():
    assert {path[0] for path, _ in COMMANDS} >= {"info", "generate", "convert", "compress", "stream", "trace", "render",
                                                 "bench"}
    assert len(OPTIONS) > 150


@pytest.mark.parametrize("path,action", OPTIONS + POSITIONALS, ids=[_id(p, a) for p, a in OPTIONS + POSITIONALS])
def test_every_value_is_checked_by_a_type_that_states_its_range(path, action):
    assert action.choices is not None or isinstance(action.type, Bounded), (
        f"{_id(path, action)} takes any text: give it a type of cli/_shared.py or choices")
    if action.option_strings:
        assert action.help, f"{_id(path, action)} has no help text"


CASES = [(path, action, word) for path, action in OPTIONS if isinstance(action.type, Bounded)
         for word in action.type.bad_examples()]


@pytest.mark.parametrize("path,action,word", CASES, ids=[f"{_id(p, a)}={w!r}" for p, a, w in CASES])
def test_a_refused_value_is_a_one_line_usage_error_naming_the_option(capsys, path, action, word):
    with pytest.raises(SystemExit) as stopped:
        PARSER.parse_args([*path, *_words(action, word)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert action.option_strings[-1] in err and "Traceback" not in err


NUMBERS = [(path, action) for path, action in OPTIONS  # a device is a word or a GPU number, not a range
           if isinstance(action.type, Bounded) and not isinstance(action.type, Device) and "-1" in action.type.bad_examples()]


@pytest.mark.parametrize("path,action", NUMBERS, ids=[_id(p, a) for p, a in NUMBERS])
def test_a_negative_number_is_refused_with_the_range_taken(capsys, path, action):
    """Not just "expected a non-negative int": the range the option takes, as for a value too large."""
    with pytest.raises(SystemExit):
        PARSER.parse_args([*path, *_words(action, "-1")])
    err = capsys.readouterr().err.strip()
    assert "'-1'" in err or "got -1" in err, err
    assert any(said in err for said in (" in ", " from ", "at least", " to ")), err


GOOD = [(path, action, word) for path, action in OPTIONS if isinstance(action.type, Bounded)
        for word in action.type.good_examples()]


@pytest.mark.parametrize("path,action,word", GOOD, ids=[f"{_id(p, a)}={w!r}" for p, a, w in GOOD])
def test_the_values_a_type_states_are_taken(path, action, word):
    for value in [word] * (action.nargs if isinstance(action.nargs, int) else 1):
        action.type(value)


@pytest.mark.parametrize("path,action", [(p, a) for p, a in OPTIONS if a.choices is not None],
                         ids=[_id(p, a) for p, a in OPTIONS if a.choices is not None])
def test_a_value_outside_the_choices_is_a_one_line_usage_error(capsys, path, action):
    with pytest.raises(SystemExit) as stopped:
        PARSER.parse_args([*path, *_words(action, "bogus")])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and action.option_strings[-1] in err, err


def test_version_and_an_unknown_command(capsys):
    assert main(["--version"]) == 0 and capsys.readouterr().out.startswith("headrace ")
    assert main(["bogus"]) == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_help_states_each_range(capsys):
    assert main(["stream", "--help"]) == 0
    out = capsys.readouterr().out
    assert "a whole number from" in out and "--prefetch" in out


def test_piped_output_is_neither_wrapped_nor_a_traceback_when_the_reader_leaves(tmp_path):
    import subprocess

    import numpy as np

    import headrace

    path = tmp_path / "many.hrc"
    with headrace.Writer(path, [headrace.FieldSpec("particles", "float32", 8)]) as writer:
        for t in range(1500):
            writer.write(writer.add_frame(time=float(t)), "particles", np.full((100, 8), t, dtype=np.float32))
    info = subprocess.run([sys.executable, "-m", "headrace", "info"], capture_output=True, text=True, timeout=120)
    assert info.returncode == 0 and max(len(line) for line in info.stdout.splitlines()) > 80  # not cut at 80
    # inspect's JSON (hundreds of KB) into a reader that takes one line and leaves
    piped = subprocess.run(f"{sys.executable} -m headrace inspect --chunks --json {path} | head -1", shell=True,
                           capture_output=True, text=True, timeout=120)
    assert piped.stdout.strip() == "{" and "Traceback" not in piped.stderr and "Error" not in piped.stderr, piped.stderr


# --- a GPU command's context, made while its module loads (_gpu_ahead.py) ---

from headrace import _ext  # noqa: E402
from headrace import _gpu_ahead  # noqa: E402

JOB_OF_4 = {"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "2"}


@pytest.mark.parametrize(("words", "environment", "expected"), [
    (["render", "p.hrc"], {}, (0, None)),  # GPU 0 unless told
    (["--debug", "play", "a.hrc", "--device", "1"], {}, (1, None)),
    (["stream", "p.hrc", "--device=3"], {}, (3, None)),
    (["render", "p.hrc", "--device", "cpu"], {}, None),
    (["trace", "f.hrc", "--seeds", "uniform:8"], {}, None),  # the CPU unless told
    (["trace", "f.hrc", "--device", "0"], {}, (0, None)),
    (["info"], {}, None),
    (["render", "p.hrc"], JOB_OF_4, (0, 2)),  # a rank: its local rank beside the GPU asked
    (["render", "p.hrc"], {"OMPI_COMM_WORLD_SIZE": "4"}, None),  # a rank whose place is not said: nothing ahead
    (["render", "p.hrc"], {"PMI_SIZE": "1"}, (0, None)),  # a job of one is one process
])
def test_a_commands_gpu_is_the_one_it_asks_for(words, environment, expected):
    command = next(word for word in words if not word.startswith("-"))
    assert _gpu_ahead.gpu_asked(command, words, environment) == expected


@pytest.mark.parametrize(("asked", "local_rank", "gpus", "expected"), [
    (0, None, 2, 0), (1, None, 2, 1),
    (2, None, 2, None),  # a GPU the machine lacks: the command falls back to the CPU and says so, no context ahead
    (0, 2, 4, 2), (3, 2, 4, 1), (0, 0, 4, 0),  # ranks wrap around the GPUs, as Ranks.device maps them
    (0, None, 0, None), (0, 1, 0, None),
])
def test_the_gpu_ahead_is_the_one_ranks_take(asked, local_rank, gpus, expected):
    assert _gpu_ahead.ordinal_of(asked, local_rank, gpus) == expected


def test_without_a_gpu_no_context_is_made_ahead(monkeypatch):
    if _ext.gpu_count():
        pytest.skip("a GPU is here")
    monkeypatch.setattr(_gpu_ahead, "_held", {})
    thread = _gpu_ahead.start("render", ["render", "p.hrc"])
    assert thread is not None
    thread.join(10)
    assert not thread.is_alive() and _gpu_ahead._held == {}
    monkeypatch.setenv("HEADRACE_GPU_AHEAD", "0")
    assert _gpu_ahead.start("render", ["render", "p.hrc"]) is None


def test_the_script_starts_the_context_once_before_the_command_line_loads(monkeypatch):
    monkeypatch.setattr(_gpu_ahead, "_script", None)
    monkeypatch.setattr(_gpu_ahead, "_held", {})
    monkeypatch.delenv("HEADRACE_GPU_AHEAD", raising=False)
    words = ["render", "p.hrc", "--device", "0"]
    thread = _gpu_ahead.start_for(words)  # what the headrace script does first
    assert thread is not None
    assert _gpu_ahead.start("render", words) is thread  # main() meets it: no second thread
    thread.join(60)
    assert _gpu_ahead.start("render", ["render", "q.hrc"]) is not thread  # another command's words: its own
    assert _gpu_ahead.start_for(["--version"]) is None and _gpu_ahead.start_for(["info"]) is None


@pytest.mark.gpu
def test_a_gpu_commands_context_is_made_ahead_and_held(monkeypatch):
    if not _ext.gpu_count():
        pytest.skip("no GPU")
    monkeypatch.setattr(_gpu_ahead, "_held", {})
    for _ in range(2):  # a second command of the process finds its context made
        thread = _gpu_ahead.start("render", ["render", "p.hrc", "--device", "0"])
        assert thread is not None
        thread.join(60)
    assert list(_gpu_ahead._held) == [0] and _gpu_ahead._held[0].handle != 0
    _gpu_ahead.release_held()  # what a command whose GPU work is done does while it writes its output
    assert _gpu_ahead._held == {}


@pytest.mark.gpu
def test_a_closed_cuda_stream_says_so_and_closes_once():
    if not _ext.gpu_count():
        pytest.skip("no GPU")
    stream = _ext.CudaStream(0)
    stream.close()
    stream.close()
    with pytest.raises(headrace.UsageError, match="closed"):
        stream.handle


@pytest.mark.parametrize(("interpreter_words", "expected"), [
    (["/usr/bin/python3", "/venv/bin/headrace", "render", "p.hrc"], ["render", "p.hrc"]),  # the script pip made
    (["python3", "-m", "headrace", "play", "a.hrc"], ["play", "a.hrc"]),
    (["python3", "-X", "importtime", "-u", "-m", "headrace", "render"], ["render"]),  # the interpreter's options skipped
    (["python3", "-W", "error", "/x/headrace"], []),
    (["python3", "-m", "pytest", "tests"], None),  # any other program that imports headrace: nothing ahead
    (["python3", "-c", "import headrace"], None),
    (["python3", "simulation.py", "render"], None),
    (["python3", "-m", "headrace.cli"], None),
    (["python3"], None),
])
def test_the_headrace_script_is_known_by_the_interpreters_words(interpreter_words, expected):
    assert _gpu_ahead.script_words(interpreter_words) == expected


def test_the_scripts_context_starts_as_the_package_loads_and_the_command_meets_it(monkeypatch):
    monkeypatch.setattr(_gpu_ahead, "_script", None)
    monkeypatch.setattr(_gpu_ahead, "_held", {})
    monkeypatch.delenv("HEADRACE_GPU_AHEAD", raising=False)
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, "-m", "headrace", "render", "p.hrc"])
    thread = _gpu_ahead.start_for_script()  # what `import headrace` does first
    assert thread is not None
    assert _gpu_ahead.start_for(["render", "p.hrc"]) is thread  # run_command, then main(), meet the same thread
    thread.join(60)
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, "-m", "pytest"])
    assert _gpu_ahead.start_for_script() is None


def test_letting_go_waits_for_the_context_then_closes_each_held_once(monkeypatch):
    closed = []

    class Held:
        def __init__(self, ordinal):
            self.ordinal = ordinal

        def close(self):
            closed.append(self.ordinal)

    maker = threading.Thread(target=lambda: time.sleep(0.05))
    maker.start()
    monkeypatch.setattr(_gpu_ahead, "_script", (("render", "p.hrc"), maker))
    monkeypatch.setattr(_gpu_ahead, "_held", {0: Held(0), 1: Held(1)})
    _gpu_ahead.release_held()
    assert not maker.is_alive() and sorted(closed) == [0, 1] and _gpu_ahead._held == {}
    _gpu_ahead.release_held()
    assert sorted(closed) == [0, 1]
