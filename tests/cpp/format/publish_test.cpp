// Format 1.4 (docs/format.md 6.1): a publishing writer makes each frame visible in the file under its final name
// as it is whole; readers see a consistent prefix, a writer killed mid-frame leaves what it published, and a
// finished file is what a 1.3 reader reads.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "headrace/error.hpp"
#include "headrace/format/layout.hpp"
#include "headrace/format/writer.hpp"
#include "support/temp_directory.hpp"

namespace headrace::format {
namespace {

using testing::TempDirectory;

constexpr std::uint64_t values_per_frame = 3000;  // 24 KB of float64: several chunks of 8 KiB

WriterOptions publishing() {
  WriterOptions options;
  options.chunk_size_bytes = 8192;
  options.publish = true;
  return options;
}

std::vector<double> frame_values(std::uint32_t frame) {
  std::vector<double> values(values_per_frame);
  for (std::uint64_t i = 0; i < values.size(); ++i) values[i] = frame * 1e6 + static_cast<double>(i);
  return values;
}

void write_frame(ContainerWriter& writer, std::uint32_t frame) {
  const auto values = frame_values(frame);
  const auto index = writer.add_frame(0.5 * frame, std::nullopt);
  writer.write_field(index, 0, std::as_bytes(std::span<const double>(values)));
}

// Frame f's values, read chunk by chunk as stored (codec none), each chunk verified.
std::vector<double> read_frame(const Container& container, std::uint32_t f) {
  std::vector<double> values(container.frame_field(f, 0).element_count);
  const int fd = ::open(container.path().c_str(), O_RDONLY);
  for (const ChunkInfo& chunk : container.chunks_of(f, 0)) {
    std::vector<std::byte> stored(chunk.stored_size);
    EXPECT_EQ(::pread(fd, stored.data(), stored.size(), static_cast<off_t>(chunk.offset)), static_cast<ssize_t>(stored.size()));
    container.verify_chunk(chunk, stored);
    std::memcpy(values.data() + chunk.first_element, stored.data(), stored.size());
  }
  ::close(fd);
  return values;
}

// Every frame of the container holds the values written for it.
void expect_frames(const Container& container, std::uint32_t frames) {
  ASSERT_EQ(container.frames().size(), frames);
  for (std::uint32_t f = 0; f < frames; ++f) {
    EXPECT_EQ(container.frames()[f].time, 0.5 * f);
    EXPECT_EQ(container.frame_field(f, 0).element_count, values_per_frame);
    EXPECT_EQ(read_frame(container, f), frame_values(f)) << "frame " << f;
  }
}

TEST(PublishingWriter, EachFrameIsVisibleUnderTheFinalNameOnceWholeAndTheClosedFileIsPlain) {
  TempDirectory dir;
  const auto path = dir.file("sim.hrc");
  ContainerWriter writer(path, {{"v", DType::float64, 1}}, publishing());
  write_frame(writer, 0);
  EXPECT_FALSE(std::filesystem::exists(path)) << "nothing published yet";
  write_frame(writer, 1);  // adding frame 1 publishes frame 0
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  Container first = Container::open(path);
  EXPECT_TRUE(first.growing());
  EXPECT_EQ(first.version_minor(), layout::version_minor_growing);
  expect_frames(first, 1);
  writer.publish();  // frame 1 is whole
  Container second = Container::open(path);
  expect_frames(second, 2);
  expect_frames(first, 1);  // a reader that opened earlier keeps its prefix, its chunks untouched
  for (std::uint32_t f = 2; f < 40; ++f) write_frame(writer, f);  // index regions replaced as the index grows
  writer.close();
  const Container done = Container::open(path);
  EXPECT_FALSE(done.growing());
  EXPECT_EQ(done.version_minor(), 0) << "a finished file needs no 1.4 reader";
  EXPECT_EQ(done.file_size(), std::filesystem::file_size(path));
  expect_frames(done, 40);
}

TEST(PublishingWriter, FramesAreWrittenInOrderAndOnlyPublishingWritersPublish) {
  TempDirectory dir;
  ContainerWriter writer(dir.file("a.hrc"), {{"v", DType::float64, 1}, {"w", DType::float64, 1}}, publishing());
  const auto values = frame_values(0);
  const auto bytes = std::as_bytes(std::span<const double>(values));
  (void)writer.add_frame(0, std::nullopt);
  (void)writer.add_frame(1, std::nullopt);  // frame 0 not whole: nothing published
  EXPECT_THROW(writer.write_field(1, 0, bytes), UsageError);
  writer.write_field(0, 0, bytes);
  writer.write_field(0, 1, bytes);
  writer.write_field(1, 0, bytes);
  writer.publish();
  EXPECT_EQ(writer.published_frames(), 1u);
  ContainerWriter plain(dir.file("b.hrc"), {{"v", DType::float64, 1}}, {});
  EXPECT_THROW(plain.publish(), UsageError);
}

TEST(PublishingWriter, AWriterThatFailsEndsTheFileAtItsLastPublication) {
  TempDirectory dir;
  const auto path = dir.file("sim.hrc");
  {
    ContainerWriter writer(path, {{"v", DType::float64, 1}}, publishing());
    for (std::uint32_t f = 0; f < 3; ++f) write_frame(writer, f);
    writer.publish();
    write_frame(writer, 3);  // written, not published: the destructor (an exception's unwinding) drops it
  }
  const Container container = Container::open(path);
  EXPECT_FALSE(container.growing());
  EXPECT_EQ(container.file_size(), std::filesystem::file_size(path));
  expect_frames(container, 3);
}

// A reader opening again and again while the writer publishes sees frames only grow, each whole.
TEST(PublishingWriter, ReadersWhileItPublishesSeeEveryPrefixWhole) {
  TempDirectory dir;
  const auto path = dir.file("sim.hrc");
  constexpr std::uint32_t frames = 60;
  std::atomic<bool> done{false};
  std::uint32_t seen = 0, opens = 0;
  std::thread reader([&] {
    while (!done.load() || seen < frames) {
      if (!std::filesystem::exists(path)) continue;
      const Container container = Container::open(path);
      const auto count = static_cast<std::uint32_t>(container.frames().size());
      EXPECT_GE(count, seen);
      seen = count;
      ++opens;
      if (count > 0) {  // the newest frame, read whole
        EXPECT_EQ(read_frame(container, count - 1), frame_values(count - 1));
      }
      if (done.load() && !container.growing()) break;
    }
  });
  {
    ContainerWriter writer(path, {{"v", DType::float64, 1}}, publishing());
    for (std::uint32_t f = 0; f < frames; ++f) {
      write_frame(writer, f);
      writer.publish();
    }
    writer.close();
  }
  done = true;
  reader.join();
  EXPECT_EQ(seen, frames);
  EXPECT_GT(opens, 1u);
}

// SIGKILL mid-frame: the file holds every frame published before it, readable, its writer's lock gone.
TEST(PublishingWriter, AWriterKilledMidFrameLeavesWhatItPublished) {
  TempDirectory dir;
  const auto path = dir.file("sim.hrc");
  const auto marker = dir.file("published");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ContainerWriter writer(path, {{"v", DType::float64, 1}}, publishing());
    for (std::uint32_t f = 0; f < 5; ++f) write_frame(writer, f);
    writer.publish();
    const auto index = writer.add_frame(99, std::nullopt);
    const auto values = frame_values(5);
    writer.write_field(index, 0, std::as_bytes(std::span<const double>(values).first(1000)));  // mid-frame
    const int fd = ::open(marker.c_str(), O_CREAT | O_WRONLY, 0644);
    ::close(fd);
    ::pause();
    ::_exit(0);
  }
  while (!std::filesystem::exists(marker)) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  const Container container = Container::open(path);
  EXPECT_TRUE(container.growing()) << "killed: no last publication";
  EXPECT_GT(std::filesystem::file_size(path), container.file_size()) << "the unpublished frame's chunks lie past it";
  expect_frames(container, 5);
  const int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_EQ(::flock(fd, LOCK_SH | LOCK_NB), 0) << "no writer holds the file now";
  ::close(fd);
}

TEST(PublishingWriter, AGrowingFileThatIsShorterThanItsSuperblockSaysIsTruncated) {
  TempDirectory dir;
  const auto path = dir.file("sim.hrc");
  ContainerWriter writer(path, {{"v", DType::float64, 1}}, publishing());
  write_frame(writer, 0);
  writer.publish();
  const auto size = Container::open(path).file_size();
  std::filesystem::resize_file(path, size - layout::alignment_bytes);
  EXPECT_THROW((void)Container::open(path), TruncatedFileError);
}

TEST(PublishingWriter, AppendsToAFinishedFileAndToAKilledWritersKeepingWhatWasThere) {
  TempDirectory dir;
  const auto path = dir.file("sim.hrc");
  {
    ContainerWriter writer(path, {{"v", DType::float64, 1}}, {});  // a plain writer: a finished 1.0 file
    for (std::uint32_t f = 0; f < 3; ++f) write_frame(writer, f);
    writer.set_attribute("units", std::string("m/s"));
    writer.close();
  }
  {
    const auto writer = ContainerWriter::append(path, publishing());
    EXPECT_EQ(writer->published_frames(), 3u);
    EXPECT_THROW((void)ContainerWriter::append(path, publishing()), UsageError) << "one writer at a time";
    for (std::uint32_t f = 3; f < 6; ++f) write_frame(*writer, f);
    writer->publish();
    const Container growing = Container::open(path);
    EXPECT_TRUE(growing.growing());
    expect_frames(growing, 6);
    write_frame(*writer, 6);
    writer->close();
  }
  const Container done = Container::open(path);
  EXPECT_FALSE(done.growing());
  expect_frames(done, 7);
  EXPECT_EQ(std::get<std::string>(done.attributes().at("units")), "m/s");
}

}  // namespace
}  // namespace headrace::format
