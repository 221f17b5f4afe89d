#!/usr/bin/env bash
# Issue 21 on the one-GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/distributed_on_device.sh wheels build udev gputests mpi sortlast handoff scaling
# carry [".carry", ".whl"] (bench/viewer_on_device.sh says what they hold). Several ranks share the one GPU.
source "$(dirname "$0")/device_session.sh"
work=${HEADRACE_BENCH_DIR:-/var/tmp/headrace-bench}
# The image's MPI is Debian's Open MPI, which refuses root unless told twice.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

mpi() {
  # What MPI the image has, then the distributed tests (they skip, saying why, without a launcher).
  command -v mpiexec mpirun || echo "no MPI launcher on this image"
  python3 -c "from mpi4py import MPI; print('mpi4py', MPI.Get_library_version().splitlines()[0])" 2>&1 | tail -1
  within 200 python3 -m pytest -q -p no:cacheprovider -rs tests/python/test_distributed.py 2>&1 | tail -8
  if command -v mpiexec > /dev/null; then
    mkdir -p "$work"
    python3 -m headrace generate particles "$work/p2m.hrc" --particles 2000000 --frames 8 | tail -1
    for n in 1 2 4; do within 60 mpiexec -n $n python3 -m headrace stream "$work/p2m.hrc" --device 0 | head -1; done
    within 60 python3 -m headrace render "$work/p2m.hrc" --frame 3 --device 0 --out "$OUT/one.png" | tail -1
    within 60 mpiexec -n 2 python3 -m headrace render "$work/p2m.hrc" --frame 3 --device 0 --out "$OUT/two.png" --stats | tail -3
    python3 -c "import numpy as np; from PIL import Image; a, b = (np.asarray(Image.open('$OUT/' + n)) for n in ('one.png', 'two.png')); print('GPU sort-last image equals the one-rank image:', np.array_equal(a, b))"
  fi
}

nvcomp_lib=/tmp/site/nvidia/libnvcomp/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib

gputests() {
  # The slab renderer's and the hand-off tracer's kernels against the CPU (C++), then the whole GPU suite.
  LD_LIBRARY_PATH=$nvcomp_lib within 120 ctest --test-dir build/device -R "Volume|HandOff|Resident" --output-on-failure 2>&1 | tail -5
  LD_LIBRARY_PATH=$nvcomp_lib within 300 ctest --test-dir build/device -j 8 --output-on-failure 2>&1 |
    grep -E "tests passed|tests failed|\(Failed\)|Total Test time"
  within 200 python3 -m pytest -q -p no:cacheprovider -rs -m gpu tests/python 2>&1 | tail -6
}

data() {
  mkdir -p "$work"
  [[ -f $work/p5m.hrc ]] || within 150 python3 -m headrace generate particles "$work/p5m.hrc" --particles 5000000 --frames 8 | tail -1
  [[ -f $work/amr.hrc ]] || within 200 python3 -m headrace generate amr "$work/amr.hrc" --cells 30000000 --levels 3 --frames 6 \
    --chunk-size 256K | tail -1
  [[ -f $work/flow.hrc ]] || within 120 python3 -m headrace generate flow "$work/flow.hrc" --dims 257 257 257 --block 32 32 32 | tail -1
  sync
}

sortlast() {
  # A volume frame drawn by 1, 2 and 4 ranks on the GPU, a slab each, against the one-rank image.
  data
  within 60 python3 -m headrace render "$work/amr.hrc" --frame 2 --device 0 --out "$OUT/amr-one.png" | tail -1
  for n in 2 4; do
    within 90 mpiexec -n $n python3 -m headrace render "$work/amr.hrc" --frame 2 --device 0 --out "$OUT/amr-$n.png" --stats | tail -$((n + 1))
    python3 -c "
import numpy as np; from PIL import Image
a, b = (np.asarray(Image.open('$OUT/' + n)).astype(int) for n in ('amr-one.png', 'amr-$n.png'))
d = np.abs(a[..., :3] - b[..., :3])
print('GPU volume by $n ranks against one: channels off by more than 2:', f'{(d > 2).mean():.4%}', 'largest', d.max())"
  done
}

handoff() {
  # Streamlines on the GPU handed between 2 and 4 ranks (the field larger than a rank's cache) against one rank.
  data
  common=(--seeds uniform:20000 --steps 1000 --direction both --device 0)
  within 90 python3 -m headrace trace "$work/flow.hrc" "${common[@]}" --out "$work/one.npz" | tail -2
  for n in 2 4; do
    within 120 mpiexec -n $n python3 -m headrace trace "$work/flow.hrc" "${common[@]}" --distribute hand-off \
      --cache-bytes 200M --out "$work/handed-$n.npz" | tail -2
    python3 -c "
import numpy as np
a, b = np.load('$work/one.npz'), np.load('$work/handed-$n.npz')
print('GPU lines handed between $n ranks equal one rank\'s:', all(np.array_equal(a[k], b[k]) for k in a.files))"
  done
}

scaling() {
  # The study as a user runs it; on one GPU the ranks share it (what it measures is the job's overheads).
  data
  within 420 python3 -m headrace bench scaling "$work/p5m.hrc" "$work/amr.hrc" --ranks 1,2,4 --device 0 \
    --cache hot,drop-all --repeats 3 --frames 4 --out "$OUT/scaling" 2>&1 | tail -40
}

run_phases "$@"
