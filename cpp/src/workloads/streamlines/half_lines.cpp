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

Polylines assemble(const std::vector<Vec3>& seeds, const TraceOptions& options, const std::vector<HalfLine>& lines,
                   const std::vector<TracedPoint>& points) {
  const std::vector<std::uint64_t> begins = gathered_offsets(lines, {});
  HEADRACE_EXPECT(begins.back() == points.size(), Error,
                  "the half-lines took " + std::to_string(begins.back()) + " steps, their points number " + std::to_string(points.size()));
  Polylines out;
  out.lines.resize(seeds.size());
  out.points.reserve(points.size() + seeds.size());
  out.times.reserve(points.size() + seeds.size());
  out.offsets.reserve(seeds.size());
  const std::size_t per_seed = options.direction == Direction::both ? 2 : 1;
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    std::size_t next = s * per_seed;
    Streamline& line = out.lines[s];
    if (options.direction != Direction::forward) {
      const HalfLine& back = lines[next];
      const TracedPoint* first = points.data() + begins[next];
      for (std::uint32_t k = back.steps; k-- > 0;) {
        out.points.push_back(first[k].p);
        out.times.push_back(first[k].time);
      }
      line.backward_end = back.end;
      ++next;
    }
    out.points.push_back(seeds[s]);
    out.times.push_back(0.0f);
    if (options.direction != Direction::backward) {
      const HalfLine& forward = lines[next];
      const TracedPoint* first = points.data() + begins[next];
      for (std::uint32_t k = 0; k < forward.steps; ++k) {
        out.points.push_back(first[k].p);
        out.times.push_back(first[k].time);
      }
      line.forward_end = forward.end;
    }
    out.offsets.push_back(static_cast<std::int64_t>(out.points.size()));
  }
  return out;
}

}  // namespace headrace::workloads::streamlines::resident
