#!/usr/bin/env bash
# Sets up (scripts/setup.sh), checks the Python layers (lint-imports: the contracts in pyproject.toml),
# then runs every test: GoogleTest and the fuzz run through ctest, pytest, then the concurrent layers
# again under ASan+UBSan and TSan (scripts/sanitize.sh), then the wheel (scripts/wheel.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
lint-imports --no-cache  # a module that imports against the layers fails the run here, before the long tests
# The C++ tests find nvCOMP's libraries through the loader (Python registers the wheel's folder itself).
nvcomp_lib=$(python3 -c "import nvidia.libnvcomp, os; print(os.path.join(os.path.dirname(nvidia.libnvcomp.__file__), 'lib64'))")
LD_LIBRARY_PATH="$nvcomp_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ctest --test-dir build/python --output-on-failure -j "$(nproc)"
python3 -m pytest -q tests/python
bash scripts/sanitize.sh
bash scripts/wheel.sh build/dist  # the users' wheel: built, checked by auditwheel, installed into a clean venv and run
