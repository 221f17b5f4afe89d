#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs every test: GoogleTest and the fuzz run through ctest, pytest,
# then the concurrent layers again under ASan+UBSan and TSan (scripts/sanitize.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --test-dir build/python --output-on-failure -j "$(nproc)"
python3 -m pytest -q tests/python
bash scripts/sanitize.sh
