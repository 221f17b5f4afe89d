// A trace's half-lines (private to the GPU tracer and HandOffTrace): those its seeds start, and the lines
// they make once ended.
#pragma once

#include <vector>

#include "headrace/workloads/streamlines/line_stepper.hpp"
#include "headrace/workloads/streamlines/tracer.hpp"

namespace headrace::workloads::streamlines::resident {

// Seed i's half-lines: both directions take 2i (backward) and 2i + 1 (forward); one direction takes i.
[[nodiscard]] std::vector<HalfLine> start_lines(const std::vector<Vec3>& seeds, const TraceOptions& options);

// The seeds' lines from their ended half-lines (start_lines' order) and points (each half-line's, back to
// back in that order: collect's).
[[nodiscard]] Polylines assemble(const std::vector<Vec3>& seeds, const TraceOptions& options, const std::vector<HalfLine>& lines,
                                 const std::vector<TracedPoint>& points);

}  // namespace headrace::workloads::streamlines::resident
