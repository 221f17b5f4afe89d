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
#include "headrace/workloads/common/camera.hpp"
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
  for (int i = 0; i < common::colour_map_entries; ++i) {
    const float t = static_cast<float>(i) / (common::colour_map_entries - 1);
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

// Two levels over 16^3 level-0 cells in 4^3 bricks, the box [8,16) x [0,8) x [4,12) refined by 2 into 8^3
// bricks: 4 region layers along z, refined cells across the middle ones.
AmrLayout layered() {
  AmrLayout l;
  l.domain_cells = {16, 16, 16};
  l.refinement = {2};
  l.spacing = {1, 1, 1};
  for (std::int64_t z = 0; z < 16; z += 4)
    for (std::int64_t y = 0; y < 16; y += 4)
      for (std::int64_t x = 0; x < 16; x += 4)
        if (!(x >= 8 && y < 8 && z >= 4 && z < 12)) l.bricks.push_back({0, {x, y, z}, {4, 4, 4}});
  for (std::int64_t z = 8; z < 24; z += 8)
    for (std::int64_t y = 0; y < 16; y += 8)
      for (std::int64_t x = 16; x < 32; x += 8) l.bricks.push_back({1, {x, y, z}, {8, 8, 8}});
  return l;
}

// The frame's cells of `runs`, one after another.
std::vector<float> packed(const std::vector<float>& frame, std::span<const ElementRun> runs) {
  std::vector<float> out;
  for (const ElementRun& r : runs)
    out.insert(out.end(), frame.begin() + static_cast<std::ptrdiff_t>(r.first), frame.begin() + static_cast<std::ptrdiff_t>(r.first + r.count));
  return out;
}

// Channels of two images that differ by more than 2 levels; the largest difference.
std::pair<int, int> channels_off(std::span<const std::uint32_t> a, std::span<const std::uint32_t> b) {
  int off = 0, most = 0;
  for (std::size_t p = 0; p < a.size(); ++p)
    for (int c = 0; c < 3; ++c) {
      const int d = std::abs(static_cast<int>((a[p] >> (8 * c)) & 0xff) - static_cast<int>((b[p] >> (8 * c)) & 0xff));
      off += d > 2, most = std::max(most, d);
    }
  return {off, most};
}

TEST(VolumeSlabs, CutTheLayersInOrderIntoSlabsOfAboutEqualCells) {
  const VolumeTopology topology(layered(), "test");
  const auto two = topology.cut_slabs(2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].first, 0);
  EXPECT_EQ(two[0].last, two[1].first);
  EXPECT_EQ(two[1].last, 4);
  const auto six = topology.cut_slabs(6);  // more slabs than layers: some empty, in place
  ASSERT_EQ(six.size(), 6u);
  std::int32_t at = 0, drawn = 0;
  for (const RegionSlab& s : six) {
    EXPECT_EQ(s.first, at);
    EXPECT_GE(s.last, s.first);
    at = s.last, drawn += s.last > s.first;
  }
  EXPECT_EQ(at, 4);
  EXPECT_EQ(drawn, 4);
}

TEST(VolumeSlabs, CompositedSlabsDrawTheWholeGridsImage) {
  const VolumeTopology topology(layered(), "test");
  const auto frame = random_scalars(topology.cell_count(), 11);
  const CpuVolumeRenderer whole(topology, 2);
  const TransferFunction tf = ramp();
  for (const bool iso : {false, true})
    for (const Camera& camera : {common::orbit({8, 8, 8}, 40, 30, 25, 45, 96, 72), common::orbit({8, 8, 8}, 40, 20, -35, 45, 96, 72),
                                 common::orbit({8, 8, 8}, 5, 30, 10, 60, 96, 72)}) {  // the last from inside the domain
      RenderSettings settings;
      settings.iso_mode = iso, settings.iso = 0.5f;
      const auto expected = whole.render(frame, whole.classify(whole.ranges(frame), tf, settings), camera, tf, settings);
      for (const std::uint32_t count : {2u, 3u, 4u}) {
        std::vector<float> layers;
        for (const RegionSlab& slab : topology.cut_slabs(count)) {
          const auto runs = topology.slab_cells(slab);
          const VolumeTopology part = topology.slab(slab, runs);
          const auto scalars = packed(frame, runs);
          ASSERT_EQ(part.cell_count(), scalars.size());
          if (count == 4) EXPECT_LT(scalars.size(), topology.cell_count()) << "a slab holds its layers and its ghost, not the frame";
          const CpuVolumeRenderer renderer(part, 2);
          const auto layer = renderer.render_layer(scalars, renderer.classify(renderer.ranges(scalars), tf, settings), camera, tf, settings);
          layers.insert(layers.end(), layer.begin(), layer.end());
        }
        const auto image = composite_layers(layers, count, camera, 0, camera.height, RenderSettings{}.background, 2);
        const auto [off, most] = channels_off(image, expected);
        EXPECT_LE(off, static_cast<int>(image.size() * 3 / 500)) << count << " slabs, iso " << iso << ": channels off by more than 2";
        if (!iso) EXPECT_LE(most, 2) << count << " slabs: a DVR pixel differs by rounding only";
      }
    }
}

TEST(VolumeSlabs, ASlabOverRunsThatMissACellIsRefused) {
  const VolumeTopology topology(layered(), "test");
  const RegionSlab slab = topology.cut_slabs(2)[1];
  auto runs = topology.slab_cells(slab);
  ASSERT_FALSE(runs.empty());
  // Whole chunks of the frame that hold the runs are as good as the runs themselves.
  const std::vector<ElementRun> frame{{0, topology.cell_count()}};
  EXPECT_EQ(topology.slab(slab, frame).cell_count(), topology.cell_count());
  runs.back().count -= 1;
  EXPECT_THROW((void)topology.slab(slab, runs), UsageError);
  EXPECT_THROW((void)topology.cut_slabs(0), UsageError);
  EXPECT_THROW((void)topology.slab_cells({3, 9}), UsageError);
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
  const Camera camera = common::orbit({4, 4, 4}, 20, 30, 20, 45, 96, 72);
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

TEST(VolumeGpu, ASlabsLayersCompositeToTheCpuReferencesImage) {
  if (gpu::device_count() == 0) GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver());
  const VolumeTopology topology(layered(), "test");
  const auto frame = random_scalars(topology.cell_count(), 12);
  const TransferFunction tf = ramp();
  const RenderSettings settings;
  const Camera camera = common::orbit({8, 8, 8}, 40, 30, 25, 45, 96, 72);
  const CpuVolumeRenderer whole(topology, 2);
  const auto expected = whole.render(frame, whole.classify(whole.ranges(frame), tf, settings), camera, tf, settings);
  std::vector<float> layers;
  for (const RegionSlab& slab : topology.cut_slabs(3)) {
    const auto runs = topology.slab_cells(slab);
    const VolumeTopology part = topology.slab(slab, runs);
    const auto scalars = packed(frame, runs);
    GpuVolumeRenderer renderer(0, part);
    renderer.set_transfer_function(tf, settings);
    renderer.make_current();
    gpu::DeviceBuffer device_scalars(std::max<std::size_t>(scalars.size(), 1) * sizeof(float));
    const gpu::Stream stream;
    if (!scalars.empty())
      gpu::check(gpu::require_driver().cuMemcpyHtoDAsync(device_scalars.pointer(), scalars.data(), scalars.size() * sizeof(float),
                                                         stream.handle()),
                 "cuMemcpyHtoDAsync");
    GpuRegionState state = renderer.region_state();
    renderer.ranges(device_scalars.pointer(), state, stream.handle());
    renderer.classify(state, stream.handle());
    renderer.render_layer(device_scalars.pointer(), state, camera, stream.handle());
    const auto layer = renderer.layer(stream.handle());
    layers.insert(layers.end(), layer.begin(), layer.end());
  }
  const auto image = composite_layers(layers, 3, camera, 0, camera.height, settings.background);
  EXPECT_LE(channels_off(image, expected).first, static_cast<int>(image.size() * 3 / 500)) << "channels off by more than 2";
}

}  // namespace
}  // namespace headrace::workloads::volume
