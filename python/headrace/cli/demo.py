"""Shows what headrace does on this machine: writes synthetic particles, streams them
through every host backend this machine has, verifies each result byte for byte, compares the backends
in a table and a bar chart, and draws one frame as spheres (on the GPU when there is one, else by the
CPU reference renderer).

Cold here means this file's pages evicted from the page cache before each repeat (``--cache cold``,
no privileges needed); ``--cache drop-all`` drops the whole machine's page cache instead (root only).
``--budget`` stops starting new measurements once spent: the file is always written and verified.

Where this comes from: the particles are those of Müller and Ertl, "Quantifying Performance Gains of
DirectStorage for the Visualisation of Time-Dependent Particle Data Sets"."""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from rich.table import Table

import headrace
from headrace._files import replacing
from headrace.cli._output import byte_progress, console, count_progress, human_bytes, print_json
from headrace.cli._shared import (
    Budget,
    Integer,
    Path as PathArgument,
    add_budget_argument,
    cache_said,
    expect_cache_state,
)
from headrace.errors import UsageError
from headrace.generate import generate_particles
from headrace.generate.particles import particle_slices
from headrace.imaging import write_image
from headrace.measurement import Measurement, write_csv
from headrace.page_cache import CacheState
from headrace.reading import available_backends, read_container
from headrace.workloads.particles import render_streamed

PARTICLE_BYTES = 32


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("demo", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=PathArgument(), default="out/demo",
                        help="output folder, made if missing (default: out/demo)")
    parser.add_argument("--particles", type=Integer(1, 100_000_000), default=2_000_000,
                        help="particles per frame (default 2M = 64 MB)")
    parser.add_argument("--frames", type=Integer(1, 64), default=4, help="frames, each repeating the particles (default 4)")
    parser.add_argument("--seed", type=Integer(0, (1 << 32) - 1), default=0, help="the generator's seed (default 0)")
    parser.add_argument("--repeats", type=Integer(1, 100), default=2,
                        help="timed repeats per backend and cache state (default 2)")
    parser.add_argument("--cache", choices=("cold", "drop-all"), default="cold",
                        help="how the cold measurements empty the page cache: cold, this file's pages evicted (no "
                             "privileges needed); drop-all, the whole machine's page cache dropped (root only: every "
                             "other process loses its cache) (default cold)")
    add_budget_argument(parser, "seconds after which no new measurement starts (the file is always written and verified)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=run)


def _check_out(out: Path, total: int) -> None:
    """--out: a folder (made if missing) on a disk with room for the file, checked before anything is written."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: a file, not a folder: the demo writes particles.hrc, backends.csv, "
                         "backends.png and frame0.png into a folder")
    existing = next((p for p in [out, *out.parents] if p.exists()), Path("."))
    free = shutil.disk_usage(existing).free
    if total > free:
        raise UsageError(f"--particles x --frames: the demo's file takes {human_bytes(total)}, {existing} has "
                         f"{human_bytes(free)} free")


def verify_frames(ds: headrace.Dataset, backend: str, particles: int, seed: int) -> int:
    """Reads every frame through ``backend`` and compares it with the generator's values; returns bytes."""
    expected = np.concatenate(list(particle_slices(particles, seed)))
    for frame in ds.frames:
        got = ds.read(frame.index, "particles", backend=backend)
        if not np.array_equal(got, expected):
            bad = int(np.argwhere(np.any(got != expected, axis=1))[0][0])
            raise headrace.BadDataError(f"{ds.path}: frame {frame.index} through {backend}: particle {bad} differs "
                                        f"from the generator: expected {expected[bad]}, found {got[bad]}")
    return expected.nbytes * len(ds.frames)


def plot(measurements: Sequence[Measurement], path: Path, heading: str, cache_note: str, cold: str) -> None:
    import matplotlib  # heavy: loaded only to draw the chart

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    backends = list(dict.fromkeys(m.parameters["backend"] for m in measurements))
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    width = 0.38
    for offset, cache, colour in ((-width / 2, cold, "#3465a4"), (width / 2, "hot", "#f57900")):
        values = [next((m.best_gbps for m in measurements if m.parameters["backend"] == b and m.cache == cache), 0.0)
                  for b in backends]
        bars = ax.bar(np.arange(len(backends)) + offset, values, width, label=cache, color=colour)
        ax.bar_label(bars, labels=[f"{v:.2f}" if v else "" for v in values], fontsize=8)
    ax.set_xticks(np.arange(len(backends)), backends)
    ax.set_ylabel("GB/s (best of repeats)")
    ax.set_title(f"{heading}\n{cache_note}", fontsize=10)
    ax.legend()
    fig.tight_layout()
    try:
        with replacing(path) as partial:
            fig.savefig(partial, format="png")
    finally:
        plt.close(fig)


def _cache_states(kind: str, cold: CacheState) -> list[CacheState]:
    """The cache states a backend is measured in: ram preloads the file, so the cache state does not
    reach it, and it is measured hot only."""
    return ["hot"] if kind == "ram" else [cold, "hot"]


@contextmanager
def _counting(description: str, total: int, shown: bool) -> Iterator[Callable[[], None]]:
    """count_progress, or nothing under --json (whose output is the JSON alone)."""
    if not shown:
        yield lambda: None
        return
    with count_progress(description, total) as advance:
        yield advance


def run(args: argparse.Namespace) -> int:
    say = (lambda *a, **k: None) if args.json else console.print  # --json prints the JSON alone
    out = Path(args.out)
    total = args.particles * PARTICLE_BYTES * args.frames
    _check_out(out, total)
    expect_cache_state(args.cache, [])
    out.mkdir(parents=True, exist_ok=True)
    path = out / "particles.hrc"
    say(f"[bold]1. generate[/] {args.particles:,} particles x {args.frames} frames "
        f"({human_bytes(total)}, seed {args.seed}) -> {path}")
    with byte_progress("generating", total, enabled=not args.json) as update:
        generate_particles(path, particles=args.particles, frames=args.frames, seed=args.seed, progress=update)

    reasons = available_backends(str(path))
    usable = [kind for kind, why in reasons.items() if why is None]
    for kind, why in reasons.items():
        if why is not None:
            say(f"   backend [yellow]{kind}[/] unavailable here: {why}")

    say(f"[bold]2. verify[/] every frame through {', '.join(usable)} against the generator")
    ds = headrace.open(path)
    with _counting("verifying", len(usable), not args.json) as advance:
        for kind in usable:
            verify_frames(ds, kind, args.particles, args.seed)
            advance()
    ds.close()

    pairs: list[tuple[str, CacheState]] = [(kind, cache) for kind in usable for cache in _cache_states(kind, args.cache)]
    say(f"[bold]3. measure[/] reading all {len(ds.frames)} frames, {args.cache} and hot, {args.repeats} repeats each "
        f"({cache_said(args.cache)})")
    measurements: list[Measurement] = []
    budget = Budget(args.budget)
    with _counting("measuring", len(pairs), not args.json) as advance:
        for kind, cache in pairs:
            if budget.spent(len(measurements)):
                say("   " + budget.said(len(measurements), len(pairs), "measurements made"))
                break
            measurements.append(read_container(str(path), kind, cache, args.repeats))
            advance()
    write_csv(str(out / "backends.csv"), measurements)
    cold_method = next((m.cache_method for m in measurements if m.cache == args.cache), "not measured")
    heading = f"headrace demo: {human_bytes(total)} of particles, every chunk read and checksummed"
    emptied = "this file's pages evicted" if args.cache == "cold" else "the whole machine's page cache dropped"
    cache_note = f"{args.cache} = {emptied} ({cold_method}), hot = page cache filled; ram = preloaded"
    title = f"{heading}; {cache_note}"
    plot(measurements, out / "backends.png", heading, cache_note, args.cache)

    device = 0 if headrace._ext.gpu_count() > 0 else "cpu"
    where = "GPU 0" if device == 0 else f"the CPU reference renderer (no GPU: {headrace._ext.gpu_unavailable_reason()})"
    say(f"[bold]4. render[/] frame 0 as {args.particles:,} sphere glyphs, streamed batch by batch, on {where}")
    image, stats = render_streamed(path, 0, device=device, method="pread" if device == "cpu" else "uring-batched",
                                          width=800, height=600, batch=500_000)
    write_image(out / "frame0.png", image)

    if args.json:
        print_json({"file": str(path), "bytes": total, "cache": args.cache, "skipped_by_budget": len(pairs) - len(measurements),
                    "unavailable": {k: v for k, v in reasons.items() if v},
                    "results": [m.as_row() for m in measurements], "image": str(out / "frame0.png"),
                    "render": {k: v for k, v in stats.items() if k != "batch_draw_seconds"}})
        return 0
    table = Table(title=title)
    for column in ("backend", "knobs", f"{args.cache} GB/s", "hot GB/s", "spread"):
        table.add_column(column)
    for kind in usable:
        mine = {m.cache: m for m in measurements if m.parameters["backend"] == kind}
        if not mine:
            table.add_row(kind, "", "not measured (budget)", "", "")
            continue
        cold, hot = mine.get(args.cache), mine.get("hot")
        shown = cold or hot or next(iter(mine.values()))  # mine holds one of the two at least
        table.add_row(kind, shown.parameters["describe"],
                      f"{cold.best_gbps:.2f}" if cold else "n/a (preloaded)" if kind == "ram" else "not measured",
                      f"{hot.best_gbps:.2f}" if hot else "not measured",
                      " ".join(f"{m.spread:.0%}" for m in mine.values()))
    console.print(table)
    console.print(f"bytes verified through every backend; chart {out / 'backends.png'}, CSV {out / 'backends.csv'}")
    console.print(f"frame 0 drawn in {stats['seconds']:.2f} s ({stats['batches']} batches): {out / 'frame0.png'}")
    console.print(f"{args.cache} here means {emptied}; on a machine with a fast disk use "
                  "`headrace probe` for the device ceiling these numbers should be read against.")
    return 0
