#include "headrace/format/writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "headrace/error.hpp"
#include "support/container_fixture.hpp"
#include "support/temp_directory.hpp"

namespace headrace::format {
namespace {

using testing::TempDirectory;

TEST(ContainerWriter, LeavesNoFileWhenNotClosed) {
  TempDirectory dir;
  const auto path = dir.file("out.hrc");
  {
    ContainerWriter writer(path, {{"v", DType::float64, 1}}, {});
    const auto frame = writer.add_frame(0.0, std::nullopt);
    const std::vector<double> values{1.0, 2.0};
    writer.write_field(frame, 0, std::as_bytes(std::span<const double>(values)));
    EXPECT_TRUE(std::filesystem::exists(path + ".partial"));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(ContainerWriter, KeepsTheOldFileUntilTheNewOneIsComplete) {
  TempDirectory dir;
  const auto path = dir.file("out.hrc");
  testing::write_particles(path, 1, 10);
  const auto before = std::filesystem::file_size(path);
  {
    ContainerWriter writer(path, {{"v", DType::float64, 1}}, {});
    (void)writer.add_frame(0.0, std::nullopt);
    EXPECT_THROW(writer.close(), EmptyFieldError);  // frame 0 field 'v' never written
  }
  EXPECT_EQ(std::filesystem::file_size(path), before);
  EXPECT_EQ(Container::open(path).fields()[0].name, "particles");
}

TEST(ContainerWriter, RejectsRaggedDataAndFieldsWithoutComponents) {
  TempDirectory dir;
  ContainerWriter writer(dir.file("out.hrc"), {{"p", DType::float32, 8}}, {});
  const auto frame = writer.add_frame(0.0, std::nullopt);
  const std::vector<float> ragged(12);
  EXPECT_THROW(writer.write_field(frame, 0, std::as_bytes(std::span<const float>(ragged))), UsageError);
  EXPECT_THROW(ContainerWriter(dir.file("x.hrc"), {{"p", DType::float32, 0}}, {}), EmptyFieldError);
  EXPECT_THROW(ContainerWriter(dir.file("y.hrc"), {}, {}), EmptyFieldError);
}

// Format 1.2: a frame may hold no elements of a field (a simulation that lost its particles); the file
// says 1.2 only then, so files without empty frames stay readable by 1.0 readers.
TEST(ContainerWriter, WritesEmptyFramesAsFormat1Point2) {
  TempDirectory dir;
  const auto path = dir.file("out.hrc");
  {
    ContainerWriter writer(path, {{"p", DType::float32, 3}, {"id", DType::int64, 1}}, {});
    const std::vector<float> points{1, 2, 3, 4, 5, 6};
    const std::vector<std::int64_t> ids{7, 8};
    for (int t = 0; t < 3; ++t) {
      const auto frame = writer.add_frame(t, std::nullopt);
      if (t == 1) {  // the middle frame holds nothing
        writer.write_field(frame, 0, {});
        writer.write_field(frame, 1, {});
      } else {
        writer.write_field(frame, 0, std::as_bytes(std::span<const float>(points)));
        writer.write_field(frame, 1, std::as_bytes(std::span<const std::int64_t>(ids)));
      }
    }
    writer.close();
  }
  const auto c = Container::open(path);
  EXPECT_EQ(c.version_minor(), 2u);
  EXPECT_EQ(c.frame_field(1, 0).element_count, 0u);
  EXPECT_TRUE(c.chunks_of(1, 0).empty());
  EXPECT_TRUE(c.chunks_of(1, 1).empty());
  EXPECT_EQ(c.frame_field(2, 1).element_count, 2u);
  EXPECT_EQ(c.chunks_of(2, 0)[0].first_element, 0u);
}

TEST(ContainerWriter, AppendsConsecutiveSlicesOfOneField) {
  TempDirectory dir;
  const auto path = dir.file("out.hrc");
  WriterOptions options;
  options.chunk_size_bytes = 64;  // 8 int64 per chunk
  ContainerWriter writer(path, {{"a", DType::int64, 1}, {"b", DType::uint8, 3}}, options);
  const auto frame = writer.add_frame(2.5, BoundingBox{{-1, -2, -3}, {1, 2, 3}});
  std::vector<std::int64_t> first(10), second(5);
  for (int i = 0; i < 10; ++i) first[i] = i;
  for (int i = 0; i < 5; ++i) second[i] = 10 + i;
  writer.write_field(frame, 0, std::as_bytes(std::span<const std::int64_t>(first)));
  writer.write_field(frame, 0, std::as_bytes(std::span<const std::int64_t>(second)));
  const std::vector<std::uint8_t> colours{1, 2, 3, 4, 5, 6};
  writer.write_field(frame, 1, std::as_bytes(std::span<const std::uint8_t>(colours)));
  EXPECT_THROW(writer.write_field(frame, 0, std::as_bytes(std::span<const std::int64_t>(second))), UsageError);
  writer.set_attribute("grid_dims", std::vector<std::int64_t>{4, 5, 6});
  writer.set_attribute("grid_spacing", std::vector<double>{0.5, 0.25, 1.0});
  writer.close();

  const auto c = Container::open(path);
  EXPECT_EQ(c.frame_field(0, 0).element_count, 15u);
  const auto chunks = c.chunks_of(0, 0);
  ASSERT_EQ(chunks.size(), 3u);  // 8 + 2 from the first slice, 5 from the second
  EXPECT_EQ(chunks[1].first_element, 8u);
  EXPECT_EQ(chunks[2].first_element, 10u);
  EXPECT_DOUBLE_EQ(c.range_max(chunks[2])[0], 14.0);
  EXPECT_EQ(c.frame_field(0, 1).element_count, 2u);
  EXPECT_DOUBLE_EQ(c.range_min(c.chunks_of(0, 1)[0])[2], 3.0);
  EXPECT_DOUBLE_EQ(c.frames()[0].bbox.min[1], -2.0);
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(c.attributes().at("grid_dims")), (std::vector<std::int64_t>{4, 5, 6}));
  EXPECT_EQ(std::get<std::vector<double>>(c.attributes().at("grid_spacing"))[1], 0.25);
}

TEST(ContainerWriter, UnknownBoundingBoxIsNaN) {
  TempDirectory dir;
  const auto path = dir.file("out.hrc");
  ContainerWriter writer(path, {{"v", DType::float32, 1}}, {});
  const auto frame = writer.add_frame(0.0, std::nullopt);
  const std::vector<float> values{1.0f, NAN, 3.0f};
  writer.write_field(frame, 0, std::as_bytes(std::span<const float>(values)));
  writer.close();
  const auto c = Container::open(path);
  EXPECT_TRUE(std::isnan(c.frames()[0].bbox.min[0]));
  EXPECT_DOUBLE_EQ(c.range_min(c.chunks()[0])[0], 1.0);  // NaN skipped
  EXPECT_DOUBLE_EQ(c.range_max(c.chunks()[0])[0], 3.0);
}

}  // namespace
}  // namespace headrace::format
