// The volume renderer's topology (bricks, overlaps, the region grid) and the math it shares with its CUDA
// kernels: value ranges against every cell counted by brute force, the tent-basis reconstruction, and the
// GPU's ranges, classification and image against the CPU reference's.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "headrace/error.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/workloads/particles/camera.hpp"
#include "headrace/workloads/volume/volume_renderer.hpp"

namespace headrace::workloads::volume {
namespace {

// Two levels: level 0 of 8^3 cells with its upper-x half refined by 2 (a 8x16x16 level-1 brick), the
// coarse half cut into two bricks.
AmrLayout two_levels() {
  AmrLayout l;
  l.domain_cells = {8, 8, 8};
  l.refinement = {2};
  l.origin = {0, 0, 0};
  l.spacing = {1, 1, 1};
  l.bricks = {{0, {0, 0, 0}, {4, 8, 4}}, {0, {0, 0, 4}, {4, 8, 4}}, {1, {8, 0, 0}, {8, 16, 16}}};
  return l;
}

std::vector<float> random_scalars(std::uint64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1.0f, 2.0f);
  std::vector<float> out(count);
  for (float& v : out) v = value(rng);
  return out;
}

TransferFunction ramp() {
  TransferFunction tf;
  tf.lo = -1, tf.hi = 2;
  for (int i = 0; i < tf_entries; ++i) {
    const float t = static_cast<float>(i) / (tf_entries - 1);
    tf.rgba.insert(tf.rgba.end(), {t, 1.0f - t, 0.5f, t > 0.5f ? 0.3f * (t - 0.5f) : 0.0f});
  }
  return tf;
}

TEST(VolumeTopology, FindsOverlappingBricksAcrossLevels) {
  std::vector<AmrBrick> bricks = two_levels().bricks;
  const std::vector<std::int64_t> refinement{2};
  EXPECT_FALSE(overlapping_bricks(bricks, refinement).has_value());
  bricks.push_back({1, {6, 6, 6}, {1, 1, 1}});  // a fine cell inside the first coarse brick
  const auto pair = overlapping_bricks(bricks, refinement);
  ASSERT_TRUE(pair.has_value());
  EXPECT_EQ(pair->first, 0u);
  EXPECT_EQ(pair->second, 3u);
}

TEST(VolumeTopology, RefusesBricksOutsideTheDomainOrOverlapping) {
  AmrLayout outside = two_levels();
  outside.bricks[2].size[0] = 9;  // level 1 reaches x = 17 of 16
  try {
    VolumeTopology(outside, "test.hrc");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("test.hrc: brick 2 (level 1, lower 8 0 0, size 9 16 16) lies outside the domain"),
              std::string::npos)
        << e.what();
  }
  AmrLayout overlapping = two_levels();
  overlapping.bricks[1].lower[2] = 3;
  EXPECT_THROW(VolumeTopology(overlapping, "test.hrc"), UsageError);
}

TEST(VolumeTopology, EveryRegionListsEveryBrickWhoseTentsReachIt) {
  const VolumeTopology topology(two_levels(), "test");
  EXPECT_EQ(topology.cell_count(), 2u * 4 * 8 * 4 + 8u * 16 * 16);
  const VolumeView v = topology.host_view();
  for (std::uint64_t r = 0; r < topology.region_count(); ++r) {
    const auto x = static_cast<std::int32_t>(r % v.regions[0]), y = static_cast<std::int32_t>((r / v.regions[0]) % v.regions[1]),
               z = static_cast<std::int32_t>(r / (static_cast<std::uint64_t>(v.regions[0]) * v.regions[1]));
    const Vec3 lo = region_corner(v, x, y, z), hi = region_corner(v, x + 1, y + 1, z + 1);
    for (std::uint32_t b = 0; b < topology.bricks().size(); ++b) {
      std::int32_t clo[3], chi[3];
      tent_cells(topology.bricks()[b], lo, hi, clo, chi);
      const bool reaches = clo[0] <= chi[0] && clo[1] <= chi[1] && clo[2] <= chi[2];
      const auto listed = topology.region_bricks().subspan(topology.region_first()[r], topology.region_first()[r + 1] - topology.region_first()[r]);
      if (reaches) EXPECT_NE(std::find(listed.begin(), listed.end(), b), listed.end()) << "region " << r << " brick " << b;
    }
  }
}

TEST(VolumeRanges, BoundEveryCellWhoseTentReachesTheRegion) {
  const VolumeTopology topology(two_levels(), "test");
  const auto scalars = random_scalars(topology.cell_count(), 3);
  const CpuVolumeRenderer renderer(topology, 2);
  const auto ranges = renderer.ranges(scalars);
  const VolumeView v = topology.host_view();
  for (std::uint64_t r = 0; r < topology.region_count(); ++r) {
    const auto x = static_cast<std::int32_t>(r % v.regions[0]), y = static_cast<std::int32_t>((r / v.regions[0]) % v.regions[1]),
               z = static_cast<std::int32_t>(r / (static_cast<std::uint64_t>(v.regions[0]) * v.regions[1]));
    const Vec3 lo = region_corner(v, x, y, z), hi = region_corner(v, x + 1, y + 1, z + 1);
    float expect_lo = 3e38f, expect_hi = -3e38f;
    for (const BrickRecord& b : topology.bricks())  // every cell of every brick, its tent tested directly
      for (std::int32_t k = 0; k < b.size[2]; ++k)
        for (std::int32_t j = 0; j < b.size[1]; ++j)
          for (std::int32_t i = 0; i < b.size[0]; ++i) {
            const float c[3] = {b.lower.x + (i + 0.5f) * b.cell.x, b.lower.y + (j + 0.5f) * b.cell.y, b.lower.z + (k + 0.5f) * b.cell.z};
            const float h[3] = {b.cell.x, b.cell.y, b.cell.z};
            bool reaches = true;
            for (int a = 0; a < 3; ++a) reaches = reaches && c[a] - h[a] <= component(hi, a) && c[a] + h[a] >= component(lo, a);
            if (!reaches) continue;
            const float s = scalars[b.first_cell + i + static_cast<std::uint64_t>(b.size[0]) * (j + static_cast<std::uint64_t>(b.size[1]) * k)];
            expect_lo = std::min(expect_lo, s), expect_hi = std::max(expect_hi, s);
          }
    EXPECT_EQ(ranges[r].lo, expect_lo) << "region " << r;
    EXPECT_EQ(ranges[r].hi, expect_hi) << "region " << r;
  }
}

TEST(VolumeReconstruction, IsTheCellValueAtACentreAwayFromBoundariesAndBlendsAcrossLevels) {
  const VolumeTopology topology(two_levels(), "test");
  std::vector<float> scalars(topology.cell_count());
  // A linear function of x, stored as cell-centre values: the tent basis reproduces it exactly inside a
  // level and blends continuously across the level boundary at x = 4.
  for (const BrickRecord& b : topology.bricks())
    for (std::int32_t k = 0; k < b.size[2]; ++k)
      for (std::int32_t j = 0; j < b.size[1]; ++j)
        for (std::int32_t i = 0; i < b.size[0]; ++i)
          scalars[b.first_cell + i + static_cast<std::uint64_t>(b.size[0]) * (j + static_cast<std::uint64_t>(b.size[1]) * k)] =
              b.lower.x + (i + 0.5f) * b.cell.x;
  VolumeView v = topology.host_view();
  v.scalars = scalars.data();
  float value = 0;
  ASSERT_TRUE(sample_at(v, {1.5f, 3.5f, 3.5f}, value));
  EXPECT_FLOAT_EQ(value, 1.5f);
  ASSERT_TRUE(sample_at(v, {6.25f, 2.25f, 5.75f}, value));
  EXPECT_FLOAT_EQ(value, 6.25f);
  float previous = -1;
  // Across the boundary: never decreasing (flat where only one coarse tent reaches), within a cell of x.
  for (float x = 3.0f; x <= 5.0f; x += 0.05f) {
    ASSERT_TRUE(sample_at(v, {x, 4.0f, 4.0f}, value));
    EXPECT_GE(value, previous - 1e-5f);  // the sum over weights rounds
    EXPECT_NEAR(value, x, 0.5f);
    previous = value;
  }
}

TEST(VolumeGpu, RangesClassificationAndImageMatchTheCpuReference) {
  if (gpu::device_count() == 0) GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver());
  const VolumeTopology topology(two_levels(), "test");
  const auto scalars = random_scalars(topology.cell_count(), 5);
  const CpuVolumeRenderer cpu(topology, 2);
  GpuVolumeRenderer gpu_renderer(0, topology);
  const TransferFunction tf = ramp();
  const RenderSettings settings;
  gpu_renderer.set_transfer_function(tf, settings);
  gpu_renderer.make_current();
  gpu::DeviceBuffer device_scalars(scalars.size() * sizeof(float));
  const gpu::Stream stream;
  gpu::check(gpu::require_driver().cuMemcpyHtoDAsync(device_scalars.pointer(), scalars.data(), scalars.size() * sizeof(float),
                                                     stream.handle()),
             "cuMemcpyHtoDAsync");
  GpuRegionState state = gpu_renderer.region_state();
  gpu_renderer.ranges(device_scalars.pointer(), state, stream.handle());
  gpu_renderer.classify(state, stream.handle());
  const Camera camera = particles::orbit({4, 4, 4}, 20, 30, 20, 45, 96, 72);
  gpu_renderer.render(device_scalars.pointer(), state, camera, stream.handle());
  const auto image = gpu_renderer.image(stream.handle());
  const auto ranges = cpu.ranges(scalars);
  const auto visible = cpu.classify(ranges, tf, settings);
  const auto gpu_ranges = gpu_renderer.ranges_of(state);
  for (std::size_t r = 0; r < ranges.size(); ++r) {
    EXPECT_EQ(gpu_ranges[r].lo, ranges[r].lo);
    EXPECT_EQ(gpu_ranges[r].hi, ranges[r].hi);
  }
  EXPECT_EQ(gpu_renderer.visible_of(state), visible);
  const auto expected = cpu.render(scalars, visible, camera, tf, settings);
  int off = 0;
  for (std::size_t p = 0; p < image.size(); ++p)
    for (int c = 0; c < 3; ++c)
      off += std::abs(static_cast<int>((image[p] >> (8 * c)) & 0xff) - static_cast<int>((expected[p] >> (8 * c)) & 0xff)) > 2;
  EXPECT_LE(off, static_cast<int>(image.size() / 500)) << "channels off by more than 2";
}

}  // namespace
}  // namespace headrace::workloads::volume
