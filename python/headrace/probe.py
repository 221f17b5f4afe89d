"""Raw read bandwidth of the device holding a file: the yardstick of every later benchmark.

:func:`probe` reads a test file over a grid of access pattern x block size x queue depth x threads,
the way fio does in AMD's DirectStorage talk (seed ``001_…``) and CrystalDiskMark does in seed
``000_…``'s Table 1. Each thread opens its own io_uring backend with O_DIRECT (cold: the page cache is
bypassed) and keeps ``queue_depth`` reads of one block in flight. Where io_uring or O_DIRECT cannot
work, or the file lives in RAM, every point says so in ``path``, ``cache_state`` and ``note``.

The device ceiling is the fastest sequential point. Beside the grid, one cold pass of buffered reads with
the kernel reading ahead (:class:`ReadAheadRate`): on some disks that route beats O_DIRECT. Each probe's
result is kept per file system (:func:`keep`, ``$HEADRACE_PROBES`` or ``~/.config/headrace/probes.json``) so
that ``headrace info FILE`` can say what a route measured there (:func:`kept_probe`). See docs/probe.md.
"""

from __future__ import annotations

import csv
import json
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

from headrace import _ext, page_cache
from headrace._files import replacing

__all__ = ["BUFFERED_MARGIN", "CSV_COLUMNS", "EngineRoutes", "ProbeDefaults", "ProbePoint", "ProbeResult", "ReadAheadRate",
           "cold_reads", "defaults", "file_system_of", "format_block_size", "keep", "kept_probe", "measure_read_ahead", "probe",
           "probes_path"]

#: Columns of :meth:`ProbeResult.to_csv`, in order.
CSV_COLUMNS: tuple[str, ...] = (
    "file", "pattern", "block_size_bytes", "queue_depth", "threads", "bytes", "reads", "seconds",
    "gigabytes_per_second", "iops", "path", "backend", "o_direct", "cache_state", "note",
)


@dataclass(frozen=True)
class ProbePoint:
    """One measured point of the grid."""

    pattern: str  #: "sequential" or "random"
    block_size_bytes: int
    queue_depth: int  #: reads in flight per thread
    threads: int
    bytes: int  #: bytes read by all threads: always reads * block_size_bytes
    reads: int
    seconds: float  #: first submission to last completion
    gigabytes_per_second: float  #: bytes / seconds / 1e9
    iops: float  #: reads / seconds
    path: str  #: the I/O route, e.g. "uring O_DIRECT" or "direct O_DIRECT (fallback)"
    backend: str  #: the host I/O backend: "uring", or "direct"/"posix" as a fallback
    o_direct: bool
    cache_state: str  #: "cold" (O_DIRECT: page cache bypassed) or "hot"
    note: str  #: why the route is not io_uring + O_DIRECT + cold; empty when it is

    def describe(self) -> str:
        """ "sequential, block 1 MiB, QD 32, threads 4"."""
        return (f"{self.pattern}, block {format_block_size(self.block_size_bytes)}, QD {self.queue_depth}, "
                f"threads {self.threads}")


@dataclass(frozen=True)
class ReadAheadRate:
    """One cold pass of buffered reads over the test file with the kernel asked to read ahead of them
    (``posix_fadvise(WILLNEED)``), the route of KvikIO's POSIX mode and of the engine's kept reads: on the
    H200 machine's virtio disk 1.7 to 1.9 GB/s where O_DIRECT gave 1.4 to 1.7 (docs/results.md)."""

    gigabytes_per_second: float
    bytes: int
    seconds: float
    threads: int
    block_size_bytes: int
    ahead_bytes: int
    cache_state: str  #: "cold", or how the eviction before it fell short

    def describe(self) -> str:
        return (f"buffered read-ahead: {self.gigabytes_per_second:.2f} GB/s ({self.threads} threads x "
                f"{format_block_size(self.block_size_bytes)}, the kernel {format_block_size(self.ahead_bytes)} ahead, "
                f"{self.cache_state})")


BUFFERED_MARGIN = 1.05  # buffered cold reads fill the page cache: chosen only where they beat O_DIRECT by this


@dataclass(frozen=True)
class EngineRoutes:
    """One cold pass over the probe's file through the engine's queue by each of its routes for bytes the
    page cache does not hold, into ``destination`` ("gpu N" or "host"): O_DIRECT (``cache_policy="bypass"``,
    the default's route) and buffered with the kernel reading ahead (``"keep"``). Under ``cache_policy="auto"``
    a file's cold reads take the buffered route where it was the faster here by :data:`BUFFERED_MARGIN`
    (:func:`cold_reads`). Plain buffered readers are not the engine's: on the H200 machine's virtio disk they
    beat O_DIRECT while the engine's buffered reads, landing in pinned staging, did not (docs/results.md)."""

    direct_gigabytes_per_second: float
    buffered_gigabytes_per_second: float
    bytes: int
    destination: str

    @property
    def faster(self) -> str:
        """ "buffered" where it beat O_DIRECT by the margin, else "direct"."""
        return "buffered" if self.buffered_gigabytes_per_second >= BUFFERED_MARGIN * self.direct_gigabytes_per_second else "direct"

    def describe(self) -> str:
        return (f"the engine's cold reads into {self.destination}: O_DIRECT {self.direct_gigabytes_per_second:.2f} GB/s, "
                f"buffered read-ahead {self.buffered_gigabytes_per_second:.2f} GB/s: cold reads take "
                f"{'buffered' if self.faster == 'buffered' else 'O_DIRECT'}")


def cold_reads(path: str | os.PathLike[str], cache_policy: str, backend: str) -> tuple[str | None, str]:
    """How a queue of ``cache_policy`` and ``backend`` reads ``path``'s uncached bytes where the probe kept
    for its file system says otherwise than the queue: (``"keep"``: buffered with the kernel reading ahead,
    kept in the cache when the file fits half the memory it may take, and why) where the engine's buffered
    reads were the faster there; (None, "") otherwise, and for any policy but auto on the read path."""
    if cache_policy != "auto" or backend != "auto":
        return None, ""
    kept = kept_probe(path) or {}
    measured = kept.get("engine_routes")
    if not measured:
        return None, ""
    routes = EngineRoutes(**measured)
    if routes.faster != "buffered":
        return None, ""
    return "keep", (f"cold reads buffered and kept: the probe of {kept.get('probed_at', '?')} measured the engine's "
                    f"buffered reads here at {routes.buffered_gigabytes_per_second:.2f} GB/s against O_DIRECT's "
                    f"{routes.direct_gigabytes_per_second:.2f}")


@dataclass(frozen=True)
class ProbeResult:
    """The points of one probe, in run order, and the device ceiling among them."""

    file: str  #: the file that was read
    created: bool  #: True when this probe wrote the file (else reused, or the user's own file)
    points: tuple[ProbePoint, ...]
    ceiling_index: int | None  #: index of the fastest sequential point
    read_ahead: ReadAheadRate | None = None  #: the buffered route, when the grid ran cold

    @property
    def ceiling(self) -> ProbePoint | None:
        """The fastest sequential point: the device ceiling (None without sequential points)."""
        return None if self.ceiling_index is None else self.points[self.ceiling_index]

    @property
    def cache_description(self) -> str:
        """ "cold: O_DIRECT", or why the reads were hot."""
        first = self.points[0]
        if first.cache_state == "cold":
            return "cold: O_DIRECT"
        return "hot: file system in RAM" if first.o_direct else "hot: buffered, page cache"

    def ceiling_line(self) -> str:
        """ "device ceiling: X.XX GB/s (sequential, block B, QD Q, threads T, cold: O_DIRECT)"."""
        ceiling = self.ceiling
        if ceiling is None:
            return "device ceiling: none (no sequential points were measured)"
        return (f"device ceiling: {ceiling.gigabytes_per_second:.2f} GB/s "
                f"({ceiling.describe()}, {self.cache_description})")

    def as_dict(self) -> dict[str, object]:
        """Everything, JSON-ready."""
        return {
            "file": self.file,
            "created": self.created,
            "cache": self.cache_description,
            "ceiling": None if self.ceiling is None else asdict(self.ceiling),
            "ceiling_line": self.ceiling_line(),
            "read_ahead": None if self.read_ahead is None else asdict(self.read_ahead),
            "points": [asdict(point) for point in self.points],
        }

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """One row per point with :data:`CSV_COLUMNS` (through ``path.partial`` and a rename)."""
        with replacing(path) as partial, open(partial, "w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            for point in self.points:
                writer.writerow({"file": self.file, **asdict(point)})

    def plot_heatmap(self, path: str | os.PathLike[str]) -> None:
        """An image (a PNG, or the format ``path``'s ending names) with one heat map per (pattern,
        threads): block size x queue depth coloured by GB/s.

        Every panel shares one colour scale, values are written in the cells, the ceiling's cell is
        outlined, and the title names the file, the cache state and the ceiling.
        """
        # Deferred: matplotlib is optional and slow to import; only a figure needs it.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Rectangle

        patterns = _in_order(point.pattern for point in self.points)
        thread_counts = sorted({point.threads for point in self.points})
        blocks = sorted({point.block_size_bytes for point in self.points})
        depths = sorted({point.queue_depth for point in self.points})
        top = max((point.gigabytes_per_second for point in self.points), default=0.0) or 1.0

        figure = Figure(figsize=(0.9 * len(depths) * len(thread_counts) + 2.5,
                                 0.55 * len(blocks) * len(patterns) + 1.8), layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.subplots(len(patterns), len(thread_counts), squeeze=False, sharex=True, sharey=True)
        image = None
        for row, pattern in enumerate(patterns):
            for column, threads in enumerate(thread_counts):
                ax = axes[row][column]
                values = [[math.nan] * len(depths) for _ in blocks]
                for point in self.points:
                    if point.pattern == pattern and point.threads == threads:
                        values[blocks.index(point.block_size_bytes)][depths.index(point.queue_depth)] = (
                            point.gigabytes_per_second)
                image = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=top, aspect="auto", origin="lower")
                for i, line in enumerate(values):
                    for j, value in enumerate(line):
                        if not math.isnan(value):
                            ax.text(j, i, _cell_text(value), ha="center", va="center", fontsize=7,
                                    color="black" if value > 0.6 * top else "white")
                ceiling = self.ceiling
                if ceiling is not None and ceiling.pattern == pattern and ceiling.threads == threads:
                    ax.add_patch(Rectangle((depths.index(ceiling.queue_depth) - 0.5,
                                            blocks.index(ceiling.block_size_bytes) - 0.5), 1, 1,
                                           fill=False, edgecolor="red", linewidth=2))
                ax.set_title(f"{pattern}, {threads} thread{'s' if threads != 1 else ''}", fontsize=9)
                ax.set_xticks(range(len(depths)), [str(depth) for depth in depths], fontsize=8)
                ax.set_yticks(range(len(blocks)), [format_block_size(block) for block in blocks], fontsize=8)
                if row == len(patterns) - 1:
                    ax.set_xlabel("queue depth (per thread)", fontsize=8)
                if column == 0:
                    ax.set_ylabel("block size", fontsize=8)
        if image is not None:
            figure.colorbar(image, ax=axes, label="GB/s (1e9 bytes/s)", shrink=0.9)
        figure.suptitle(f"headrace probe: {self.file} [{self.points[0].path}, {self.points[0].cache_state}]\n"
                        f"{self.ceiling_line()}", fontsize=9)
        image_format = os.path.splitext(os.fspath(path))[1][1:].lower() or "png"
        with replacing(path) as partial:
            figure.savefig(partial, format=image_format, dpi=120)


class ProbeDefaults(TypedDict):
    """The probe's default grid and limits, as :func:`defaults` returns them."""

    file_size_bytes: int
    patterns: list[str]
    block_sizes_bytes: list[int]
    queue_depths: list[int]
    thread_counts: list[int]
    seconds_per_point: float
    min_bytes_per_point: int
    max_seconds_per_point: float
    bytes_per_point: int
    buffer_limit_bytes: int
    seed: int
    strict: bool


def defaults(quick: bool = False) -> ProbeDefaults:
    """The probe's default grid and limits (``quick``: the smaller grid), from the C++ core."""
    return cast(ProbeDefaults, _ext.probe_defaults(quick))  # the stub says only dict (bindings/probe.cpp)


def probe(
    path: str | os.PathLike[str],
    quick: bool = False,
    *,
    file_size_bytes: int | None = None,
    patterns: Sequence[str] | None = None,
    block_sizes_bytes: Sequence[int] | None = None,
    queue_depths: Sequence[int] | None = None,
    thread_counts: Sequence[int] | None = None,
    seconds_per_point: float | None = None,
    min_bytes_per_point: int | None = None,
    max_seconds_per_point: float | None = None,
    bytes_per_point: int | None = None,
    seed: int | None = None,
    strict: bool = False,
    progress: Callable[[int, int, ProbePoint], bool | None] | None = None,
    read_ahead: bool = True,
) -> ProbeResult:
    """Measures raw read bandwidth of the device holding ``path``.

    ``path`` is a file or block device (read as it is), a directory (``headrace-probe.bin`` of
    ``file_size_bytes`` is written there, or reused when its size matches) or a missing file (written;
    ``headrace probe`` writes one only when its name has an ending, so that a drive that is not mounted
    is not mistaken for a file to create). Arguments left None take the defaults of :func:`defaults`
    (``quick`` picks the smaller grid); ``max_seconds_per_point`` is at least ``seconds_per_point``.
    ``bytes_per_point`` reads exactly that much per point instead of timing ``seconds_per_point``.
    ``strict`` turns every fallback (no io_uring, no O_DIRECT, a file in RAM) into UnavailableError.
    ``progress(done, total, point)`` is called after each point; returning False stops the probe
    there (the result holds the points measured). ``read_ahead``: after a cold grid, one pass of buffered
    reads with the kernel reading ahead (:func:`measure_read_ahead`).
    """
    config = defaults(quick)
    test_file = _ext.probe_prepare_test_file(
        os.fspath(path),
        config["file_size_bytes"] if file_size_bytes is None else file_size_bytes,
        config["seed"] if seed is None else seed,
    )
    report = None if progress is None else (lambda done, total, point: progress(done, total, ProbePoint(**point)))
    if seconds_per_point is not None and max_seconds_per_point is None:  # a longer point than the default cap
        max_seconds_per_point = max(config["max_seconds_per_point"], seconds_per_point)
    outcome = _ext.probe_run(
        test_file["path"], quick=quick, patterns=None if patterns is None else list(patterns),
        block_sizes_bytes=None if block_sizes_bytes is None else list(block_sizes_bytes),
        queue_depths=None if queue_depths is None else list(queue_depths),
        thread_counts=None if thread_counts is None else list(thread_counts),
        seconds_per_point=seconds_per_point, min_bytes_per_point=min_bytes_per_point,
        max_seconds_per_point=max_seconds_per_point, bytes_per_point=bytes_per_point, seed=seed, strict=strict,
        progress=report,
    )
    points = tuple(ProbePoint(**point) for point in outcome["points"])
    cold = bool(points) and points[0].cache_state == "cold"
    return ProbeResult(
        file=test_file["path"],
        created=test_file["created"],
        points=points,
        ceiling_index=outcome["ceiling_index"],
        read_ahead=measure_read_ahead(test_file["path"]) if read_ahead and cold else None,
    )


def measure_read_ahead(path: str | os.PathLike[str], *, threads: int = 4, block_size_bytes: int = 4 << 20,
                       ahead_bytes: int = 512 << 20, most_bytes: int = 2 << 30) -> ReadAheadRate:
    """One pass over the first ``most_bytes`` of ``path`` by ``threads`` readers of ``block_size_bytes``
    in file order, each asking the kernel to read ``ahead_bytes`` past its block before it reads it; the
    file's pages evicted first (never the whole machine's: a file of this process stays cold only if no
    one else maps or locks it, which ``cache_state`` says)."""
    path = os.fspath(path)
    evicted = page_cache.evict_from_page_cache([path])
    size = min(os.path.getsize(path), most_bytes)
    blocks = (size + block_size_bytes - 1) // block_size_bytes
    taken, advised, lock = [0], [0], threading.Lock()
    fd = os.open(path, os.O_RDONLY)

    def read_blocks() -> None:
        buffer = memoryview(bytearray(block_size_bytes))
        while True:
            with lock:
                block = taken[0]
                taken[0] += 1
                start, end = advised[0], min(size, block * block_size_bytes + ahead_bytes)
                advised[0] = max(start, end)
            if block >= blocks:
                return
            if end > start:
                os.posix_fadvise(fd, start, end - start, os.POSIX_FADV_WILLNEED)
            os.preadv(fd, [buffer[:min(block_size_bytes, size - block * block_size_bytes)]], block * block_size_bytes)

    try:
        readers = [threading.Thread(target=read_blocks) for _ in range(threads)]
        started = time.perf_counter()
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        seconds = time.perf_counter() - started
    finally:
        os.close(fd)
    page_cache.evict_from_page_cache([path])  # what the probe read leaves no one a hot file
    return ReadAheadRate(size / seconds / 1e9, size, seconds, threads, block_size_bytes, ahead_bytes,
                         "cold" if evicted == "fadvise" else f"not all cold: {evicted}")


def probes_path() -> Path:
    """Where probes are kept: ``$HEADRACE_PROBES``, else ``~/.config/headrace/probes.json``."""
    return Path(os.environ.get("HEADRACE_PROBES") or Path.home() / ".config" / "headrace" / "probes.json")


def file_system_of(path: str | os.PathLike[str]) -> dict[str, str]:
    """The file system holding ``path``: ``key`` (its device numbers, "major:minor"), ``mount`` (where it is
    mounted), ``type`` and ``source`` (from /proc/self/mountinfo; empty where that cannot be read)."""
    device = os.stat(path).st_dev
    key = f"{os.major(device)}:{os.minor(device)}"
    found = {"key": key, "mount": "", "type": "", "source": ""}
    try:
        with open("/proc/self/mountinfo") as mounts:
            for line in mounts:
                fields = line.split()
                if fields[2] != key:
                    continue
                after = fields.index("-")
                found.update(mount=fields[4], type=fields[after + 1], source=fields[after + 2])
    except (OSError, ValueError, IndexError):
        pass
    return found


def keep(result: ProbeResult, engine_routes: EngineRoutes | None = None) -> Path:
    """Keeps the probe's ceiling, read-ahead rate and the engine's routes (``headrace.routes.measure_engine_routes``)
    for the file system that holds its file, replacing the last one kept there (through a temporary file and
    rename); returns the file they are kept in."""
    where = probes_path()
    try:
        kept = json.loads(where.read_text())
    except (OSError, ValueError):
        kept = {}
    file_system = file_system_of(result.file)
    kept[file_system["key"]] = {
        **file_system,
        "file": os.path.abspath(result.file),
        "probed_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "cache": result.cache_description,
        "ceiling": None if result.ceiling is None else asdict(result.ceiling),
        "read_ahead": None if result.read_ahead is None else asdict(result.read_ahead),
        "engine_routes": None if engine_routes is None else asdict(engine_routes),
    }
    where.parent.mkdir(parents=True, exist_ok=True)
    with replacing(where) as partial:
        Path(partial).write_text(json.dumps(kept, indent=2))
    return where


def kept_probe(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The last probe kept for the file system holding ``path`` (:func:`keep`), or None."""
    try:
        kept = json.loads(probes_path().read_text())
    except (OSError, ValueError):
        return None
    entry = kept.get(file_system_of(path)["key"])
    return entry if isinstance(entry, dict) else None


def format_block_size(size_bytes: int) -> str:
    """Exact binary units: 4096 -> "4 KiB", 1048576 -> "1 MiB", 6000 -> "6000 B"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size_bytes >= 1 << shift and size_bytes % (1 << shift) == 0:
            return f"{size_bytes >> shift} {unit}"
    return f"{size_bytes} B"


def _cell_text(gigabytes_per_second: float) -> str:
    return f"{gigabytes_per_second:.2f}" if gigabytes_per_second >= 0.1 else f"{gigabytes_per_second:.3f}"


def _in_order(values) -> list:
    """Distinct values in first-seen order."""
    return list(dict.fromkeys(values))
