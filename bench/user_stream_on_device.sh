#!/usr/bin/env bash
# Issue 15's run on the GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/user_stream_on_device.sh setup build udev data user
#   (phases: setup build udev tests gputests data probe user render diskinfo sweep parity unpinned unpinnedsweep
#    renderbatch; issue 15's one-off probes were retired in issue 36, their findings in docs/results.md)
# carry [".carry", ".whl"]: the -dev packages for the build and the wheels the image lacks (nvCOMP,
# KvikIO 26.10 and its rapids-logger; docs/results.md says how they are fetched).
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}



gputests() {
  within 150 python3 -m pytest -q -p no:cacheprovider -rs -m gpu -o faulthandler_timeout=25 tests/python 2>&1 | tail -15
}

data() {
  mkdir -p "$work"
  # 3.2 GB: 12.5 M particles x 8 frames (400 MB a frame), and 2,500 frames of 1,000 particles (32 KB).
  [[ -f $work/particles.hrc ]] || python3 -m headrace generate particles "$work/particles.hrc" \
    --particles 12500000 --frames 8 --seed 0 > /dev/null
  [[ -f $work/small.hrc ]] || python3 -m headrace generate particles "$work/small.hrc" \
    --particles 1000 --frames 2500 --seed 1 > /dev/null
  sync
  ls -la "$work"
}


user() {
  probe
  within 420 python3 -m headrace.bench.cases.user_stream "$work/particles.hrc" --rounds "${ROUNDS:-5}" \
    --probe "$OUT/ceiling.json" --small "$work/small.hrc" --small-loop 4 --out "$OUT"
}

render() {
  # The particle render loop's default method (auto) on a 100 M-particle frame from the page cache,
  # beside ram-pinned, pread and vram (seed 000's algorithm 3; 128 KB chunks as in issue 7's files).
  [[ -f $work/p100m.hrc ]] || python3 -m headrace generate particles "$work/p100m.hrc" \
    --particles 100000000 --frames 1 --chunk-size 128000 > /dev/null
  sync  # a file just written is still being written back: that would run beside the first frames
  within 240 python3 -m headrace bench particles "$work/p100m.hrc" --device 0 --grid \
    --methods auto,ram-pinned,pread,vram --batches 1000000 --segments 16 --cache hot --wall-seconds 0.5 \
    --out "$OUT/render-100m.csv" | tail -12
}








renderbatch() {
  # The render loop's default method under flights of more requests (its 128 KB chunks from a
  # page-locked file: max_batch requests a flight), the settings alternating, three runs each.
  [[ -f $work/p100m.hrc ]] || { python3 -m headrace generate particles "$work/p100m.hrc" \
    --particles 100000000 --frames 1 --chunk-size 128000 > /dev/null; sync; }
  cat "$work/p100m.hrc" > /dev/null  # hot: an earlier phase may have dropped the caches
  local i batch
  for i in 1 2 3; do
    for batch in 64 128 256; do
      HEADRACE_MAX_BATCH=$batch within 60 python3 -m headrace bench particles "$work/p100m.hrc" --device 0 --grid \
        --methods auto --batches 1000000 --segments 16 --cache hot --wall-seconds 0.5 --out "$OUT/render-batch$batch-$i.csv" > /dev/null
      python3 -c "
import csv
for r in csv.DictReader(open('$OUT/render-batch$batch-$i.csv')): print('max_batch $batch run $i', r['method'], round(float(r['frame_seconds']) * 1e3, 1), 'ms; h2d', round(float(r['h2d_s_per_frame']) * 1e3, 1))"
    done
  done
}


source "$(dirname "$0")/cold_sweep.sh"

run_phases "$@"
