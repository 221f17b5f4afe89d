// Seed 000's streaming render loop: a frame read batch by batch through the queue into a few segments,
// through every backend and codec, draws the image the reference draws from the whole frame in memory;
// a corrupt chunk stops the frame naming the chunk. On a GPU the kernels draw the same image.
#include "headrace/workloads/particles/segmented_render.hpp"

#include <chrono>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "headrace/codec/chain_writer.hpp"
#include "headrace/error.hpp"
#include "headrace/format/writer.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/workloads/common/camera.hpp"
#include "support/container_fixture.hpp"
#include "support/temp_directory.hpp"

namespace headrace::workloads::particles {
namespace {

using common::look_at;
using common::orbit;

using format::CodecId;

std::vector<Particle> random_particles(std::size_t count) {
  std::mt19937 random(3);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<Particle> particles(count);
  for (auto& p : particles) p = {unit(random), unit(random), unit(random), 0.03f, unit(random), unit(random), unit(random), 1};
  return particles;
}

// 1000 particles, 128 to a 4 KiB chunk (or 100 to a chunk of 3200 bytes, padded to a page in the file).
struct ParticleFile {
  testing::TempDirectory dir;
  std::string path = dir.file("p.hrc");
  std::vector<Particle> particles = random_particles(1000);

  explicit ParticleFile(CodecId codec = CodecId::none, std::uint64_t chunk_bytes = 4096) {
    format::WriterOptions options;
    options.chunk_size_bytes = chunk_bytes;
    if (codec != CodecId::none) codec::store_fields_with(options, {codec::Chain::of_codec(codec)});
    format::ContainerWriter writer(path, {{"particles", format::DType::float32, 8}}, options);
    const auto frame = writer.add_frame(0.0, format::BoundingBox{{0, 0, 0}, {1, 1, 1}});
    writer.write_field(frame, 0, std::as_bytes(std::span<const Particle>(particles)));
    writer.close();
  }
};

const Camera& test_camera() {
  static const Camera camera = orbit({0.5f, 0.5f, 0.5f}, 2.2f, 35.0f, 25.0f, 45.0f, 80, 60);
  return camera;
}

std::vector<std::uint32_t> reference_image(const std::vector<Particle>& particles) {
  ReferenceRenderer renderer(test_camera(), 0xff000000u, 2);
  renderer.draw(particles, 0);
  return renderer.image();
}

// Flips a byte in the middle of a chunk's stored bytes: its checksum (or its decoder) then fails.
void corrupt(const std::string& path, const format::ChunkInfo& chunk) {
  auto bytes = testing::read_file(path);
  bytes[chunk.offset + chunk.stored_size / 2] ^= std::byte{0x5a};
  testing::write_file(path, bytes);
}

engine::QueueOptions host_queue(io::BackendKind backend) {
  engine::QueueOptions options;
  options.backend = backend;
  options.staging_bytes = 1 << 20;
  return options;
}

TEST(ParticleBatches, GroupWholeChunksUpToTheBatchSize) {
  const ParticleFile file;
  const auto container = format::Container::open(file.path);
  const auto batches = particle_batches(container, 0, 0, 300);  // chunks of 128: two to a batch
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[0].chunk_count, 2u);
  EXPECT_EQ(batches[0].particles, 256u);
  EXPECT_EQ(batches[3].first_particle, 768u);
  EXPECT_EQ(batches[3].particles, 1000u - 768);
  EXPECT_EQ(particle_batches(container, 0, 0, 10).size(), 8u);  // never less than a chunk
}

class SegmentedRender : public ::testing::TestWithParam<std::tuple<io::BackendKind, CodecId>> {};

TEST_P(SegmentedRender, DrawsTheReferenceImageBatchByBatch) {
  const auto [backend, codec] = GetParam();
  const ParticleFile file(codec);
  if (auto why = io::unavailable_reason(backend, file.path)) GTEST_SKIP() << *why;
  const auto container = format::Container::open(file.path);
  const auto expected = reference_image(file.particles);
  for (const bool preload : {false, true}) {
    engine::Queue queue(host_queue(backend));
    const queue::FileId id = queue.add_file(file.path);
    ReferenceRenderer renderer(test_camera(), 0xff000000u, 3);
    SegmentedRenderer segmented(renderer);
    const auto stats = segmented.render(queue, id, container, 0, 0, {.batch_particles = 300, .segments = 3, .preload = preload});
    EXPECT_EQ(renderer.image(), expected) << io::to_string(backend) << " " << format::to_string(codec) << " preload " << preload;
    EXPECT_EQ(stats.batches, 4u);
    EXPECT_EQ(stats.particles, 1000u);
    EXPECT_EQ(stats.batch_draw_seconds.size(), 4u);
    EXPECT_EQ(stats.stored_bytes, container.stored_bytes());
    EXPECT_EQ(stats.segment_waits, 0u);  // the reference's draws end before the next load is asked for
    EXPECT_GT(stats.seconds, 0.0);
    EXPECT_EQ(stats.h2d_seconds, 0.0);  // host destinations: no copy stream
  }
}

// The segments are kept from frame to frame: frames that need more or larger segments grow them, and
// a frame streamed without drawing leaves nothing drawn; every drawn frame is the reference image.
TEST(SegmentedRenderReuse, OneBufferServesFramesOfEveryShape) {
  const ParticleFile file;
  const auto container = format::Container::open(file.path);
  const auto expected = reference_image(file.particles);
  engine::Queue queue(host_queue(io::BackendKind::posix));
  const queue::FileId id = queue.add_file(file.path);
  ReferenceRenderer renderer(test_camera(), 0xff000000u, 2);
  SegmentedRenderer segmented(renderer);
  const std::vector<SegmentedRenderOptions> shapes = {{.batch_particles = 128, .segments = 2},
                                                      {.batch_particles = 1000, .segments = 1},
                                                      {.batch_particles = 300, .segments = 8},
                                                      {.batch_particles = 128, .segments = 3, .preload = true}};
  for (const auto& shape : shapes) {
    const auto stats = segmented.render(queue, id, container, 0, 0, shape);
    EXPECT_EQ(renderer.image(), expected) << shape.batch_particles << " x " << shape.segments;
    EXPECT_EQ(stats.particles, 1000u);
  }
  const auto alone = segmented.render(queue, id, container, 0, 0, {.batch_particles = 300, .segments = 2, .draw = false});
  EXPECT_EQ(alone.batch_draw_seconds.size(), 0u);
  EXPECT_EQ(alone.stored_bytes, container.stored_bytes());
  EXPECT_EQ(renderer.image(), std::vector<std::uint32_t>(expected.size(), 0xff000000u));
}

INSTANTIATE_TEST_SUITE_P(BackendsAndCodecs, SegmentedRender,
                         ::testing::Combine(::testing::Values(io::BackendKind::posix, io::BackendKind::direct,
                                                             io::BackendKind::mmap, io::BackendKind::uring),
                                            ::testing::Values(CodecId::none, CodecId::lz4, CodecId::zstd)),
                         [](const auto& info) {
                           return std::string(io::to_string(std::get<0>(info.param))) + "_" +
                                  format::to_string(std::get<1>(info.param));
                         });

// Three frames of 1000 particles each, different in every frame (100 to a chunk of 3200 bytes, padded
// to a page in the file).
struct SeriesFile {
  testing::TempDirectory dir;
  std::string path = dir.file("series.hrc");
  std::vector<std::vector<Particle>> frames;

  explicit SeriesFile(CodecId codec = CodecId::none) {
    format::WriterOptions options;
    options.chunk_size_bytes = 3200;
    if (codec != CodecId::none) codec::store_fields_with(options, {codec::Chain::of_codec(codec)});
    format::ContainerWriter writer(path, {{"particles", format::DType::float32, 8}}, options);
    for (int f = 0; f < 3; ++f) {
      frames.push_back(random_particles(1000));
      for (auto& p : frames.back()) p.x = 0.3f * static_cast<float>(f) + 0.4f * p.x;  // each frame somewhere else
      const auto frame = writer.add_frame(f, format::BoundingBox{{0, 0, 0}, {1, 1, 1}});
      writer.write_field(frame, 0, std::as_bytes(std::span<const Particle>(frames.back())));
    }
    writer.close();
  }
};

// A series: each frame loads the next one's first batches while its last ones are drawn; every frame is
// still its own reference image and reads its own bytes, whether the next call takes the loads or
// asks for another frame (then they are simply overwritten).
TEST(SegmentedRenderSeries, TheNextFramesFirstBatchesAreLoadedAheadAndEveryFrameIsItsOwn) {
  const SeriesFile file;
  const auto container = format::Container::open(file.path);
  for (const io::BackendKind backend : {io::BackendKind::posix, io::BackendKind::mmap}) {
    engine::Queue queue(host_queue(backend));
    const queue::FileId id = queue.add_file(file.path);
    ReferenceRenderer renderer(test_camera(), 0xff000000u, 2);
    SegmentedRenderer segmented(renderer);
    // {particles a batch, segments, batches loaded ahead}: one a segment once this frame's are drawn (4
    // batches in 3 segments: 3; 10 in 2: 2), up to the whole next frame (4 in 8 segments: each into a
    // segment this frame does not use).
    struct Case {
      std::uint64_t batch;
      unsigned segments;
      std::uint64_t ahead;
    };
    for (const auto [batch, segments, ahead] : {Case{300, 3, 3}, Case{100, 2, 2}, Case{300, 8, 4}}) {
      const std::vector<std::pair<std::uint32_t, std::optional<std::uint32_t>>> calls = {
          {0, 1}, {1, 2}, {2, 0}, {0, 1}, {2, std::nullopt}, {1, 1}, {1, std::nullopt}};  // {2, …} after {0, 1}: not taken
      std::optional<std::uint32_t> asked;  // the frame the call before loaded ahead
      for (const auto& [frame, next] : calls) {
        const auto stats = segmented.render(queue, id, container, frame, 0, {.batch_particles = batch, .segments = segments, .next_frame = next});
        EXPECT_EQ(stats.loaded_ahead, asked == frame ? ahead : 0u) << "batch " << batch << " frame " << frame;
        asked = next;
        EXPECT_EQ(renderer.image(), reference_image(file.frames[frame]))
            << io::to_string(backend) << " batch " << batch << " frame " << frame;
        EXPECT_EQ(stats.particles, 1000u);
        EXPECT_EQ(stats.stored_bytes, 10u * 3200) << "frame " << frame << ": its own bytes, read ahead or not";
      }
    }
  }
}

// Loads ahead run on past a call's return, so a frame whose first batches the call before loaded counts
// its time from that call's end: what the caller did between the two calls is the frame's, not hidden.
TEST(SegmentedRenderSeries, AFrameLoadedAheadCountsItsTimeFromTheCallBeforesEnd) {
  SeriesFile file(CodecId::none);
  const auto container = format::Container::open(file.path);
  engine::Queue queue(host_queue(io::BackendKind::posix));
  const queue::FileId id = queue.add_file(file.path);
  ReferenceRenderer renderer(test_camera(), 0xff000000u, 2);
  SegmentedRenderer segmented(renderer);
  const auto between = std::chrono::milliseconds(300);
  (void)segmented.render(queue, id, container, 0, 0, {.batch_particles = 300, .segments = 3, .next_frame = 1});
  std::this_thread::sleep_for(between);
  const auto continued = segmented.render(queue, id, container, 1, 0, {.batch_particles = 300, .segments = 3});
  EXPECT_GT(continued.loaded_ahead, 0u);
  EXPECT_GE(continued.seconds, 0.3);
  EXPECT_EQ(renderer.image(), reference_image(file.frames[1]));
  std::this_thread::sleep_for(between);  // nothing loaded ahead for this one: its own call's time
  const auto alone = segmented.render(queue, id, container, 2, 0, {.batch_particles = 300, .segments = 3});
  EXPECT_EQ(alone.loaded_ahead, 0u);
  EXPECT_LT(alone.seconds, 0.3);
}

TEST(SegmentedRenderSeries, ACorruptChunkOfTheNextFrameStopsThatFrameNotThisOne) {
  SeriesFile file(CodecId::zstd);
  const auto container = format::Container::open(file.path);
  const std::uint64_t number = container.frame_field(1, 0).first_chunk;  // frame 1's first chunk, read ahead
  corrupt(file.path, container.chunks_of(1, 0)[0]);
  engine::Queue queue(host_queue(io::BackendKind::posix));
  const queue::FileId id = queue.add_file(file.path);
  ReferenceRenderer renderer(test_camera(), 0xff000000u, 2);
  SegmentedRenderer segmented(renderer);
  (void)segmented.render(queue, id, container, 0, 0, {.batch_particles = 300, .segments = 3, .next_frame = 1});
  EXPECT_EQ(renderer.image(), reference_image(file.frames[0]));
  try {
    (void)segmented.render(queue, id, container, 1, 0, {.batch_particles = 300, .segments = 3});
    FAIL() << "a corrupt chunk was drawn";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chunk " + std::to_string(number)), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)segmented.render(queue, id, container, 0, 0, {.batch_particles = 300, .segments = 3, .next_frame = 3}),
               UsageError);  // no frame 3
}

TEST(SegmentedRenderErrors, ACorruptChunkStopsTheFrameNamingIt) {
  ParticleFile file(CodecId::zstd);
  const auto container = format::Container::open(file.path);
  corrupt(file.path, container.chunks_of(0, 0)[5]);
  engine::Queue queue(host_queue(io::BackendKind::posix));
  const queue::FileId id = queue.add_file(file.path);
  ReferenceRenderer renderer(test_camera(), 0xff000000u, 2);
  try {
    (void)SegmentedRenderer(renderer).render(queue, id, container, 0, 0, {.batch_particles = 128, .segments = 2});
    FAIL() << "a corrupt chunk was drawn";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chunk 5"), std::string::npos) << e.what();
  }
}

TEST(SegmentedRenderErrors, RefusesWhatIsNotParticles) {
  testing::TempDirectory dir;
  const std::string path = dir.file("v.hrc");
  format::ContainerWriter writer(path, {{"density", format::DType::float32, 1}}, {});
  const auto frame = writer.add_frame(0.0, format::BoundingBox{{0, 0, 0}, {1, 1, 1}});
  const std::vector<float> values(64, 1.0f);
  writer.write_field(frame, 0, std::as_bytes(std::span<const float>(values)));
  writer.close();
  const auto container = format::Container::open(path);
  engine::Queue queue(host_queue(io::BackendKind::posix));
  const queue::FileId id = queue.add_file(path);
  ReferenceRenderer renderer(test_camera(), 0, 1);
  SegmentedRenderer segmented(renderer);
  EXPECT_THROW((void)segmented.render(queue, id, container, 0, 0, {}), UsageError);
  EXPECT_THROW((void)segmented.render(queue, id, container, 1, 0, {}), UsageError);
}

TEST(SegmentedRenderGpu, TheKernelsDrawTheReferenceImage) {
  if (gpu::device_count() == 0) GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver());
  struct Case {
    CodecId codec;
    std::uint64_t chunk_bytes;
    bool pin_files;
  };
  // Padded chunks reach the segments as the rows of 2D copies, from staging or from the pinned file.
  for (const Case c : {Case{CodecId::none, 4096, false}, Case{CodecId::zstd, 4096, false}, Case{CodecId::none, 3200, false},
                       Case{CodecId::none, 3200, true}}) {
    const auto codec = c.codec;
    const ParticleFile file(codec, c.chunk_bytes);
    const auto container = format::Container::open(file.path);
    const auto expected = reference_image(file.particles);
    engine::QueueOptions options = host_queue(io::BackendKind::posix);
    options.device = 0;
    options.pin_files = c.pin_files ? staging::PinPolicy::on : staging::PinPolicy::off;
    engine::Queue queue(options);
    const queue::FileId id = queue.add_file(file.path);
    GpuRenderer renderer(0, test_camera(), 0xff000000u);
    SegmentedRenderer segmented(renderer);  // one buffer for every shape: grown, reused, streamed alone
    double h2d_seconds = 0;
    for (const SegmentedRenderOptions shape : {SegmentedRenderOptions{.batch_particles = 300, .segments = 2},
                                               SegmentedRenderOptions{.batch_particles = 128, .segments = 8},
                                               SegmentedRenderOptions{.batch_particles = 300, .segments = 2, .preload = true}}) {
      const auto stats = segmented.render(queue, id, container, 0, 0, shape);
      EXPECT_EQ(renderer.image(nullptr), expected) << format::to_string(codec) << " chunks of " << c.chunk_bytes << " pinned "
                                                   << c.pin_files << " " << shape.batch_particles << " x " << shape.segments
                                                   << " preload " << shape.preload;
      // Chunks of 128 particles: two or one a batch (4 or 8); of 100: three or one (4 or 10).
      EXPECT_EQ(stats.batches, shape.batch_particles == 300 ? 4u : c.chunk_bytes == 4096 ? 8u : 10u);
      EXPECT_EQ(stats.batch_draw_seconds.size(), stats.batches);
      EXPECT_GT(stats.draw_seconds, 0.0);
      EXPECT_GE(stats.h2d_seconds, 0.0);
      h2d_seconds += stats.h2d_seconds;
    }
    // The copy stream's busy time, by its events: one shape's few kilobytes can time at 0 (the events' 0.5 us
    // resolution), the case's three not.
    EXPECT_GT(h2d_seconds, 0.0) << format::to_string(codec) << " chunks of " << c.chunk_bytes << " pinned " << c.pin_files;
    const auto alone = segmented.render(queue, id, container, 0, 0, {.batch_particles = 128, .segments = 2, .draw = false});
    EXPECT_EQ(alone.batch_draw_seconds.size(), 0u);
    EXPECT_EQ(alone.stored_bytes, container.stored_bytes());
    EXPECT_EQ(renderer.image(nullptr), std::vector<std::uint32_t>(expected.size(), 0xff000000u));
  }
}

TEST(SegmentedRenderGpu, ALookAndAnotherCameraDrawTheReferenceImage) {
  if (gpu::device_count() == 0) GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver());
  const auto particles = random_particles(1000);
  std::vector<float> scalars(particles.size()), table;
  for (std::size_t i = 0; i < scalars.size(); ++i) scalars[i] = particles[i].x * particles[i].y;
  for (int k = 0; k < common::colour_map_entries; ++k) table.insert(table.end(), {k / 255.0f, 1 - k / 255.0f, 0.5f, 1});
  const Camera other = orbit({0.5f, 0.5f, 0.5f}, 1.8f, 70, -15, 40, 72, 56);
  GpuRenderer gpu_renderer(0, test_camera(), 0xff000000u);
  gpu_renderer.make_current();
  gpu::DeviceBuffer records(particles.size() * sizeof(Particle)), values(scalars.size() * sizeof(float));
  gpu::copy_to_device(records.pointer(), particles.data(), records.size_bytes());
  gpu::copy_to_device(values.pointer(), scalars.data(), values.size_bytes());
  for (const GlyphLook look : {GlyphLook{1.8f, 2, table, 0.1f, 0.9f}, GlyphLook{1.2f, colour_from_scalars, table, 0.0f, 0.5f},
                               GlyphLook{}}) {
    gpu_renderer.set_camera(other);
    gpu_renderer.set_look(look);
    gpu_renderer.clear(nullptr);
    gpu_renderer.draw(records.pointer(), particles.size(), 0, nullptr, values.pointer());
    ReferenceRenderer reference(other, 0xff000000u, 2);
    reference.set_look(look);
    reference.draw(particles, 0, scalars.data());
    EXPECT_EQ(gpu_renderer.image(nullptr), reference.image()) << "colour by " << look.colour_by;
  }
}

TEST(SegmentedRenderGpu, ASeriesLoadingTheNextFrameAheadDrawsEachFramesReferenceImage) {
  if (gpu::device_count() == 0) GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver());
  const SeriesFile file;
  const auto container = format::Container::open(file.path);
  for (const bool pin_files : {false, true}) {
    engine::QueueOptions options = host_queue(io::BackendKind::posix);
    options.device = 0;
    options.pin_files = pin_files ? staging::PinPolicy::on : staging::PinPolicy::off;
    engine::Queue queue(options);
    const queue::FileId id = queue.add_file(file.path);
    GpuRenderer renderer(0, test_camera(), 0xff000000u);
    SegmentedRenderer segmented(renderer);
    const std::uint32_t frames[] = {0, 1, 2, 0};
    // 4 batches in 3 segments: 3 loaded ahead, as this frame's draws free the segments; in 8: all 4, into free ones.
    for (const unsigned segments : {3u, 8u}) {
      for (std::size_t call = 0; call < std::size(frames); ++call) {
        const std::uint32_t frame = frames[call];
        const auto stats = segmented.render(queue, id, container, frame, 0,
                                            {.batch_particles = 300, .segments = segments, .next_frame = (frame + 1) % 3});
        EXPECT_EQ(renderer.image(nullptr), reference_image(file.frames[frame]))
            << "pinned " << pin_files << " segments " << segments << " frame " << frame;
        EXPECT_EQ(stats.stored_bytes, 10u * 3200);
        EXPECT_GT(stats.h2d_seconds, 0.0);
        EXPECT_EQ(stats.loaded_ahead, call == 0 ? 0u : segments == 3 ? 3u : 4u);
      }
    }
  }
}

TEST(SegmentedRenderGpu, ASeriesImagesInRecycledMemoryAreEachFramesOwnWhileWritersHoldThem) {
  if (gpu::device_count() == 0) GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver());
  const SeriesFile file;
  const auto container = format::Container::open(file.path);
  engine::QueueOptions options = host_queue(io::BackendKind::posix);
  options.device = 0;
  engine::Queue queue(options);
  const queue::FileId id = queue.add_file(file.path);
  GpuRenderer renderer(0, test_camera(), 0xff000000u);
  renderer.reserve_images(2);
  SegmentedRenderer segmented(renderer);
  const std::size_t pixels = test_camera().pixels();
  std::vector<std::pair<std::uint32_t, common::FramePool::Buffer>> writing;  // two images held at once, as writers hold them
  std::set<const std::byte*> memory;
  for (const std::uint32_t frame : {0u, 1u, 2u, 0u, 1u, 2u}) {
    (void)segmented.render(queue, id, container, frame, 0, {.batch_particles = 300, .segments = 8, .next_frame = (frame + 1) % 3});
    writing.emplace_back(frame, renderer.image_pooled(nullptr));
    memory.insert(writing.back().second.get());
    if (writing.size() > 2) writing.erase(writing.begin());
    for (const auto& [drawn, image] : writing) {  // a held image is never drawn over by a later frame
      const auto* rgba = reinterpret_cast<const std::uint32_t*>(image.get());
      EXPECT_EQ(std::vector<std::uint32_t>(rgba, rgba + pixels), reference_image(file.frames[drawn])) << "frame " << drawn;
    }
  }
  EXPECT_EQ(memory.size(), 3u) << "two held and one coming home: the same three buffers serve the series";
}

}  // namespace
}  // namespace headrace::workloads::particles
