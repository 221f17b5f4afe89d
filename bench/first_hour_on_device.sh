#!/usr/bin/env bash
# Issue 35's run on the GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/first_hour_on_device.sh wheels build udev gputests readmegpu lab gridorder
# carry [".carry", ".whl"]: the -dev packages for the build and the nvCOMP wheel (docs/results.md says how
# they are fetched).
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}

readme() {
  # The README's command-line block (as CI runs it), then its GPU block, as written.
  within 240 python3 -m pytest -q -p no:cacheprovider -rfs tests/python/test_readme.py > "$OUT/readme.log" 2>&1
  echo "pytest test_readme.py: exit $?"
  grep -E "^(FAILED|ERROR|E  )|passed|failed" "$OUT/readme.log" | head -40
}

gridorder() {
  # 1.6 GB of flow in native blocks (a 512 x 512 x 256 grid of float32 x 3, 2 frames) and a linear volume of the
  # same bytes: what the natural shape costs a GPU stream, against stored order and a view.
  mkdir -p "$work"
  [[ -f $work/flow-blocks.hrc ]] || within 200 python3 -m headrace generate flow "$work/flow-blocks.hrc" --dims 512 512 256 \
    --frames 2 | tail -1
  [[ -f $work/volume-linear.hrc ]] || within 120 python3 -m headrace generate volume "$work/volume-linear.hrc" \
    --dims 1024 512 384 --frames 2 | tail -1
  within 150 python3 -m headrace.bench.cases.grid_order "$work/flow-blocks.hrc" "$work/volume-linear.hrc" --repeats 5 \
    --csv "$OUT/grid_order.csv"
}

readmegpu() {
  # The README's GPU block as written, in a folder holding what its lines read (made by the CPU block's own
  # lines; the image lacks vtk and xarray, which the CPU block's other inputs are written with).
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # the machine's user is root
  within 240 python3 - <<'PY'
import sys, tempfile
from pathlib import Path
import h5py, numpy
sys.path.insert(0, "tests/python")
from test_readme import blocks, command_lines, run_line
import os
folder = Path(tempfile.mkdtemp())
with h5py.File(folder / "run.h5part", "w") as f:
    for step in range(3):
        group = f.create_group(f"Step#{step}")
        group.attrs["TimeValue"] = 0.5 * step
        for axis in ("x", "y", "z", "vx", "vy", "vz"):
            group[axis] = numpy.random.default_rng(step).random(500)
env = {**os.environ, "HEADRACE_PROFILES": str(folder / "profiles.json")}
(cpu,), (gpu,) = blocks("cpu"), blocks("gpu")
needed = ("headrace generate particles", "headrace generate flow", "headrace convert run.h5part", "headrace convert f.hrc")
for line in [l for l in command_lines(cpu) if l.startswith(needed)] + command_lines(gpu):
    run_line(line, folder, env)
    print("ok:", line, flush=True)
PY
}

lab() {
  # The lab on the files the product writes: uncompressed (generate's default), lz4, and a series with empty frames.
  mkdir -p "$work/lab" && cd "$work/lab" || return 1
  python3 -m headrace generate particles p.hrc --particles 20000 --frames 2 --force > /dev/null
  python3 -m headrace generate particles pz.hrc --particles 20000 --frames 2 --codec lz4 --force > /dev/null
  python3 -c "
import numpy, headrace
with headrace.Writer('pe.hrc', [headrace.FieldSpec('particles', 'float32', 8)]) as w:
    for t, n in enumerate((20000, 0, 20000)):
        p = numpy.random.default_rng(t).random((n, 8), numpy.float32)
        p[:, 3] *= 0.005  # radii of a fine cloud, as generate's
        w.write(w.add_frame(time=float(t)), 'particles', p)"
  for file in p.hrc pz.hrc pe.hrc; do
    within 60 python3 -m headrace bench particles $file --sample 3 --budget 30 --device 0 --out "$OUT/lab-$file.csv" 2>&1 | tail -4
    echo "bench particles $file: exit ${PIPESTATUS[0]}"
    within 60 python3 -m headrace tune $file --budget 20 --device 0 2>&1 | tail -3
    echo "tune $file: exit ${PIPESTATUS[0]}"
  done
  cd - > /dev/null
}

run_phases "$@"
