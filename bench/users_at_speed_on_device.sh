#!/usr/bin/env bash
# Issue 38's run on the GPU machine (device tool, one GPU), from the repo root, results under $OUT: the user's
# commands exactly as the issue writes them, each in a fresh process with its defaults (setup and first frame
# counted), beside the yardsticks of the same call, then one table (bench/users_at_speed_table.py).
#   call 1: bash bench/users_at_speed_on_device.sh setup build data   (again if cut: finished files are kept, a cut one is never half written)
#   call 2: bash bench/users_at_speed_on_device.sh setup build yardsticks render play trace overlap compressed table
# The trace alone (its data made here, where writing its lines goes): setup build flowdata starts trace writeparts
# Where a phase's cost goes: parts (one render's wall), checksums (verification on/off), compressedparts,
# checksumspeed (host and GPU XXH3), gpuchecks (the C++ GPU suite), firstframe (a process's first frame
# and its second), seriesparts (the 10 M series' frames by segments and checks), seriesbetween (what lies
# between two of its frames: the image read back, its PNG), profile (imports, Python
# calls and page-locking of one render and one trace), pinqueued (copies queued beside a registration),
# timeline (when each part of the one-frame command's wall happens), exitparts (what its end costs).
# carry [".carry", ".whl"]: the -dev packages and the wheels the image lacks (nvCOMP, KvikIO).
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}
rounds=${ROUNDS:-3}

data() {
  # 100 M particles (3.2 GB, one frame) and the same in GDeflate; 10 M particles x 16 frames; a 100 M-cell
  # AMR series of 24 frames (3 levels, 400 MB a frame); a 256^3 flow (201 MB).
  mkdir -p "$work"
  local start=$SECONDS
  [[ -f $work/p100.hrc ]] || within 300 python3 -m headrace generate particles "$work/p100.hrc" --particles 100000000 \
    --frames 1 --seed 1 > /dev/null
  [[ -f $work/p10m.hrc ]] || within 200 python3 -m headrace generate particles "$work/p10m.hrc" --particles 10000000 \
    --frames 16 --seed 2 > /dev/null
  [[ -f $work/flow256.hrc ]] || python3 -m headrace generate flow "$work/flow256.hrc" --dims 256 256 256 > /dev/null
  [[ -f $work/p100-gdeflate.hrc ]] || within 200 python3 -m headrace compress "$work/p100.hrc" "$work/p100-gdeflate.hrc" \
    --codec gdeflate > /dev/null
  [[ -f $work/amr100m.hrc ]] || within 500 python3 -m headrace generate amr "$work/amr100m.hrc" --cells 100000000 --levels 3 \
    --frames 24 > /dev/null
  sync
  ls -la "$work"; echo "data in $(( SECONDS - start )) s"
}

seriesdata() {  # only what the overlap, firstframe and seriesparts phases read
  mkdir -p "$work"
  [[ -f $work/p100.hrc ]] || within 300 python3 -m headrace generate particles "$work/p100.hrc" --particles 100000000 \
    --frames 1 --seed 1 > /dev/null
  [[ -f $work/p10m.hrc ]] || within 200 python3 -m headrace generate particles "$work/p10m.hrc" --particles 10000000 \
    --frames 16 --seed 2 > /dev/null
}

compresseddata() {  # only what the compressed phase reads
  seriesdata
  [[ -f $work/p100-gdeflate.hrc ]] || within 200 python3 -m headrace compress "$work/p100.hrc" "$work/p100-gdeflate.hrc" \
    --codec gdeflate > /dev/null
}

flowdata() {  # only what the trace phase reads
  mkdir -p "$work"
  [[ -f $work/flow256.hrc ]] || python3 -m headrace generate flow "$work/flow256.hrc" --dims 256 256 256 > /dev/null
}

writeparts() {  # where writing the GPU trace's lines goes (after trace)
  within 120 python3 bench/trace_write_parts.py build/lines-gpu.npz "$work/flow256.hrc" --rounds "$rounds" | tee "$OUT/write-parts.txt"
}

cold() {  # the page cache dropped; a fresh process follows, so no page-locked pages survive
  sync; echo 3 > /proc/sys/vm/drop_caches
}

timed() {  # timed NAME COMMAND...: wall seconds of one fresh process into users.csv, its output kept
  local name=$1 start wall status
  shift
  start=$EPOCHREALTIME
  within 300 "$@" > "$OUT/$name.log" 2> "build/$name.err"
  status=$?
  wall=$(awk "BEGIN { print $EPOCHREALTIME - $start }")
  [[ -f $OUT/users.csv ]] || echo "name,seconds,exit" > "$OUT/users.csv"
  echo "$name,$wall,$status" >> "$OUT/users.csv"
  (( status == 0 )) || tail -3 "build/$name.err"
}

starts() {  # the bare process start: interpreter, import headrace, the CUDA context (one after another, and overlapped)
  local round
  for round in $(seq "$rounds"); do
    timed "start-$round" python3 -c "import headrace; from headrace import _ext; _ext.CudaStream(0)"
    # the same with the context made on a thread as the package loads, as the headrace script's is
    timed "start-ahead-$round" python3 -c "import sys; sys.orig_argv = [sys.executable, 'headrace', 'stream', 'x']
import headrace; from headrace import _gpu_ahead; _gpu_ahead._script[1].join()"
  done
}

yardsticks() {
  starts
  python3 -c "from headrace import _ext; print(f'pinned_h2d_gbps,{_ext.pinned_copy_rate(0) / 1e9:.2f}')" >> "$OUT/ceilings.csv"
  cold
  local start=$EPOCHREALTIME
  dd if="$work/p100.hrc" of=/dev/null bs=16M iflag=direct status=none
  awk "BEGIN { printf \"disk_read_gbps,%.3f\n\", $(stat -c %s "$work/p100.hrc") / ($EPOCHREALTIME - $start) / 1e9 }" >> "$OUT/ceilings.csv"
  # dd reads at QD 1; the disk's ceiling is its best queue depth (headrace probe, O_DIRECT through io_uring)
  within 90 python3 -m headrace probe "$work" --size 4G --patterns sequential --block-sizes 4M --queue-depths 32,64 \
    --threads 1,4 --seconds 2 --json > build/probe.json 2> build/probe.err && \
    python3 -c "import json; print(f\"disk_probe_gbps,{json.load(open('build/probe.json'))['ceiling']['gigabytes_per_second']:.3f}\")" >> "$OUT/ceilings.csv"
  rm -f "$work/headrace-probe.bin"
  start=$EPOCHREALTIME
  dd if=/dev/zero of="$work/write-probe" bs=16M count=64 oflag=direct status=none; rm -f "$work/write-probe"
  awk "BEGIN { printf \"disk_write_gbps,%.3f\n\", 1073741824 / ($EPOCHREALTIME - $start) / 1e9 }" >> "$OUT/ceilings.csv"
  cat "$OUT/ceilings.csv"
}

render() {
  local round
  cat "$work/p100.hrc" "$work/p10m.hrc" > /dev/null  # hot
  for round in $(seq "$rounds"); do
    timed "render-p100-$round" python3 -m headrace render "$work/p100.hrc" --frame 0 --stats --out build/p100.png
    timed "render-p10m-series-$round" python3 -m headrace render "$work/p10m.hrc" --frames 0:16 --stats --out build/p10m/
  done
  grep -h "frame 0:" "$OUT"/render-p100-*.log | head -3
}

parts() {  # where one render process's wall goes (bench/render_parts.py), the defaults and the lab's variants
  cat "$work/p100.hrc" > /dev/null
  local variant
  local round
  for round in $(seq "$rounds"); do  # the defaults, timed as a command is (the process's exit counted)
    timed "render-parts-$round" python3 bench/render_parts.py "$work/p100.hrc"
  done
  cat "$OUT/render-parts-1.log"
  for variant in "--segments 64" "--method ram-pinned"; do
    echo "render_parts $variant"
    within 120 python3 bench/render_parts.py "$work/p100.hrc" $variant | tee -a "$OUT/render-parts-variants.csv"
  done
}

checksums() {  # the hot paths with the checks on the host, on the GPU (the default), and none: what checking costs
  mkdir -p "$work"
  [[ -f $work/p100.hrc ]] || python3 -m headrace generate particles "$work/p100.hrc" --particles 100000000 --frames 1 --seed 1 > /dev/null
  [[ -f $work/p10m.hrc ]] || python3 -m headrace generate particles "$work/p10m.hrc" --particles 10000000 --frames 16 --seed 2 > /dev/null
  [[ -f $work/amr8.hrc ]] || python3 -m headrace generate amr "$work/amr8.hrc" --cells 100000000 --levels 3 --frames 8 > /dev/null
  cat "$work/p100.hrc" "$work/p10m.hrc" "$work/amr8.hrc" > /dev/null
  local round mode
  for round in 1 2; do
    for mode in HEADRACE_CHECK_ON=host HEADRACE_CHECK_ON=gpu HEADRACE_VERIFY_CHECKSUMS=0; do  # host beside the DMA, GPU, none
      echo "$mode"
      (export "$mode"; within 60 python3 bench/render_parts.py "$work/p100.hrc") | grep -E "renderer|render-|total"
      (export "$mode"; within 60 python3 -m headrace render "$work/p10m.hrc" --frames 0:16 --stats --out build/p10m/) | grep -E "frame (1|7):|images"
      (export "$mode"; within 60 python3 -m headrace play "$work/amr8.hrc" --device 0) | grep -E "all:"
    done
  done
}

play() {
  local round
  cat "$work/amr100m.hrc" > /dev/null
  for round in $(seq "$rounds"); do
    timed "play-amr-hot-$round" python3 -m headrace play "$work/amr100m.hrc" --device 0 --record "$OUT/play-hot-$round.json"
  done
  for round in $(seq "$rounds"); do
    cold
    # --cache cold: the default (hot) reads the file into the page cache first, whatever was dropped.
    timed "play-amr-cold-$round" python3 -m headrace play "$work/amr100m.hrc" --device 0 --cache cold \
      --record "$OUT/play-cold-$round.json"
  done
  tail -n 4 "$OUT/play-amr-hot-1.log" "$OUT/play-amr-cold-1.log"
}

trace() {
  # Resident (the field fits the GPU cache) and at 4 x the cache; the 16-thread CPU tracer, same lines.
  local round
  cat "$work/flow256.hrc" > /dev/null
  for round in $(seq "$rounds"); do
    timed "trace-gpu-$round" python3 -m headrace trace "$work/flow256.hrc" --seeds uniform:65536 --steps 2000 --device 0 \
      --out build/lines-gpu.npz --json
    timed "trace-gpu-quarter-cache-$round" python3 -m headrace trace "$work/flow256.hrc" --seeds uniform:65536 --steps 2000 \
      --device 0 --cache-bytes 50M --out build/lines-quarter.npz --json
  done
  timed "trace-cpu16-1" python3 -m headrace trace "$work/flow256.hrc" --seeds uniform:65536 --steps 2000 --device cpu \
    --threads 16 --out build/lines-cpu.npz --json
  python3 - <<'EOF'
import numpy as np
gpu, cpu = np.load("build/lines-gpu.npz"), np.load("build/lines-cpu.npz")
same = all(np.array_equal(gpu[k], cpu[k]) for k in ("points", "offsets"))
print("GPU lines equal the CPU's:", same)
EOF
  # A tracer held in one process (a notebook's second call) against the 16-thread CPU tracer, same lines.
  within 240 python3 bench/held_trace.py "$work/flow256.hrc" --seeds 65536 --steps 2000 --device 0 --threads 16 \
    --rounds "$rounds" > "$OUT/held-trace.csv"
  cat "$OUT/held-trace.csv"
}

tracewall() {  # the GPU trace command alone, its rounds (the trace phase without the CPU and held tracers)
  local round
  cat "$work/flow256.hrc" > /dev/null
  for round in $(seq "$rounds"); do
    timed "trace-gpu-$round" python3 -m headrace trace "$work/flow256.hrc" --seeds uniform:65536 --steps 2000 --device 0 \
      --out build/lines-gpu.npz --json
  done
  grep -hE '"(seconds|velocity_seconds|resident_make_seconds|resident_collect_seconds|command_seconds|write_seconds)"' \
    "$OUT"/trace-gpu-*.log
}

pinrates() {  # page-locking the 100 M file: whole, in parts, progressively beside copies, and what it does to copies
  cat "$work/p100.hrc" > /dev/null
  within 200 python3 bench/pin_rates.py "$work/p100.hrc" --rounds "$rounds" --threads 8 | tee "$OUT/pin-rates.txt"
}

timeline() {  # when each part of the one-frame command's wall happens, beside the bare start's, from the process's start
  cat "$work/p100.hrc" > /dev/null
  within 60 python3 bench/command_timeline.py --bare --rounds "$rounds" > "$OUT/timeline-bare.csv"
  within 90 python3 bench/command_timeline.py --rounds "$rounds" -- render "$work/p100.hrc" --frame 0 --stats \
    --out build/p100.png > "$OUT/timeline-render.csv"
  python3 - "$OUT/timeline-bare.csv" "$OUT/timeline-render.csv" <<'PY'
import csv, statistics, sys
for path in sys.argv[1:]:
    rows = list(csv.DictReader(open(path)))
    names = list(dict.fromkeys(r["stamp"] for r in rows))
    print(path.rsplit("/", 1)[-1], "; ".join(f"{n} {statistics.median(float(r['ms']) for r in rows if r['stamp'] == n):.0f}" for n in names))
PY
}

exitparts() {  # what the one-frame render process's end costs: returning, dropping the GPU's objects first, os._exit
  cat "$work/p100.hrc" > /dev/null
  within 90 python3 bench/exit_parts.py "$work/p100.hrc" --rounds "$rounds" | tee "$OUT/exit-parts.csv"
}

pinqueued() {  # copies queued before a registration: does the copy engine stall? and parts registered with their copies queued
  cat "$work/p100.hrc" > /dev/null
  within 150 python3 bench/pin_rates.py "$work/p100.hrc" --rounds "$rounds" --only queued | tee "$OUT/pin-queued.txt"
}

profile() {  # where a command's wall goes: its imports (-X importtime), its Python calls (cProfile), page-locking
  cat "$work/p100.hrc" "$work/flow256.hrc" > /dev/null
  python3 -c "import sys, numpy, pathlib; print('dont_write_bytecode', sys.flags.dont_write_bytecode, 'numpy pycs',
    len(list(pathlib.Path(numpy.__file__).parent.rglob('*.pyc'))))"
  python3 -X importtime -m headrace render "$work/p100.hrc" --frame 0 --out build/p100.png 2> build/importtime.txt > /dev/null
  echo "imports of headrace render, slowest (cumulative us):"; sort -t'|' -k2 -n -r build/importtime.txt | head -25
  python3 -m cProfile -s cumtime -m headrace render "$work/p100.hrc" --frame 0 --stats --out build/p100.png | head -60
  python3 -m cProfile -s cumtime -m headrace trace "$work/flow256.hrc" --seeds uniform:65536 --steps 2000 --device 0 \
    --out build/lines-gpu.npz --json | head -110
  within 120 python3 bench/pin_rates.py "$work/p100.hrc" --rounds "$rounds"
}

overlap() {
  # ds.stream with a CuPy kernel on every frame, the kernel sized to the stream's time: both against each alone.
  # Hot in one process; cold, the stream alone and both, each in a fresh process after the cache is dropped, in rounds.
  cat "$work/p10m.hrc" > /dev/null
  within 200 python3 bench/users_at_speed_overlap.py "$work/p10m.hrc" > "$OUT/overlap.csv"
  local passes; passes=$(awk -F, 'NR == 2 { print $4 }' "$OUT/overlap.csv")
  local what round
  for round in $(seq "$rounds"); do  # alternating: the disk's rate drifts between one cold read and the next
    for what in stream both; do
      cold
      within 200 python3 bench/users_at_speed_overlap.py "$work/p10m.hrc" --cold "$what" --passes "$passes" > build/overlap-cold.txt
      tail -1 build/overlap-cold.txt >> "$OUT/overlap.csv"
      grep "^#" build/overlap-cold.txt | sed "s/^# /$what-cold round $round: /" >> "$OUT/overlap-timeline.txt"
    done
  done
  cat "$OUT/overlap.csv"
}

compressed() {
  local round name
  for round in $(seq "$rounds"); do
    for name in p100 p100-gdeflate; do
      cold
      timed "render-$name-cold-$round" python3 -m headrace render "$work/$name.hrc" --frame 0 --stats --out build/c.png
    done
  done
}

checksumspeed() {  # XXH3 on every core and on the GPU (ChunkHasher), its sums against the host's
  within 120 ./build/device/headrace_checksum_speed | tee "$OUT/checksum-speed.txt"
}

compressedparts() {  # where a compressed file's cold frame goes: 64 KiB GDeflate chunks, flights of more of them, 4 MiB chunks
  mkdir -p "$work"
  [[ -f $work/p100.hrc ]] || within 300 python3 -m headrace generate particles "$work/p100.hrc" --particles 100000000 \
    --frames 1 --seed 1 > /dev/null
  [[ -f $work/p100-gdeflate.hrc ]] || within 200 python3 -m headrace compress "$work/p100.hrc" "$work/p100-gdeflate.hrc" \
    --codec gdeflate > /dev/null
  [[ -f $work/p100-gdeflate-4m.hrc ]] || within 200 python3 -m headrace compress "$work/p100.hrc" \
    "$work/p100-gdeflate-4m.hrc" --codec 'gdeflate(block=65536)' --chunk-size 4M > /dev/null
  local round
  for round in $(seq "$rounds"); do
    cold; within 60 python3 bench/compressed_cold_parts.py "$work/p100.hrc" | tee -a "$OUT/compressed-parts.jsonl"
    cold; within 60 python3 bench/compressed_cold_parts.py "$work/p100-gdeflate.hrc" | tee -a "$OUT/compressed-parts.jsonl"
    cold; (export HEADRACE_CHECK_ON=host; within 60 python3 bench/compressed_cold_parts.py "$work/p100-gdeflate.hrc") | \
      sed 's/^{/{"check_on": "host", /' | tee -a "$OUT/compressed-parts.jsonl"
    cold; within 60 python3 bench/compressed_cold_parts.py "$work/p100-gdeflate-4m.hrc" | tee -a "$OUT/compressed-parts.jsonl"
  done
  python3 - "$OUT/compressed-parts.jsonl" <<'EOF2'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    row = json.loads(line)
    rows.setdefault((row["file"].rsplit("/", 1)[-1], row.get("check_on", "gpu")), []).append(row["frame_ms"])
for (name, check), frames in rows.items():
    print(f"{name} (checks on the {check}): frame ms {statistics.median(frames):.0f} ({', '.join(f'{f:.0f}' for f in frames)})")
EOF2
}

firstframe() {  # a render process's first frame against its second: kernels loaded lazily or eagerly, checks where
  cat "$work/p100.hrc" > /dev/null
  local mode
  for mode in CUDA_MODULE_LOADING=LAZY CUDA_MODULE_LOADING=EAGER HEADRACE_CHECK_ON=host HEADRACE_VERIFY_CHECKSUMS=0; do
    (export "$mode"; within 60 python3 bench/render_parts.py "$work/p100.hrc" --frames 2) | grep -E "renderer|render-" | \
      cut -c1-60 | sed "s/^/$mode /"
  done
}

seriesparts() {  # the 10 M series' frames: segments for one frame's batches or two, checks on the GPU, host, none
  cat "$work/p10m.hrc" > /dev/null
  local how
  for how in "" "--segments 32" "HEADRACE_CHECK_ON=host" "HEADRACE_VERIFY_CHECKSUMS=0"; do
    local options=() environment=()
    [[ $how == --* ]] && read -ra options <<< "$how"
    [[ $how == HEADRACE_* ]] && environment=("$how")
    (export "${environment[@]}"; within 60 python3 -m headrace render "$work/p10m.hrc" --frames 0:16 --stats --out build/p10m/ \
      "${options[@]}") | grep -E "frame (1|7|15):" | sed "s/^/${how:-defaults} /"
  done
}

seriesbetween() {  # what lies between two frames of the 10 M series: nothing, the image read back, and its PNG too (8 to 1 writers)
  cat "$work/p10m.hrc" > /dev/null
  within 120 python3 bench/series_between.py "$work/p10m.hrc" --frames 16 --png-threads 4,2,1 | tee "$OUT/series-between.csv"
}

table() {
  python3 bench/users_at_speed_table.py "$OUT" --lines build/lines-gpu.npz | tee "$OUT/users.md"
}

run_phases "$@"
