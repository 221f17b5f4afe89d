"""The particle renderer's streaming space, which ``bench particles`` measures and ``tune`` searches:
the methods this machine can run on a file, and the options that name the factors (--methods,
--batches, --segments, --staging, --device)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from headrace import _ext
from headrace.cli._shared import Device, Integer, Items, Size, Word
from headrace.dataset import Dataset
from headrace.errors import UnavailableError, UsageError
from headrace.settings import queue_options
from headrace.tuning import Space
from headrace.workloads.particles import GPU_METHODS, METHODS, method_codec

__all__ = ["STREAMING_METHODS", "add_particle_space_arguments", "method_unavailable_reason", "particle_methods",
           "expect_particle_container", "particle_space"]

STREAMING_METHODS = (*METHODS, "kvikio")


def add_particle_space_arguments(parser: argparse.ArgumentParser, *, staging: str) -> None:
    """--methods, --batches, --segments, --staging and --device, shared by bench particles and tune."""
    parser.add_argument("--methods", type=Items(Word(STREAMING_METHODS)), default=None,
                        help="streaming methods, comma-separated (default: every method this device can run here)")
    parser.add_argument("--batches", type=Items(Integer(1, 1 << 30, "particles")), default="128000,500000,1000000",
                        help="particles per batch, comma-separated (default 128000,500000,1000000)")
    parser.add_argument("--segments", type=Items(Integer(1, 4096)), default="2,4,16,64,256",
                        help="batches in flight, comma-separated (default 2,4,16,64,256)")
    parser.add_argument("--staging", type=Items(Size(64 << 10, 1 << 40)), default=staging,
                        help=f"staging sizes, comma-separated (default {staging})")
    parser.add_argument("--device", type=Device(), default=None,
                        help="where to draw (default: GPU 0 when there is one, else the CPU reference renderer, said once)")


def method_unavailable_reason(method: str, path: str, device: int | str) -> str | None:
    """Why streaming ``method`` (:data:`headrace.workloads.particles.METHODS`, or the ``kvikio`` peer) cannot run on
    ``device`` ("cpu" or a GPU ordinal) for the file at ``path`` on this machine, or None when it can.
    ``auto`` is the engine's read path: it takes whatever this machine offers (io_uring with O_DIRECT,
    O_DIRECT on threads, buffered reads; the fallback said in the queue's description), so it always
    runs, except under strict settings (``HEADRACE_STRICT``) where a missing O_DIRECT or io_uring is
    an error; every other method needs its backend (liburing, cuFile) here."""
    if device == "cpu" and (method in GPU_METHODS or method == "kvikio"):
        return "GPU only: this run is on the CPU"
    if method == "kvikio":
        return None  # its own libraries are imported when it runs, and a missing one is said in its row
    backend = METHODS[method][0]
    if backend != "auto":
        return _ext.backend_unavailable_reason(backend, path)
    if not queue_options().strict:
        return None
    for kind, reads in (("direct", "O_DIRECT"), ("uring", "io_uring")):
        reason = _ext.backend_unavailable_reason(kind, path)
        if reason is not None:
            return f"strict settings forbid the read path's fallback ({reads} unavailable: {reason})"
    return None


def particle_methods(device: int | str, path: str, codecs: Sequence[str] = ("none",)) -> tuple[tuple[str, ...], dict[str, str]]:
    """The methods the device can run on this file here, and those left out with why. An uncompressed
    file: every method that reads plain chunks, ``auto`` (the engine's read path) first; a compressed one:
    ``auto`` and the compressed-* method of its codecs' family (compressed-lz4|zstd|gdeflate, or
    compressed-chain for chunks of codec chains: render.method_codec). vram, ram-pinned and cufile need a
    GPU, and a method whose backend this machine lacks (liburing, cuFile) is left out."""
    packed = [c for c in codecs if c != "none"]
    candidates = (["auto", *dict.fromkeys(f"compressed-{method_codec(c)}" for c in packed)] if packed
                  else [m for m in METHODS if not m.startswith("compressed-")])
    reasons = {m: method_unavailable_reason(m, path, device) for m in candidates}
    return tuple(m for m in candidates if reasons[m] is None), {m: r for m, r in reasons.items() if r is not None}


def _left_out_said(left_out: dict[str, str]) -> str:
    """One line naming the methods left out, grouped by why."""
    by_reason: dict[str, list[str]] = {}
    for method, reason in left_out.items():
        by_reason.setdefault(reason, []).append(method)
    return "; ".join(f"{', '.join(methods)} ({reason})" for reason, methods in by_reason.items())


def expect_particle_container(ds: Dataset) -> None:
    """A usage error, before any work, for a file whose frames are not particles (x, y, z, radius, r, g, b, a)."""
    fields = {f.name: f for f in ds.fields}
    info = fields.get("particles")
    if info is None or info.dtype != "float32" or info.components != 8:
        have = ", ".join(f"{f.name} ({f.dtype} x {f.components})" for f in ds.fields) or "no fields"
        raise UsageError(f"{ds.path}: not a particle container: expected a field 'particles' of float32 x 8 "
                         f"(headrace generate particles writes one), found {have}")


def particle_space(args: argparse.Namespace, device: int | str, codecs: list[str], path: str,
                   say: Callable[[str], object] | None = None) -> Space:
    """The factor space of --methods (default: every method the device runs here on this kind of file,
    those left out said through ``say``), --batches, --segments and --staging; a method that needs a GPU
    on the CPU is a usage error, and no method that can run here an UnavailableError naming why."""
    if args.methods:
        methods = tuple(dict.fromkeys(args.methods))
        needs_gpu = [m for m in methods if device == "cpu" and (m in GPU_METHODS or m == "kvikio")]
        if needs_gpu:
            raise UsageError(f"--methods {','.join(needs_gpu)}: {'needs' if len(needs_gpu) == 1 else 'need'} a GPU, "
                             "and this run is on the CPU")
    else:
        methods, left_out = particle_methods(device, path, codecs)
        if not methods:
            raise UnavailableError(f"{path}: no streaming method can run here: {_left_out_said(left_out)}")
        if left_out and say is not None:
            say(f"methods left out: {_left_out_said(left_out)}")
    return Space(methods=methods, batches=tuple(dict.fromkeys(args.batches)),
                       segments=tuple(dict.fromkeys(args.segments)), staging_bytes=tuple(dict.fromkeys(args.staging)))
