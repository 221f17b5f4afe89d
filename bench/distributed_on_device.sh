#!/usr/bin/env bash
# Issue 21 on the one-GPU machine (device tool), from the repo root, results under $OUT:
#   bash bench/distributed_on_device.sh wheels build udev mpi
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

run_phases "$@"
