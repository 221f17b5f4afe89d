#!/usr/bin/env bash
# Issue 18's run on the GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/volume_on_device.sh setup build udev voltests voldata hot cold
#   bash bench/volume_on_device.sh setup build exajet compressed
# carry [".carry", ".whl"] (bench/user_stream_on_device.sh says what they hold).
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}
size="--width 1024 --height 768"


voltests() {
  within 200 python3 -m pytest -q -p no:cacheprovider -rs -m gpu tests/python/test_volume_gpu.py 2>&1 | tail -8
  LD_LIBRARY_PATH=/tmp/site/nvidia/libnvcomp/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib within 120 \
    ctest --test-dir build/device -R Volume --output-on-failure 2>&1 | tail -5
}

voldata() {
  # Seed 003's figure-3 data set: 300 M cells in 4 levels, 1.2 GB a frame, 6 frames; the same with zstd.
  mkdir -p "$work"
  [[ -f $work/amr300m.hrc ]] || within 300 python3 -m headrace generate amr "$work/amr300m.hrc" --cells 300000000 \
    --levels 4 --frames 6 --seed 3 | tail -1
  sync
  ls -la "$work"
}

hot() {
  within 280 python3 -m headrace play "$work/amr300m.hrc" --device 0 --stages every --cache hot --loops 2 $size \
    --record "$OUT/fig3-hot.json" --timeline "$OUT/fig3-hot.png"
}

cold() {
  # The disk's ceiling in the same call (the engine's probe: sequential O_DIRECT reads, 4 MiB, depth 32).
  within 60 python3 -m headrace probe "$work" --size 8G --patterns sequential --block-sizes 4M --queue-depths 32 \
    --threads 1 --seconds 3 --json > "$OUT/ceiling.json" 2> /dev/null
  python3 -c "import json; print(json.load(open('$OUT/ceiling.json'))['ceiling_line'])"
  within 280 python3 -m headrace play "$work/amr300m.hrc" --device 0 --stages every --cache cold $size \
    --record "$OUT/fig3-cold.json" --timeline "$OUT/fig3-cold.png"
}

exajet() {
  # An Exajet-sized frame: 650 M cells (2.6 GB), 4 levels, 4 frames, streamed from the page cache in a loop.
  mkdir -p "$work"
  [[ -f $work/exajet.hrc ]] || within 400 python3 -m headrace generate amr "$work/exajet.hrc" --cells 650000000 \
    --levels 4 --frames 4 --seed 7 | tail -1
  sync
  within 150 python3 -m headrace play "$work/exajet.hrc" --device 0 --stages overlap,all --cache hot --loops 4 $size \
    --record "$OUT/exajet-hot.json" --timeline "$OUT/exajet-hot.png"
  # Steps no shorter than a pixel's footprint (cells finer than a pixel are not sampled more finely along
  # the ray than across it): the setting the 10 frames/s claim states, at 1024 x 768.
  within 100 python3 -m headrace play "$work/exajet.hrc" --device 0 --stages all --cache hot --loops 6 $size \
    --footprint 1 --record "$OUT/exajet-hot-footprint.json" --timeline "$OUT/exajet-hot-footprint.png"
}

compressed() {
  mkdir -p "$work"
  for codec in lz4 zstd; do
    [[ -f $work/amr300m-$codec.hrc ]] || within 300 python3 -m headrace generate amr "$work/amr300m-$codec.hrc" \
      --cells 300000000 --levels 4 --frames 6 --seed 3 --codec $codec | tail -1
  done
  sync
  for codec in lz4 zstd; do
    for cache in cold hot; do
      within 150 python3 -m headrace play "$work/amr300m-$codec.hrc" --device 0 --stages all --cache $cache $size \
        --record "$OUT/compressed-$codec-$cache.json"
    done
  done
  within 150 python3 -m headrace play "$work/amr300m.hrc" --device 0 --stages all --cache cold $size \
    --record "$OUT/compressed-none-cold.json"
  # The engine's read path forced to O_DIRECT by 16 threads (the direct stage's backend), cold.
  within 150 python3 -m headrace play "$work/amr300m.hrc" --device 0 --stages flat,all --cache cold $size \
    --read-path direct --record "$OUT/cold-read-path-direct.json"
}

run_phases "$@"
