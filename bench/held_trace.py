"""A tracer held in one process (a notebook's second call) against the CPU tracer, issue 38:

    python3 bench/held_trace.py FLOW.hrc [--seeds 65536] [--steps 2000] [--device 0] [--threads 16] [--rounds 3]

Makes a TraceSession on --device (its setup timed apart), traces the seeds --rounds times with it, then
traces them with trace_run on --threads CPU threads (the user-managed cache, its default there) in the same
process, and checks that the lines are the same. Prints one CSV: what, round, seconds, bytes_read, and the
held trace's rate against the CPU's (the issue asks >= 10 x).
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

from headrace.workloads.streamlines import TraceSession, trace_run, uniform_seeds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("flow")
    parser.add_argument("--seeds", type=int, default=65536)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--device", default="0")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    seeds = uniform_seeds(args.flow, args.seeds)
    print("what,round,seconds,bytes_read")
    with TraceSession(args.flow, device=args.device, steps=args.steps) as tracer:
        print(f"setup,0,{tracer.setup['seconds']:.4f},{tracer.setup['bytes_read']}")
        held = []
        for round_ in range(1, args.rounds + 1):
            lines = tracer.trace(seeds)
            held.append(lines.stats["seconds"])
            print(f"held,{round_},{lines.stats['seconds']:.4f},{lines.stats['bytes_read']}")
    cpu = trace_run(args.flow, seeds, steps=args.steps, device="cpu", threads=args.threads)
    print(f"cpu{args.threads},1,{cpu.stats['seconds']:.4f},{cpu.stats.get('bytes_read', 0)}", flush=True)
    same = np.array_equal(lines.offsets, cpu.offsets) and np.array_equal(lines.points, cpu.points)
    later = statistics.median(held[1:] or held)
    print(f"# lines equal the CPU's: {same}; held trace (median of rounds 2 on) {later:.4f} s, "
          f"{cpu.stats['seconds'] / later:.1f} x the {args.threads}-thread CPU trace", file=sys.stderr)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
