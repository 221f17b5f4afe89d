import json, sys, time
started = time.perf_counter()
from headrace.workloads import streamlines
path, count, calls, t1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), None if sys.argv[4] == "end" else float(sys.argv[4])
seeds = streamlines.uniform_seeds(path, count)
for call in range(calls):
    begun = time.perf_counter()
    result = streamlines.trace_pathlines(path, seeds, step_size=0.05, device=0, t1=t1)
    s = result.stats
    ended = time.perf_counter()
    print(json.dumps({"seeds": s["seeds"], "call": call, "process_s": ended - started, "call_s": ended - begun,
                      "trace_s": s["seconds"], "outside_s": ended - begun - s["seconds"], "make_s": s["resident_make_seconds"],
                      "load_wait_s": s["resident_load_seconds"], "collect_s": s["resident_collect_seconds"],
                      "point_capacity": s["point_capacity"]}))
    del result
