#!/usr/bin/env bash
# Issue 3's run on the GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/foundation_on_device.sh build tests measure
# build: the package with the carried -dev packages (.carry/deps, see docs/results.md) in the
# machine's Python; tests: ctest + pytest; measure: info, probe, a 3.2 GB container, the backend sweep.
set -uo pipefail
OUT=${OUT:-$PWD/out/device}
mkdir -p "$OUT" build
exec > >(tee -a "$OUT/run.log") 2>&1  # one log: the device tool brings back at most 8 files
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}

build() {
  python3 -m pip install -q --no-build-isolation --no-deps -e . -Cbuild-dir=build/device \
    -Ccmake.define.HEADRACE_BUILD_TESTS=ON -Ccmake.define.HEADRACE_DEPS_ROOT="$PWD/.carry/deps/usr" \
    > build/device-pip.log 2>&1 || { tail -40 build/device-pip.log; return 1; }
  python3 -m headrace info
}

tests() {
  ctest --test-dir build/device -j 16 --output-on-failure > build/device-ctest.log 2>&1; echo "ctest exit $?"
  grep -E "tests passed|tests failed|\(Failed\)|Timeout" build/device-ctest.log
  python3 -m pytest -q -p no:cacheprovider tests/python 2>&1 | tail -15
}

measure() {
  mkdir -p "$work"
  df -h "$work" | tail -1
  python3 -m headrace info --json
  # The grid (heat map), then its sequential corner again with 2 s a point: the ceiling is the
  # faster of the two, so a short lucky or unlucky point does not set the yardstick.
  python3 -m headrace probe "$work" --size 8G --csv "$OUT/probe.csv" --png "$OUT/probe.png" --json > "$OUT/probe.json" \
    2> build/device-probe.log || { tail build/device-probe.log; return 1; }
  python3 -m headrace probe "$work" --size 8G --patterns sequential --block-sizes 1M,4M --queue-depths 16,32,64 \
    --threads 1,4,8 --seconds 2 --json > "$OUT/ceiling.json" 2> build/device-probe.log || { tail build/device-probe.log; return 1; }
  for f in probe ceiling; do python3 -c "import json; print('$f', json.load(open('$OUT/$f.json'))['ceiling_line'])"; done
  python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
grid, focused = (json.load(open(f"{out}/{name}.json")) for name in ("probe", "ceiling"))
best = max(grid, focused, key=lambda r: r["ceiling"]["gigabytes_per_second"])
json.dump(best, open(f"{out}/ceiling.json", "w"), indent=1)
print("yardstick:", best["ceiling_line"])
PY
  [[ -f $work/particles.hrc ]] || python3 -m headrace generate particles "$work/particles.hrc" \
    --particles 50000000 --frames 2 --seed 0
  python3 -m headrace verify "$work/particles.hrc"
  python3 -m headrace.bench.foundation "$work/particles.hrc" --probe "$OUT/ceiling.json" --out "$OUT" --repeats 3
}

for phase in "$@"; do
  echo "== $phase $(date -u +%T)"
  "$phase" || exit 1
done
