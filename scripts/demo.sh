#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs the main demo: synthetic particles of seed 000 streamed through
# every host backend, verified, compared, charted. Output in out/demo/. Extra arguments go to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 -m headrace demo --out out/demo "$@"
