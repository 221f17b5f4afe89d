#!/usr/bin/env bash
# Issue 4's run on the GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/engine_on_device.sh setup build tests sanitize measure
#   (phases: setup build tests gputests sanitize overlap measure compressed rounds)
# carry [".carry", ".whl"]: the -dev packages for the build (see docs/results.md) and the wheels the
# image lacks (nvCOMP, KvikIO 26.x and its rapids-logger), installed into /tmp/site.
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}

tests() {
  # The C++ GPU tests find nvCOMP through the loader (Python registers the wheel's folder itself).
  LD_LIBRARY_PATH=/tmp/site/nvidia/libnvcomp/lib64 ctest --test-dir build/device -j 16 --timeout 120 \
    --output-on-failure > build/device-ctest.log 2>&1; echo "ctest exit $?"
  grep -E "tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|\(Timeout\)|Failure|Which is|point [0-9]+:" build/device-ctest.log | head -30
  gputests
}

gputests() {
  # faulthandler names a hanging test and where; timeout ends the phase without ending the script.
  timeout 150 python3 -m pytest -v -p no:cacheprovider -rs -m gpu -o faulthandler_timeout=25 tests/python 2>&1 \
    | grep -E "PASSED|FAILED|SKIPPED|ERROR|Timeout|line [0-9]+ in (test_|__|_)|passed|failed|Error" | head -40 || true
}

sanitize() {
  # Teardown with copies and kernels in flight, cancellation, corrupt chunks: no access to freed or
  # foreign memory (memcheck), no races on the queue's device buffers (racecheck needs kernels of ours).
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  [[ -n $sanitizer ]] || { echo "compute-sanitizer: not found"; return 0; }
  LD_LIBRARY_PATH=/tmp/site/nvidia/libnvcomp/lib64 timeout 300 "$sanitizer" --tool memcheck --leak-check full \
    --error-exitcode 3 build/device/headrace_tests --gtest_filter='QueueGpu*:ResidentTracerGpu*:SegmentedRenderGpu*' > build/device-sanitizer.log 2>&1
  echo "compute-sanitizer memcheck exit $?"
  grep -E "ERROR SUMMARY|LEAK SUMMARY|tests? (passed|failed)|FAILED|SKIPPED \[" build/device-sanitizer.log | head -20
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
  data
  timeout 460 python3 -m headrace.bench.engine --plain "$work/particles.hrc" \
    --compressed "$work"/sparse-{zstd,lz4,gdeflate}.hrc --probe "$OUT/ceiling.json" --out "$OUT" --repeats 2 --rounds 5
}

data() {
  mkdir -p "$work"
  [[ -f $work/particles.hrc ]] || python3 -m headrace generate particles "$work/particles.hrc" \
    --particles 50000000 --frames 2 --seed 0 > /dev/null
  # Sparse volumes (values under 0.05 written as 0): 3 GiB raw each, about 0.3 of it stored.
  # gdeflate chunks hold at most 64 KiB (nvCOMP's CPU encoder), each padded to its 4 KiB page.
  for codec in zstd lz4 gdeflate; do
    [[ -f $work/sparse-$codec.hrc ]] || python3 -m headrace generate volume "$work/sparse-$codec.hrc" \
      --dims 512 512 512 --frames 6 --cutoff 0.05 --codec $codec --chunk-size $([[ $codec == gdeflate ]] && echo 64K || echo 1M) > /dev/null
    python3 -m headrace inspect "$work/sparse-$codec.hrc" > build/inspect.txt && head -3 build/inspect.txt
  done
}

compressed() {
  # The compressed containers alone (GPU and CPU decoding, batches of 64 and 512), against a short probe.
  mkdir -p "$work"
  python3 -m headrace probe "$work" --size 8G --patterns sequential --block-sizes 4M --queue-depths 32 \
    --threads 1,4 --seconds 2 --json > "$OUT/ceiling.json" 2> build/device-probe.log || { tail build/device-probe.log; return 1; }
  python3 -c "import json; print(json.load(open('$OUT/ceiling.json'))['ceiling_line'])"
  data
  timeout 400 python3 -m headrace.bench.engine --compressed-only --compressed "$work"/sparse-{zstd,lz4,gdeflate}.hrc \
    --probe "$OUT/ceiling.json" --out "$OUT" --repeats 2
}

rounds() {
  data
  # The head-to-head alone, many rounds (after measure made the files): python3 -m headrace.bench.engine --rounds-only
  timeout 400 python3 -m headrace.bench.engine --plain "$work/particles.hrc" \
    --compressed "$work"/sparse-{zstd,lz4,gdeflate}.hrc --rounds-only --rounds ${ROUNDS:-8} --out "$OUT"
}

run_phases "$@"
