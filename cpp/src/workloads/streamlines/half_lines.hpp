// A trace's half-lines (private to the GPU tracer and HandOffTrace): those its seeds start, and the lines
// they make once ended.
#pragma once

#include <vector>

#include "headrace/workloads/streamlines/line_stepper.hpp"
#include "headrace/workloads/streamlines/tracer.hpp"

namespace headrace::workloads::streamlines::resident {

// Seed i's half-lines: both directions take 2i (backward) and 2i + 1 (forward); one direction takes i.
[[nodiscard]] std::vector<HalfLine> start_lines(const std::vector<Vec3>& seeds, const TraceOptions& options);

// Where the seeds' lines take their half-lines' points (PlaceParams' first and reversed, gathered_offsets'
// offsets) and where each seed's own point goes.
struct LineLayout {
  std::vector<std::uint64_t> offsets, first, seed_at;
  std::vector<std::uint8_t> reversed;
};

// The seeds' lines of ended half-lines (start_lines' order) without their points: `out` gets its offsets,
// each line's ends, and arrays of points and times sized for every point (to be placed by place_point, the
// seeds' by place_seeds); returns where the points go.
[[nodiscard]] LineLayout lay_out(const std::vector<Vec3>& seeds, const TraceOptions& options, const std::vector<HalfLine>& lines,
                                 Polylines& out);

// Each seed's own point, at its line's integration time 0.
void place_seeds(const std::vector<Vec3>& seeds, const LineLayout& layout, Polylines& out);

// The seeds' lines from their ended half-lines (start_lines' order) and points (each half-line's, back to
// back in that order: collect's).
[[nodiscard]] Polylines assemble(const std::vector<Vec3>& seeds, const TraceOptions& options, const std::vector<HalfLine>& lines,
                                 const std::vector<TracedPoint>& points);

}  // namespace headrace::workloads::streamlines::resident
