#!/usr/bin/env bash
# Issue 4's run on the GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/engine_on_device.sh setup build tests measure      (phases: setup build tests gputests overlap measure)
# carry [".carry", ".whl"]: the -dev packages for the build (see docs/results.md) and the wheels the
# image lacks (nvCOMP, KvikIO 26.x and its rapids-logger), installed into /tmp/site.
set -uo pipefail
OUT=${OUT:-$PWD/out/device}
mkdir -p "$OUT" build
exec > >(tee -a "$OUT/run.log") 2>&1  # one log: the device tool brings back at most 8 files
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}

setup() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  python3 -c "import kvikio, nvidia.libnvcomp; print('kvikio', kvikio.__version__)"
}

build() {
  python3 -m pip install -q --no-build-isolation --no-deps -e . -Cbuild-dir=build/device \
    -Ccmake.define.HEADRACE_BUILD_TESTS=ON -Ccmake.define.HEADRACE_DEPS_ROOT="$PWD/.carry/deps/usr" \
    > build/device-pip.log 2>&1 || { tail -40 build/device-pip.log; return 1; }
  python3 -m headrace info | grep -E "GPU|cuFile|nvCOMP|liburing"
}

tests() {
  # The C++ GPU tests find nvCOMP through the loader (Python registers the wheel's folder itself).
  LD_LIBRARY_PATH=/tmp/site/nvidia/libnvcomp/lib64 ctest --test-dir build/device -j 16 --timeout 120 \
    --output-on-failure > build/device-ctest.log 2>&1; echo "ctest exit $?"
  grep -E "tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|\(Timeout\)" build/device-ctest.log | head -30
  gputests
}

gputests() {
  # faulthandler names a hanging test and where; timeout ends the phase without ending the script.
  timeout 150 python3 -m pytest -v -p no:cacheprovider -rs -m gpu -o faulthandler_timeout=25 tests/python 2>&1 \
    | grep -E "PASSED|FAILED|SKIPPED|ERROR|Timeout|line [0-9]+ in (test_|__|_)|passed|failed|Error" | head -40 || true
}

overlap() {
  mkdir -p "$work"
  [[ -f $work/particles.hrc ]] || python3 -m headrace generate particles "$work/particles.hrc" \
    --particles 50000000 --frames 2 --seed 0 > /dev/null
  timeout 120 python3 -m headrace.bench.engine --plain "$work/particles.hrc" --overlap-only --repeats 2
}

measure() {
  mkdir -p "$work"
  python3 -m headrace probe "$work" --size 8G --patterns sequential --block-sizes 1M,4M --queue-depths 16,32,64 \
    --threads 1,4,8 --seconds 2 --json > "$OUT/ceiling.json" 2> build/device-probe.log || { tail build/device-probe.log; return 1; }
  python3 -c "import json; print(json.load(open('$OUT/ceiling.json'))['ceiling_line'])"
  [[ -f $work/particles.hrc ]] || python3 -m headrace generate particles "$work/particles.hrc" \
    --particles 50000000 --frames 2 --seed 0 > /dev/null
  [[ -f $work/volume-zstd.hrc ]] || python3 -m headrace generate volume "$work/volume-zstd.hrc" --dims 256 256 256 \
    --frames 8 --codec zstd > /dev/null
  python3 -m headrace inspect "$work/volume-zstd.hrc" | head -2
  timeout 330 python3 -m headrace.bench.engine --plain "$work/particles.hrc" --compressed "$work/volume-zstd.hrc" \
    --probe "$OUT/ceiling.json" --out "$OUT" --repeats 2
}

for phase in "$@"; do
  echo "== $phase $(date -u +%T)"
  "$phase" || exit 1
done
