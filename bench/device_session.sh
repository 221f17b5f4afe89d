# Sourced by the scripts the GPU machine runs (bench/*_on_device.sh): one log under $OUT, the image's
# Python first, the carried wheels on the path, the phases setup (the wheels) and build (headrace with
# its tests) and udev (what cuFile asks udev), then each phase named on the command line in turn. A call has a deadline (the device tool
# stops a command at 600 s): long phases run `within` a time limit, so that the last one is cut
# short, not the call. HEADRACE_RESUME names a folder of an earlier call's CSVs: the studies resume there.
set -uo pipefail
OUT=${OUT:-$PWD/out/device}
mkdir -p "$OUT" build
export HEADRACE_DEADLINE=${HEADRACE_DEADLINE:-$(( $(date +%s) + ${HEADRACE_CALL_SECONDS:-570} ))}
if [[ -n ${HEADRACE_RESUME:-} ]]; then cp -n "$HEADRACE_RESUME"/*.csv "$OUT"/ 2>/dev/null || true; fi
exec > >(tee -a "$OUT/run.log") 2>&1  # one log: the device tool brings back at most 8 files
export PATH=/opt/torch/.venv/bin:$PWD/.carry/bin:$PATH PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site  # .carry/bin: fio
# The carried shared libraries the image lacks (libsnappy; an install drops the build's rpath).
export LD_LIBRARY_PATH=$PWD/.carry/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

wheels() {
  # The carried wheels; a headrace wheel carried for bench/wheel_on_device.sh must not shadow the build.
  local wheels=()
  for wheel in .whl/*.whl; do [[ $(basename "$wheel") == headrace-* ]] || wheels+=("$wheel"); done
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${wheels[@]}"
  python3 -c "import nvidia.libnvcomp, aiohttp, PIL; print('nvCOMP wheel; aiohttp', aiohttp.__version__, 'Pillow', PIL.__version__)"
}

setup() {  # the wheels with the peer the engine's benchmarks compare against
  wheels
  python3 -c "import kvikio; print('kvikio', kvikio.__version__)"
}

build() {
  python3 -m pip install -q --no-build-isolation --no-deps -e . -Cbuild-dir=build/device \
    -Ccmake.define.HEADRACE_BUILD_TESTS=ON -Ccmake.define.HEADRACE_DEPS_ROOT="$PWD/.carry/deps/usr" \
    > build/device-pip.log 2>&1 || { tail -40 build/device-pip.log; return 1; }
  # Byte-compiled as a user's `pip install` leaves them: the image sets PYTHONDONTWRITEBYTECODE and ships
  # NumPy without .pyc files, and an editable install and --no-compile wheels have none, so each fresh
  # process of a benchmark compiled every module it imported (0.13 to 0.34 s).
  python3 -m compileall -q -j 0 python/headrace /tmp/site $(python3 -c "import importlib.util as u, os
print(' '.join(os.path.dirname(u.find_spec(m).origin) for m in ('numpy', 'rich', 'pygments', 'markdown_it', 'mdurl')
               if u.find_spec(m)))") > /dev/null
  python3 -m headrace info | grep -E "GPU|cuFile|nvCOMP|liburing"
}

udev() {
  # cuFile asks udev what file system a disk holds; the VM runs no udev, so its answer is written here.
  for block in /sys/block/vd*; do
    mkdir -p /run/udev/data
    printf 'E:ID_FS_TYPE=ext4\nE:ID_FS_USAGE=filesystem\n' > "/run/udev/data/b$(cat "$block/dev")"
  done
  ls /run/udev/data
}

tests() {
  # The C++ tests load nvCOMP from the carried wheel and libcufile from the image's CUDA.
  LD_LIBRARY_PATH=/tmp/site/nvidia/libnvcomp/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/cuda/targets/x86_64-linux/lib within 240 ctest --test-dir build/device -j 16 --timeout 120 \
    --output-on-failure > build/device-ctest.log 2>&1; echo "ctest exit $?"
  grep -E "tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|\(Timeout\)|Failure|Which is" build/device-ctest.log | head -30
  gputests
}

gputests() {
  # Every GPU test (the grid-order gather, points, traces and the lab's files among them) against its CPU reference;
  # GPU_TESTS names fewer (test files or folders).
  within 240 python3 -m pytest -q -p no:cacheprovider -rfs -m gpu -o faulthandler_timeout=60 ${GPU_TESTS:-tests/python} \
    --deselect tests/python/test_readme.py::test_the_gpu_block_runs_as_written > "$OUT/gputests.log" 2>&1
  echo "pytest -m gpu: exit $?"
  grep -E "^(FAILED|ERROR|E  )|passed|failed" "$OUT/gputests.log" | head -60
}

gpuchecks() {  # the C++ GPU suite (the engine's copies checked while they run among it)
  LD_LIBRARY_PATH=/tmp/site/nvidia/libnvcomp/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib within 200 \
    ./build/device/headrace_tests --gtest_filter='*Gpu*' > "$OUT/gpu-ctest.log" 2>&1; echo "headrace_tests *Gpu*: exit $?"
  grep -E "PASSED|FAILED|Failure" "$OUT/gpu-ctest.log" | head -20
}

probe() {
  mkdir -p "$work"
  python3 -m headrace probe "$work" --size 8G --patterns sequential --block-sizes 4M --queue-depths 32,64 \
    --threads 1,4 --seconds 2 --json > "$OUT/ceiling.json" 2> build/device-probe.log || { tail build/device-probe.log; return 1; }
  python3 -c "import json; print(json.load(open('$OUT/ceiling.json'))['ceiling_line'])"
}

within() {  # within SECONDS COMMAND...: COMMAND under `timeout`, cut at the deadline; skipped past it
  local most=$1 left=$(( HEADRACE_DEADLINE - $(date +%s) ))
  shift
  (( left >= 15 )) || { echo "skipped, the call's deadline has passed: $*"; return 0; }
  timeout $(( left < most ? left : most )) "$@"
}

fio_rate() {  # fio_rate FILE MODE JOBS DEPTH BLOCK: GB/s of one fio read of FILE, each job its own part of it
  # (O_DIRECT by io_uring at DEPTH, or buffered by psync): the disk's referee the benchmarks set the engine against
  local file=$1 mode=$2 jobs=$3 depth=$4 block=$5 size; size=$(stat -c %s "$file")
  within 60 fio --name="$mode" --filename="$file" --rw=read --bs="$block" --numjobs="$jobs" \
    --size=$(( size / jobs / 1048576 ))M --offset_increment=$(( size / jobs / 1048576 ))M --group_reporting --output-format=json \
    $([[ $mode == direct ]] && echo "--direct=1 --ioengine=io_uring --iodepth=$depth" || echo "--direct=0 --ioengine=psync") \
    > "build/fio-$mode-$jobs.json" 2>&1
  python3 -c "import json; d = json.load(open('build/fio-$mode-$jobs.json')); print(round(d['jobs'][0]['read']['bw_bytes'] / 1e9, 3))"
}

pack() {  # the device tool brings back at most 8 files: past that, all but the log travel as one tar, a tar
  # a run (results-HHMMSS.tar), so that a second script run into the same $OUT keeps the first one's files
  local files tar
  mapfile -t files < <(cd "$OUT" && ls -A | grep -vx -e run.log -e 'results-[0-9]*\.tar')
  (( ${#files[@]} > 7 )) || return 0
  tar="results-$(date -u +%H%M%S).tar"
  tar -C "$OUT" -cf "$OUT/$tar" "${files[@]}" && (cd "$OUT" && rm -rf "${files[@]}")
  echo "packed ${#files[@]} files into $tar"
}

run_phases() {
  for phase in "$@"; do
    echo "== $phase $(date -u +%T)"
    "$phase" || { pack; exit 1; }
  done
  pack
}
