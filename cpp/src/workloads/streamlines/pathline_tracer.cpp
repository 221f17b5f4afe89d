#include "headrace/workloads/streamlines/pathline_tracer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <thread>

#include "headrace/detail/parallel_for.hpp"
#include "headrace/detail/seconds.hpp"
#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/blocked_field.hpp"
#include "headrace/workloads/streamlines/flow_field.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"
#include "path_rounds.hpp"
#include "round_loop.hpp"
#include "slot_table.hpp"
#include "unit_loads.hpp"

namespace headrace::workloads::streamlines {
namespace {

using Clock = headrace::detail::SteadyClock;
using headrace::detail::seconds_since;
using namespace resident;

std::string number(double value) {
  std::ostringstream text;
  text.precision(17);
  text << value;
  return text.str();
}

// The frames' times, checked: two or more frames, each later than the one before, each holding a velocity
// of frame 0's shape (its chunks one after another from element 0).
std::vector<double> series_times(const FlowField& flow) {
  const format::Container& container = flow.container;
  const std::string& path = container.path();
  const auto frames = container.frames();
  HEADRACE_EXPECT(frames.size() >= 2, UsageError,
                  path + ": pathlines need a series of 2 frames or more, this file has " + std::to_string(frames.size()));
  std::vector<double> times;
  std::uint64_t first_count = 0;
  for (std::uint32_t f = 0; f < frames.size(); ++f) {
    times.push_back(frames[f].time);
    HEADRACE_EXPECT(f == 0 || frames[f].time > frames[f - 1].time, UsageError,
                    path + ": frame " + std::to_string(f) + "'s time " + number(frames[f].time) + " is not after frame " +
                        std::to_string(f - 1) + "'s " + number(frames[f - 1].time) +
                        ": pathlines need frames in increasing time");
    const auto chunks = container.chunks_of(f, flow.field);
    HEADRACE_EXPECT(!chunks.empty(), UsageError, path + ": frame " + std::to_string(f) + " holds no velocity: a gap in the series");
    std::uint64_t count = 0;
    for (const auto& chunk : chunks) {
      HEADRACE_EXPECT(chunk.first_element == count, UsageError,
                      path + ": offset " + std::to_string(chunk.offset) + ": frame " + std::to_string(f) +
                          "'s velocity chunk starts at element " + std::to_string(chunk.first_element) + ", expected " +
                          std::to_string(count));
      count += chunk.element_count;
    }
    if (f == 0) first_count = count;
    HEADRACE_EXPECT(count == first_count, UsageError,
                    path + ": offset " + std::to_string(chunks.front().offset) + ": frame " + std::to_string(f) +
                        "'s velocity holds " + std::to_string(count) + " points, frame 0's " + std::to_string(first_count) +
                        ": a field that changes shape between frames");
  }
  return times;
}

// The intervals from t0 to t1 in the order they run, and the frames in the order the intervals first need them.
struct Plan {
  bool forward = true;
  std::vector<PathInterval> intervals;
  std::vector<std::uint32_t> frames;
};

// The interval holding time t: forward, the one it starts or lies in ([T_k, T_k+1)); backward, the one it
// ends or lies in ((T_k, T_k+1]); the first or last interval at the series' ends.
std::uint32_t interval_of(const std::vector<double>& times, double t, bool forward) {
  const auto at = forward ? std::upper_bound(times.begin(), times.end(), t) : std::lower_bound(times.begin(), times.end(), t);
  const std::int64_t k = (at - times.begin()) - 1;
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(k, 0, static_cast<std::int64_t>(times.size()) - 2));
}

Plan plan_intervals(const std::vector<double>& times, double t0, double t1) {
  Plan plan;
  plan.forward = t1 > t0;
  const std::uint32_t first = interval_of(times, t0, plan.forward);
  const std::uint32_t last = interval_of(times, t1, !plan.forward);  // t1 closes its interval
  for (std::int64_t k = first;; k += plan.forward ? 1 : -1) {
    const auto index = static_cast<std::uint32_t>(k);
    PathInterval interval;
    interval.index = index;
    interval.span = static_cast<float>(times[index + 1] - times[index]);
    interval.forward = plan.forward ? 1 : 0;
    interval.last = index == last ? 1 : 0;
    interval.stop = interval.last ? static_cast<float>(t1 - times[index]) : (plan.forward ? interval.span : 0.0f);
    plan.intervals.push_back(interval);
    if (interval.last) break;
  }
  for (const PathInterval& interval : plan.intervals) {
    const std::uint32_t earlier = interval.index, later = interval.index + 1;
    for (const std::uint32_t frame : plan.forward ? std::vector{earlier, later} : std::vector{later, earlier})
      if (std::find(plan.frames.begin(), plan.frames.end(), frame) == plan.frames.end()) plan.frames.push_back(frame);
  }
  return plan;
}

// Each seed's path at its release, checked inside the grid and within [t0, t1].
std::vector<PathLine> start_paths(const std::string& path, const GridGeometry& grid, const std::vector<Vec3>& seeds,
                                  const std::vector<double>& seed_times, const std::vector<double>& times, double t0, double t1,
                                  const TraceOptions& options) {
  const bool forward = t1 > t0;
  const double low = std::min(t0, t1), high = std::max(t0, t1);
  std::vector<PathLine> lines;
  lines.reserve(seeds.size());
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    const Vec3 seed = seeds[s];
    std::int32_t cell[3];
    float fraction[3];
    HEADRACE_EXPECT(grid.locate(seed, cell, fraction), UsageError,
                    path + ": seed " + std::to_string(s) + " (" + number(seed.x) + ", " + number(seed.y) + ", " + number(seed.z) +
                        ") lies outside the grid");
    const double release = seed_times.empty() ? t0 : seed_times[s];
    HEADRACE_EXPECT(release >= low && release <= high, UsageError,
                    path + ": seed " + std::to_string(s) + " is released at " + number(release) + ", outside [" + number(low) +
                        ", " + number(high) + "], the times traced");
    const std::uint32_t k = interval_of(times, release, forward);
    lines.push_back(start_path(seed, k, static_cast<float>(release - times[k]), forward ? options.step_size : -options.step_size));
  }
  return lines;
}

// The most points a path of the plan can hold, the seed's and one a step: max_steps + 1, or fewer where the step
// bounds them, since every path's points are kept until the end (a million paths of 1,001 points are 32 GB
// where 250 are needed). A step is |h| long (RK45: at least the smaller of h and min_step) but for one a path
// shortens to each interval's stop, and tau, a float, loses at most 2^-10 of a step to rounding while |h| is
// 2^-14 of the widest interval or more (else no bound: max_steps + 1). One step an interval more is slack.
std::uint32_t path_capacity(const Plan& plan, double t0, double t1, const std::vector<double>& seed_times, const TraceOptions& o) {
  const std::uint32_t most = o.max_steps + 1;
  double shortest = std::fabs(static_cast<double>(o.step_size));
  if (o.integrator == Integrator::rk45) shortest = std::min(shortest, static_cast<double>(o.min_step));
  float widest = 0;
  for (const PathInterval& interval : plan.intervals) widest = std::max(widest, interval.span);
  if (!(shortest >= std::ldexp(static_cast<double>(widest), -14))) return most;
  double longest = std::fabs(t1 - t0);  // the earliest release's time to run
  if (!seed_times.empty()) {
    longest = 0;
    for (const double release : seed_times) longest = std::max(longest, std::fabs(t1 - release));
  }
  const double steps = std::floor(longest / (shortest * (1.0 - std::ldexp(1.0, -10)))) + 2.0 * static_cast<double>(plan.intervals.size());
  return steps + 1 < most ? static_cast<std::uint32_t>(steps) + 1 : most;
}

// The units of every frame, frame f's at f * units_per_frame (the cache's units when whole frames do not fit).
template <typename Units>
UnitTable series_table(const FlowField& flow, const Units& units, std::uint32_t frames) {
  UnitTable table = unit_table(flow, units, 0);
  for (std::uint32_t f = 1; f < frames; ++f) {
    const UnitTable frame = unit_table(flow, units, f);
    table.offset.insert(table.offset.end(), frame.offset.begin(), frame.offset.end());
    table.size.insert(table.size.end(), frame.size.begin(), frame.size.end());
  }
  return table;
}

// The paths' arrays reserved for the most points the paths can hold and, where a fixed step says how many they
// will hold (RK4: |t1 - release| / h steps a path and its seed's point), those pages faulted in on the cores
// the tracer leaves idle while it is made and the paths step: the points then come home into memory already mapped, where a fresh huge page's fault
// (the kernel zeroing it) costs as much again as the copy into it.
class PathArrays {
 public:
  PathArrays(std::uint64_t most, std::uint64_t expected) {
    expected = std::min(expected, most);
    if (expected == 0) return;  // sized as the points come home
    try {
      out_.points.reserve(most);
      out_.velocities.reserve(most);
      out_.times.reserve(most);
    } catch (const std::bad_alloc&) {  // the address space for the most: none faulted ahead, sized at the end
      out_ = Pathlines{};
      return;
    }
    faulting_ = std::jthread([this, expected] {
      const auto started = Clock::now();
      const std::span<std::byte> arrays[] = {
          {reinterpret_cast<std::byte*>(out_.points.data()), expected * sizeof(Vec3)},
          {reinterpret_cast<std::byte*>(out_.velocities.data()), expected * sizeof(Vec3)},
          {reinterpret_cast<std::byte*>(out_.times.data()), expected * sizeof(double)}};
      for (const std::span<std::byte> array : arrays) {
        headrace::detail::parallel_for((array.size() + piece - 1) / piece, fault_threads(), [&](std::uint64_t p) {
          populate(array.subspan(p * piece, std::min<std::uint64_t>(piece, array.size() - p * piece)));
        });
      }
      fault_seconds_ = seconds_since(started);
    });
  }
  // The arrays, once their pages are in (before anything is copied into them), and the seconds that took.
  Pathlines take(double& fault_seconds) {
    if (faulting_.joinable()) faulting_.join();
    fault_seconds = fault_seconds_;
    return std::move(out_);
  }

 private:
  static constexpr std::uint64_t page = 4096, piece = std::uint64_t{32} << 20;
  static unsigned fault_threads() { return std::max(1u, std::thread::hardware_concurrency()); }
  // The kernel maps the pages (zeroed) for writing in one call, without a fault a page; touched where it cannot.
  static void populate(std::span<std::byte> bytes) {
    const auto first = reinterpret_cast<std::uintptr_t>(bytes.data()) / page * page;
    const auto end = reinterpret_cast<std::uintptr_t>(bytes.data()) + bytes.size();
    if (::madvise(reinterpret_cast<void*>(first), end - first, MADV_POPULATE_WRITE) == 0) return;
    for (std::uint64_t at = 0; at < bytes.size(); at += page) static_cast<volatile std::byte&>(bytes[at]) = std::byte{0};
  }
  Pathlines out_;
  double fault_seconds_ = 0;
  std::jthread faulting_;
};

// How many points RK4's paths will hold, for PathArrays: each |t1 - release| / h full steps (a step may end short
// on a frame's time: one more an interval at most, not counted) and its seed's; none foreseen for RK45.
std::uint64_t expected_points(double t0, double t1, const std::vector<double>& seed_times, std::uint64_t paths,
                              const TraceOptions& o) {
  if (o.integrator != Integrator::rk4) return 0;
  const double h = std::fabs(static_cast<double>(o.step_size));
  if (seed_times.empty()) return paths * static_cast<std::uint64_t>(std::fabs(t1 - t0) / h + 1.0);
  std::uint64_t total = 0;
  for (const double release : seed_times) total += static_cast<std::uint64_t>(std::fabs(t1 - release) / h + 1.0);
  return total;
}

// The paths as the caller gets them: their points placed by the runner (on the GPU, or CPU threads), their
// offsets and ends here. A path the capacity (path_capacity) ended short of max_steps would mean the bound
// was wrong: refused, never passed off as max_steps.
template <typename Units>
Pathlines collect_paths(PathRunner<Units>& runner, PathArrays& arrays, const std::vector<double>& times, const Plan& plan,
                        double t1, std::uint32_t max_steps, std::vector<double> seed_times, bool stopped, double& home_seconds,
                        double& fault_seconds) {
  Pathlines out = arrays.take(fault_seconds);
  out.seed_times = std::move(seed_times);
  PathPlaceParams place;
  place.frame_times = times.data();
  place.frame_count = static_cast<std::uint32_t>(times.size());
  place.seed_times = out.seed_times.data();
  place.last_interval = plan.intervals.back().index;
  place.last_stop = plan.intervals.back().stop;
  place.t1 = t1;
  std::vector<PathLine> lines;
  home_seconds = runner.collect(place, lines, out);
  out.offsets.reserve(lines.size() + 1);
  for (const PathLine& line : lines) {
    HEADRACE_EXPECT(!line.ended || line.end != Termination::max_steps || line.points > max_steps, Error,
                    "pathlines: path " + std::to_string(out.ends.size()) + " filled its " + std::to_string(line.points) +
                        " points before " + std::to_string(max_steps) + " steps: the bound on its steps is wrong");
    out.offsets.push_back(out.offsets.back() + line.points);
    out.ends.push_back(line.ended ? line.end : (stopped ? Termination::stopped : Termination::max_steps));
  }
  return out;
}

template <typename Units>
PathlineRun trace_series(const FlowField& flow, const Units& units, std::uint64_t unit_bytes, std::uint64_t units_per_frame,
                         const std::vector<double>& times, const std::vector<Vec3>& seeds, const std::vector<double>& seed_times,
                         const PathlineOptions& options) {
  const std::string& path = flow.container.path();
  const TraceOptions& trace = options.trace;
  HEADRACE_EXPECT(trace.step_size > 0 && trace.max_steps > 0, UsageError, "pathlines need a positive step size and step count");
  const double t0 = options.t0.value_or(times.front()), t1 = options.t1.value_or(times.back());
  for (const auto& [name, t] : {std::pair{"t0", t0}, std::pair{"t1", t1}})
    HEADRACE_EXPECT(t >= times.front() && t <= times.back(), UsageError,
                    path + ": " + name + " = " + number(t) + " lies outside the frames' times [" + number(times.front()) + ", " +
                        number(times.back()) + "]");
  HEADRACE_EXPECT(t0 != t1, UsageError, path + ": t0 and t1 are both " + number(t0) + ": a path needs time to run");
  const Plan plan = plan_intervals(times, t0, t1);
  std::vector<PathLine> lines = start_paths(path, units.geometry(), seeds, seed_times, times, t0, t1, trace);
  const std::uint64_t line_count = lines.size();
  // The runners keep path_capacity points a path: the bound stands in for max_steps in their rounds.
  TraceOptions bounded = trace;
  bounded.max_steps = path_capacity(plan, t0, t1, seed_times, trace) - 1;

  PathlineRun run;
  run.unit_bytes = unit_bytes;
  PathlineStats& stats = run.stats;
  stats.point_capacity = bounded.max_steps + 1;
  stats.t0 = t0, stats.t1 = t1;
  ResidentStats& resident = stats.resident;
  const std::uint64_t frame_bytes = units_per_frame * unit_bytes;
  const auto frames_needed = static_cast<std::uint64_t>(plan.frames.size());
  const std::uint64_t frame_slots = std::min(options.cache_bytes / frame_bytes, frames_needed);
  stats.whole_frames = frame_slots >= 2;
  const std::uint64_t unit_count = units_per_frame * times.size();
  const std::uint64_t slots = stats.whole_frames ? frame_slots * units_per_frame : std::min(options.cache_bytes / unit_bytes, unit_count);
  HEADRACE_EXPECT(stats.whole_frames || slots >= std::min<std::uint64_t>(16, 2 * units_per_frame), UsageError,
                  path + ": the resident cache needs room for 8 units of " + std::to_string(unit_bytes) +
                      " bytes of each of two frames, got " + std::to_string(options.cache_bytes) + " bytes");
  resident.slots = slots;

  const auto start = Clock::now();
  PathArrays arrays(line_count * stats.point_capacity, expected_points(t0, t1, seed_times, line_count, trace));
  std::unique_ptr<PathRunner<Units>> runner =
      options.device >= 0
          ? make_device_paths(options.device, units, units_per_frame, bounded, unit_bytes, slots, unit_count, lines)
          : make_host_paths(units, units_per_frame, bounded, unit_bytes, slots, std::move(lines), options.threads);
  RoundState state{0, 0, line_count, std::vector<std::int32_t>(unit_count, -1), std::vector<std::uint32_t>(unit_count, 0),
                   std::vector<std::uint32_t>(unit_count, 0)};
  const engine::QueueOptions queue = tracer_queue_options(options.backend, options.device);
  std::optional<FrameLoads> frame_loads;
  std::optional<UnitTable> table;
  std::optional<UnitLoads> unit_loads;
  std::optional<SlotTable> slot_table;
  if (stats.whole_frames) {
    frame_loads.emplace(flow.container, flow.field, *runner, queue, static_cast<std::uint32_t>(frame_slots), units_per_frame);
    frame_loads->play({plan.frames.begin(), plan.frames.end()});
  } else {
    table = series_table(flow, units, static_cast<std::uint32_t>(times.size()));
    unit_loads.emplace(path, *table, *runner, queue, slots);
    slot_table.emplace(slots, state);
  }
  resident.make_seconds = seconds_since(start);

  std::map<std::uint32_t, std::uint32_t> slot_of_frame;  // whole frames resident
  bool stopped = false;
  for (std::size_t n = 0; n < plan.intervals.size() && !stopped; ++n) {
    const PathInterval& interval = plan.intervals[n];
    const auto round = [&](RoundState& s) { return runner->run(s, interval); };
    state.first_line = 0;
    state.window = line_count;
    if (stats.whole_frames) {
      const auto wait_start = Clock::now();
      while (!slot_of_frame.contains(interval.index) || !slot_of_frame.contains(interval.index + 1)) {
        const engine::SlotDelivery delivery = frame_loads->next();
        const auto frame = static_cast<std::uint32_t>(delivery.unit);
        slot_of_frame[frame] = delivery.slot;
        for (std::uint64_t u = 0; u < units_per_frame; ++u)
          state.slot_of_unit[frame * units_per_frame + u] = static_cast<std::int32_t>(delivery.slot * units_per_frame + u);
        ++stats.frames_loaded;
        resident.units_loaded += units_per_frame;
        resident.bytes_read += flow.container.frame_field(frame, flow.field).element_count * point_bytes;
      }
      resident.load_seconds += seconds_since(wait_start);
      // Both frames resident: one round takes every path of the interval to its stop or its end.
      ++state.round;
      const auto advance_start = Clock::now();
      const PathCounters counters = round(state);
      resident.advance_seconds += seconds_since(advance_start);
      ++resident.rounds;
      HEADRACE_EXPECT(counters.waiting == 0, Error,
                      path + ": " + std::to_string(counters.waiting) + " paths waited for units of two resident frames");
      const std::uint32_t done = plan.forward ? interval.index : interval.index + 1;  // no later interval reads it
      for (std::uint64_t u = 0; u < units_per_frame; ++u) state.slot_of_unit[done * units_per_frame + u] = -1;
      frame_loads->release(slot_of_frame.at(done));
      slot_of_frame.erase(done);
    } else {
      run_rounds(round, *runner, *unit_loads, *slot_table, state, *table, line_count, [](std::uint64_t) { return true; },
                 [](std::uint64_t) { return true; }, resident, path);
    }
    ++stats.intervals;
    if (options.progress && !options.progress(n + 1, plan.intervals.size())) stopped = n + 1 < plan.intervals.size();
  }
  // Every frame is read: the loads' queue closes on a thread of its own (letting go of the series' page-locked
  // mapping takes a few tenths of a second for 13 GB) while the points come home, counted in the run's seconds.
  // Destroyed there, so its context made current there; joined before this returns (or throws).
  std::jthread closing([&frame_loads, &unit_loads]() noexcept {
    try {
      if (frame_loads) frame_loads->make_current();
      if (unit_loads) unit_loads->make_current();
    } catch (...) {  // without the context the queue still closes; only its page-locked pages wait for the process
    }
    frame_loads.reset();
    unit_loads.reset();
  });
  const auto collect_start = Clock::now();
  std::vector<double> releases = seed_times.empty() ? std::vector<double>(seeds.size(), t0) : seed_times;
  run.lines = collect_paths(*runner, arrays, times, plan, t1, trace.max_steps, std::move(releases), stopped, stats.home_seconds,
                            stats.fault_seconds);
  resident.collect_seconds = seconds_since(collect_start);
  closing.join();
  run.seconds = seconds_since(start);
  return run;
}

}  // namespace

PathlineRun trace_pathlines(const std::string& path, const std::vector<Vec3>& seeds, const std::vector<double>& seed_times,
                            const PathlineOptions& options) {
  const FlowField flow = open_flow(path, 0);
  HEADRACE_EXPECT(seed_times.empty() || seed_times.size() == seeds.size(), UsageError,
                  path + ": " + std::to_string(seeds.size()) + " seeds, " + std::to_string(seed_times.size()) + " release times");
  const std::vector<double> times = series_times(flow);
  const std::uint64_t element_bytes = flow.container.fields().at(flow.field).element_bytes();
  HEADRACE_EXPECT(element_bytes == point_bytes, UsageError,
                  path + ": a velocity field is float32 x 3 (12 bytes a point), this one has " + std::to_string(element_bytes));
  PathlineRun run;
  if (flow.layout == "blocks") {
    const BlockLayout layout = block_layout_of(flow.container);
    run = trace_series(flow, layout, layout.block_points() * point_bytes, layout.block_count(), times, seeds, seed_times, options);
  } else {
    const HilbertLayout layout = hilbert_layout_of(flow.container);
    const std::uint64_t unit_bytes = std::uint64_t{options.unit_pages} * page_bytes;
    check_unit_bytes(unit_bytes);
    const std::uint64_t field_bytes = flow.container.frame_field(0, flow.field).element_count * point_bytes;
    run = trace_series(flow, HilbertUnits{layout, unit_bytes / point_bytes}, unit_bytes, (field_bytes + unit_bytes - 1) / unit_bytes,
                       times, seeds, seed_times, options);
  }
  run.layout = flow.layout;
  return run;
}

}  // namespace headrace::workloads::streamlines
