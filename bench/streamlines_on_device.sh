#!/usr/bin/env bash
# Issue 5's run on the GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/streamlines_on_device.sh setup build gputests data scaling gpu    (weak: the weak half alone;
#   studies: seed 002's io, banks, madvise and concurrency experiments)
# carry [".carry", ".whl"]: the -dev packages for the build and the wheels the image lacks.
# The field: synthetic turbulence on 512^3 points (1.5 GiB) in 32^3 blocks and in the Hilbert layout;
# every data manager gets 512 MiB (the cache, or mmap's page-cache budget): three times less than the
# data. Every point is cold (the files' pages dropped before each repeat).
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-flow}
native=$work/turbulence-512.hrc
hilbert=$work/turbulence-512-hilbert.hrc

gputests() {
  # The kernel against the host executor, plainly and under compute-sanitizer memcheck, failures in full.
  build/device/headrace_tests --gtest_filter='ResidentTracerGpu*' > build/resident-gpu.log 2>&1
  echo "resident GPU test exit $?"; grep -E "OK \]|FAILED|Failure|point |differ|Which is|Expected" build/resident-gpu.log | head -30
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  [[ -n $sanitizer ]] || { echo "compute-sanitizer: not found"; return 0; }
  LD_LIBRARY_PATH=/tmp/site/nvidia/libnvcomp/lib64 timeout 300 "$sanitizer" --tool memcheck --error-exitcode 3 \
    build/device/headrace_tests --gtest_filter='ResidentTracerGpu*:QueueGpu.ConsumerStreamWaitsOnAValueFenceEnqueuedBeforeSubmit' \
    > build/resident-sanitizer.log 2>&1
  echo "compute-sanitizer memcheck exit $?"
  grep -E "ERROR SUMMARY|OK \]|FAILED|Failure|Expected|Which is|=========" build/resident-sanitizer.log | head -30
}

data() {
  mkdir -p "$work"
  [[ -f $native ]] || python3 -m headrace generate flow "$native" --dims 512 512 512 --block 32 32 32 --kind turbulence
  [[ -f $hilbert ]] || python3 -m headrace convert "$native" "$hilbert" --layout hilbert --hilbert-bits 7 --chunk-pages 96
}

weak() {
  # The weak half again, with distinct seeds per copy (weak_seeds), 64 seeds a thread (216 made the
  # mmap implementations' 64-thread points run for minutes); the strong half is in scaling.csv.
  within 300 python3 -m headrace bench streamlines "$native" "$hilbert" --study scaling --scalings weak \
    --seeds uniform:64 --steps 1000 --step-size 0.005 --cache-bytes 512M --threads 1,2,4,8,16,32,64 \
    --out "$OUT/weak.csv"
  python3 -m headrace plot "$OUT/weak.csv" --out "$OUT/weak.png" || true
}

scaling() {
  within 330 python3 -m headrace bench streamlines "$native" "$hilbert" --study scaling --seeds uniform:256 \
    --steps 1000 --step-size 0.005 --cache-bytes 512M --threads 1,2,4,8,16,32,64 --out "$OUT/scaling.csv"
  python3 -m headrace plot "$OUT/scaling.csv" --out "$OUT/scaling.png" || true
}

studies() {
  # Seed 002's other experiments (figures 4 to 7) on the same field, 216 lattice seeds, cold.
  for study in io banks madvise concurrency; do
    within 240 python3 -m headrace bench streamlines "$native" "$hilbert" --study "$study" --seeds uniform:256 \
      --steps 1000 --step-size 0.005 --cache-bytes 512M --threads 2,8,16,64 --out "$OUT/$study.csv"
    python3 -m headrace plot "$OUT/$study.csv" --out "$OUT/$study.png" || true
  done
}

gpu() {
  # The GPU's lines on the big field against the CPU: the resident rounds on CPU threads (the same
  # algorithm: bit for bit expected) and the user-managed cache (the CPU tracer).
  within 120 python3 - "$native" <<'PY'
import sys, numpy as np
from headrace.workloads import streamlines as s
path = sys.argv[1]
seeds = s.uniform_seeds(path, 2048)
opts = dict(steps=1000, step_size=0.005, cache_bytes=512 << 20, direction="both")
gpu = s.trace_run(path, seeds, device=0, **opts)
for name, ref in (("resident rounds on the CPU", s.trace_run(path, seeds, manager="resident", device="cpu", **opts)),
                  ("the CPU tracer (user cache)", s.trace_run(path, seeds, manager="user", threads=16, **opts))):
    same = np.array_equal(ref.offsets, gpu.offsets) and np.array_equal(ref.points, gpu.points)
    close = ref.points.shape == gpu.points.shape and float(np.abs(ref.points - gpu.points).max())
    print(f"GPU lines ({len(gpu.points)} points) against {name}: bit-identical {same}, max difference {close}")
print("GPU run:", {k: gpu.stats[k] for k in ("seconds", "resident_rounds", "resident_slots", "resident_units_loaded",
                                              "resident_evictions", "resident_load_seconds", "resident_advance_seconds")})
PY
  within 200 python3 -m headrace bench streamlines "$native" "$hilbert" --study gpu --seeds uniform:8192 \
    --steps 1000 --step-size 0.005 --cache-bytes 512M --threads 16 --out "$OUT/gpu.csv"
  python3 - "$OUT/gpu.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    print(f"{r['implementation']:20s} threads={r.get('threads', ''):3s} {float(r['streamlines_per_s']):10.0f} lines/s "
          f"trace {float(r['seconds']):.2f} s wall {float(r['seconds_min']):.2f} s")
cpu = [r for r in rows if "gpu" not in r["implementation"]]
gpu = [r for r in rows if "gpu" in r["implementation"]]
if cpu and gpu:
    best_cpu = max(cpu, key=lambda r: float(r["streamlines_per_s"]))
    best_gpu = max(gpu, key=lambda r: float(r["streamlines_per_s"]))
    print(f"GPU tracer over the best CPU configuration: {float(best_gpu['streamlines_per_s']) / float(best_cpu['streamlines_per_s']):.2f}x "
          f"({best_gpu['implementation']} against {best_cpu['implementation']} at {best_cpu['threads']} threads)")
PY
}

run_phases "$@"
