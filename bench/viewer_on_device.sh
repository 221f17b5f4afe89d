#!/usr/bin/env bash
# Issue 20's run on the GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/viewer_on_device.sh wheels build udev viewtests data view
#   bash bench/viewer_on_device.sh wheels build udev alltests data view      (the whole GPU suite too)
# carry [".carry", ".whl"]: .carry the -dev packages the image lacks, .whl nvCOMP's wheel for Python 3.12
# (docs/results.md, 2026-11-23, says how both were fetched). The image has aiohttp and Pillow.
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}
nvcomp_lib=/tmp/site/nvidia/libnvcomp/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib

viewtests() {
  # The renderers' kernels against the CPU reference (looks, cameras), the viewer's scenes on the GPU
  # against the CPU's, the viewer's server on the GPU.
  LD_LIBRARY_PATH=$nvcomp_lib within 150 ctest --test-dir build/device -R "SegmentedRender|GlyphLook|SphereGlyphs|Volume" \
    --output-on-failure 2>&1 | tail -6
  within 250 python3 -m pytest -q -p no:cacheprovider -rs -m gpu tests/python/test_viewer.py tests/python/test_render.py \
    tests/python/test_volume_gpu.py 2>&1 | tail -30
  within 120 python3 -m pytest -q -p no:cacheprovider tests/python/test_viewer.py 2>&1 | tail -30
}

alltests() {
  # The whole GPU suite (the C++ tests and pytest -m gpu), as after any change to the engine's seams.
  LD_LIBRARY_PATH=$nvcomp_lib within 300 ctest --test-dir build/device -j 8 --output-on-failure 2>&1 |
    grep -E "tests passed|tests failed|\(Failed\)|Total Test time"
  within 250 python3 -m pytest -q -p no:cacheprovider -rs -m gpu tests/python 2>&1 | tail -15
}

data() {
  # 10 M particles a frame (320 MB) and a 512^3 volume (512 MB a frame), 12 frames each.
  mkdir -p "$work"
  [[ -f $work/p10m.hrc ]] || within 200 python3 -m headrace generate particles "$work/p10m.hrc" --particles 10000000 \
    --frames 12 | tail -1
  [[ -f $work/v512.hrc ]] || within 250 python3 -m headrace generate volume "$work/v512.hrc" --dims 512 512 512 \
    --frames 12 | tail -1
  sync
  ls -la "$work"
}

view() {
  # One server and one browser stand-in per file, the command's defaults (GPU 0, 1024 x 768, JPEG 85);
  # hot then cold (the whole page cache dropped), against the render-only rate and the call's ceilings.
  within 420 python3 -m headrace.bench.cases.viewer "$work/p10m.hrc" "$work/v512.hrc" --device 0 --seconds 6 --jumps 5 \
    --cache hot,drop-all --out "$OUT"
}

run_phases "$@"
