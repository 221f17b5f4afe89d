"""Codec chains (docs/codecs/): filters, then one codec, per field, e.g. ``"split|shuffle|zstd"``.

A chain is written as stage names joined by ``|``, each with optional ``(key=value,...)``; values left out
come from the field (``shuffle``'s width is its value size). :func:`parse` checks one and gives the text
the index stores. :func:`choose` tries candidate chains on sample chunks and picks one by an objective:

- ``"delivery"`` (the default): the least time to put a frame's raw bytes in GPU memory when the disk
  delivers ``disk_bytes_per_second`` and the decoder ``decode rate``, reading and decoding overlapped:
  ``max(stored / disk rate, raw / decode rate)``;
- ``"smallest"``: the smallest stored fraction;
- ``"fastest"``: the fastest decoding among the chains that store less than they read.

Decoding is timed where a reader of the file decodes: on the GPU when there is one, else on the CPU's
cores. Lossy stages are never candidates, and codecs that only a GPU decodes (``ans``, ``cascaded``) only
with ``gpu_only=True``: every other chain reads on a machine without a GPU.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
import dataclasses
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

from headrace import _ext
from headrace.probe import probe

__all__ = ["Stage", "ChainInfo", "Trial", "Choice", "Objective", "stages", "parse", "try_chain", "candidates", "choose",
           "disk_rate_of", "fastest_axis_points", "gdeflate_in_one_stream"]

Objective = Literal["delivery", "smallest", "fastest"]
OBJECTIVES: tuple[str, ...] = ("delivery", "smallest", "fastest")


@dataclass(frozen=True)
class Stage:
    """A registered stage: its stored name, ``"filter"`` or ``"codec"``, and what it does."""

    name: str
    kind: str
    summary: str


@dataclass(frozen=True)
class ChainInfo:
    """A checked chain: the text the index stores, its filters and codec, and where it runs."""

    spec: str
    record_codec: str  #: the chunk records' codec: a plain codec's name, or "chain"
    filters: tuple[str, ...]
    codec: str | None
    error_bound: float | None  #: set when lossy: the largest |decoded - written| of a value
    cpu_encodes: bool
    cpu_decodes: bool
    why_not_cpu: str


@dataclass(frozen=True)
class Trial:
    """A chain tried on sample chunks."""

    spec: str
    raw_bytes: int
    stored_bytes: int
    encode_seconds: float
    decode_seconds: float
    decoded_on: str

    @property
    def stored_fraction(self) -> float:
        return self.stored_bytes / self.raw_bytes if self.raw_bytes else 1.0

    @property
    def decode_bytes_per_second(self) -> float:
        return self.raw_bytes / self.decode_seconds if self.decode_seconds > 0 else float("inf")

    def delivery_seconds_per_byte(self, disk_bytes_per_second: float) -> float:
        """Seconds per raw byte in GPU memory, the disk and the decoder overlapped."""
        return max(self.stored_fraction / disk_bytes_per_second, 1.0 / self.decode_bytes_per_second)


@dataclass
class Choice:
    """The chain :func:`choose` picked for a field, and the measurements it picked it by."""

    field: str
    spec: str
    objective: str
    disk_bytes_per_second: float | None
    disk_rate_source: str
    sample_chunks: int
    sample_bytes: int
    trials: list[Trial] = dataclasses.field(default_factory=list)
    refused: dict[str, str] = dataclasses.field(default_factory=dict)  #: chains that could not be tried here, and why

    @property
    def best(self) -> Trial:
        return next(t for t in self.trials if t.spec == self.spec)

    def as_dict(self) -> dict[str, object]:
        result = asdict(self)
        result["trials"] = [
            {**asdict(t), "stored_fraction": round(t.stored_fraction, 4),
             "decode_gb_per_s": round(t.decode_bytes_per_second / 1e9, 3)}
            for t in self.trials
        ]
        return result

    def describe(self) -> str:
        best = self.best
        rate = "" if self.disk_bytes_per_second is None else \
            f", disk {self.disk_bytes_per_second / 1e9:.2f} GB/s ({self.disk_rate_source})"
        return (f"{self.field}: {self.spec} (stored {best.stored_fraction:.3f} of raw, decodes at "
                f"{best.decode_bytes_per_second / 1e9:.1f} GB/s on {best.decoded_on}; objective {self.objective}{rate}; "
                f"{len(self.trials)} chains tried on {self.sample_chunks} chunks)")


def fastest_axis_points(attributes: Mapping[str, object]) -> int:
    """A linear grid's points along x (delta's rows), from a data set's attributes; 0 for anything else."""
    dims = attributes.get("grid_dims")
    if attributes.get("layout", "linear") != "linear" or not isinstance(dims, (list, tuple)) or not dims:
        return 0
    return int(dims[0])


def gdeflate_in_one_stream(chain: str) -> bool:
    """Whether a chain as written ends in gdeflate in one stream a chunk, whose CPU encoder takes 64 KiB:
    gdeflate alone (a plain codec keeps one stream) or with block=0; in blocks it takes any chunk."""
    text = chain.replace(" ", "")
    if text.split("|")[-1].split("(")[0] != "gdeflate":
        return False
    return "|" not in text and "block=" not in text or "block=0" in text


def stages() -> list[Stage]:
    """Every stage headrace knows, in registry order."""
    return [Stage(name, kind, summary) for name, kind, summary in _ext.stages()]


def parse(text: str, dtype: str = "uint8", components: int = 1, fastest_axis_points: int = 0) -> ChainInfo:
    """Checks a chain as a user writes it for a field of ``dtype`` x ``components`` (a grid's points
    along x, for ``delta``'s rows); raises UsageError naming the stage otherwise."""
    info = _ext.parse_chain(text, np.dtype(dtype).name, int(components), int(fastest_axis_points))
    return ChainInfo(spec=info["spec"], record_codec=info["record_codec"], filters=tuple(info["filters"]),
                     codec=info["codec"], error_bound=info["error_bound"], cpu_encodes=info["cpu_encodes"],
                     cpu_decodes=info["cpu_decodes"], why_not_cpu=info["why_not_cpu"])


def try_chain(text: str, chunks: Sequence[np.ndarray], *, dtype: str, components: int = 1, fastest_axis_points: int = 0,
              device: int | None = None, repeats: int = 3) -> Trial:
    """Encodes ``chunks`` through the chain and times decoding them on GPU ``device`` (None: the CPU),
    checking that every chunk decodes to its bytes."""
    arrays = [np.ascontiguousarray(c).view(np.uint8).reshape(-1) for c in chunks]
    result = _ext.try_chain(text, arrays, np.dtype(dtype).name, int(components), int(fastest_axis_points),
                            -1 if device is None else int(device), int(repeats))
    return Trial(spec=result["spec"], raw_bytes=result["raw_bytes"], stored_bytes=result["stored_bytes"],
                 encode_seconds=result["encode_seconds"], decode_seconds=result["decode_seconds"],
                 decoded_on=result["decoded_on"])


#: Each stage of the registry by name, in its order (C++ codec/registry.cpp): kind, summary, and for a
#: codec its levels, default_level, max_block_bytes, gpu_only and lossy.
STAGES: dict[str, dict] = {stage["name"]: stage for stage in _ext.stage_facts()}
#: The codecs that decode to the bytes written, in the registry's order.
LOSSLESS_CODECS = tuple(name for name, stage in STAGES.items() if stage["kind"] == "codec" and not stage["lossy"])
# Codecs tried on their own and behind each filter set, in blocks of 64 KiB (nvCOMP decodes a frame's
# blocks in parallel; a 4 MiB chunk in one stream leaves most of a GPU idle).
_CODECS = tuple(name for name in LOSSLESS_CODECS if not STAGES[name]["gpu_only"])
_GPU_ONLY_CODECS = tuple(name for name in LOSSLESS_CODECS if STAGES[name]["gpu_only"])
BLOCK_BYTES = 1 << 16


def candidates(dtype: str, components: int, chunk_bytes: int, *, grid: bool = False, gpu_only: bool = False) -> list[str]:
    """The chains :func:`choose` tries for a field: each codec plain and behind the filters that suit
    its values (byte and bit shuffles of multi-byte values, split for several components, delta and xor
    along a grid's rows)."""
    width = np.dtype(dtype).itemsize
    filter_sets: list[str] = [""]
    if width > 1:
        filter_sets += ["shuffle|", "bitshuffle|"]
        if components > 1:
            filter_sets += ["split|shuffle|", "split|bitshuffle|"]
        if grid and width in (1, 2, 4, 8):
            filter_sets += ["delta|shuffle|", "xor|shuffle|"]
    codecs = list(_CODECS) + (list(_GPU_ONLY_CODECS) if gpu_only else [])
    block = min(BLOCK_BYTES, max(4096, chunk_bytes // 4096 * 4096))
    # gdeflate: its own 32 KiB blocks (nvCOMP's CPU encoder refuses some full 64 KiB ones).
    return [f"{f}{c}(block={min(block, 1 << 15) if c == 'gdeflate' else block})" for f in filter_sets for c in codecs]


def choose(field_name: str, sample: Sequence[np.ndarray], *, dtype: str, components: int = 1, fastest_axis_points: int = 0,
           objective: Objective = "delivery", disk_bytes_per_second: float | None = None, disk_rate_source: str = "",
           device: int | None = None, gpu_only: bool = False, chains: Sequence[str] | None = None,
           repeats: int = 3) -> Choice:
    """Tries ``chains`` (default: :func:`candidates`) on the sample chunks of one field and picks one by
    ``objective``; ``"delivery"`` needs ``disk_bytes_per_second``. Chains that cannot run here (a
    library missing) are left out and named in ``Choice.refused``."""
    if objective not in OBJECTIVES:
        raise _ext.UsageError(f"objective {objective!r}: expected one of {', '.join(OBJECTIVES)}")
    if objective == "delivery" and not (disk_bytes_per_second and disk_bytes_per_second > 0):
        raise _ext.UsageError("objective 'delivery' needs the disk's rate (disk_bytes_per_second, from headrace probe)")
    if not sample:
        raise _ext.UsageError(f"field {field_name!r}: no sample chunks to choose a chain by")
    chunk_bytes = max(int(np.asarray(c).nbytes) for c in sample)
    tried = list(chains) if chains is not None else candidates(dtype, components, chunk_bytes,
                                                              grid=fastest_axis_points > 0, gpu_only=gpu_only)
    choice = Choice(field=field_name, spec="", objective=objective, disk_bytes_per_second=disk_bytes_per_second,
                    disk_rate_source=disk_rate_source, sample_chunks=len(sample),
                    sample_bytes=sum(int(np.asarray(c).nbytes) for c in sample))
    for text in tried:
        try:
            info = parse(text, dtype, components, fastest_axis_points)
            if info.error_bound is not None and chains is None:
                continue
            choice.trials.append(try_chain(text, sample, dtype=dtype, components=components,
                                           fastest_axis_points=fastest_axis_points, device=device, repeats=repeats))
        except (_ext.UnavailableError, _ext.UsageError, _ext.CodecError) as error:
            choice.refused[text] = str(error)
    if not choice.trials:
        raise _ext.UnavailableError(f"field {field_name!r}: no chain could be tried here: "
                                    + "; ".join(f"{k}: {v}" for k, v in choice.refused.items()))
    if objective == "smallest":
        best = min(choice.trials, key=lambda t: (t.stored_bytes, -t.decode_bytes_per_second))
    elif objective == "fastest":
        shrinking = [t for t in choice.trials if t.stored_bytes < t.raw_bytes] or choice.trials
        best = max(shrinking, key=lambda t: (t.decode_bytes_per_second, -t.stored_bytes))
    else:
        assert disk_bytes_per_second is not None
        best = min(choice.trials, key=lambda t: (t.delivery_seconds_per_byte(disk_bytes_per_second), t.stored_bytes))
    choice.spec = best.spec
    return choice


def disk_rate_of(directory: str | os.PathLike[str]) -> tuple[float, str]:
    """The disk's sequential read rate under ``directory``: a short cold probe (``headrace probe``'s
    O_DIRECT reads of a 256 MiB file, 4 MiB blocks at queue depth 32), and how it was measured."""
    result = probe(directory, True, file_size_bytes=256 << 20, patterns=["sequential"],
                           block_sizes_bytes=[4 << 20], queue_depths=[32], thread_counts=[1], seconds_per_point=0.5)
    try:
        ceiling = result.ceiling
        if ceiling is None:
            raise _ext.UnavailableError(f"{directory}: the probe measured no sequential read")
        return ceiling.gigabytes_per_second * 1e9, f"headrace probe of {os.fspath(directory)}: {ceiling.describe()}"
    finally:
        if result.created:
            os.unlink(result.file)
