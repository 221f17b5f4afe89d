#include "half_lines.hpp"

#include <string>

#include "headrace/error.hpp"
#include "round_runner.hpp"

namespace headrace::workloads::streamlines::resident {

std::vector<HalfLine> start_lines(const std::vector<Vec3>& seeds, const TraceOptions& options) {
  std::vector<HalfLine> lines;
  for (const Vec3& seed : seeds) {
    if (options.direction != Direction::forward) lines.push_back(start_half_line(seed, -1.0f, options));
    if (options.direction != Direction::backward) lines.push_back(start_half_line(seed, 1.0f, options));
  }
  return lines;
}

LineLayout lay_out(const std::vector<Vec3>& seeds, const TraceOptions& options, const std::vector<HalfLine>& lines,
                   Polylines& out) {
  const std::size_t per_seed = half_lines_per_seed(options.direction);
  HEADRACE_EXPECT(lines.size() == seeds.size() * per_seed, Error,
                  std::to_string(seeds.size()) + " seeds have " + std::to_string(lines.size()) + " half-lines");
  LineLayout layout;
  layout.offsets = gathered_offsets(lines, {});
  layout.first.resize(lines.size());
  layout.reversed.resize(lines.size());
  layout.seed_at.resize(seeds.size());
  out.lines.resize(seeds.size());
  out.offsets.reserve(seeds.size() + 1);
  std::uint64_t at = 0;  // where line s begins
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    std::size_t next = s * per_seed;
    Streamline& line = out.lines[s];
    if (options.direction != Direction::forward) {
      const HalfLine& back = lines[next];
      layout.first[next] = at + back.steps - 1;  // its first step lies next to the seed (unused with no steps)
      layout.reversed[next] = 1;
      at += back.steps;
      line.backward_end = back.end;
      ++next;
    }
    layout.seed_at[s] = at++;
    if (options.direction != Direction::backward) {
      const HalfLine& forward = lines[next];
      layout.first[next] = at;
      at += forward.steps;
      line.forward_end = forward.end;
    }
    out.offsets.push_back(static_cast<std::int64_t>(at));
  }
  out.points.resize(at);
  out.times.resize(at);
  return layout;
}

void place_seeds(const std::vector<Vec3>& seeds, const LineLayout& layout, Polylines& out) {
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    out.points[layout.seed_at[s]] = seeds[s];
    out.times[layout.seed_at[s]] = 0.0f;
  }
}

Polylines assemble(const std::vector<Vec3>& seeds, const TraceOptions& options, const std::vector<HalfLine>& lines,
                   const std::vector<TracedPoint>& points) {
  Polylines out;
  const LineLayout layout = lay_out(seeds, options, lines, out);
  HEADRACE_EXPECT(layout.offsets.back() == points.size(), Error,
                  "the half-lines took " + std::to_string(layout.offsets.back()) + " steps, their points number " +
                      std::to_string(points.size()));
  const PlaceParams place{points.data(), 0, layout.offsets.data(), lines.size(), layout.first.data(), layout.reversed.data(),
                          out.points.data(), out.times.data()};
  for (std::uint64_t line = 0; line < lines.size(); ++line)  // the GPU's place_point, its search known here
    for (std::uint64_t k = layout.offsets[line]; k < layout.offsets[line + 1]; ++k) place_point_of(place, line, k);
  place_seeds(seeds, layout, out);
  return out;
}

}  // namespace headrace::workloads::streamlines::resident
