"""One cold frame of a particle file rendered as `headrace render --frame 0` renders it, with the engine's
counters after it (flights per lane, backend reads, staging waits, reads in flight) and the flights' own
timeline summed (dispatched to landed, landed to checked, checked to issued, issued to done): where a
compressed file's cold frame goes. Usage: ``python3 bench/compressed_cold_parts.py FILE``; one line of JSON."""

from __future__ import annotations

import json
import sys

import numpy as np

from headrace.workloads.particles import StreamingRenderer


def main() -> None:
    renderer = StreamingRenderer(sys.argv[1], device=0, segments=16)
    stats = renderer.render(0)
    counters = renderer.queue.stats().to_dict()
    flights = renderer.queue._native.flight_timeline()
    spans = {}
    for name, (a, b) in {"reading": ("dispatched_s", "landed_s"), "checking": ("landed_s", "checked_s"),
                         "issuing": ("checked_s", "issued_s"), "gpu": ("issued_s", "done_s")}.items():
        seconds = [getattr(f, b) - getattr(f, a) for f in flights if getattr(f, b) > 0 and getattr(f, a) > 0]
        spans[name] = {"mean_ms": float(np.mean(seconds)) * 1e3 if seconds else 0.0, "flights": len(seconds)}
    requests = [f.requests for f in flights]
    print(json.dumps({"file": sys.argv[1], "frame_ms": stats["seconds"] * 1e3, "batches": stats["batches"],
                      "stored_mb": stats["stored_bytes"] / 1e6, "flights": len(flights),
                      "requests_a_flight": float(np.mean(requests)) if requests else 0,
                      "spans": spans, "counters": {k: v for k, v in counters.items() if not isinstance(v, (list, dict))}}))


if __name__ == "__main__":
    main()
