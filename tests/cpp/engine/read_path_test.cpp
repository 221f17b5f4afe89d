// The read path (backend auto): each request goes where its bytes are (the page cache or the disk),
// reports where they came from, and the policies force either; files are opened once per version;
// the history stays bounded (statuses and fences retire) while ids stay valid.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "headrace/error.hpp"
#include "headrace/io/page_cache.hpp"
#include "headrace/engine/queue.hpp"
#include "headrace/format/container.hpp"
#include "support/container_fixture.hpp"
#include "support/evict.hpp"
#include "support/raw_file.hpp"
#include "support/temp_directory.hpp"

namespace headrace::engine {
using namespace headrace::queue;  // requests, statuses, fences
namespace {

constexpr std::uint64_t piece = 64 << 10;

QueueOptions read_path(io::CachePolicy policy = io::CachePolicy::auto_) {
  QueueOptions options;
  options.cache_policy = policy;
  options.io.threads = 4;
  options.io.queue_depth = 8;
  options.io.submit_batch = 4;
  options.io.task_size_bytes = piece;
  options.staging_bytes = 1 << 20;
  options.max_batch = 8;
  return options;
}

// Reads the whole file in pieces into out; returns the requests' summary.
RequestSummary read_all(Queue& queue, FileId file, std::vector<std::byte>& out) {
  std::vector<RequestId> ids;
  for (std::uint64_t at = 0; at < out.size(); at += piece)
    ids.push_back(queue.enqueue(range_request(file, at, piece, MemoryKind::host, reinterpret_cast<std::uintptr_t>(out.data() + at))));
  const FenceId fence = queue.enqueue_signal();
  queue.submit();
  queue.wait(fence);
  return queue.summarize(ids);
}

bool o_direct_here(const std::string& path) { return !io::unavailable_reason(io::BackendKind::direct, path); }

TEST(ReadPath, CachedBytesComeFromThePageCacheAndEvictedOnesFromTheDisk) {
  testing::RawFile raw(1 << 20);
  if (!o_direct_here(raw.path)) GTEST_SKIP() << "no O_DIRECT on " << raw.path;
  Queue queue(read_path());
  const FileId file = queue.add_file(raw.path);
  std::vector<std::byte> out(raw.bytes.size());
  RequestSummary hot = read_all(queue, file, out);
  EXPECT_EQ(hot.done, 16u);
  EXPECT_EQ(hot.bytes_from_cache, raw.bytes.size());
  EXPECT_EQ(hot.bytes_from_disk, 0u);
  EXPECT_EQ(out, raw.bytes);
  if (!testing::evict(raw.path, 0, raw.bytes.size())) GTEST_SKIP() << "this file system keeps evicted pages";
  std::fill(out.begin(), out.end(), std::byte{0});
  const RequestSummary cold = read_all(queue, file, out);
  EXPECT_EQ(cold.bytes_from_disk, raw.bytes.size());
  EXPECT_EQ(cold.bytes_from_cache, 0u);
  EXPECT_EQ(out, raw.bytes);
  EXPECT_EQ(queue.status(0).source, ReadSource::page_cache);
  EXPECT_EQ(queue.stats().requests.bytes_from_disk, raw.bytes.size());
  EXPECT_EQ(queue.stats().requests.bytes_from_cache, raw.bytes.size());
}

// Cached pieces travel in the page cache's lane, the rest in the disk's: flights of their own, each
// lane with its finisher, so a cached piece never waits behind a disk read.
TEST(ReadPath, AHalfCachedFileIsServedByBothRoutesAtOnce) {
  testing::RawFile raw(1 << 20);
  if (!o_direct_here(raw.path)) GTEST_SKIP() << "no O_DIRECT on " << raw.path;
  // Evicted whole (page-cache folios may span several pieces), then every other piece read again
  // without readahead.
  if (!testing::evict(raw.path, 0, raw.bytes.size())) GTEST_SKIP() << "this file system keeps evicted pages";
  const int fd = ::open(raw.path.c_str(), O_RDONLY);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  std::vector<std::byte> scratch(piece);
  for (std::uint64_t at = 0; at < raw.bytes.size(); at += 2 * piece)
    ASSERT_EQ(::pread(fd, scratch.data(), piece, static_cast<off_t>(at)), static_cast<ssize_t>(piece));
  ::close(fd);
  if (io::PageCacheResidency(raw.path).resident_bytes(0, raw.bytes.size()) != raw.bytes.size() / 2)
    GTEST_SKIP() << "the kernel cached more than the pieces read";
  Queue queue(read_path());
  const FileId file = queue.add_file(raw.path);
  std::vector<std::byte> out(raw.bytes.size());
  const RequestSummary half = read_all(queue, file, out);
  EXPECT_EQ(half.bytes_from_cache, raw.bytes.size() / 2);
  EXPECT_EQ(half.bytes_from_disk, raw.bytes.size() / 2);
  EXPECT_EQ(out, raw.bytes);
  for (RequestId id = 0; id < 16; ++id)
    EXPECT_EQ(queue.status(id).source, id % 2 == 0 ? ReadSource::page_cache : ReadSource::disk) << id;
  const QueueStats stats = queue.stats();
  EXPECT_GE(stats.cache_lane_flights, 1u);
  EXPECT_GE(stats.disk_lane_flights, 1u);
  EXPECT_EQ(stats.backend_submits, stats.cache_lane_flights + stats.disk_lane_flights);
}

// Compressed chunks stage in both lanes' rings (small ones here, so both fill and wait): every other
// frame cached, every frame still decodes to its values, each lane carrying its own. The disk's first
// frame starts while the cached frame before it still waits for its lane's staging.
TEST(ReadPath, BothLanesStageAndDecodeAHalfCachedSeries) {
  testing::TempDirectory dir;
  const std::string path = dir.file("series.hrc");
  constexpr std::uint32_t frames = 6;
  // 2.56 MB a frame, chunks of 32 KiB: the cached first frame must outlast the disk's first read by far,
  // whatever the machine's load (a frame of 640 KB was finished as soon as that read began, at times).
  constexpr std::uint64_t particles = 80000;
  testing::write_particles(path, frames, particles, format::CodecId::zstd, 32 << 10);
  if (!o_direct_here(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  const auto container = format::Container::open(path);
  if (!testing::evict(path, 0, std::filesystem::file_size(path))) GTEST_SKIP() << "this file system keeps evicted pages";
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  for (std::uint32_t t = 0; t < frames; t += 2) {
    for (const auto& chunk : container.chunks_of(t, 0)) {
      std::vector<std::byte> scratch(chunk.stored_size);
      ASSERT_EQ(::pread(fd, scratch.data(), scratch.size(), static_cast<off_t>(chunk.offset)), static_cast<ssize_t>(scratch.size()));
    }
  }
  ::close(fd);
  if (io::PageCacheResidency(path).resident_bytes(0, std::filesystem::file_size(path)) == std::filesystem::file_size(path))
    GTEST_SKIP() << "the kernel cached the frames not read too";
  QueueOptions options = read_path();
  options.staging_bytes = 512 << 10;  // the page cache's ring: 128 KiB, flights of one chunk
  Queue queue(options);
  const FileId file = queue.add_file(path);
  std::vector<std::vector<float>> out(frames, std::vector<float>(particles * 8));
  std::vector<RequestId> ids;
  std::vector<std::size_t> first_of_frame;
  for (std::uint32_t t = 0; t < frames; ++t) {
    first_of_frame.push_back(ids.size());
    for (const auto& chunk : container.chunks_of(t, 0)) {
      Request r = queue::chunk_request(file, chunk, {MemoryKind::host,
                                                     reinterpret_cast<std::uintptr_t>(out[t].data() + chunk.first_element * 8),
                                                     chunk.raw_size});
      ids.push_back(queue.enqueue(std::move(r)));
    }
  }
  const FenceId fence = queue.enqueue_signal();
  queue.submit();
  queue.wait(fence);
  const RequestSummary all = queue.summarize(ids);
  EXPECT_EQ(all.done, ids.size()) << all.first_failure;
  for (std::uint32_t t = 0; t < frames; ++t) EXPECT_EQ(out[t], testing::particle_values(particles, static_cast<float>(t))) << t;
  const QueueStats stats = queue.stats();
  EXPECT_GT(all.bytes_from_cache, 0u);
  EXPECT_GT(all.bytes_from_disk, 0u);
  EXPECT_GE(stats.cache_lane_flights, 1u);
  EXPECT_GE(stats.disk_lane_flights, 1u);
  // Frame 0 (cached, 80 chunks) fills its lane's ring twenty times over; frame 1 (the disk's) goes at the first.
  const RequestStatus last_cached = queue.status(ids[first_of_frame[1] - 1]);
  const RequestStatus first_from_disk = queue.status(ids[first_of_frame[1]]);
  ASSERT_EQ(last_cached.source, ReadSource::page_cache);
  ASSERT_EQ(first_from_disk.source, ReadSource::disk);
  EXPECT_LT(first_from_disk.queue_wait_s, last_cached.queue_wait_s);
}

// The page cache's reads are hashed by the threads that read them; a chunk changed on disk (here, in the
// page cache) still fails by its checksum, and only that chunk.
TEST(ReadPath, ACorruptChunkReadFromThePageCacheFailsByItsChecksum) {
  testing::TempDirectory dir;
  const std::string path = dir.file("series.hrc");
  testing::write_particles(path, 1, 20000, format::CodecId::none, 32 << 10);
  const auto container = format::Container::open(path);
  const auto chunks = container.chunks_of(0, 0);
  ASSERT_GT(chunks.size(), 3u);
  {
    const int fd = ::open(path.c_str(), O_WRONLY);
    const char flipped = 0x5A;
    ASSERT_EQ(::pwrite(fd, &flipped, 1, static_cast<off_t>(chunks[2].offset + 100)), 1);
    ::close(fd);
  }
  if (!io::PageCacheResidency(path).fully_resident(0, std::filesystem::file_size(path)))
    GTEST_SKIP() << "the file is not in the page cache";
  Queue queue(read_path());
  const FileId file = queue.add_file(path);
  std::vector<float> out(20000 * 8);
  std::vector<RequestId> ids;
  for (const auto& chunk : chunks)
    ids.push_back(queue.enqueue(queue::chunk_request(
        file, chunk, {MemoryKind::host, reinterpret_cast<std::uintptr_t>(out.data() + chunk.first_element * 8), chunk.raw_size})));
  const FenceId fence = queue.enqueue_signal();
  queue.submit();
  queue.wait(fence);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const RequestStatus status = queue.status(ids[i]);
    EXPECT_EQ(status.source, ReadSource::page_cache) << i;
    if (i == 2) {
      EXPECT_EQ(status.state, RequestState::failed);
      EXPECT_NE(status.message.find("expected checksum"), std::string::npos) << status.message;
    } else {
      EXPECT_EQ(status.state, RequestState::done) << i << ": " << status.message;
    }
  }
  EXPECT_EQ(queue.stats().checksums_checked, ids.size() - 1);  // the ones that passed
}

TEST(ReadPath, BypassReadsEverythingFromTheDiskAndUseEverythingBuffered) {
  testing::RawFile raw(512 << 10);
  if (!o_direct_here(raw.path)) GTEST_SKIP() << "no O_DIRECT on " << raw.path;
  std::vector<std::byte> out(raw.bytes.size());
  {
    Queue queue(read_path(io::CachePolicy::bypass));
    const RequestSummary all = read_all(queue, queue.add_file(raw.path), out);
    EXPECT_EQ(all.bytes_from_disk, raw.bytes.size());
    EXPECT_EQ(out, raw.bytes);
  }
  if (!testing::evict(raw.path, 0, raw.bytes.size())) GTEST_SKIP() << "this file system keeps evicted pages";
  Queue queue(read_path(io::CachePolicy::use));
  std::fill(out.begin(), out.end(), std::byte{0});
  const RequestSummary all = read_all(queue, queue.add_file(raw.path), out);
  EXPECT_EQ(all.bytes_from_cache, raw.bytes.size());  // buffered: the kernel read it and keeps it
  EXPECT_EQ(out, raw.bytes);
  EXPECT_TRUE(io::PageCacheResidency(raw.path).fully_resident(0, raw.bytes.size()));
}

// A kept file's first pass reads the disk buffered: its bytes count as the disk's, its pages stay cached.
TEST(ReadPath, KeepCountsItsFirstPassAsTheDisksAndLeavesTheFileCached) {
  testing::RawFile raw(512 << 10);
  if (!o_direct_here(raw.path)) GTEST_SKIP() << "no O_DIRECT on " << raw.path;
  if (!testing::evict(raw.path, 0, raw.bytes.size())) GTEST_SKIP() << "this file system keeps evicted pages";
  Queue queue(read_path(io::CachePolicy::keep));
  const FileId file = queue.add_file(raw.path);
  std::vector<std::byte> out(raw.bytes.size());
  const RequestSummary first = read_all(queue, file, out);
  EXPECT_EQ(first.bytes_from_disk + first.bytes_from_cache, raw.bytes.size());  // the read-ahead may win a race
  EXPECT_GT(first.bytes_from_disk, 0u);
  EXPECT_EQ(out, raw.bytes);
  EXPECT_TRUE(io::PageCacheResidency(raw.path).fully_resident(0, raw.bytes.size()));
  EXPECT_EQ(read_all(queue, file, out).bytes_from_cache, raw.bytes.size());
}

// explain() routes a request as enqueue() would, reading and queueing nothing.
TEST(ReadPath, ExplainSaysWhereABytesWouldComeFromAndHowTheyWouldTravel) {
  testing::RawFile raw(512 << 10);
  if (!o_direct_here(raw.path)) GTEST_SKIP() << "no O_DIRECT on " << raw.path;
  Queue queue(read_path());
  const FileId file = queue.add_file(raw.path);
  std::vector<std::byte> out(piece);
  Request plain = range_request(file, 0, piece, MemoryKind::host, reinterpret_cast<std::uintptr_t>(out.data()));
  RouteExplanation e = queue.explain(plain);
  EXPECT_EQ(e.read, "page-cache");  // just written
  EXPECT_EQ(e.transfer, "host");
  EXPECT_FALSE(e.read_detail.empty());
  Request packed = plain;
  packed.coding = "zstd";
  EXPECT_EQ(queue.explain(packed).transfer, "host-decode");
  EXPECT_NE(queue.explain(packed).transfer_detail.find("zstd"), std::string::npos);
  Request device = plain;
  device.destination.kind = MemoryKind::device;
  EXPECT_THROW((void)queue.explain(device), UsageError);  // no GPU in this queue
  Request nowhere = plain;
  nowhere.file = 7;
  EXPECT_THROW((void)queue.explain(nowhere), UsageError);
  EXPECT_EQ(queue.stats().requests.done, 0u);  // nothing was queued
  if (!testing::evict(raw.path, 0, raw.bytes.size())) GTEST_SKIP() << "this file system keeps evicted pages";
  EXPECT_EQ(queue.explain(plain).read, "disk");
  Queue keeping(read_path(io::CachePolicy::keep));
  plain.file = keeping.add_file(raw.path);
  e = keeping.explain(plain);
  EXPECT_EQ(e.read, "kept");
  EXPECT_NE(e.why.find("kept: its"), std::string::npos) << e.why;
  EXPECT_EQ(io::PageCacheResidency(raw.path).resident_bytes(0, raw.bytes.size()), 0u);  // explaining reads nothing ahead
}

// A file added with its own cache policy (headrace.Queue.add_file: the probe kept for its file system found
// the engine's buffered reads faster there) is read by it, and the queue says why; other files keep the queue's.
TEST(ReadPath, AFileOfItsOwnPolicyIsReadByItAndTheQueueSaysWhy) {
  testing::RawFile raw(512 << 10), other(256 << 10);
  if (!o_direct_here(raw.path)) GTEST_SKIP() << "no O_DIRECT on " << raw.path;
  if (!testing::evict(raw.path, 0, raw.bytes.size()) || !testing::evict(other.path, 0, other.bytes.size()))
    GTEST_SKIP() << "this file system keeps evicted pages";
  Queue queue(read_path());
  const FileId kept = queue.add_file(raw.path, FileOptions{io::CachePolicy::keep, "cold reads buffered: measured faster here"});
  const FileId plain = queue.add_file(other.path);
  std::vector<std::byte> out(piece);
  Request request = range_request(kept, 0, piece, MemoryKind::host, reinterpret_cast<std::uintptr_t>(out.data()));
  RouteExplanation e = queue.explain(request);
  EXPECT_EQ(e.read, "kept");
  EXPECT_NE(e.why.find("cold reads buffered: measured faster here"), std::string::npos) << e.why;
  EXPECT_NE(queue.describe().find("cold reads buffered: measured faster here"), std::string::npos) << queue.describe();
  request.file = plain;
  e = queue.explain(request);
  EXPECT_EQ(e.read, "disk");
  EXPECT_EQ(e.why.find("measured faster"), std::string::npos) << e.why;
  EXPECT_EQ(queue.add_file(raw.path, FileOptions{io::CachePolicy::bypass, "ignored"}), kept) << "the first add's options stand";
  Queue same(read_path(io::CachePolicy::keep));
  (void)same.add_file(raw.path, FileOptions{io::CachePolicy::keep, "the queue's own"});
  EXPECT_EQ(same.describe().find("the queue's own"), std::string::npos) << "no reason where the policy is the queue's";
}

TEST(ReadPath, AForcedBackendTakesNoCachePolicyAndSaysWhatItIs) {
  testing::RawFile raw(256 << 10);
  QueueOptions options = read_path(io::CachePolicy::bypass);
  options.backend = io::BackendKind::posix;
  try {
    Queue queue(options);
    FAIL() << "accepted";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("cache_policy=bypass"), std::string::npos) << error.what();
  }
  options.cache_policy = io::CachePolicy::auto_;
  Queue queue(options);
  std::vector<std::byte> out(raw.bytes.size());
  const RequestSummary all = read_all(queue, queue.add_file(raw.path), out);
  EXPECT_EQ(all.bytes_other, raw.bytes.size());  // buffered by a forced backend: the kernel decided
  EXPECT_NE(queue.describe().find("posix (forced)"), std::string::npos) << queue.describe();
}

TEST(ReadPath, OptionsOutOfRangeAreUsageErrorsNamingTheOption) {
  const auto refused = [](QueueOptions options, const std::string& name) {
    try {
      Queue queue(options);
      ADD_FAILURE() << name << " accepted";
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
    }
  };
  QueueOptions options = read_path();
  options.staging_bytes = 100;
  refused(options, "staging_bytes");
  options = read_path();
  options.max_batch = 0;
  refused(options, "max_batch");
  options = read_path();
  options.status_history = 10;
  refused(options, "status_history");
  options = read_path();
  options.device = -5;
  refused(options, "device");
}

TEST(ReadPath, AFileIsOpenedOncePerVersionAndClosedOnlyWhenIdle) {
  testing::TempDirectory dir;
  const auto bytes = testing::pseudo_random_bytes(256 << 10, 3);
  const std::string path = dir.write("data.bin", bytes);
  Queue queue(read_path());
  const FileId first = queue.add_file(path);
  EXPECT_EQ(queue.add_file(path), first);  // unchanged: the same file, nothing opened
  // A writer replaces it (a new file renamed over it): a new version, the old one closed.
  const auto replacement = testing::pseudo_random_bytes(256 << 10, 4);
  const std::string written = dir.write("data.bin.partial", replacement);
  std::filesystem::rename(written, path);
  const FileId second = queue.add_file(path);
  EXPECT_NE(second, first);
  std::vector<std::byte> out(replacement.size());
  EXPECT_THROW(queue.enqueue(range_request(first, 0, 4096, MemoryKind::host, reinterpret_cast<std::uintptr_t>(out.data()))),
               UsageError);
  read_all(queue, second, out);
  EXPECT_EQ(out, replacement);
  // A request not yet submitted still reads it: closing waits for nobody, it refuses.
  const RequestId pending =
      queue.enqueue(range_request(second, 0, 4096, MemoryKind::host, reinterpret_cast<std::uintptr_t>(out.data())));
  EXPECT_THROW(queue.close_file(second), UsageError);
  queue.cancel(pending);
  queue.close_file(second);
  EXPECT_THROW(queue.close_file(second), UsageError);
  const FileId third = queue.add_file(path);
  EXPECT_NE(third, second);  // opened anew
  // By path: every open version (here one) closed, whoever added it; then none is left.
  EXPECT_EQ(queue.close_path(path), 1u);
  EXPECT_EQ(queue.close_path(path), 0u);
  EXPECT_THROW(queue.close_file(third), UsageError);
}

TEST(ReadPath, TheHistoryIsBoundedWhileRecentIdsStayValid) {
  testing::RawFile raw(64 << 10);
  QueueOptions options = read_path();
  options.status_history = 1024;
  Queue queue(options);
  const FileId file = queue.add_file(raw.path);
  std::vector<std::byte> out(4096);
  std::vector<FenceId> fences;
  RequestId last = 0;
  for (int round = 0; round < 5000; ++round) {
    last = queue.enqueue(range_request(file, (round % 16) * 4096, 4096, MemoryKind::host, reinterpret_cast<std::uintptr_t>(out.data())));
    fences.push_back(queue.enqueue_signal());
    queue.submit();
    queue.wait(fences.back());
  }
  const QueueStats stats = queue.stats();
  EXPECT_EQ(stats.requests.done, 5000u);
  EXPECT_LE(stats.retained_requests, 1025u);
  EXPECT_EQ(queue.status(last).state, RequestState::done);
  try {
    (void)queue.status(0);
    FAIL() << "request 0 still kept";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("retired"), std::string::npos) << error.what();
  }
  EXPECT_TRUE(queue.is_signaled(fences.front()));  // a retired fence had fired
  queue.wait(fences.front());
  EXPECT_EQ(queue.cancel_tag(7), 0u);
  queue.drain();
  EXPECT_THROW((void)queue.status(last + 1), UsageError);
}

// Sets a variable for the test's lifetime.
struct ScopedVariable {
  ScopedVariable(const char* name, const char* value) : name(name) { ::setenv(name, value, 1); }
  ~ScopedVariable() { ::unsetenv(name); }
  const char* name;
};

TEST(QueueOptions, TheEnvironmentOverridesTheDefaultsAndABadValueNamesItsVariable) {
  {
    const ScopedVariable policy("HEADRACE_CACHE_POLICY", "bypass");
    const ScopedVariable staging("HEADRACE_STAGING_BYTES", "1048576");
    const ScopedVariable strict("HEADRACE_STRICT", "on");
    const QueueOptions options = QueueOptions::from_environment();
    EXPECT_EQ(options.cache_policy, io::CachePolicy::bypass);
    EXPECT_EQ(options.staging_bytes, 1u << 20);
    EXPECT_TRUE(options.strict);
    EXPECT_FALSE(options.backend.has_value());
  }
  EXPECT_EQ(QueueOptions::from_environment().cache_policy, io::CachePolicy::auto_);
  const auto refused = [](const char* name, const char* value, const std::string& expected) {
    const ScopedVariable variable(name, value);
    try {
      (void)QueueOptions::from_environment();
      ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  };
  refused("HEADRACE_PIN_FILES", "sometimes", "expected auto|on|off");
  refused("HEADRACE_STATUS_HISTORY", "-3", "HEADRACE_STATUS_HISTORY=-3: expected a non-negative integer");
  refused("HEADRACE_MAX_BATCH", "0", "max_batch must be in 1..65536");
  refused("HEADRACE_BACKEND", "floppy", "expected posix|direct|mmap|uring|ram");
}

}  // namespace
}  // namespace headrace::engine
