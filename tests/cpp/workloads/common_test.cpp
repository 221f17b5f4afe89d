// What every renderer shares (workloads/common/): cameras refuse what cannot be and a spec makes the camera
// its orbit or look-at names; a colour map's entry clamps at the ends and takes the first for NaN, and a
// map of the wrong size or range is refused naming it.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "headrace/error.hpp"
#include "headrace/workloads/common/camera.hpp"
#include "headrace/workloads/common/colour_map.hpp"

namespace headrace::workloads::common {
namespace {

TEST(Camera, RefusesWhatCannotBe) {
  EXPECT_THROW((void)look_at({0, 0, 0}, {0, 0, 0}, {0, 1, 0}, 60, 8, 8), UsageError);
  EXPECT_THROW((void)look_at({0, 0, 1}, {0, 0, 0}, {0, 0, 1}, 60, 8, 8), UsageError);
  EXPECT_THROW((void)look_at({0, 0, 1}, {0, 0, 0}, {0, 1, 0}, 180, 8, 8), UsageError);
  EXPECT_THROW((void)look_at({0, 0, 1}, {0, 0, 0}, {0, 1, 0}, 60, 0, 8), UsageError);
  EXPECT_THROW((void)orbit({0, 0, 0}, 1, 0, 90, 60, 8, 8), UsageError);
  EXPECT_THROW((void)orbit({0, 0, 0}, 0, 0, 0, 60, 8, 8), UsageError);
  const Camera camera = orbit({1, 2, 3}, 4, 90, 0, 60, 16, 8);  // on +x, looking back along -x
  EXPECT_NEAR(camera.eye.x, 5, 1e-5);
  EXPECT_NEAR(camera.forward.x, -1, 1e-6);
  EXPECT_NEAR(length(camera.right) / length(camera.up), 2.0, 1e-5);  // the aspect ratio
}

TEST(Camera, ASpecMakesItsOrbitOrLookAt) {
  const CameraSpec orbiting{{0, 0, 0}, {1, 2, 3}, {0, 1, 0}, std::array<float, 3>{4, 90, 0}, 60, 16, 8};
  const Camera a = camera_of(orbiting), b = orbit({1, 2, 3}, 4, 90, 0, 60, 16, 8);
  EXPECT_EQ(a.eye.x, b.eye.x);
  EXPECT_EQ(a.forward.x, b.forward.x);
  EXPECT_EQ(a.pixels(), 16u * 8u);
  const CameraSpec looking{{0, 0, 5}, {0, 0, 0}, {0, 1, 0}, std::nullopt, 45, 32, 32};
  const Camera c = camera_of(looking);
  EXPECT_EQ(c.eye.z, 5.0f);
  EXPECT_NEAR(c.forward.z, -1, 1e-6);
}

TEST(ColourMap, AnEntryClampsAtTheEndsAndNaNTakesTheFirst) {
  EXPECT_EQ(colour_map_entry(0.0f, 0, 1), 0);
  EXPECT_EQ(colour_map_entry(0.5f, 0, 1), colour_map_entries / 2);
  EXPECT_EQ(colour_map_entry(1.0f, 0, 1), colour_map_entries - 1);
  EXPECT_EQ(colour_map_entry(-3.0f, 0, 1), 0);
  EXPECT_EQ(colour_map_entry(7.0f, 0, 1), colour_map_entries - 1);
  EXPECT_EQ(colour_map_entry(INFINITY, 0, 1), colour_map_entries - 1);
  EXPECT_EQ(colour_map_entry(NAN, 0, 1), 0);
}

TEST(ColourMap, RefusesAMapOfTheWrongSizeOrRange) {
  const std::vector<float> table(4 * colour_map_entries, 0.5f);
  EXPECT_NO_THROW(check_colour_map(table, 0, 1, "a colour table"));
  const auto message = [](const std::vector<float>& rgba, float lo, float hi) {
    try {
      check_colour_map(rgba, lo, hi, "a transfer function");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(std::vector<float>(12), 0, 1).find("a transfer function holds 256 RGBA entries, got 12 floats"), std::string::npos);
  EXPECT_NE(message(table, 1, 1).find("a transfer function's value range"), std::string::npos);
  EXPECT_NE(message(table, 0, NAN).find("a transfer function's value range"), std::string::npos);
}

}  // namespace
}  // namespace headrace::workloads::common
