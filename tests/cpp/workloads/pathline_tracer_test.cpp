// The pathline tracer (pathline_tracer.hpp) on a series whose paths are known in closed form: a rotation
// about z whose rate grows linearly in time (w(t) = 1 + t / 2), with a steady rise, frames 0.5 apart. The
// field is linear in space and in time, so trilinear and linear-in-time interpolation are exact and a path
// turns by the rate's integral, t + t^2 / 4. Run by the host executor on the CPU; on a GPU the kernel's
// paths are checked against it bit for bit.
#include "headrace/workloads/streamlines/pathline_tracer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/format/writer.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/workloads/streamlines/blocked_field.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"
#include "support/temp_directory.hpp"

namespace headrace::workloads::streamlines {
namespace {

constexpr float rise = 0.1f;
constexpr int side = 9;  // points a side over [-1, 1]: in blocks of 4 (the last padded)

double rate(double t) { return 1.0 + 0.5 * t; }
double turn(double t0, double t1) { return (t1 - t0) + 0.25 * (t1 * t1 - t0 * t0); }

BlockLayout rotation_layout() {
  BlockLayout layout;
  for (int axis = 0; axis < 3; ++axis) {
    layout.grid.dims[axis] = side;
    layout.grid.origin[axis] = -1;
    layout.grid.spacing[axis] = 0.25f;
    layout.block[axis] = 4;
  }
  return layout;
}

// A series of the rotation at `times`, in native blocks; `points_of(frame)` the points each frame holds
// (the grid's, unless a test changes one).
void write_series(const std::string& path, const std::vector<double>& times,
                  const std::function<std::uint64_t(std::size_t)>& points_of = {}) {
  const BlockLayout layout = rotation_layout();
  format::WriterOptions options;
  options.chunk_size_bytes = 4 * layout.block_points() * 12;
  format::ContainerWriter writer(path, {{"velocity", format::DType::float32, 3}}, options);
  writer.set_attribute("layout", std::string("blocks"));
  writer.set_attribute("grid_dims", std::vector<std::int64_t>{side, side, side});
  writer.set_attribute("block_dims", std::vector<std::int64_t>{4, 4, 4});
  writer.set_attribute("grid_origin", std::vector<double>{-1, -1, -1});
  writer.set_attribute("grid_spacing", std::vector<double>{0.25, 0.25, 0.25});
  for (std::size_t f = 0; f < times.size(); ++f) {
    const auto w = static_cast<float>(rate(times[f]));
    std::vector<float> blocked(3 * layout.block_count() * layout.block_points());
    for (int k = 0; k < side; ++k)
      for (int j = 0; j < side; ++j)
        for (int i = 0; i < side; ++i) {
          std::uint64_t element = 0;
          const std::uint64_t unit = layout.unit_of(i, j, k, element);
          const float x = -1 + 0.25f * i, y = -1 + 0.25f * j;
          const float v[3] = {-w * y, w * x, rise};
          std::memcpy(&blocked[3 * (unit * layout.block_points() + element)], v, sizeof v);
        }
    const std::uint64_t points = points_of ? points_of(f) : blocked.size() / 3;
    const auto frame = writer.add_frame(times[f], format::BoundingBox{{-1, -1, -1}, {1, 1, 1}});
    writer.write_field(frame, 0, std::as_bytes(std::span<const float>(blocked.data(), 3 * points)));
  }
  writer.close();
}

const std::vector<double> five_frames{0.0, 0.5, 1.0, 1.5, 2.0};

std::vector<Vec3> ring_seeds() {
  std::vector<Vec3> seeds;
  for (int n = 0; n < 12; ++n) {
    const float r = 0.2f + 0.05f * static_cast<float>(n % 6), a = 0.5f * static_cast<float>(n);
    seeds.push_back({r * std::cos(a), r * std::sin(a), -0.6f + 0.05f * static_cast<float>(n)});
  }
  return seeds;
}

// Where a seed released at t0 stands at t1, in closed form.
Vec3 carried(Vec3 seed, double t0, double t1) {
  const double a = turn(t0, t1), c = std::cos(a), s = std::sin(a);
  return {static_cast<float>(c * seed.x - s * seed.y), static_cast<float>(s * seed.x + c * seed.y),
          static_cast<float>(seed.z + rise * (t1 - t0))};
}

double distance(Vec3 a, Vec3 b) { return std::sqrt(double(a.x - b.x) * (a.x - b.x) + double(a.y - b.y) * (a.y - b.y) + double(a.z - b.z) * (a.z - b.z)); }

PathlineOptions host_options(float step = 0.05f) {
  PathlineOptions options;
  options.trace.step_size = step;
  options.trace.max_steps = 4000;
  options.threads = 2;
  return options;
}

// Paths equal point for point, bit for bit.
bool same_paths(const Pathlines& a, const Pathlines& b) {
  const auto bits = [](const auto& x, const auto& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0;
  };
  return a.offsets == b.offsets && a.ends == b.ends && bits(a.points, b.points) && bits(a.velocities, b.velocities) &&
         bits(a.times, b.times);
}

class PathlineTracer : public ::testing::Test {
 protected:
  testing::TempDirectory dir;
  std::string path = dir.file("rotation.hrc");
  void SetUp() override { write_series(path, five_frames); }
};

TEST_F(PathlineTracer, PathsFollowTheRotationsClosedFormThroughEveryFrame) {
  const std::vector<Vec3> seeds = ring_seeds();
  const PathlineRun run = trace_pathlines(path, seeds, {}, host_options());
  const Pathlines& paths = run.lines;
  ASSERT_EQ(paths.offsets.size(), seeds.size() + 1);
  EXPECT_EQ(run.stats.intervals, 4u);
  EXPECT_TRUE(run.stats.whole_frames);
  EXPECT_EQ(run.stats.frames_loaded, 5u);
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    const auto first = static_cast<std::size_t>(paths.offsets[s]), last = static_cast<std::size_t>(paths.offsets[s + 1]) - 1;
    EXPECT_EQ(paths.ends[s], Termination::end_time);
    EXPECT_EQ(paths.points[first].x, seeds[s].x);
    EXPECT_EQ(paths.times[first], 0.0);
    EXPECT_EQ(paths.times[last], 2.0);
    EXPECT_EQ(last - first, 40u) << "0.05 steps from 0 to 2";
    std::size_t on_frames = 0;
    for (std::size_t k = first; k <= last; ++k) {
      if (k > first) EXPECT_GT(paths.times[k], paths.times[k - 1]);
      for (const double t : five_frames) on_frames += paths.times[k] == t;
      // Each point where the closed form puts it, and the velocity there at its time the flow's.
      EXPECT_LT(distance(paths.points[k], carried(seeds[s], 0.0, paths.times[k])), 2e-5) << s << " " << k;
      const double w = rate(paths.times[k]);
      EXPECT_NEAR(paths.velocities[k].x, -w * paths.points[k].y, 2e-6);
      EXPECT_NEAR(paths.velocities[k].y, w * paths.points[k].x, 2e-6);
    }
    EXPECT_EQ(on_frames, 5u) << "a point on every frame's time";
  }
}

TEST_F(PathlineTracer, Rk4ConvergesAtOrderFourAndRk45StepsEndOnTheFramesTimes) {
  const std::vector<Vec3> seeds{{0.7f, 0.0f, -0.5f}};
  std::vector<double> errors;
  for (const float step : {0.25f, 0.125f, 0.0625f}) {
    const Pathlines paths = trace_pathlines(path, seeds, {}, host_options(step)).lines;
    errors.push_back(distance(paths.points.back(), carried(seeds[0], 0.0, 2.0)));
  }
  for (std::size_t n = 1; n < errors.size(); ++n) {
    EXPECT_GT(errors[n - 1] / errors[n], 12.0) << "halving the step, " << n;
    EXPECT_LT(errors[n - 1] / errors[n], 20.0);
  }
  PathlineOptions adaptive = host_options(0.3f);
  adaptive.trace.integrator = Integrator::rk45;
  adaptive.trace.tolerance = 1e-6f;
  const Pathlines paths = trace_pathlines(path, seeds, {}, adaptive).lines;
  EXPECT_LT(distance(paths.points.back(), carried(seeds[0], 0.0, 2.0)), 1e-4);
  for (const double t : five_frames) EXPECT_NE(std::find(paths.times.begin(), paths.times.end(), t), paths.times.end()) << t;
}

// The points a path keeps are bounded by its step, not by max_steps: whatever the step (a divisor of the
// frames' spacing or not, longer than it), the direction and the releases, every path reaches t1 within them.
TEST_F(PathlineTracer, EachPathKeepsThePointsItsStepsReachNotMaxSteps) {
  const std::vector<Vec3> seeds{{0.3f, 0.3f, 0.0f}, {-0.2f, 0.4f, 0.1f}, {0.5f, -0.1f, -0.3f}};
  const std::vector<double> releases{0.0, 0.37, 1.91};
  for (const bool forward : {true, false}) {
    for (const float step : {0.05f, 0.07f, 0.3f, 0.5f, 0.9f}) {
      for (const Integrator integrator : {Integrator::rk4, Integrator::rk45}) {
        PathlineOptions options = host_options(step);
        options.trace.max_steps = 100000;
        options.trace.integrator = integrator;
        options.trace.min_step = 0.01f;
        if (!forward) options.t0 = 2.0, options.t1 = 0.0;
        const std::vector<double> when = forward ? releases : std::vector<double>{2.0, 1.63, 0.09};
        const PathlineRun run = trace_pathlines(path, seeds, when, options);
        const std::string label = (forward ? "forward " : "backward ") + std::to_string(step) +
                                  (integrator == Integrator::rk4 ? " rk4" : " rk45");
        const std::uint32_t bound = static_cast<std::uint32_t>(2.0 / (integrator == Integrator::rk4 ? step : 0.01f)) + 2 * 4 + 2;
        EXPECT_LE(run.stats.point_capacity, bound) << label;
        for (std::size_t s = 0; s < seeds.size(); ++s) {
          EXPECT_EQ(run.lines.ends[s], Termination::end_time) << label << " " << s;
          EXPECT_LE(run.lines.offsets[s + 1] - run.lines.offsets[s], run.stats.point_capacity) << label << " " << s;
        }
      }
    }
  }
  // Where max_steps is the smaller, it bounds the points, and paths end there as they did.
  PathlineOptions few = host_options();
  few.trace.max_steps = 10;
  const PathlineRun run = trace_pathlines(path, seeds, {}, few);
  EXPECT_EQ(run.stats.point_capacity, 11u);
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    EXPECT_EQ(run.lines.ends[s], Termination::max_steps);
    EXPECT_EQ(run.lines.offsets[s + 1] - run.lines.offsets[s], 11);
  }
  // A step too small beside the frames' spacing for float time to bound: max_steps + 1.
  few.trace.step_size = 1e-6f;
  EXPECT_EQ(trace_pathlines(path, seeds, {}, few).stats.point_capacity, 11u);
  few.trace.max_steps = 100000;
  EXPECT_EQ(trace_pathlines(path, {seeds[0]}, std::vector<double>{1.99995}, few).stats.point_capacity, 100001u);
}

TEST_F(PathlineTracer, BackwardInTimeAPathReturnsToItsSeed) {
  const Vec3 seed{0.5f, 0.2f, -0.4f};
  PathlineOptions options = host_options(0.02f);
  options.t0 = 1.75, options.t1 = 0.25;  // inside the first and last intervals
  const Vec3 there = carried(seed, 0.25, 1.75);
  const Pathlines paths = trace_pathlines(path, {there}, {}, options).lines;
  EXPECT_EQ(paths.times.front(), 1.75);
  EXPECT_EQ(paths.times.back(), 0.25);
  EXPECT_EQ(paths.ends[0], Termination::end_time);
  EXPECT_LT(distance(paths.points.back(), seed), 1e-5);
  for (std::size_t k = 1; k < paths.times.size(); ++k) EXPECT_LT(paths.times[k], paths.times[k - 1]);
}

TEST_F(PathlineTracer, SeedsReleasedLaterStartAtTheirOwnTime) {
  const std::vector<Vec3> seeds{{0.3f, 0.3f, 0.0f}, {0.3f, 0.3f, 0.0f}, {0.3f, 0.3f, 0.0f}};
  const std::vector<double> releases{0.0, 0.8, 2.0};
  const Pathlines paths = trace_pathlines(path, seeds, releases, host_options()).lines;
  EXPECT_EQ(paths.seed_times, releases);
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    const auto first = static_cast<std::size_t>(paths.offsets[s]), last = static_cast<std::size_t>(paths.offsets[s + 1]) - 1;
    EXPECT_NEAR(paths.times[first], releases[s], 1e-7) << "its frame's time and a float from there";
    EXPECT_EQ(paths.times[last], 2.0);
    EXPECT_LT(distance(paths.points[last], carried(seeds[s], releases[s], 2.0)), 2e-5) << s;
  }
  EXPECT_EQ(paths.offsets[3] - paths.offsets[2], 1) << "released at the end: its seed alone";
}

TEST_F(PathlineTracer, UnitsLoadedInRoundsTraceTheWholeFramesPaths) {
  const std::vector<Vec3> seeds = ring_seeds();
  for (const Integrator integrator : {Integrator::rk4, Integrator::rk45}) {
    PathlineOptions options = host_options();
    options.trace.integrator = integrator;
    const PathlineRun whole = trace_pathlines(path, seeds, {}, options);
    options.cache_bytes = 20 * 768;  // 20 blocks of 4^3: fewer than one frame's 27
    const PathlineRun rounds = trace_pathlines(path, seeds, {}, options);
    EXPECT_TRUE(whole.stats.whole_frames);
    EXPECT_FALSE(rounds.stats.whole_frames);
    EXPECT_GT(rounds.stats.resident.evictions, 0u);
    EXPECT_TRUE(same_paths(whole.lines, rounds.lines)) << static_cast<int>(integrator);
  }
  PathlineOptions options = host_options();
  options.cache_bytes = 15 * 768;
  EXPECT_THROW((void)trace_pathlines(path, seeds, {}, options), UsageError) << "fewer than 8 units of each of two frames";
}

TEST_F(PathlineTracer, TheHilbertLayoutTracesTheBlocksPaths) {
  const std::string hilbert = dir.file("hilbert.hrc");
  (void)convert_blocks_to_hilbert(path, hilbert, 2, 3);
  const std::vector<Vec3> seeds = ring_seeds();
  PathlineOptions options = host_options();
  options.unit_pages = 3;
  const Pathlines blocks = trace_pathlines(path, seeds, {}, options).lines;
  const PathlineRun run = trace_pathlines(hilbert, seeds, {}, options);
  EXPECT_EQ(run.layout, "hilbert");
  EXPECT_EQ(run.unit_bytes, 3 * page_bytes);
  EXPECT_TRUE(same_paths(blocks, run.lines));
}

TEST_F(PathlineTracer, APathThatLeavesTheGridEndsAtItsLastPointInside) {
  PathlineOptions options = host_options();
  const Pathlines paths = trace_pathlines(path, {{0.0f, 0.0f, 0.9f}}, {}, options).lines;  // rises through z = 1
  EXPECT_EQ(paths.ends[0], Termination::left_domain);
  EXPECT_LE(paths.points.back().z, 1.0f);
  EXPECT_GT(paths.points.back().z, 0.99f - 0.05f * rise);
  options.trace.max_steps = 5;
  const Pathlines short_paths = trace_pathlines(path, {{0.5f, 0.0f, 0.0f}}, {}, options).lines;
  EXPECT_EQ(short_paths.ends[0], Termination::max_steps);
  EXPECT_EQ(short_paths.points.size(), 6u);
}

TEST_F(PathlineTracer, BadSeriesAndSeedsAreRefusedNamingTheFile) {
  const auto refused = [](const std::string& file, const std::vector<Vec3>& seeds, const std::vector<double>& releases,
                          const PathlineOptions& options, const std::string& says) {
    try {
      (void)trace_pathlines(file, seeds, releases, options);
      ADD_FAILURE() << "not refused: " << says;
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find(file), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find(says), std::string::npos) << error.what();
    }
  };
  const std::vector<Vec3> seed{{0.2f, 0.2f, 0.0f}};
  PathlineOptions options = host_options();
  refused(path, {{1.5f, 0.0f, 0.0f}}, {}, options, "outside the grid");
  refused(path, seed, {2.5}, options, "outside [0, 2]");
  refused(path, seed, {1.0, 1.0}, options, "2 release times");
  options.t0 = 1.0, options.t1 = 1.0;
  refused(path, seed, {}, options, "t0 and t1 are both 1");
  options.t1 = 3.0;
  refused(path, seed, {}, options, "t1 = 3 lies outside");
  const std::string unordered = dir.file("unordered.hrc");
  write_series(unordered, {0.0, 0.5, 0.5, 1.0});
  refused(unordered, seed, {}, host_options(), "frame 2's time 0.5 is not after frame 1's 0.5");
  const std::string reshaped = dir.file("reshaped.hrc");
  write_series(reshaped, {0.0, 0.5, 1.0}, [](std::size_t f) { return f == 2 ? 64 * 8 : 64 * 27; });
  refused(reshaped, seed, {}, host_options(), "frame 2's velocity holds 512 points, frame 0's 1728");
  const std::string single = dir.file("single.hrc");
  write_series(single, {0.0});
  refused(single, seed, {}, host_options(), "2 frames or more");
}

// The GPU's kernel against the host executor: the same rounds and math with IEEE operations only, the
// same bits, whole frames resident or units loaded in rounds, RK4 and RK45, forward and backward.
TEST(PathlineTracerGpu, TheKernelTracesTheHostExecutorsPaths) {
  if (gpu::device_count() == 0) GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver());
  testing::TempDirectory dir;
  const std::string path = dir.file("rotation.hrc");
  write_series(path, five_frames);
  std::vector<Vec3> seeds;
  for (int n = 0; n < 500; ++n) seeds.push_back({0.8f * std::cos(0.1f * n) * (n % 7) / 7.0f, 0.8f * std::sin(0.1f * n), -0.9f + 0.003f * n});
  for (const Integrator integrator : {Integrator::rk4, Integrator::rk45})
    for (const std::uint64_t cache_bytes : {std::uint64_t{1} << 20, std::uint64_t{20} * 768})
      for (const bool forward : {true, false}) {
        PathlineOptions options = host_options(0.04f);
        options.trace.integrator = integrator;
        options.cache_bytes = cache_bytes;
        if (!forward) options.t0 = 2.0, options.t1 = 0.0;
        const PathlineRun host = trace_pathlines(path, seeds, {}, options);
        options.device = 0;
        const PathlineRun gpu = trace_pathlines(path, seeds, {}, options);
        EXPECT_EQ(host.stats.whole_frames, gpu.stats.whole_frames);
        EXPECT_TRUE(same_paths(host.lines, gpu.lines)) << static_cast<int>(integrator) << " " << cache_bytes << " " << forward;
      }
}

}  // namespace
}  // namespace headrace::workloads::streamlines
