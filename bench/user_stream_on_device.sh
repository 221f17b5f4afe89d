#!/usr/bin/env bash
# Issue 15's run on the GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/user_stream_on_device.sh setup build udev data user
#   (phases: setup build udev tests gputests data probe user render diskinfo sweep parity unpinned unpinnedsweep fresh halfprobe diskqueue hotprobe
#    timeline stagingmem copystreams freshcold renderbatch)
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

fresh() {
  # The second run of a script: one pass over the hot file in a new process each time, headrace's
  # defaults against KvikIO (POSIX mode), the clock from before the import to the end of the pass.
  cat "$work/particles.hrc" > /dev/null
  local i
  for i in 1 2 3; do
    python3 -c "
import time; start = time.perf_counter()
import cupy, headrace
ds = headrace.open('$work/particles.hrc'); s = cupy.cuda.get_current_stream(); raw = 0
with ds.stream(device=0) as frames:
    for f in frames:
        cupy.from_dlpack(f['particles']); raw += f.stats.raw_bytes; f.release(stream=s.ptr)
s.synchronize(); print(f'fresh process, headrace defaults: {raw / (time.perf_counter() - start) / 1e9:.2f} GB/s')"
    python3 -c "
import time; start = time.perf_counter()
import cupy, kvikio, kvikio.defaults, headrace
ds = headrace.open('$work/particles.hrc'); size = ds.container.index_offset - 4096
b = cupy.empty(size, dtype=cupy.uint8)
with kvikio.defaults.set({'compat_mode': True, 'num_threads': 16, 'task_size': 16 << 20}):
    with kvikio.CuFile('$work/particles.hrc', 'r') as f: f.pread(b, size, 4096).get()
cupy.cuda.runtime.deviceSynchronize(); print(f'fresh process, KvikIO POSIX: {size / (time.perf_counter() - start) / 1e9:.2f} GB/s')"
  done
}

halfprobe() {
  # Per frame of a cold and a half-cached pass: when it was handed out, where its bytes came from.
  within 120 python3 bench/half_cached_probe.py "$work/particles.hrc" --rounds 2
}

diskqueue() {
  # How each reader keeps the disk busy in a cold pass: the block device's counters around each.
  within 240 python3 bench/disk_queue_probe.py "$work/particles.hrc" --rounds "${ROUNDS:-3}" \
    --options '{"staging_bytes": 1073741824}' '{"cache_policy": "use"}' 
}

timeline() {
  # One pass flight by flight (Queue.flight_timeline): the page cache's lane of a file not page-locked
  # (default staging, 1 GiB, no checksums), and the disk's lane cold.
  within 300 python3 bench/flight_timeline_probe.py "$work/particles.hrc" --states hot,cold --out "$OUT/timeline" \
    --options '{"pin_files": "off"}' '{"pin_files": "off", "staging_bytes": 1073741824}' \
      '{"pin_files": "off", "verify_checksums": false}'
}

stagingmem() {
  # Which page-locked memory staging should be: time to make it, O_DIRECT reads into it.
  within 200 python3 bench/staging_memory_probe.py "$work/particles.hrc" --rounds "${ROUNDS:-3}"
}

copystreams() {
  # Reads of the hot file and H2D copies at once: the copies on one stream or on several.
  within 200 python3 bench/copy_streams_probe.py "$work/particles.hrc" --rounds "${ROUNDS:-3}"
}

freshcold() {
  # The first run of a script on a cold file: a new process per pass, staging in huge pages or not.
  within 200 python3 bench/fresh_cold_pass.py "$work/particles.hrc" --rounds "${ROUNDS:-3}" --out "$OUT/freshcold"
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

hotprobe() {
  within 200 python3 bench/hot_path_probe.py "$work/particles.hrc" --rounds 3
}

source "$(dirname "$0")/cold_sweep.sh"

run_phases "$@"
