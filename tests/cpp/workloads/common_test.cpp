// What every renderer shares (workloads/common/): cameras refuse what cannot be and a spec makes the camera
// its orbit or look-at names; a colour map's entry clamps at the ends and takes the first for NaN, and a
// map of the wrong size or range is refused naming it; a frame pool hands its buffers out again once their
// last holder lets go, keeps no more than it was told, and its buffers outlive it.
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "headrace/error.hpp"
#include "headrace/workloads/common/camera.hpp"
#include "headrace/workloads/common/colour_map.hpp"
#include "headrace/workloads/common/frame_buffer.hpp"

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

TEST(FramePool, ABufferComesBackOnceItsLastHolderLetsGo) {
  FramePool pool;
  FramePool::Buffer first = pool.take(3 << 20);
  std::byte* const memory = first.get();
  FramePool::Buffer holder = first;  // an image writer's array
  first.reset();
  EXPECT_NE(pool.take(3 << 20).get(), memory) << "handed out again while a holder had it";
  EXPECT_EQ(pool.free_buffers(), 1u);  // the one just taken and let go; `memory` is still held
  std::thread([released = std::move(holder)]() mutable { released.reset(); }).join();  // let go on another thread
  EXPECT_EQ(pool.free_buffers(), 2u);
  const FramePool::Buffer again = pool.take(1 << 20);  // a smaller frame takes a free buffer too
  EXPECT_EQ(pool.free_buffers(), 1u);
}

TEST(FramePool, ReservedBuffersWaitForFramesUpToWhatItKeeps) {
  FramePool pool(4);
  pool.reserve(1 << 20, 3);
  EXPECT_EQ(pool.free_buffers(), 3u);
  std::vector<FramePool::Buffer> held;
  for (int i = 0; i < 6; ++i) held.push_back(pool.take(1 << 20));  // three reserved, three made
  EXPECT_EQ(pool.free_buffers(), 0u);
  held.clear();
  EXPECT_EQ(pool.free_buffers(), 4u) << "keeps four; the others go back to the system";
  pool.reserve(2 << 20, 2);  // larger frames: the small buffers cannot serve them
  EXPECT_EQ(pool.free_buffers(), 4u);
}

TEST(FramePool, ABufferOutlivesItsPool) {
  FramePool::Buffer kept;
  {
    FramePool pool;
    kept = pool.take(4096);
    kept.get()[4095] = std::byte{7};
  }
  EXPECT_EQ(kept.get()[4095], std::byte{7});
  kept.reset();  // freed, with no pool to go back to
}

}  // namespace
}  // namespace headrace::workloads::common
