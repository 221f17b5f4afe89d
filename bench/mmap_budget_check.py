"""Is headrace's mmap budget (drop the mapping whole when more than the budget is resident) unfair to
mmap? One streamline run, cold, three ways at the same memory: the user cache, mmap under headrace's
budget, and mmap under the kernel's own LRU (no budget of ours; the process in a memory cgroup whose
limit leaves the budget for pages above the process's baseline). Needs root and a memory cgroup
(v1 or v2) that allows subgroups:

    python3 bench/mmap_budget_check.py FIELD.hrc --budget 64M --baseline 60M [--seeds 1024 --steps 3000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

GROUPS = ((Path("/sys/fs/cgroup/memory/headrace-budget"), "memory.limit_in_bytes"),  # cgroup v1
          (Path("/sys/fs/cgroup/headrace-budget"), "memory.max"))  # cgroup v2


def run(args: argparse.Namespace) -> None:
    """The child: one trace, its time and counters as JSON."""
    if args.mode == "cgroup":  # joined before the field is touched, so every page is charged
        group = Path(args.group)
        (group / "cgroup.procs").write_text(str(os.getpid()))
    from headrace.workloads import streamlines
    from headrace.bench.harness import drop_page_cache

    seeds = streamlines.uniform_seeds(args.field, args.seeds)
    options = dict(steps=args.steps, step_size=args.step_size, threads=args.threads)
    if args.mode == "user":
        options.update(manager="user", direct=True, cache_bytes=args.budget, banks=args.threads)
    else:
        options.update(manager="mmap", madvise_interval_s=4.0,
                       memory_budget_bytes=args.budget if args.mode == "drops" else 0)
    drop_page_cache([args.field])
    start = time.perf_counter()
    result = streamlines.trace_run(args.field, seeds, **options)
    print(json.dumps({"mode": args.mode, "seconds": time.perf_counter() - start,
                      **{k: result.stats.get(k) for k in ("budget_drops", "madvise_calls", "cache_misses")}}))


def main() -> int:
    from headrace.sizes import parse_size

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("field")
    parser.add_argument("--budget", type=parse_size, default=64 << 20)
    parser.add_argument("--baseline", type=parse_size, default=60 << 20, help="the process's own memory")
    parser.add_argument("--seeds", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--step-size", type=float, default=0.005)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--mode", choices=("user", "drops", "cgroup"), help=argparse.SUPPRESS)
    parser.add_argument("--group", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        run(args)
        return 0
    group, limit_file = next(((g, f) for g, f in GROUPS if g.parent.is_dir()), (None, None))
    if group is None:
        print("no memory cgroup here: the kernel-LRU run needs one", file=sys.stderr)
        return 2
    group.mkdir(exist_ok=True)
    try:
        (group / limit_file).write_text(str(args.budget + args.baseline))
        for mode in ("user", "drops", "cgroup"):
            child = [sys.executable, __file__, *sys.argv[1:], "--mode", mode, "--group", str(group)]
            print(subprocess.run(child, check=True, capture_output=True, text=True).stdout.strip())
    finally:
        group.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
