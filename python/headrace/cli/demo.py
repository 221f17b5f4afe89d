"""``headrace demo``: the synthetic particles of seed 000 (section 4.2) streamed through every host
backend this machine has, each result verified byte for byte, compared in a table and a bar chart, and
one frame drawn as sphere glyphs (on the GPU when there is one, else by the CPU reference renderer)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
from rich.table import Table

import headrace
from headrace.bench.cases.read_backends import available_backends, sweep
from headrace.bench.harness import write_csv
from headrace.cli._output import byte_progress, console, human_bytes, print_json
from headrace.generate import generate_particles
from headrace.generate.particles import particle_slices


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="generate particles, stream them through every backend, compare",
                                   description=__doc__)
    parser.add_argument("--out", default="out/demo", help="output directory (default: out/demo)")
    parser.add_argument("--particles", type=int, default=2_000_000, help="particles per frame (default 2M = 64 MB)")
    parser.add_argument("--frames", type=int, default=4, help="frames, each repeating the particles (default 4)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats per backend and cache state")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=run)


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


def plot(measurements, path: Path, heading: str, cache_note: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    backends = list(dict.fromkeys(m.parameters["backend"] for m in measurements))
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    width = 0.38
    for offset, cache, colour in ((-width / 2, "cold", "#3465a4"), (width / 2, "hot", "#f57900")):
        values = [next((m.best_gbps for m in measurements if m.parameters["backend"] == b and m.cache == cache), 0.0)
                  for b in backends]
        bars = ax.bar(np.arange(len(backends)) + offset, values, width, label=cache, color=colour)
        ax.bar_label(bars, labels=[f"{v:.2f}" if v else "" for v in values], fontsize=8)
    ax.set_xticks(np.arange(len(backends)), backends)
    ax.set_ylabel("GB/s (best of repeats)")
    ax.set_title(f"{heading}\n{cache_note}", fontsize=10)
    ax.legend()
    fig.tight_layout()
    partial = path.with_suffix(".partial.png")
    fig.savefig(partial)
    plt.close(fig)
    os.replace(partial, path)


def run(args: argparse.Namespace) -> int:
    say = (lambda *a, **k: None) if args.json else console.print  # --json prints the JSON alone
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "particles.hrc"
    total = args.particles * 32 * args.frames
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
    for kind in usable:
        verify_frames(ds, kind, args.particles, args.seed)
    ds.close()

    say(f"[bold]3. measure[/] reading all {len(ds.frames)} frames, cold and hot, {args.repeats} repeats each")
    measurements = sweep(str(path), usable, ("cold", "hot"), repeats=args.repeats)
    write_csv(str(out / "backends.csv"), measurements)
    cold_method = next((m.cache_method for m in measurements if m.cache == "cold"), "")
    heading = f"headrace demo: {human_bytes(total)} of particles, every chunk read and checksummed"
    cache_note = f"cold = page cache evicted ({cold_method}), hot = page cache filled; ram = preloaded"
    title = f"{heading}; {cache_note}"
    plot(measurements, out / "backends.png", heading, cache_note)

    from headrace import render

    device = 0 if headrace._ext.gpu_count() > 0 else "cpu"
    where = "GPU 0" if device == 0 else f"the CPU reference renderer (no GPU: {headrace._ext.gpu_unavailable_reason()})"
    say(f"[bold]4. render[/] frame 0 as {args.particles:,} sphere glyphs, streamed batch by batch, on {where}")
    image, stats = render.render_streamed(path, 0, device=device, method="pread" if device == "cpu" else "uring-batched",
                                          width=800, height=600, batch=500_000)
    render.write_image(out / "frame0.png", image)

    if args.json:
        print_json({"file": str(path), "bytes": total, "unavailable": {k: v for k, v in reasons.items() if v},
                    "results": [m.as_row() for m in measurements], "image": str(out / "frame0.png"),
                    "render": {k: v for k, v in stats.items() if k != "batch_draw_seconds"}})
        return 0
    table = Table(title=title)
    for column in ("backend", "knobs", "cold GB/s", "hot GB/s", "spread"):
        table.add_column(column)
    for kind in usable:
        mine = {m.cache: m for m in measurements if m.parameters["backend"] == kind}
        cold, hot = mine.get("cold"), mine.get("hot")
        table.add_row(kind, (cold or hot).parameters["describe"],
                      f"{cold.best_gbps:.2f}" if cold else "n/a (preloaded)",
                      f"{hot.best_gbps:.2f}" if hot else "",
                      " ".join(f"{m.spread:.0%}" for m in mine.values()))
    console.print(table)
    console.print(f"bytes verified through every backend; chart {out / 'backends.png'}, CSV {out / 'backends.csv'}")
    console.print(f"frame 0 drawn in {stats['seconds']:.2f} s ({stats['batches']} batches): {out / 'frame0.png'}")
    console.print("cold here is the page cache evicted; on a machine with a fast disk use "
                  "`headrace probe` for the device ceiling these numbers should be read against.")
    return 0
