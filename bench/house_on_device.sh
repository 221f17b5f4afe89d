#!/usr/bin/env bash
# Issue 36's run on the GPU machine (device tool), from the repo root, results under $OUT: the user
# benchmark before and after the move, in one call, each version installed apart; then the GPU suite.
#   call 1: ROUNDS=4 bash bench/house_on_device.sh setup installs data compare
#   call 2: bash bench/house_on_device.sh wheels build udev tests      (tests: ctest, then gputests)
# carry [".carry", ".whl", "build/before-src.tar"]: the -dev packages, the wheels the image lacks (nvCOMP,
# KvikIO 26.10 and its rapids-logger) and the source of the commit before the move, made here with
#   git archive -o build/before-src.tar <before> cpp python CMakeLists.txt cmake pyproject.toml README.md
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}

install_version() {  # install_version NAME SOURCE: a Release wheel of SOURCE, installed under /tmp/NAME
  python3 -m pip install -q --no-build-isolation --no-deps --target "/tmp/$1" "$2" \
    -Ccmake.define.HEADRACE_DEPS_ROOT="$PWD/.carry/deps/usr" > "build/install-$1.log" 2>&1 \
    || { tail -30 "build/install-$1.log"; return 1; }
  echo "installed $1 from $2"
}

installs() {
  # No editable install on this machine while comparing: PYTHONPATH alone picks the version.
  mkdir -p build/before-src && tar -xf build/before-src.tar -C build/before-src
  install_version before build/before-src && install_version after "${HOUSE_AFTER_SOURCE:-.}"  # the noise floor: before again
}

as_version() {  # as_version NAME COMMAND...: COMMAND with NAME's headrace first on the path
  local version=$1
  shift
  PYTHONPATH=/tmp/$version:/tmp/site "$@"
}

compare() {
  as_version after probe
  local round version order
  for round in $(seq "${ROUNDS:-3}"); do
    order="before after"
    (( round % 2 )) || order="after before"  # each version first in every other round: the order's effect cancels
    for version in $order; do
      as_version "$version" python3 -c "import headrace, sys; assert headrace.__file__.startswith('/tmp/$version'), headrace.__file__"
      echo "-- $version round $round"
      mkdir -p "$OUT/$version-$round"
      as_version "$version" within 150 python3 -m headrace.bench.cases.user_stream "$work/particles.hrc" --rounds 3 \
        --states "${STATES:-hot,cold}" --kvikio-modes posix --probe "$OUT/ceiling.json" --out "$OUT/$version-$round" > "build/user-$version-$round.log" 2>&1
      echo "user_stream exit $?"
      cat "$work/p100m.hrc" > /dev/null
      as_version "$version" within 60 python3 -m headrace bench particles "$work/p100m.hrc" --device 0 --grid \
        --methods auto --batches 1000000 --segments 16 --cache hot --wall-seconds 0.5 --out "$OUT/$version-$round/render-100m.csv" > /dev/null
      # The CLI as a user runs it: a fresh process, its setup and first frame counted.
      { TIMEFORMAT=%R; time as_version "$version" within 60 python3 -m headrace render "$work/p100m.hrc" --frame 0 \
          --device 0 --out "build/p100m-$version.png" > /dev/null; } 2> "$OUT/$version-$round/render-cli-seconds.txt"
    done
  done
  python3 bench/house_compare.py "$OUT" | tee "$OUT/compare.md"
  # The device tool brings back 8 files: the runs' folders travel as one tar.
  (cd "$OUT" && tar -cf runs.tar before-* after-* && rm -rf before-* after-*)
}

data() {
  # as user_stream_on_device.sh: 3.2 GB in 8 frames, then a 100 M-particle frame in 128 KB chunks.
  mkdir -p "$work"
  [[ -f $work/particles.hrc ]] || as_version after python3 -m headrace generate particles "$work/particles.hrc" \
    --particles 12500000 --frames 8 --seed 0 > /dev/null
  [[ -f $work/p100m.hrc ]] || as_version after python3 -m headrace generate particles "$work/p100m.hrc" \
    --particles 100000000 --frames 1 --chunk-size 128000 > /dev/null
  sync
  ls -la "$work"
}

run_phases "$@"
