#!/usr/bin/env bash
# The users' wheel on the GPU machine (Ubuntu 24.04, Python 3.12, an H200), from the repo root, results
# under $OUT: the stable-ABI wheel that `PYTHON=python3.12 bash scripts/wheel.sh` builds, copied into
# .whl/ with the nvCOMP wheel, carried (carry [".whl"]). That machine reaches no package index, so the
# fresh virtual environment sees the image's packages (NumPy, matplotlib, rich, Pillow, CuPy, cuFile)
# through a .pth file, and pip installs headrace[gpu] from the carried files alone.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
exec > >(tee "$out/wheel.log") 2>&1
image=/opt/torch/.venv
venv=/tmp/headrace-wheel-venv
wheel=$(ls .whl/headrace-*-cp312-abi3-*.whl | head -1)
echo "== wheel $wheel on $(. /etc/os-release; echo "$PRETTY_NAME"), glibc $(ldd --version | head -1 | awk '{print $NF}')"
rm -rf "$venv"
"$image/bin/python3" -m venv "$venv"
site=$("$venv/bin/python3" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
"$image/bin/python3" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > "$site/image-packages.pth"
"$venv/bin/python3" -m pip install --no-index --find-links .whl "$wheel[gpu]" 2>&1 | tail -3
cd /tmp
echo "== imported from: $("$venv/bin/python3" -c 'import headrace; print(headrace.__file__)')"
"$venv/bin/headrace" --version
"$venv/bin/headrace" info
for example in "$OLDPWD"/examples/*.py; do
  mkdir -p "/tmp/wheel-examples/$(basename "$example" .py)"
  "$venv/bin/python3" "$example" "/tmp/wheel-examples/$(basename "$example" .py)" > /dev/null && echo "== $(basename "$example"): ok"
done
"$venv/bin/headrace" generate particles /tmp/wheel-p.hrc --particles 2000000 --frames 4 --codec lz4 --force > /dev/null
"$venv/bin/headrace" stream /tmp/wheel-p.hrc --device 0
"$venv/bin/python3" - <<'EOF'
import cupy, numpy as np, headrace
ds = headrace.open("/tmp/wheel-p.hrc")
for frame in ds.stream(device=0):
    on_gpu = cupy.from_dlpack(frame["particles"]).get()
    assert np.array_equal(on_gpu, ds.read(frame.index, "particles")), frame.index
    frame.release()
print("== GPU frames from the installed wheel equal the CPU reads (lz4 decoded by nvCOMP on the GPU)")
EOF
