"""The first run of a script on a cold file (issue 15): a new process reads every frame once, the page
cache dropped before. Each reader pays its first use inside the clock (CUDA's context, staging, KvikIO's
threads and bounce buffers); the clocks run from before ``import`` and from the read call itself, a
pass of the user benchmark (``headrace.bench.cases.user_stream``: ``stream_pass``, which opens the
container inside its clock, and ``kvikio_pass``).

    python3 bench/fresh_cold_pass.py FILE --rounds 3 [--out DIR]

Per round, each reader in a process of its own, the order turned by one each round: headrace's
defaults, headrace with staging from cuMemHostAlloc (``HEADRACE_STAGING_HUGE_PAGES=off``), KvikIO's
POSIX and cuFile modes (16 threads, 16 MiB tasks).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ONE_PASS = r"""
import json, sys, time
started = time.perf_counter()
import cupy, headrace
from headrace.bench.cases.user_stream import kvikio_pass, stream_pass
from headrace.bench.engine import data_region
path, reader = sys.argv[1], sys.argv[2]
described = ""
if reader.startswith("headrace"):
    read_from = time.perf_counter()
    raw, _ = stream_pass(path, {})
    described = headrace.shared_engine(0).queue.describe()
else:
    buffer = cupy.empty(data_region(path)[1], dtype=cupy.uint8)
    read_from = time.perf_counter()
    raw = kvikio_pass(path, reader == "kvikio posix", buffer)
end = time.perf_counter()
print(json.dumps({"reader": reader, "bytes": raw, "seconds_from_import": end - started,
                  "seconds_from_read": end - read_from, "described": described}))
"""

READERS = {"headrace defaults": {}, "headrace cuMemHostAlloc staging": {"HEADRACE_STAGING_HUGE_PAGES": "off"},
           "kvikio posix": {}, "kvikio cufile": {}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    names = list(READERS)
    rows = []
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
            done = subprocess.run([sys.executable, "-c", ONE_PASS, args.file, name], capture_output=True, text=True,
                                  env={**os.environ, **READERS[name]}, timeout=120)
            if done.returncode != 0:
                print(f"{name}: failed\n{done.stderr[-2000:]}", flush=True)
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row["round"] = r
            rows.append(row)
            print(f"round {r} {name:32s} {row['bytes'] / row['seconds_from_import'] / 1e9:5.2f} GB/s from import, "
                  f"{row['bytes'] / row['seconds_from_read'] / 1e9:5.2f} from the read call", flush=True)
    for name in names:
        of = [row for row in rows if row["reader"] == name]
        if of:
            print(f"{name:32s} median {statistics.median(r['bytes'] / r['seconds_from_import'] for r in of) / 1e9:5.2f} GB/s "
                  f"from import, {statistics.median(r['bytes'] / r['seconds_from_read'] for r in of) / 1e9:5.2f} from the read "
                  f"call ({len(of)} rounds){'; ' + of[-1]['described'][:400] if of[-1]['described'] else ''}", flush=True)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "fresh_cold.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
