// The sphere renderer's shared math and its CPU reference: a sphere seen head-on has the size and the
// shading the optics give; the nearer of two spheres wins whatever the order and the batching; the
// screen rectangle never misses a pixel the sphere covers; a look (radius scale, colour by a column or a
// per-particle field) draws what the restyled records draw.
#include "headrace/workloads/particles/reference_renderer.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "headrace/error.hpp"
#include "headrace/workloads/common/camera.hpp"

namespace headrace::workloads::particles {
namespace {

using common::look_at;
using common::orbit;

constexpr std::uint32_t black = 0xff000000u;

std::uint32_t red_of(std::uint32_t rgba) { return rgba & 0xffu; }

TEST(SphereGlyphs, ASphereHeadOnHasItsSizeAndShading) {
  const Camera camera = look_at({0, 0, 5}, {0, 0, 0}, {0, 1, 0}, 60.0f, 201, 201);
  ReferenceRenderer renderer(camera, black, 4);
  const Particle sphere{0, 0, 0, 1.0f, 0.8f, 0.4f, 0.2f, 1.0f};
  renderer.draw({&sphere, 1}, 0);
  const auto& image = renderer.image();
  // Centre: facing the headlight, ambient + diffuse = 1, plus the full highlight.
  const std::uint32_t centre = image[100 * 201 + 100];
  EXPECT_EQ(red_of(centre), static_cast<std::uint32_t>(std::fmin(1.0f, 0.8f + specular) * 255 + 0.5f));
  EXPECT_EQ((centre >> 8) & 0xffu, static_cast<std::uint32_t>((0.4f + specular) * 255 + 0.5f));
  EXPECT_EQ(centre >> 24, 255u);
  // The silhouette: the sphere subtends asin(1/5); its disc's radius in pixels is tan(asin(0.2)) over
  // tan(30 degrees), times half the image.
  const double radius_px = std::tan(std::asin(0.2)) / std::tan(M_PI / 6) * 100.5;
  std::size_t covered = 0;
  for (const std::uint32_t pixel : image) covered += pixel != black;
  EXPECT_NEAR(static_cast<double>(covered), M_PI * radius_px * radius_px, 0.03 * M_PI * radius_px * radius_px);
  // The rim is darker than the centre: the light falls off with the normal's angle.
  const int rim_x = 100 + static_cast<int>(radius_px) - 2;
  EXPECT_LT(red_of(image[100 * 201 + rim_x]), red_of(centre) / 2);
}

TEST(SphereGlyphs, TheNearerSphereWinsInEveryOrderAndBatching) {
  const Camera camera = orbit({0.5f, 0.5f, 0.5f}, 2.0f, 30.0f, 20.0f, 45.0f, 96, 64);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<Particle> particles(400);
  for (auto& p : particles) p = {unit(random), unit(random), unit(random), 0.04f, unit(random), unit(random), unit(random), 1};
  particles[7] = particles[3];  // the same sphere twice: the lower index wins the tie
  particles[7].r = 1 - particles[3].r;
  ReferenceRenderer whole(camera, black, 4);
  whole.draw(particles, 0);
  // The same particles in batches, last batch first: indices keep their meaning.
  ReferenceRenderer batched(camera, black, 3);
  for (std::size_t first = 400; first > 0;) {
    const std::size_t size = std::min<std::size_t>(first, 64);
    first -= size;
    batched.draw({particles.data() + first, size}, static_cast<std::uint32_t>(first));
  }
  EXPECT_EQ(whole.image(), batched.image());
  std::size_t drawn = 0;
  for (const std::uint32_t pixel : whole.image()) drawn += pixel != black;
  EXPECT_GT(drawn, 96u * 64 / 4);
  // Drawing again over the same image changes nothing; clear() goes back to the background.
  whole.draw(particles, 0);
  EXPECT_EQ(whole.image(), batched.image());
  whole.clear();
  EXPECT_EQ(whole.image(), std::vector<std::uint32_t>(96 * 64, black));
}

TEST(SphereGlyphs, TheScreenRectangleHoldsEveryPixelTheSphereCovers) {
  std::mt19937 random(11);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    const Camera camera = orbit({0, 0, 0}, 3.0f + unit(random), 180 * unit(random), 60 * unit(random), 50.0f, 48, 40);
    const Particle s{unit(random), unit(random), unit(random), 0.05f + 0.3f * std::fabs(unit(random)), 1, 1, 1, 1};
    PixelRect rect;
    const bool on_screen = screen_rect(camera, s, rect);
    for (int py = 0; py < camera.height; ++py)
      for (int px = 0; px < camera.width; ++px) {
        float t = 0;
        if (!hit_sphere(camera, s, px, py, t)) continue;
        ASSERT_TRUE(on_screen) << "trial " << trial;
        ASSERT_TRUE(px >= rect.x0 && px < rect.x1 && py >= rect.y0 && py < rect.y1) << "trial " << trial;
      }
  }
}

TEST(SphereGlyphs, SpheresBehindTheEyeAreNotDrawn) {
  const Camera camera = look_at({0, 0, 0}, {0, 0, -1}, {0, 1, 0}, 60.0f, 32, 32);
  ReferenceRenderer renderer(camera, black, 2);
  const Particle behind{0, 0, 3, 0.5f, 1, 1, 1, 1};
  renderer.draw({&behind, 1}, 0);
  EXPECT_EQ(renderer.image(), std::vector<std::uint32_t>(32 * 32, black));
}

// A look's colour table: a ramp from blue to red, so that every entry differs.
std::vector<float> ramp_table() {
  std::vector<float> table;
  for (int k = 0; k < common::colour_map_entries; ++k) {
    const float u = static_cast<float>(k) / (common::colour_map_entries - 1);
    table.insert(table.end(), {u, 0.5f, 1 - u, 1});
  }
  return table;
}

// The records as the look draws them, worked out here on their own.
std::vector<Particle> restyled(std::vector<Particle> particles, const GlyphLook& look, const std::vector<float>& scalars) {
  for (std::size_t i = 0; i < particles.size(); ++i) {
    Particle& p = particles[i];
    const float value = look.colour_by == colour_from_scalars ? scalars[i] : look.colour_by == 1 ? p.y : p.radius;
    const float u = std::clamp((value - look.lo) / (look.hi - look.lo), 0.0f, 1.0f);
    const int entry = std::min(static_cast<int>(u * common::colour_map_entries), common::colour_map_entries - 1);
    p.radius *= look.radius_scale;
    p.r = look.table[4 * entry], p.g = look.table[4 * entry + 1], p.b = look.table[4 * entry + 2];
  }
  return particles;
}

TEST(GlyphLook, ALookDrawsWhatTheRestyledRecordsDraw) {
  const Camera camera = orbit({0.5f, 0.5f, 0.5f}, 2.0f, 30.0f, 20.0f, 45.0f, 96, 64);
  std::mt19937 random(11);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<Particle> particles(500);
  std::vector<float> scalars(500);
  for (std::size_t i = 0; i < particles.size(); ++i) {
    particles[i] = {unit(random), unit(random), unit(random), 0.01f + 0.03f * unit(random), 1, 1, 1, 1};
    scalars[i] = 4 * unit(random) - 1;  // past both ends of the range below: the end colours
  }
  for (const GlyphLook look : {GlyphLook{1.5f, 1, ramp_table(), 0.2f, 0.8f}, GlyphLook{0.7f, 3, ramp_table(), 0.01f, 0.04f},
                               GlyphLook{2.0f, colour_from_scalars, ramp_table(), 0.0f, 2.0f}}) {
    ReferenceRenderer styled(camera, black, 3);
    styled.set_look(look);
    styled.draw({particles.data(), 200}, 0, scalars.data());  // in two batches: the scalars by number in the frame
    styled.draw({particles.data() + 200, 300}, 200, scalars.data());
    ReferenceRenderer plain(camera, black, 3);
    plain.draw(restyled(particles, look, scalars), 0);
    EXPECT_EQ(styled.image(), plain.image()) << "colour by " << look.colour_by;
  }
  // The default look draws the records as they are.
  ReferenceRenderer styled(camera, black, 2), plain(camera, black, 2);
  styled.set_look({2.0f, colour_from_scalars, ramp_table(), 0, 1});
  styled.set_look({});
  styled.draw(particles, 0);
  plain.draw(particles, 0);
  EXPECT_EQ(styled.image(), plain.image());
}

TEST(GlyphLook, AnotherCameraResizesTheFrame) {
  std::vector<Particle> particles{{0.5f, 0.5f, 0.5f, 0.2f, 1, 0, 0, 1}, {0.2f, 0.6f, 0.4f, 0.1f, 0, 1, 0, 1}};
  ReferenceRenderer renderer(orbit({0.5f, 0.5f, 0.5f}, 2.0f, 0, 0, 45, 40, 30), black, 2);
  renderer.draw(particles, 0);
  const Camera other = orbit({0.5f, 0.5f, 0.5f}, 2.5f, 60, 10, 45, 64, 48);
  renderer.set_camera(other);
  renderer.draw(particles, 0);
  ReferenceRenderer fresh(other, black, 2);
  fresh.draw(particles, 0);
  EXPECT_EQ(renderer.image().size(), 64u * 48u);
  EXPECT_EQ(renderer.image(), fresh.image());
}

TEST(GlyphLook, RefusesWhatCannotBeDrawn) {
  ReferenceRenderer renderer(orbit({0, 0, 0}, 2, 0, 0, 45, 8, 8), black, 1);
  auto message = [&](const GlyphLook& look) {
    try {
      renderer.set_look(look);
    } catch (const UsageError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({0.0f}).find("radius scale"), std::string::npos);
  EXPECT_NE(message({1.0f, 5, ramp_table(), 0, 1}).find("colour source 5"), std::string::npos);
  EXPECT_NE(message({1.0f, 0, std::vector<float>(12), 0, 1}).find("256 RGBA entries, got 12"), std::string::npos);
  EXPECT_NE(message({1.0f, 0, ramp_table(), 1, 1}).find("first below the second"), std::string::npos);
  renderer.set_look({1.0f, colour_from_scalars, ramp_table(), 0, 1});
  const Particle one{0, 0, 0, 0.5f, 1, 1, 1, 1};
  EXPECT_THROW(renderer.draw({&one, 1}, 0), UsageError);  // a per-particle field's values are needed
}

}  // namespace
}  // namespace headrace::workloads::particles
