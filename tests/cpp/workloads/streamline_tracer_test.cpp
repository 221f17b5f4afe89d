// The tracer against fields whose streamlines are known: straight lines, circles, hyperbolas; RK4's
// fourth order as the step halves; RK45's error control; every way a line ends; threads.
#include "headrace/workloads/streamlines/tracer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "headrace/workloads/streamlines/in_memory_field.hpp"
#include "workloads/same_lines.hpp"

namespace headrace::workloads::streamlines {
namespace {

constexpr float pi = 3.14159265358979f;

// An analytic field inside a box [-L, L]^3.
template <typename Velocity>
struct Analytic {
  Velocity velocity;
  float half_width = 10.0f;
  bool operator()(const Vec3& p, Vec3& v) const {
    if (std::abs(p.x) > half_width || std::abs(p.y) > half_width || std::abs(p.z) > half_width) return false;
    v = velocity(p);
    return true;
  }
};
template <typename Velocity>
Analytic<Velocity> analytic(Velocity velocity, float half_width = 10.0f) {
  return {velocity, half_width};
}

const auto uniform = analytic([](Vec3) { return Vec3{1.0f, 0.5f, -0.25f}; });
const auto rotation = analytic([](Vec3 p) { return Vec3{-p.y, p.x, 0.0f}; });  // solid body, period 2 pi
const auto saddle = analytic([](Vec3 p) { return Vec3{p.x, -p.y, 0.0f}; });    // x y is constant

TraceOptions rk4(float h, std::uint32_t steps) {
  TraceOptions options;
  options.step_size = h;
  options.max_steps = steps;
  return options;
}

TEST(StreamlineTracer, UniformFlowGivesStraightEvenlySpacedLines) {
  const auto line = trace(uniform, {1, 2, 3}, rk4(0.1f, 50));
  ASSERT_EQ(line.points.size(), 51u);
  EXPECT_EQ(line.forward_end, Termination::max_steps);
  for (std::size_t n = 0; n < line.points.size(); ++n) {
    const float t = 0.1f * static_cast<float>(n);
    EXPECT_NEAR(line.points[n].x, 1 + t, 1e-4f);
    EXPECT_NEAR(line.points[n].y, 2 + 0.5f * t, 1e-4f);
    EXPECT_NEAR(line.points[n].z, 3 - 0.25f * t, 1e-4f);
  }
}

TEST(StreamlineTracer, SolidBodyRotationGivesCirclesAndComesBackAfterOnePeriod) {
  const std::uint32_t steps = 400;
  const auto line = trace(rotation, {2, 0, 1}, rk4(2 * pi / steps, steps));
  for (const auto& p : line.points) {
    EXPECT_NEAR(std::hypot(p.x, p.y), 2.0f, 1e-4f);
    EXPECT_EQ(p.z, 1.0f);
  }
  EXPECT_NEAR(line.points.back().x, 2.0f, 1e-4f);
  EXPECT_NEAR(line.points.back().y, 0.0f, 1e-4f);
}

TEST(StreamlineTracer, SaddleGivesHyperbolas) {
  const auto line = trace(saddle, {0.5f, 4.0f, 0}, rk4(0.01f, 200));
  for (const auto& p : line.points) EXPECT_NEAR(p.x * p.y, 2.0f, 2e-4f);
  EXPECT_NEAR(line.points.back().x, 0.5f * std::exp(2.0f), 1e-3f);
}

// Global error of RK4 falls as h^4: halving the step divides the error at a fixed time by about 16.
TEST(StreamlineTracer, Rk4ErrorFallsWithTheFourthPowerOfTheStep) {
  auto error_at_time_4 = [](float h) {
    const auto steps = static_cast<std::uint32_t>(std::lround(4.0f / h));
    const auto end = trace(rotation, {1, 0, 0}, rk4(h, steps)).points.back();
    return std::hypot(end.x - std::cos(4.0f), end.y - std::sin(4.0f));
  };
  const float coarse = error_at_time_4(0.4f), fine = error_at_time_4(0.2f);
  EXPECT_GT(coarse / fine, 12.0f) << coarse << " " << fine;
  EXPECT_LT(coarse / fine, 20.0f) << coarse << " " << fine;
}

TEST(StreamlineTracer, Rk45GrowsItsStepWhileTheErrorStaysBelowTheTolerance) {
  TraceOptions options;
  options.integrator = Integrator::rk45;
  options.step_size = 0.01f;
  options.tolerance = 1e-5f;
  options.max_steps = 20;
  options.max_step = 0.5f;
  const auto line = trace(rotation, {1, 0, 0}, options);
  ASSERT_EQ(line.points.size(), 21u);
  float turned = 0;  // unwrapped angle: each step turns less than half a turn
  for (std::size_t n = 1; n < line.points.size(); ++n) {
    const Vec3 a = line.points[n - 1], b = line.points[n];
    turned += std::atan2(a.x * b.y - a.y * b.x, a.x * b.x + a.y * b.y);
    EXPECT_NEAR(std::hypot(b.x, b.y), 1.0f, 1e-4f);
  }
  EXPECT_GT(turned, 20 * 0.01f * 10);  // the steps grew far past the first one
  EXPECT_LT(turned, 20 * options.max_step + 1e-3f);
}

TEST(StreamlineTracer, LinesEndWhereTheyLeaveTheDomainOrStagnate) {
  const auto leaving = trace(analytic([](Vec3) { return Vec3{1, 0, 0}; }, 1.0f), {0, 0, 0}, rk4(0.1f, 1000));
  EXPECT_EQ(leaving.forward_end, Termination::left_domain);
  EXPECT_LE(leaving.points.back().x, 1.0f);
  EXPECT_GT(leaving.points.back().x, 0.85f);

  const auto still = trace(analytic([](Vec3) { return Vec3{0, 0, 0}; }), {0, 0, 0}, rk4(0.1f, 1000));
  EXPECT_EQ(still.forward_end, Termination::stagnant);
  EXPECT_EQ(still.points.size(), 1u);

  const auto outside = trace(uniform, {100, 0, 0}, rk4(0.1f, 10));
  EXPECT_EQ(outside.forward_end, Termination::left_domain);
  EXPECT_EQ(outside.points.size(), 1u);  // the seed alone
  EXPECT_STREQ(to_string(Termination::stagnant), "stagnant");
  EXPECT_THROW((void)trace(uniform, {0, 0, 0}, rk4(0.0f, 10)), UsageError);
}

TEST(StreamlineTracer, BothDirectionsPutTheBackwardPartFirst) {
  TraceOptions options = rk4(0.1f, 5);
  options.direction = Direction::both;
  const auto line = trace(uniform, {0, 0, 0}, options);
  ASSERT_EQ(line.points.size(), 11u);
  for (std::size_t n = 0; n < line.points.size(); ++n)
    EXPECT_NEAR(line.points[n].x, 0.1f * (static_cast<float>(n) - 5.0f), 1e-5f);
  options.direction = Direction::backward;
  const auto back = trace(uniform, {0, 0, 0}, options);
  ASSERT_EQ(back.points.size(), 6u);
  EXPECT_NEAR(back.points.front().x, -0.5f, 1e-5f);
  EXPECT_EQ(back.points.back().x, 0.0f);
}

TEST(StreamlineTracer, ManyThreadsGiveTheSameLinesAsOne) {
  std::vector<Vec3> seeds;
  for (int i = 0; i < 64; ++i) seeds.push_back({0.1f * static_cast<float>(i % 8) + 0.2f, 0.1f * static_cast<float>(i / 8), 0});
  const auto one = trace_all(rotation, seeds, rk4(0.05f, 100), 1);
  const auto many = trace_all(rotation, seeds, rk4(0.05f, 100), 48);  // more threads than cores
  ASSERT_EQ(one.offsets.size(), seeds.size() + 1);
  EXPECT_TRUE(testing::same_lines(one, many));
}

// A grid holding a linear field: trilinear interpolation is exact, so the grid's streamlines are the
// analytic ones.
TEST(StreamlineTracer, GridFieldInterpolatesLinearFieldsExactly) {
  GridGeometry grid;
  grid.dims[0] = 9, grid.dims[1] = 7, grid.dims[2] = 5;
  grid.origin[0] = -2, grid.origin[1] = -1.5f, grid.origin[2] = -1;
  grid.spacing[0] = 0.5f, grid.spacing[1] = 0.5f, grid.spacing[2] = 0.5f;
  std::vector<float> values;
  for (int k = 0; k < 5; ++k)
    for (int j = 0; j < 7; ++j)
      for (int i = 0; i < 9; ++i) {
        const float x = -2 + 0.5f * i, y = -1.5f + 0.5f * j;
        values.insert(values.end(), {-y, x, 0.0f});
      }
  const InMemoryField field{grid, values.data()};
  Vec3 v;
  ASSERT_TRUE(field({0.3f, -0.7f, 0.2f}, v));
  EXPECT_NEAR(v.x, 0.7f, 1e-6f);
  EXPECT_NEAR(v.y, 0.3f, 1e-6f);
  EXPECT_FALSE(field({2.01f, 0, 0}, v));
  ASSERT_TRUE(field({2.0f, 1.5f, 1.0f}, v));  // the upper corner belongs to the last cell
  const auto on_grid = trace(field, {1, 0, 0}, rk4(0.05f, 40));
  const auto exact = trace(rotation, {1, 0, 0}, rk4(0.05f, 40));
  ASSERT_EQ(on_grid.points.size(), exact.points.size());
  for (std::size_t n = 0; n < exact.points.size(); ++n) {
    EXPECT_NEAR(on_grid.points[n].x, exact.points[n].x, 1e-5f);
    EXPECT_NEAR(on_grid.points[n].y, exact.points[n].y, 1e-5f);
  }
}

}  // namespace
}  // namespace headrace::workloads::streamlines
