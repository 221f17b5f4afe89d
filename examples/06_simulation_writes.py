"""A simulation that writes every step while it runs, and a second process that renders each step as it appears.

    python examples/06_simulation_writes.py [OUT_DIR]                 # both at once: the run and its follower
    python examples/06_simulation_writes.py OUT_DIR --simulate [--size 256 --steps 200 --period 0.05]   # the run
    python examples/06_simulation_writes.py OUT_DIR --follow          # the follower alone (start it any time)

The run is heat spreading from three hot spots on a cube (an explicit 7-point stencil; CuPy on a GPU when it
is installed, else NumPy; each step at least ``--period`` seconds, standing in for a heavier solver), each step
written with ``headrace.Writer(..., publish=True)`` with the wall clock it was written at: the step is in
OUT_DIR/heat.hrc as soon as it is whole (format 1.4), and a run killed half-way leaves every step it wrote.
The follower plays the file with ``ds.stream(..., follow=True)``, draws each step as a volume and says how long
after its writing it saw it; it ends when the run closes the file. (The steps reach the writer as host arrays
here: device arrays written straight from GPU memory are the next step of issue 41.)
"""

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import headrace

FIELDS = [headrace.FieldSpec("temperature", "float32", 1), headrace.FieldSpec("written_at", "float64", 1)]


def on_host(array: Any) -> np.ndarray:
    """A CuPy array copied home (a NumPy one as it is)."""
    return array.get() if hasattr(array, "get") else array


def simulate(path: Path, size: int, steps: int, period: float) -> None:
    try:
        import cupy as xp  # type: ignore[import]  # a GPU's

        xp.cuda.runtime.getDeviceCount()
    except Exception:  # no CuPy, or no GPU: the same run on the CPU
        xp = np
    u = xp.zeros((size, size, size), dtype=xp.float32)
    for centre in ((0.3, 0.3, 0.5), (0.7, 0.4, 0.3), (0.5, 0.7, 0.7)):
        z, y, x = (int(c * size) for c in centre)
        r = max(1, size // 16)
        u[z - r : z + r, y - r : y + r, x - r : x + r] = 100.0
    alpha = 0.15  # stable below 1/6
    started = time.perf_counter()
    with headrace.Writer(path, FIELDS, publish=True) as writer:
        for step in range(steps):
            begun = time.perf_counter()
            laplacian = -6 * u
            for axis in range(3):
                laplacian += xp.roll(u, 1, axis) + xp.roll(u, -1, axis)
            u += alpha * laplacian
            frame = writer.add_frame(time=float(step), bbox=((0, 0, 0), (size - 1,) * 3))
            writer.write(frame, "temperature", on_host(u))
            writer.write(frame, "written_at", np.array([[time.time()]]))  # the wall clock, for the follower's lag
            writer.publish()  # this step, now: a follower sees it
            time.sleep(max(0.0, period - (time.perf_counter() - begun)))
    seconds = time.perf_counter() - started
    print(f"simulated and wrote {steps} steps of {size}^3 in {seconds:.2f} s ({'CuPy' if xp is not np else 'NumPy'})")


def follow(path: Path, out: Path) -> None:
    print("waiting", flush=True)
    while not path.exists():  # the run publishes its first step
        time.sleep(0.005)
    ds = headrace.open(path)
    from headrace.workloads.volume import VolumeRenderer

    renderer = VolumeRenderer(ds, field="temperature", value_range=(0.0, 20.0), width=320, height=240)
    seen, lags, image = [], [], None
    with ds.stream(device="cpu", follow=True, follow_poll_s=0.005) as frames:
        for frame in frames:
            lags.append(time.time() - float(np.asarray(frame["written_at"]).reshape(-1)[0]))
            image = renderer.image_of(np.asarray(frame["temperature"]))
            seen.append(frame.index)
    from PIL import Image

    assert image is not None, "the run published no step"
    Image.fromarray(image).save(out / "heat-last-step.png")
    assert seen == list(range(len(seen))), "every step once, in order"
    print(f"followed {len(seen)} steps as they were written: each seen {np.median(lags) * 1e3:.1f} ms after its "
          f"writing (median), {max(lags) * 1e3:.1f} ms at most; the last drawn to {out / 'heat-last-step.png'}")


def main() -> None:
    args = sys.argv[1:]
    out = Path(args[0] if args and not args[0].startswith("--") else ".")
    out.mkdir(parents=True, exist_ok=True)

    def option(name: str, default: float) -> float:
        return float(args[args.index(name) + 1]) if name in args else default

    size, steps, period = int(option("--size", 48)), int(option("--steps", 24)), option("--period", 0.05)
    path = out / "heat.hrc"
    if "--simulate" in args:
        simulate(path, size, steps, period)
    elif "--follow" in args:
        follow(path, out)
    else:
        path.unlink(missing_ok=True)
        follower = subprocess.Popen([sys.executable, __file__, str(out), "--follow"], stdout=subprocess.PIPE, text=True)
        assert follower.stdout is not None and follower.stdout.readline().strip() == "waiting"  # it is up
        simulate(path, size, steps, period)
        print(follower.stdout.read().strip())
        assert follower.wait(120) == 0
        ds = headrace.open(path)
        assert len(ds.frames) == steps and not ds.growing
        print(f"{path}: {len(ds.frames)} steps, finished")


if __name__ == "__main__":
    main()
