#!/usr/bin/env bash
# Issue 7's run on the GPU machine (device tool), from the repo root, results under $OUT; three calls
# of under 600 s (HEADRACE_RESUME=<a cut call's CSVs> resumes a study):
#   bash bench/particles_on_device.sh setup build gputests data figure5
#   bash bench/particles_on_device.sh setup build data cold compressed plots
#   bash bench/particles_on_device.sh setup build data tune large      (large: 100 M particles a frame)
# carry [".carry", ".whl"]: the -dev packages for the build and the wheels the image lacks (KvikIO, nvCOMP).
# Data: seed 000's particles (8 float32 each, a third of the unit box filled), 1 M and 10 M per frame,
# 4 frames, chunks of 4000 particles so that batches of 128k, 500k and 1M particles are whole chunks.
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-particles}
methods=vram,ram,ram-pinned,mmap-all,mmap-segment,mmap-batch,pread,direct,uring-naive,uring-batched,cufile,kvikio

gputests() {
  LD_LIBRARY_PATH=/tmp/site/nvidia/libnvcomp/lib64 build/device/headrace_tests \
    --gtest_filter='SegmentedRenderGpu*:SphereGlyphs*:ParticleBatches*' > build/particles-gpu.log 2>&1
  echo "renderer GPU tests exit $?"; grep -E "OK \]|FAILED|Failure|Expected|Which is" build/particles-gpu.log | head -20
  within 200 python3 -m pytest -q -p no:cacheprovider -rs -m gpu tests/python/test_render.py \
    tests/python/test_particle_bench.py 2>&1 | tail -15
}

data() {
  mkdir -p "$work"
  for n in 1000000 10000000; do
    [[ -f $work/p$n.hrc ]] || python3 -m headrace generate particles "$work/p$n.hrc" --particles $n --frames 4 \
      --chunk-size 128000 > /dev/null
  done
  [[ -f $work/p10000000-zstd.hrc ]] || python3 -m headrace generate particles "$work/p10000000-zstd.hrc" \
    --particles 10000000 --frames 4 --chunk-size 128000 --codec zstd > /dev/null
  ls -la "$work"
}

study() {  # study CACHE SIZE [extra options]: seed 000's figure 5 for one data set (resumes a cut run)
  local cache=$1 n=$2; shift 2
  within 280 python3 -m headrace bench particles "$work/p$n.hrc" --device 0 --grid --methods $methods \
    --batches 128000,500000,1000000 --segments 64 --staging 256M --cache "$cache" --wall-seconds 0.5 --overlap \
    --out "$OUT/particles-$n-$cache.csv" "$@"
}

figure5() { study hot 1000000; study hot 10000000; }
cold() { study cold 1000000 --gpu-iterations 4; study cold 10000000 --gpu-iterations 4; }

compressed() {
  within 200 python3 -m headrace bench particles "$work/p10000000-zstd.hrc" --device 0 --grid \
    --batches 128000,500000,1000000 --segments 64 --cache cold --wall-seconds 0.5 --overlap --out "$OUT/particles-zstd.csv"
}

large() {
  # 100 M particles per frame (3.2 GB), where disk and time allow: two frames, the buffered methods,
  # the cold-disk one and the peer, 1 M particles per batch, hot.
  [[ -f $work/p100000000.hrc ]] || python3 -m headrace generate particles "$work/p100000000.hrc" \
    --particles 100000000 --frames 2 --chunk-size 128000 > /dev/null
  within 240 python3 -m headrace bench particles "$work/p100000000.hrc" --device 0 --grid \
    --methods vram,ram,ram-pinned,mmap-all,pread,uring-batched,kvikio --batches 1000000 --segments 64 --staging 256M \
    --cache hot --wall-seconds 0.5 --overlap --out "$OUT/particles-100000000-hot.csv"
}

plots() {
  for f in "$OUT"/particles-*.csv; do python3 -m headrace plot "$f" --out "${f%.csv}.png" || true; done
  python3 -m headrace.bench.particles_report "$OUT"/particles-*.csv | tee "$OUT/report.md"
}

tune() {
  # A small space, so that --compare-grid can measure all of it: the tuned result against the grid's best.
  within 400 python3 -m headrace tune "$work/p10000000.hrc" --device 0 --budget 150 \
    --methods ram,ram-pinned,mmap-batch,pread,uring-batched --batches 128000,500000,1000000 --segments 4,16,64 \
    --staging 256M --wall-seconds 0.5 --compare-grid
}

run_phases "$@"
