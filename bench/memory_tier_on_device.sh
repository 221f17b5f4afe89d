#!/usr/bin/env bash
# Issue 39's run on the GPU machine (device tool, one GPU), from the repo root, results under $OUT:
#   bash bench/memory_tier_on_device.sh setup build udev tierdata passes keptpasses routes explain pressure
# heldflights: the held zstd pass's flights (bench/held_flights.py) at HELD_STAGING's staging sizes
# passes: each cache_policy (and KvikIO) over a 3.2 GB series and its zstd copy, cold, two passes in a process
# and a second process after it; pressure: a stream in a cgroup v2 of 2 GiB (memory.max, no swap), the file
# 3.2 GB: its rate, the cgroup's peak and whether it met the OOM killer.
# carry [".carry", ".whl"]: the -dev packages and the wheels the image lacks (nvCOMP, KvikIO).
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}

cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }  # a fresh process follows: no page-locked pages survive

tierdata() {  # 3.2 GB of particles (8 frames of 400 MB) and the same through zstd (not with TIER_PLAIN_ONLY=1)
  mkdir -p "$work"
  [[ -f $work/particles.hrc ]] || within 120 python3 -m headrace generate particles "$work/particles.hrc" --particles 12500000 \
    --frames 8 --seed 0 > /dev/null
  [[ -n ${TIER_PLAIN_ONLY:-} || -f $work/particles-zstd.hrc ]] || within 200 python3 -m headrace compress "$work/particles.hrc" "$work/particles-zstd.hrc" \
    --codec zstd > /dev/null
  sync
  ls -la "$work"/particles*.hrc
  free -g | head -2
}

passes() {  # PASS_FILES (particles particles-zstd), PASS_POLICIES (auto keep kvikio), PASSES a process (2), PASS_ROUNDS (1): each round from a cache drop
  echo "file,policy,process,pass,seconds,gbps,bytes_from_disk,bytes_from_cache,cpu_s_per_gb" > "$OUT/passes.csv"
  local file policy process round
  for round in $(seq "${PASS_ROUNDS:-1}"); do
    for file in ${PASS_FILES:-particles particles-zstd}; do
      for policy in ${PASS_POLICIES:-auto keep kvikio}; do
        [[ $file == particles-zstd && $policy == kvikio ]] && continue  # KvikIO reads the stored bytes, not the frames
        cold
        for process in 1 2; do
          within 120 python3 bench/cache_policy_passes.py "$work/$file.hrc" --policy "$policy" --passes "${PASSES:-2}" --process "$process" \
            >> "$OUT/passes.csv" 2> build/passes.err || tail -3 build/passes.err
        done
      done
    done
  done
  cat "$OUT/passes.csv"
}

decoderate() {  # the zstd copy's chain decoded on the GPU, device to device (codecs.try_chain): the ceiling of its held passes
  within 120 python3 - "$work/particles-zstd.hrc" <<'PY'
import sys
import numpy as np
import headrace
from headrace import codecs
ds = headrace.open(sys.argv[1])
spec = ds.fields[0]
values = np.ascontiguousarray(ds.read(0, spec.name)).reshape(-1)
per_chunk = int(ds.container.chunk_table()["raw_size"][0]) // 4
chunks = [values[s:s + per_chunk].copy() for s in range(0, min(values.size, 16 * per_chunk), per_chunk)]
trial = codecs.try_chain("zstd(level=3,block=0)", chunks, dtype=spec.dtype, components=spec.components, device=0, repeats=5)
print(f"decode rate zstd(level=3,block=0) on the GPU: {trial.decode_bytes_per_second / 1e9:.2f} GB/s raw "
      f"(stored {trial.stored_fraction:.3f}, {len(chunks)} chunks of {per_chunk * 4} bytes)")
PY
}

heldflights() {  # HELD_STAGING (staging bytes, default 256 MiB and 1 GiB): the zstd copy's held pass, flight by flight
  local staging
  for staging in ${HELD_STAGING:-268435456 1073741824}; do
    cold
    HEADRACE_STAGING_BYTES=$staging within 120 python3 bench/held_flights.py "$work/particles-zstd.hrc" --passes 2 \
      --csv "$OUT/held-flights-zstd-$staging.csv" --label "zstd staging $staging" 2> build/heldflights.err || tail -3 build/heldflights.err
  done
  cold
  within 60 python3 bench/held_flights.py "$work/particles.hrc" --passes 2 --csv "$OUT/held-flights-plain.csv" --label plain \
    2> build/heldflights.err || tail -3 build/heldflights.err
}

heldprofile() {  # the held zstd pass with the checks on the host, and its GPU work by kernel where Nsight Systems is installed
  cold
  HEADRACE_CHECK_ON=host within 60 python3 bench/held_flights.py "$work/particles-zstd.hrc" --passes 2 \
    --csv "$OUT/held-flights-zstd-host-checks.csv" --label "zstd, checks on the host" 2> build/heldflights.err || tail -3 build/heldflights.err
  local nsys; nsys=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)
  [[ -n $nsys ]] || { echo "no nsys here"; return 0; }
  cold
  within 120 "$nsys" profile --trace=cuda --sample=none --cpuctxsw=none -o build/held-zstd -f true \
    python3 bench/held_flights.py "$work/particles-zstd.hrc" --passes 2 --csv build/held-nsys.csv --label "zstd under nsys" > build/nsys.log 2>&1 \
    || tail -5 build/nsys.log
  grep "zstd under nsys" build/nsys.log
  within 60 "$nsys" stats --report cuda_gpu_kern_sum,cuda_api_sum --format csv build/held-zstd.nsys-rep 2>/dev/null | head -40
}

keptpasses() {  # two passes in each of two processes with cache_policy keep, and what the engine chose for the file
  cold
  local process
  for process in 1 2; do
    within 60 python3 - "$work/particles.hrc" "process $process" <<'PY'
import sys, time
import cupy
import headrace
path, label = sys.argv[1], sys.argv[2]
ds = headrace.open(path)
for number in (1, 2):
    start = time.perf_counter()
    with ds.stream(device=0, cache_policy="keep") as frames:
        for frame in frames:
            for name in frame.fields:
                cupy.from_dlpack(frame[name])
            frame.release()
        described = frames.engine.queue.describe()
    cupy.cuda.Device().synchronize()
    print(label, "pass", number, round(time.perf_counter() - start, 3), "s;", described[described.find(path):][:200], flush=True)
PY
  done
}

routes() {  # one cold pass by each route, fresh processes, in ${ROUNDS:-2} alternating rounds (bench/cold_routes.py)
  local file=${ROUTE_FILE:-$work/particles.hrc} round route
  local list=${ROUTE_LIST:-"engine:auto engine:keep kvikio threads:4:4:willneed512"}
  echo "route,seconds,gbps,cpu_user_s,cpu_system_s,cpu_s_per_gb,io,finish,engine,other" > "$OUT/routes.csv"
  for round in $(seq "${ROUNDS:-2}"); do
    for route in $list; do
      cold
      if [[ $route == *@* ]]; then  # VAR=VALUE+VAR=VALUE@ROUTE: the route under those settings, named whole
        local settings=${route%%@*}
        (export ${settings//+/ }; within 60 python3 bench/cold_routes.py "$file" "${route#*@}") | sed "s|^${route#*@},|$route,|" >> "$OUT/routes.csv"
      else
        within 60 python3 bench/cold_routes.py "$file" "$route" >> "$OUT/routes.csv"
      fi
    done
  done
  cat "$OUT/routes.csv"
  cat /sys/block/*/queue/read_ahead_kb 2>/dev/null | head -3; ls /proc/self/task/*/schedstat 2>/dev/null | head -1
}

explain() {  # headrace probe (kept per file system), then headrace info FILE cold, kept, hot and compressed
  within 120 python3 -m headrace probe "$work" --quick --size 4G > "$OUT/explain.txt" 2>&1
  tail -3 "$OUT/explain.txt"
  local case
  for case in cold keep hot zstd; do
    [[ $case == cold || $case == keep ]] && cold
    [[ $case == hot ]] && cat "$work/particles.hrc" > /dev/null
    local file=$work/particles.hrc options=()
    [[ $case == keep ]] && options=(--cache-policy keep)
    [[ $case == zstd ]] && file=$work/particles-zstd.hrc
    echo "== headrace info ($case)" >> "$OUT/explain.txt"
    COLUMNS=160 within 60 python3 -m headrace info "$file" --device 0 "${options[@]}" >> "$OUT/explain.txt" 2>&1
  done
  cat "$OUT/explain.txt"
}

pinpressure() {  # a hot 1.2 GB file streamed inside a cgroup of 2 GiB: the default pin budget against the old one
  local root=/sys/fs/cgroup budget file=$work/particles-1g.hrc
  grep -q memory "$root/cgroup.controllers" 2>/dev/null || { echo "no cgroup v2 memory controller here"; return 0; }
  echo +memory > "$root/cgroup.subtree_control" 2>/dev/null
  mkdir -p "$work"
  [[ -f $file ]] || within 120 python3 -m headrace generate particles "$file" --particles 4687500 --frames 8 > /dev/null
  echo "pin_budget,exit,delivered_gbps,peak_bytes,oom,oom_kill,pin_note" > "$OUT/pinpressure.csv"
  for budget in default 34359738368; do
    local group=$root/headrace-pins-$budget
    rmdir "$group" 2>/dev/null; mkdir "$group"
    echo "${PRESSURE_MAX:-2G}" > "$group/memory.max"; echo 0 > "$group/memory.swap.max" 2>/dev/null
    cold
    local given=""; [[ $budget != default ]] && given="HEADRACE_PIN_BUDGET_BYTES=$budget"
    # the file read into the cache from inside the group (its pages count against it), then streamed there
    within 120 bash -c "echo \$\$ > $group/cgroup.procs && cat $file > /dev/null && exec env $given python3 -m headrace stream $file --device 0 --json" \
      > "build/pins-$budget.json" 2> "build/pins-$budget.err"
    local status=$?
    local rate note
    rate=$(python3 -c "import json; print(round(json.load(open('build/pins-$budget.json'))['delivered_gbps'], 3))" 2>/dev/null)
    note=$(python3 -c "import json; c=json.load(open('build/pins-$budget.json'))['configuration']; print(c[c.find('pin-files'):c.find('locked)')+7].replace(',', ';'), '|', c[c.rfind(': ')+2:][:80].replace(',', ';'))" 2>/dev/null)
    echo "$budget,$status,$rate,$(cat "$group/memory.peak" 2>/dev/null),$(awk '$1 == "oom" { print $2 }' "$group/memory.events"),$(awk '$1 == "oom_kill" { print $2 }' "$group/memory.events"),$note" >> "$OUT/pinpressure.csv"
    (( status == 0 )) || tail -3 "build/pins-$budget.err"
  done
  cat "$OUT/pinpressure.csv"
}

userstream() {  # the lab's user benchmark, hot and cold, against KvikIO's POSIX mode: rates and CPU by stage
  # US_SMALL=1: and 10,000 small frames through one stream (2,500 frames of 32 KB, looped 4 times)
  local small=()
  if [[ -n ${US_SMALL:-} ]]; then
    [[ -f $work/small.hrc ]] || python3 -m headrace generate particles "$work/small.hrc" --particles 1000 --frames 2500 > /dev/null
    small=(--small "$work/small.hrc" --small-loop 4)
  fi
  within 300 python3 -m headrace.bench.cases.user_stream "$work/particles.hrc" --rounds "${ROUNDS:-3}" --states "${US_STATES:-hot,cold}" \
    --kvikio-modes posix "${small[@]}" --out "$OUT/us" > "$OUT/user_stream.log" 2>&1
  python3 - "$OUT/us/user_stream.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
for state in ("hot", "cold", "half"):
    if state not in summary:
        continue
    e = summary[state]
    print(state, "headrace", e["headrace_gbps"], "kvikio", e["kvikio_median_gbps"], "x", e.get("x_kvikio"),
          "cpu s/GB", e["cpu_s_per_gb"], "x", e.get("cpu_x_kvikio"), "by stage", e.get("headrace_cpu_s_per_gb_by_stage"))
if "small_frames" in summary:
    print("small frames", summary["small_frames"])
PY
}

fioceiling() {  # fio over particles.hrc, the cache dropped before each: O_DIRECT through io_uring and buffered by psync, two shapes each
  command -v fio > /dev/null || { echo "no fio here (scripts/device_carry.sh builds one into .carry/bin from FIO_SOURCE)"; return 0; }
  echo "mode,jobs,depth,block,gbps" > "$OUT/fio.csv"
  local shape mode jobs depth block
  # The issue's shapes (1.21 psync 8 x 1 MiB, 1.58 io_uring 4 x QD32 x 1 MiB, 1.44 4 MiB QD16) and KvikIO's (16 x 16 MiB).
  for shape in "direct 4 32 1M" "direct 1 16 4M" "buffered 8 1 1M" "buffered 16 1 16M"; do
    read -r mode jobs depth block <<< "$shape"
    cold
    echo "$mode,$jobs,$depth,$block,$(fio_rate "$work/particles.hrc" "$mode" "$jobs" "$depth" "$block")" >> "$OUT/fio.csv"
  done
  cat "$OUT/fio.csv"
}

coldvsfio() {  # ROUNDS rounds, a drop before each read: headrace stream with its defaults, fio's best buffered and O_DIRECT shapes
  command -v fio > /dev/null || { echo "no fio here"; return 0; }
  echo "round,what,gbps" > "$OUT/cold-vs-fio.csv"
  local round
  for round in $(seq "${ROUNDS:-3}"); do
    cold
    within 60 python3 -m headrace stream "$work/particles.hrc" --device 0 --json > build/cold-stream.json 2> build/cold-stream.err
    echo "$round,headrace stream,$(python3 -c "import json; print(round(json.load(open('build/cold-stream.json'))['delivered_gbps'], 3))")" >> "$OUT/cold-vs-fio.csv"
    cold
    echo "$round,fio buffered 16 x 16M,$(fio_rate "$work/particles.hrc" buffered 16 1 16M)" >> "$OUT/cold-vs-fio.csv"
    cold
    echo "$round,fio O_DIRECT io_uring 4 x QD32 x 1M,$(fio_rate "$work/particles.hrc" direct 4 32 1M)" >> "$OUT/cold-vs-fio.csv"
  done
  cat "$OUT/cold-vs-fio.csv"
}

pressure() {  # PRESSURE_MAX: the cgroup's memory.max (2G; 1600M makes the 3.2 GB file twice the limit)
  local root=/sys/fs/cgroup policy
  grep -q memory "$root/cgroup.controllers" 2>/dev/null || { echo "no cgroup v2 memory controller here"; return 0; }
  echo +memory > "$root/cgroup.subtree_control" 2>/dev/null
  echo "policy,exit,delivered_gbps,peak_bytes,max_bytes,oom,oom_kill" > "$OUT/pressure.csv"
  for policy in auto keep; do
    local group=$root/headrace-pressure-$policy
    rmdir "$group" 2>/dev/null; mkdir "$group"
    echo "${PRESSURE_MAX:-2G}" > "$group/memory.max"; echo 0 > "$group/memory.swap.max" 2>/dev/null
    cold
    HEADRACE_CACHE_POLICY=$policy within 120 bash -c "echo \$\$ > $group/cgroup.procs && exec python3 -m headrace stream $work/particles.hrc --device 0 --json" \
      > "build/pressure-$policy.json" 2> "build/pressure-$policy.err"
    local status=$?
    local rate; rate=$(python3 -c "import json; print(round(json.load(open('build/pressure-$policy.json'))['delivered_gbps'], 3))" 2>/dev/null)
    echo "$policy,$status,$rate,$(cat "$group/memory.peak" 2>/dev/null),$(cat "$group/memory.max"),$(awk '$1 == "oom" { print $2 }' "$group/memory.events"),$(awk '$1 == "oom_kill" { print $2 }' "$group/memory.events")" >> "$OUT/pressure.csv"
    (( status == 0 )) || tail -3 "build/pressure-$policy.err"
    grep -i "pin\|memory" "build/pressure-$policy.err" | head -3
  done
  cat "$OUT/pressure.csv"
}

run_phases "$@"
