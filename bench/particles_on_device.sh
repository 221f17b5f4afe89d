#!/usr/bin/env bash
# Issue 7's run on the GPU machine (device tool), from the repo root, results under $OUT; three calls
# of under 600 s (HEADRACE_RESUME=<a cut call's CSVs> resumes a study):
#   bash bench/particles_on_device.sh setup build gputests data ceilings figure5 plots
#   bash bench/particles_on_device.sh setup build data ceilings cold compressed plots
#   bash bench/particles_on_device.sh setup build data tune large plots      (large: 100 M particles a frame)
#   bash bench/particles_on_device.sh setup build data overlap plots      (medians of paired frames)
#   bash bench/particles_on_device.sh setup build gputests data series plots   (a series against single frames)
#   bash bench/particles_on_device.sh setup build data factors plots   (in flight 2 to 256; a sample against the grid)
# `ceilings` measures this call's yardsticks (the disk by `headrace probe`, the H2D paths by
# headrace.bench.cases.h2d_ceilings), which `plots` sets the study's throughput against.
# carry [".carry", ".whl"]: the -dev packages for the build and the wheels the image lacks (KvikIO, nvCOMP).
# Data: seed 000's particles (8 float32 each, a third of the unit box filled), 1 M and 10 M per frame,
# 4 frames, chunks of 4000 particles so that batches of 128k, 500k and 1M particles are whole chunks.
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-particles}
methods=vram,ram,ram-pinned,mmap-all,mmap-segment,mmap-batch,pread,direct,uring-naive,uring-batched,cufile,kvikio

gputests() {
  # The renderer's, and every GPU test of the queue's copies (2D rows since this session).
  LD_LIBRARY_PATH=/tmp/site/nvidia/libnvcomp/lib64 within 150 build/device/headrace_tests \
    --gtest_filter='*Gpu*:Queue*:HostToDevice*:SegmentedRender*:SphereGlyphs*:ParticleBatches*' > build/particles-gpu.log 2>&1
  echo "C++ GPU tests exit $?"; grep -E "PASSED|FAILED|Failure|Expected|Which is|tests ran" build/particles-gpu.log | head -20
  within 120 python3 -m pytest -q -p no:cacheprovider -rs -m gpu tests/python 2>&1 | tail -15
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

overlap() {  # the overlap alone, 1 M to 100 M particles a frame: vram, the in-memory best and pread, hot
  for n in 1000000 10000000 100000000; do
    local batches=128000,500000,1000000
    if (( n == 100000000 )); then make_large; batches=1000000; fi
    within 150 python3 -m headrace bench particles "$work/p$n.hrc" --device 0 --grid --methods vram,ram-pinned,pread \
      --batches $batches --segments 64 --staging 256M --cache hot --wall-seconds 0.5 --overlap \
      --out "$OUT/particles-$n-hot-overlap.csv"
  done
}

ceilings() {  # this call's yardsticks: the disk, cold (O_DIRECT), and the H2D paths, hot
  python3 -m headrace probe "$work/p10000000.hrc" --patterns sequential --block-sizes 1M,4M --queue-depths 16,64 \
    --threads 1,4 --seconds 1 --json > "$OUT/ceiling.json" 2> build/device-probe.log || { tail build/device-probe.log; return 1; }
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ceiling_line'])" "$OUT/ceiling.json"
  python3 -m headrace.bench.cases.h2d_ceilings "$work/p10000000.hrc" --csv "$OUT/h2d.csv" > "$OUT/h2d.json" || return 1
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('H2D GB/s: pinned', round(d['pinned_alloc']['best_gbps'], 1), \
    'page-locked file', {k: round(v['best_gbps'], 1) for k, v in d['pinned_file'].items() if k != 'bytes'}, \
    'its chunks one copy each', round(d['chunks']['one_copy_each']['best_gbps'], 1), \
    'as one 2D copy', round(d['chunks']['one_2d_copy']['best_gbps'], 1))" "$OUT/h2d.json"
}

compressed() {
  within 200 python3 -m headrace bench particles "$work/p10000000-zstd.hrc" --device 0 --grid \
    --batches 128000,500000,1000000 --segments 64 --cache cold --wall-seconds 0.5 --overlap --out "$OUT/particles-zstd.csv"
}

series() {  # a series (each frame loads the next one's batches while it is drawn) and single frames, hot, in turns
  local mode
  for n in 1000000 10000000; do
    for mode in overlap series; do
      within 120 python3 -m headrace bench particles "$work/p$n.hrc" --device 0 --grid --methods vram,ram-pinned,pread \
        --batches 128000,500000,1000000 --segments 64 --staging 256M --cache hot --wall-seconds 0.5 --overlap \
        $([[ $mode == series ]] && echo --series) --out "$OUT/particles-$n-hot-$mode.csv"
    done
  done
}

factors() {
  # Seed 000's factors at 10 M particles a frame, hot: batches in flight 2 to 256 against batch size per
  # method (figure 5 by factor, figure 9), then a sample of the same space with staging as well (the
  # paper's wish), which the report sets against the grid's best.
  within 270 python3 -m headrace bench particles "$work/p10000000.hrc" --device 0 --grid \
    --methods ram-pinned,ram,pread,uring-batched --batches 128000,500000,1000000 --segments 2,4,16,64,256 \
    --staging 256M --cache hot --wall-seconds 0.5 --gpu-iterations 4 --out "$OUT/particles-10000000-hot-factors.csv"
  within 150 python3 -m headrace bench particles "$work/p10000000.hrc" --device 0 --sample 20 --seed 1 \
    --methods ram-pinned,ram,pread,uring-batched,mmap-all --batches 128000,1000000 --segments 2,256 \
    --staging 64M,256M,1G --cache hot --wall-seconds 0.5 --gpu-iterations 4 --out "$OUT/particles-10000000-hot-sample.csv"
}

make_large() {  # 100 M particles per frame (3.2 GB), two frames
  [[ -f $work/p100000000.hrc ]] || python3 -m headrace generate particles "$work/p100000000.hrc" \
    --particles 100000000 --frames 2 --chunk-size 128000 > /dev/null
}

large() {
  # 100 M particles per frame, where disk and time allow: 1 M particles per batch; hot, the in-memory
  # methods, pread, the cold-disk default and the peer.
  make_large
  within 200 python3 -m headrace bench particles "$work/p100000000.hrc" --device 0 --grid \
    --methods vram,ram,ram-pinned,mmap-all,pread,uring-batched,kvikio --batches 1000000 --segments 64 --staging 256M \
    --cache hot --wall-seconds 0.5 --overlap --out "$OUT/particles-100000000-hot.csv"
  # Cold, the file readers only (a frame is about 2 s of disk): two pre-warm frames, two timed.
  within 200 python3 -m headrace bench particles "$work/p100000000.hrc" --device 0 --grid \
    --methods pread,uring-batched,kvikio --batches 1000000 --segments 64 --staging 256M --cache cold \
    --prewarm 2 --gpu-iterations 2 --wall-seconds 1 --out "$OUT/particles-100000000-cold.csv"
}

plots() {
  for f in "$OUT"/particles-*.csv; do python3 -m headrace plot "$f" --out "${f%.csv}.png" || true; done
  local yardsticks=()
  [[ -f $OUT/ceiling.json ]] && yardsticks+=(--ceiling "$OUT/ceiling.json")
  [[ -f $OUT/h2d.json ]] && yardsticks+=(--h2d "$OUT/h2d.json")
  python3 -m headrace.bench.particles_report "$OUT"/particles-*.csv "${yardsticks[@]}" | tee "$OUT/report.md"
}

tune() {
  # A small space, so that --compare-grid can measure all of it: the tuned result against the grid's best.
  within 300 python3 -m headrace tune "$work/p10000000.hrc" --device 0 --budget 100 \
    --methods ram,ram-pinned,pread,uring-batched --batches 128000,500000,1000000 --segments 4,16,64 \
    --staging 256M --wall-seconds 0.5 --compare-grid
}

run_phases "$@"
