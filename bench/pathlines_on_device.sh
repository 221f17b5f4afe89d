#!/usr/bin/env bash
# Issue 40's run on the GPU machine (device tool, one GPU), from the repo root, results under $OUT: the GPU's
# pathlines checked against the CPU reference (the C++ GPU suite, pytest -m gpu), then the series the issue
# names (a 256^3 double gyre, 64 frames) traced by 1 M pathlines beside the engine streaming the same frames
# (headrace bench pathlines: each pass a fresh process), hot and cold, with fio's disk ceiling of the same call.
#   bash bench/pathlines_on_device.sh setup build gpuchecks gputests data fioceiling hot cold
#   bash bench/pathlines_on_device.sh setup build data fixed      (a call's costs besides its frames)
#   bash bench/pathlines_on_device.sh setup build data budget      (blocks streamed per interval: a cache of one frame)
# carry [".carry", ".whl"]: the -dev packages, the wheels and fio the image lacks (scripts/device_carry.sh).
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}
rounds=${ROUNDS:-3}
seeds=${SEEDS:-1000000}
frames=${FRAMES:-64}

data() {  # the double gyre on 256^3 points, 64 frames 0.1 apart (201 MB a frame, 12.9 GB)
  mkdir -p "$work"
  local start=$SECONDS
  [[ -f $work/gyre256.hrc ]] || within 400 python3 -m headrace generate flow "$work/gyre256.hrc" --kind double-gyre \
    --dims 256 256 256 --frames "$frames" --dt 0.1 > /dev/null
  sync
  ls -la "$work"; echo "data in $(( SECONDS - start )) s"
}

fioceiling() {  # the disk's best of fio over the series, caches dropped before each: O_DIRECT io_uring and buffered psync
  command -v fio > /dev/null || { echo "no fio here"; return 0; }
  echo "mode,jobs,depth,block,gbps" > "$OUT/fio.csv"
  local shape mode jobs depth block
  for shape in "direct 4 32 4M" "direct 1 64 16M" "buffered 16 1 16M"; do
    read -r mode jobs depth block <<< "$shape"
    sync; echo 3 > /proc/sys/vm/drop_caches
    echo "$mode,$jobs,$depth,$block,$(fio_rate "$work/gyre256.hrc" "$mode" "$jobs" "$depth" "$block")" >> "$OUT/fio.csv"
  done
  cat "$OUT/fio.csv"
}

hot() {
  echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null) defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)"
  within 420 python3 -m headrace bench pathlines "$work/gyre256.hrc" --seeds "$seeds" --step-size 0.05 --device 0 \
    --cache hot --rounds "$rounds" --out "$OUT/hot" 2>&1 | tail -n 4
}

cold() {
  local disk
  disk=$(python3 -c "import csv; print(max(float(r['gbps']) for r in csv.DictReader(open('$OUT/fio.csv'))))" 2>/dev/null || echo "")
  within 420 python3 -m headrace bench pathlines "$work/gyre256.hrc" --seeds "$seeds" --step-size 0.05 --device 0 \
    --cache cold --rounds "${COLD_ROUNDS:-2}" ${disk:+--disk-gbps "$disk"} --out "$OUT/cold" 2>&1 | tail -n 4
}

fixed() {  # what a call costs besides its frames: the first interval alone (1 k and 1 M seeds), then the whole series
  # twice in one process (the second without the driver's start): each call's wall beside the tracer's own seconds
  local probe=$OUT/fixed.py
  cat > "$probe" <<'PY'
import json, sys, time
started = time.perf_counter()
from headrace.workloads import streamlines
path, count, calls, t1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), None if sys.argv[4] == "end" else float(sys.argv[4])
seeds = streamlines.uniform_seeds(path, count)
for call in range(calls):
    begun = time.perf_counter()
    result = streamlines.trace_pathlines(path, seeds, step_size=0.05, device=0, t1=t1)
    s = result.stats
    ended = time.perf_counter()
    print(json.dumps({"seeds": s["seeds"], "call": call, "process_s": ended - started, "call_s": ended - begun,
                      "trace_s": s["seconds"], "outside_s": ended - begun - s["seconds"], "make_s": s["resident_make_seconds"],
                      "load_wait_s": s["resident_load_seconds"], "collect_s": s["resident_collect_seconds"],
                      "point_capacity": s["point_capacity"]}))
    del result
PY
  within 60 python3 "$probe" "$work/gyre256.hrc" 1000 1 0.1
  within 60 python3 "$probe" "$work/gyre256.hrc" 1000000 1 0.1
  within 60 python3 "$probe" "$work/gyre256.hrc" 1000000 2 end
}

budget() {  # 100 k paths with the cache at one frame (201 MB: too small for two, units loaded in rounds) against whole frames
  within 300 python3 -m headrace.bench.cases.pathlines "$work/gyre256.hrc" --seeds "${BUDGET_SEEDS:-100000}" --step-size 0.05 \
    --device 0 --rounds 2 --budget-cache $(( 256 * 256 * 256 * 12 )) --out "$OUT/budget" 2>&1 | tail -n 8
}

run_phases "$@"
