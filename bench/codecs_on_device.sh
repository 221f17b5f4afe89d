#!/usr/bin/env bash
# Issue 19's run on the GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/codecs_on_device.sh setup build udev codectests data chains auto cold
# carry [".carry", ".whl"]: the -dev packages for the build (now with snappy and zlib) and the wheels.
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}
libs=/tmp/site/nvidia/libnvcomp/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:$LD_LIBRARY_PATH


codectests() {
  # The codec layer and the engine's GPU paths against the CPU (every codec, chains, filters), then the
  # Python tests marked gpu.
  LD_LIBRARY_PATH=$libs within 240 ctest --test-dir build/device -j 8 --timeout 200 -R "Chain|Filter|Batched|Nvcomp|QueueGpu|Gdeflate" \
    --output-on-failure > build/device-ctest.log 2>&1; echo "ctest exit $?"
  grep -E "tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|\(Timeout\)|Failure|Which is|Expected" build/device-ctest.log | head -30
}

data() {
  # The issue's data sets: particles (12.5 M a frame, 400 MB), a 512^3 volume (512 MB a frame), a flow in
  # blocks (256^3 x 3 floats), AMR (100 M cells in 4 levels, 400 MB a frame), and a real AMReX plotfile.
  mkdir -p "$work"
  [[ -f $work/particles.hrc ]] || within 200 python3 -m headrace generate particles "$work/particles.hrc" --particles 12500000 --frames 4 --seed 0 | tail -1
  [[ -f $work/volume.hrc ]] || within 200 python3 -m headrace generate volume "$work/volume.hrc" --dims 512 512 512 --frames 4 --seed 1 | tail -1
  [[ -f $work/flow.hrc ]] || within 200 python3 -m headrace generate flow "$work/flow.hrc" --dims 256 256 256 --frames 4 --seed 2 | tail -1
  [[ -f $work/amr.hrc ]] || within 200 python3 -m headrace generate amr "$work/amr.hrc" --cells 100000000 --levels 4 --frames 4 --seed 3 | tail -1
  [[ -f $work/plt2_F.hrc ]] || python3 -m headrace convert tests/data/amrex/plt2_F "$work/plt2_F.hrc" | tail -1
  sync
  ls -la "$work"
}

chains() {
  within 500 python3 -m headrace.bench.cases.codec_chains "$work"/particles.hrc "$work"/volume.hrc "$work"/flow.hrc \
    "$work"/amr.hrc "$work"/plt2_F.hrc --device 0 --sample-chunks ${SAMPLES:-8} --out "$OUT" 2>&1 | grep -E "^\{|error" | head -40
}

probe_disk() {
  within 60 python3 -m headrace probe "$work" --size 8G --patterns sequential --block-sizes 4M --queue-depths 32 \
    --threads 1 --seconds 3 --json > "$OUT/ceiling.json" 2> /dev/null
  python3 -c "import json; print(json.load(open('$OUT/ceiling.json'))['ceiling_line'])"
}

auto() {
  # headrace compress --auto with the disk's rate from the probe of this call, each data set.
  probe_disk
  local rate
  rate=$(python3 -c "import json; print(int(json.load(open('$OUT/ceiling.json'))['ceiling']['gigabytes_per_second'] * 1e9))")
  for name in ${SETS:-particles volume flow amr}; do
    within 200 python3 -m headrace compress "$work/$name.hrc" "$work/$name-auto.hrc" --auto --disk-rate "$rate" --device 0 \
      --force --json > "$OUT/auto-$name.json" || echo "compress $name failed"
    python3 -c "import json; d = json.load(open('$OUT/auto-$name.json')); print('$name', {k: v for k, v in d.items() if k != 'choices' and k != 'fields'})" 2>&1 | tail -2
  done
}

cold() {
  # Cold end to end: raw bytes in GPU memory per second through ds.stream(device=0) (headrace stream),
  # the page cache dropped before each, the auto-compressed file beside the uncompressed one.
  probe_disk
  for name in ${SETS:-particles volume flow amr}; do
    for variant in "$name" "$name-auto"; do
      sync; echo 3 > /proc/sys/vm/drop_caches
      within 120 python3 -m headrace stream "$work/$variant.hrc" --device 0 --json > "$OUT/cold-$variant.json" || echo "stream $variant failed"
      python3 -c "import json; d = json.load(open('$OUT/cold-$variant.json')); print('$variant', {k: d[k] for k in ('seconds', 'stored_bytes', 'raw_bytes', 'disk_gbps', 'delivered_gbps')})"
    done
  done
}

run_phases "$@"
