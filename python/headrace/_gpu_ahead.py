"""A command's GPU context, made on a thread while the command's modules load and its arguments parse.

Creating a CUDA context takes 0.1 to 0.5 s (more when several ranks of a node make theirs at once); a
command made it inside its first frame, its tracer or its stream, after half a second of imports it could
have overlapped. The context made here is the GPU's primary context, the one the engine, the renderers and
the tracer take, held for the process's life or until :func:`release_held`. The ``headrace`` script's
starts as ``import headrace`` begins (:func:`start_for_script`, called by the package before NumPy and the
container's modules load), so it lives in the core: the package's face may not import the command line.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from headrace import _ext

__all__ = ["command_word", "gpu_asked", "ordinal_of", "release_held", "script_words", "start", "start_for",
           "start_for_script"]

# The commands that work on a GPU, and the GPU each takes without --device (None: the CPU).
GPU_COMMANDS: dict[str, int | None] = {"render": 0, "play": 0, "stream": 0, "view": 0, "trace": None}
# A rank's place on its node and the job's size, as launchers put them in its environment before MPI
# starts (Open MPI, MPICH's hydra, Slurm); distributed.Ranks.device maps the GPU asked for the same way.
LOCAL_RANK_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")
JOB_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")

_held: dict[int, Any] = {}  # by GPU, the owner of its context, kept for the process's life
_script: tuple[tuple[str, ...], threading.Thread | None] | None = None  # the words the headrace script started for


def gpu_asked(command: str, words: Sequence[str], environment: Mapping[str, str] | None = None) -> tuple[int, int | None] | None:
    """The GPU ``command`` run with ``words`` asks for and this rank's place on its node (None out of a job of
    several ranks), :meth:`distributed.Ranks.device`'s two terms; or None: not a GPU command, ``--device
    cpu``, a device that is not a number, or a rank of a job whose launcher did not say its local rank."""
    if command not in GPU_COMMANDS:
        return None
    asked: str | None = None
    for at, word in enumerate(words):
        if word == "--device" and at + 1 < len(words):
            asked = words[at + 1]
        elif word.startswith("--device="):
            asked = word.split("=", 1)[1]
    if asked is None:
        default = GPU_COMMANDS[command]
        if default is None:
            return None
        asked = str(default)
    if not asked.isdigit():
        return None
    environment = os.environ if environment is None else environment
    size = next((environment[name] for name in JOB_SIZE_VARIABLES if name in environment), "1")
    if not size.isdigit() or int(size) <= 1:
        return int(asked), None
    local = next((environment[name] for name in LOCAL_RANK_VARIABLES if name in environment), "")
    return (int(asked), int(local)) if local.isdigit() else None


def ordinal_of(asked: int, local_rank: int | None, gpus: int) -> int | None:
    """The GPU of :func:`gpu_asked`'s terms on a machine of ``gpus``: a rank's wraps around the GPUs, as
    :meth:`distributed.Ranks.device` does; a lone process's is the one asked, if there is one."""
    if gpus == 0:
        return None
    if local_rank is not None:
        return (asked + local_rank) % gpus
    return asked if asked < gpus else None


def command_word(words: Sequence[str]) -> str | None:
    """The word naming the command: the first that is not an option of ``headrace`` itself."""
    return next((word for word in words if not word.startswith("-")), None)


def script_words(interpreter_words: Sequence[str]) -> list[str] | None:
    """The command's words when the interpreter's own (:data:`sys.orig_argv`) run the ``headrace`` script or
    ``python -m headrace``; None for any other program (a script of the user's that imports headrace, pytest)."""
    at = 1
    while at < len(interpreter_words):
        word = interpreter_words[at]
        if word == "-m":
            named = interpreter_words[at + 1:at + 2]
            return list(interpreter_words[at + 2:]) if named == ["headrace"] else None
        if word in ("-c", "-"):
            return None
        if word in ("-X", "-W", "--check-hash-based-pycs"):  # an option and its value
            at += 2
            continue
        if word.startswith("-"):
            at += 1
            continue
        return list(interpreter_words[at + 1:]) if os.path.basename(word) == "headrace" else None
    return None


def start_for_script() -> threading.Thread | None:
    """:func:`start_for` the command this process runs, if it is the ``headrace`` script's (:func:`script_words`):
    what the package does first, so the context is made while NumPy and the package's modules load (120 ms
    on the GPU machine, which a context made after them waited for)."""
    words = script_words(getattr(sys, "orig_argv", []))
    return start_for(words) if words is not None else None


def release_held() -> None:
    """Lets go of the contexts made here: a command whose last GPU work is done calls it on a thread while it
    writes its output, so the context's teardown (60 ms and more with the command's memory) is not paid at exit.
    The context goes only once every other holder (engines, renderers) has let go too; the thread that made it
    is waited for first."""
    if _script is not None and _script[1] is not None:
        _script[1].join()
    while _held:
        _held.popitem()[1].close()


def start_for(words: Sequence[str]) -> threading.Thread | None:
    """:func:`start` for the command the words name (:func:`command_word`), if any: what the ``headrace``
    script calls before the command line loads; ``main`` then meets the same thread."""
    global _script
    command = command_word(words)
    thread = start(command, words) if command else None
    _script = (tuple(words), thread)
    return thread


def start(command: str, words: Sequence[str]) -> threading.Thread | None:
    """Starts making the context of the GPU the command will take (:func:`gpu_asked`) on a thread;
    nothing where there is no such GPU (the command then says what it does instead), or with
    ``HEADRACE_GPU_AHEAD=0``. The thread the script started for the same words, if it did."""
    if _script is not None and _script[0] == tuple(words):
        return _script[1]
    return _start(command, words)


def _start(command: str, words: Sequence[str]) -> threading.Thread | None:
    terms = gpu_asked(command, words)
    if terms is None or os.environ.get("HEADRACE_GPU_AHEAD", "1") == "0":
        return None
    asked, local_rank = terms

    def make() -> None:
        try:
            ordinal = ordinal_of(asked, local_rank, _ext.gpu_count())
            if ordinal is not None and ordinal not in _held:  # a process running commands one after another
                _held[ordinal] = _ext.CudaStream(ordinal)
        except Exception:  # noqa: BLE001 - the command meets the same error where it takes the GPU, and says it
            return

    # Not a daemon: a command done before its context (--help, a usage error) waits for it at exit, where a
    # daemon thread coming back into the interpreter would be ended by pthread_exit inside a C++ frame.
    thread = threading.Thread(target=make, name="headrace-gpu-ahead")
    thread.start()
    return thread
