// Pathlines' math (issue 40) against a flow whose paths are known: a rotation about z whose rate changes
// between two frames, with a steady rise. The field is linear in space (trilinear interpolation exact)
// and linear in time between the frames, so a path turns by the rate's integral, (w0 + w1) span / 2 over
// the interval. RK4 in space and time converges to it at order 4; steps end on the frame's time.
#include "headrace/workloads/streamlines/pathline_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "headrace/workloads/streamlines/in_memory_field.hpp"

namespace headrace::workloads::streamlines {
namespace {

constexpr float rise = 0.1f;

// The rotation at rate `rate` on a 9^3 grid over [-1, 1]^3, float32 x 3 a point, x fastest.
std::vector<float> rotation_frame(float rate) {
  std::vector<float> values;
  for (int k = 0; k < 9; ++k)
    for (int j = 0; j < 9; ++j)
      for (int i = 0; i < 9; ++i) {
        const float x = -1 + 0.25f * i, y = -1 + 0.25f * j;
        values.insert(values.end(), {-rate * y, rate * x, rise});
      }
  return values;
}

GridGeometry unit_box() {
  GridGeometry grid;
  for (int axis = 0; axis < 3; ++axis) grid.dims[axis] = 9, grid.origin[axis] = -1, grid.spacing[axis] = 0.25f;
  return grid;
}

// Where a point goes from tau = 0 to the interval's end in `steps` RK4 steps between the two frames.
Vec3 carried(const BetweenFrames<InMemoryField>& flow, Vec3 p, int steps) {
  float tau = 0;
  const float h = flow.span / static_cast<float>(steps);
  for (int n = 0; n < steps; ++n) {
    const float step = step_within(tau, h, flow.span);
    Vec3 next;
    EXPECT_TRUE(rk4_step_in_time(flow, p, tau, step, next));
    p = next;
    tau = n + 1 == steps ? flow.span : tau + step;
  }
  return p;
}

TEST(PathlineMath, BetweenTwoFramesTheVelocityIsLinearInTime) {
  const std::vector<float> slow = rotation_frame(1.0f), fast = rotation_frame(3.0f);
  const BetweenFrames<InMemoryField> flow{{unit_box(), slow.data()}, {unit_box(), fast.data()}, 0.5f};
  Vec3 v;
  for (const auto& [tau, rate] : {std::pair{0.0f, 1.0f}, std::pair{0.25f, 2.0f}, std::pair{0.5f, 3.0f}}) {
    ASSERT_TRUE(flow({0.5f, 0.0f, 0.0f}, tau, v));
    EXPECT_NEAR(v.y, 0.5f * rate, 1e-6f) << "tau " << tau;
    EXPECT_NEAR(v.z, rise, 1e-7f);
  }
  EXPECT_FALSE(flow({1.5f, 0.0f, 0.0f}, 0.1f, v)) << "outside the grid: no velocity";
}

TEST(PathlineMath, Rk4InSpaceAndTimeConvergesToTheTurnAtOrderFour) {
  const std::vector<float> slow = rotation_frame(1.0f), fast = rotation_frame(2.0f);
  const BetweenFrames<InMemoryField> flow{{unit_box(), slow.data()}, {unit_box(), fast.data()}, 0.8f};
  const Vec3 start{0.6f, 0.0f, -0.5f};
  const double turn = (1.0 + 2.0) * 0.8 / 2.0;  // the rate's integral over the interval
  const double exact[3] = {0.6 * std::cos(turn), 0.6 * std::sin(turn), -0.5 + rise * 0.8};
  std::vector<double> errors;
  for (const int steps : {2, 4, 8}) {
    const Vec3 end = carried(flow, start, steps);
    errors.push_back(std::hypot(end.x - exact[0], end.y - exact[1]));
    EXPECT_NEAR(end.z, exact[2], 1e-6) << "the rise is linear: every step gets it right";
  }
  for (std::size_t n = 1; n < errors.size(); ++n) {
    const double ratio = errors[n - 1] / errors[n];
    EXPECT_GT(ratio, 12.0) << "halving the step from " << (2 << (n - 1)) << " steps";
    EXPECT_LT(ratio, 20.0);
  }
  EXPECT_LT(errors.back(), 1e-4);
}

TEST(PathlineMath, AStepEndsOnTheFramesTimeInsteadOfCrossingIt) {
  EXPECT_FLOAT_EQ(step_within(0.0f, 0.3f, 1.0f), 0.3f);
  EXPECT_FLOAT_EQ(step_within(0.8f, 0.3f, 1.0f), 0.2f);  // forward: up to the later frame
  EXPECT_FLOAT_EQ(step_within(1.0f, 0.3f, 1.0f), 0.0f);  // on it: the next interval goes on
  EXPECT_FLOAT_EQ(step_within(0.5f, -0.3f, 0.0f), -0.3f);
  EXPECT_FLOAT_EQ(step_within(0.2f, -0.3f, 0.0f), -0.2f);  // backward: down to the earlier frame
  EXPECT_FLOAT_EQ(step_within(0.2f, 0.3f, 0.4f), 0.2f);    // or to the time traced to, inside the interval
}

TEST(PathlineMath, ASteadyFieldsStepsAreTheStreamlinesSteps) {
  const std::vector<float> frame = rotation_frame(1.5f);
  const InMemoryField field{unit_box(), frame.data()};
  const BetweenFrames<InMemoryField> same{field, field, 1.0f};
  Vec3 streamline, pathline;
  float error_streamline = 0, error_pathline = 0;
  ASSERT_TRUE(rk4_step(field, {0.4f, 0.2f, 0.0f}, 0.1f, streamline));
  ASSERT_TRUE(rk4_step_in_time(same, {0.4f, 0.2f, 0.0f}, 0.3f, 0.1f, pathline));
  EXPECT_FLOAT_EQ(streamline.x, pathline.x);
  EXPECT_FLOAT_EQ(streamline.y, pathline.y);
  ASSERT_TRUE(rk45_step(field, {0.4f, 0.2f, 0.0f}, 0.1f, streamline, error_streamline));
  ASSERT_TRUE(rk45_step_in_time(same, {0.4f, 0.2f, 0.0f}, 0.3f, 0.1f, pathline, error_pathline));
  EXPECT_FLOAT_EQ(streamline.x, pathline.x);
  EXPECT_NEAR(error_streamline, error_pathline, 1e-7f);
}

}  // namespace
}  // namespace headrace::workloads::streamlines
