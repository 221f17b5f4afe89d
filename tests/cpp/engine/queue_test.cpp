// The queue's logic on the CPU (host destinations): bytes, codecs, fences, priorities, cancellation,
// errors and teardown. The GPU half of the same behaviour is tested in tests/python (gpu marker).
#include "headrace/engine/queue.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "headrace/codec/cpu/gdeflate.hpp"
#include "headrace/error.hpp"
#include "headrace/format/container.hpp"
#include "support/container_fixture.hpp"
#include "support/random_bytes.hpp"
#include "support/raw_file.hpp"
#include "support/temp_directory.hpp"

namespace headrace::engine {
using namespace headrace::queue;  // requests, statuses, fences
namespace {

using format::CodecId;

QueueOptions small_options(io::BackendKind backend = io::BackendKind::posix) {
  QueueOptions options;
  options.backend = backend;
  options.io.threads = 4;
  options.io.task_size_bytes = 64 << 10;
  options.io.queue_depth = 8;
  options.io.submit_batch = 4;
  options.staging_bytes = 1 << 20;
  options.max_batch = 8;
  return options;
}

Request chunk_request(FileId file, const format::ChunkInfo& chunk, std::byte* destination, int priority = 0,
                      std::uint64_t tag = 0) {
  Request r = queue::chunk_request(file, chunk, {MemoryKind::host, reinterpret_cast<std::uintptr_t>(destination), chunk.raw_size});
  r.priority = priority;
  r.tag = tag;
  r.label = "chunk " + std::to_string(chunk.first_element);
  return r;
}

class QueueTest : public ::testing::TestWithParam<std::tuple<io::BackendKind, CodecId>> {
 protected:
  testing::TempDirectory dir;
};

TEST_P(QueueTest, DeliversEveryChunkOfAContainer) {
  const auto [backend, codec] = GetParam();
  if (auto why = io::unavailable_reason(backend, dir.file("probe"))) GTEST_SKIP() << *why;
  std::string no_gdeflate;
  if (codec == CodecId::gdeflate && !codec::cpu::gdeflate_available(&no_gdeflate)) GTEST_SKIP() << no_gdeflate;
  const auto path = dir.file("data.hrc");
  testing::write_particles(path, 2, 5000, codec, 16384);
  const auto container = format::Container::open(path);
  const auto expected = testing::particle_values(5000, 1.0f);
  std::vector<std::byte> out(expected.size() * sizeof(float), std::byte{0xEE});

  Queue queue(small_options(backend));
  const FileId file = queue.add_file(path);
  std::vector<RequestId> ids;
  for (const auto& chunk : container.chunks_of(1, 0))
    ids.push_back(queue.enqueue(chunk_request(file, chunk, out.data() + chunk.first_element * 32)));
  const FenceId fence = queue.enqueue_signal();
  EXPECT_FALSE(queue.is_signaled(fence));
  queue.submit();
  queue.wait(fence);
  double decode_s = 0;
  for (RequestId id : ids) {
    EXPECT_EQ(queue.status(id).state, RequestState::done) << queue.status(id).message;
    EXPECT_EQ(queue.status(id).h2d_s, 0.0);  // host destinations: no copies to a GPU
    decode_s += queue.status(id).decode_s;
  }
  EXPECT_EQ(decode_s > 0, codec != CodecId::none);
  EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size()), 0);
  const auto stats = queue.stats();
  EXPECT_EQ(stats.requests.done, ids.size());
  EXPECT_EQ(stats.requests.raw_bytes, out.size());
  EXPECT_EQ(stats.checksums_checked, ids.size());
  // Compressed chunks are staged, and neighbours in the file travel as one read; uncompressed ones
  // go straight into the caller's array, one read each.
  if (codec == CodecId::none) EXPECT_EQ(stats.backend_reads, ids.size());
  else EXPECT_LT(stats.backend_reads, ids.size());
  EXPECT_GE(stats.max_reads_in_flight, 1u);
  EXPECT_GT(stats.busy_seconds, 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    BackendsAndCodecs, QueueTest,
    ::testing::Combine(::testing::Values(io::BackendKind::posix, io::BackendKind::direct, io::BackendKind::mmap,
                                         io::BackendKind::uring, io::BackendKind::ram),
                       ::testing::Values(CodecId::none, CodecId::lz4, CodecId::zstd, CodecId::gdeflate)),
    [](const auto& info) {
      return std::string(io::to_string(std::get<0>(info.param))) + "_" + format::to_string(std::get<1>(info.param));
    });

using testing::RawFile;

Request range(FileId file, std::uint64_t offset, std::uint64_t size, std::byte* destination, int priority = 0,
              std::uint64_t tag = 0) {
  Request r = range_request(file, offset, size, MemoryKind::host, reinterpret_cast<std::uintptr_t>(destination));
  r.priority = priority;
  r.tag = tag;
  return r;
}

TEST(Queue, FenceBeforeAnyRequestIsSignalledAndFencesWaitForEarlierRequestsOnly) {
  RawFile raw;
  Queue queue(small_options());
  const FileId file = queue.add_file(raw.path);
  const FenceId empty = queue.enqueue_signal();
  EXPECT_TRUE(queue.is_signaled(empty));
  std::vector<std::byte> a(4096), b(4096);
  const RequestId first = queue.enqueue(range(file, 0, 4096, a.data()));
  const FenceId after_first = queue.enqueue_signal();
  const RequestId second = queue.enqueue(range(file, 8192, 4096, b.data()));
  EXPECT_FALSE(queue.is_signaled(after_first));  // enqueued, not submitted
  queue.submit();
  queue.wait(after_first);
  EXPECT_EQ(queue.status(first).state, RequestState::done);
  EXPECT_EQ(std::memcmp(a.data(), raw.bytes.data(), 4096), 0);  // data in place when the fence fires
  queue.drain();
  EXPECT_EQ(queue.status(second).state, RequestState::done);
  EXPECT_EQ(std::memcmp(b.data(), raw.bytes.data() + 8192, 4096), 0);
}

// A frame loop's queue lives for thousands of fences: each new fence counts only what is still open, and
// a fence fires once its own requests are done, whatever happened to the fences before it.
TEST(Queue, ALongLivedQueueKeepsEveryFenceExact) {
  RawFile raw;
  Queue queue(small_options());
  const FileId file = queue.add_file(raw.path);
  constexpr int rounds = 601;  // the last one is left unsubmitted
  std::vector<std::byte> into(rounds * 8192);
  std::vector<FenceId> fences;
  auto offset = [](int round) { return static_cast<std::uint64_t>(round % 16) * 8192; };
  for (int round = 0; round < rounds; ++round) {
    std::byte* const to = into.data() + static_cast<std::size_t>(round) * 8192;
    queue.enqueue(range(file, offset(round), 4096, to));
    queue.enqueue(range(file, offset(round) + 4096, 4096, to + 4096));
    fences.push_back(queue.enqueue_signal());
    if (round % 3 == 2) {  // two fences left behind in flight, then one waited for: it covers them too
      queue.submit();
      queue.wait(fences.back());
      for (int r = round - 2; r <= round; ++r)
        ASSERT_EQ(std::memcmp(into.data() + static_cast<std::size_t>(r) * 8192, raw.bytes.data() + offset(r), 8192), 0)
            << "round " << r;
    }
  }
  const FenceId unsubmitted = fences.back();
  EXPECT_FALSE(queue.is_signaled(unsubmitted));  // its requests were never submitted
  EXPECT_TRUE(queue.is_signaled(fences[fences.size() - 2]));
  const FenceId empty_after = queue.enqueue_signal();
  EXPECT_FALSE(queue.is_signaled(empty_after));  // covers the unsubmitted requests too
  queue.submit();
  queue.wait(empty_after);
  for (const FenceId fence : fences) EXPECT_TRUE(queue.is_signaled(fence)) << "fence " << fence;
  EXPECT_TRUE(queue.is_signaled(queue.enqueue_signal()));  // nothing open: signaled at once
}

TEST(Queue, HigherPriorityIsServedFirst) {
  RawFile raw;
  auto options = small_options();
  options.max_batch = 1;
  Queue queue(options);
  const FileId file = queue.add_file(raw.path);
  std::vector<std::byte> out(16 * 4096);
  std::vector<RequestId> low;
  for (int i = 0; i < 15; ++i) low.push_back(queue.enqueue(range(file, i * 4096, 4096, out.data() + i * 4096, 0)));
  const RequestId high = queue.enqueue(range(file, 15 * 4096, 4096, out.data() + 15 * 4096, 5));
  queue.submit();
  queue.drain();
  EXPECT_EQ(queue.status(high).completion_index, 0u);  // queued last, served first
  for (std::size_t i = 0; i < low.size(); ++i) EXPECT_EQ(queue.status(low[i]).completion_index, i + 1);  // FIFO within a priority
  EXPECT_EQ(std::memcmp(out.data(), raw.bytes.data(), out.size()), 0);
}

TEST(Queue, CancelledRequestsNeverWriteAndNeighboursStayIntact) {
  RawFile raw;
  Queue queue(small_options());
  const FileId file = queue.add_file(raw.path);
  std::vector<std::byte> out(12 * 4096, std::byte{0xAB});
  std::vector<RequestId> ids;
  for (int i = 0; i < 12; ++i)
    ids.push_back(queue.enqueue(range(file, i * 4096, 4096, out.data() + i * 4096, 0, i % 3 == 2 ? 7 : 0)));
  EXPECT_TRUE(queue.cancel(ids[0]));
  EXPECT_EQ(queue.cancel_tag(7), 4u);  // requests 2, 5, 8, 11
  const FenceId fence = queue.enqueue_signal();
  queue.submit();
  queue.wait(fence);
  for (int i = 0; i < 12; ++i) {
    const bool cancelled = i == 0 || i % 3 == 2;
    const auto status = queue.status(ids[i]);
    EXPECT_EQ(status.state, cancelled ? RequestState::cancelled : RequestState::done) << i;
    const std::byte* slot = out.data() + i * 4096;
    if (cancelled) {
      EXPECT_TRUE(std::all_of(slot, slot + 4096, [](std::byte b) { return b == std::byte{0xAB}; })) << i;
    } else {
      EXPECT_EQ(std::memcmp(slot, raw.bytes.data() + i * 4096, 4096), 0) << i;
    }
  }
  EXPECT_FALSE(queue.cancel(ids[1]));  // done: too late
  EXPECT_EQ(queue.stats().requests.cancelled, 5u);
}

TEST(Queue, ErrorsFailTheirRequestOnly) {
  testing::TempDirectory dir;
  const auto path = dir.file("data.hrc");
  testing::write_particles(path, 1, 2000, CodecId::lz4, 16384);
  const auto container = format::Container::open(path);
  const auto chunks = container.chunks_of(0, 0);
  auto file_bytes = testing::read_file(path);
  file_bytes[chunks[1].offset + 3] ^= std::byte{0x5A};  // chunk 1: checksum mismatch
  testing::write_file(path, file_bytes);

  Queue queue(small_options());
  const FileId file = queue.add_file(path);
  std::vector<std::byte> out(2000 * 32);
  std::vector<RequestId> ids;
  for (const auto& chunk : chunks) ids.push_back(queue.enqueue(chunk_request(file, chunk, out.data() + chunk.first_element * 32)));
  // Past the end of the file.
  std::vector<std::byte> beyond(4096);
  const RequestId past_end = queue.enqueue(range(file, container.file_size(), 4096, beyond.data()));
  // A truncated compressed chunk whose checksum is not checked: the decoder must catch it.
  std::vector<std::byte> scratch(chunks[2].raw_size);
  auto corrupt = chunk_request(file, chunks[2], scratch.data());
  corrupt.checksum.reset();
  corrupt.stored_size /= 2;
  corrupt.label = "truncated chunk 2";
  const RequestId undecodable = queue.enqueue(corrupt);
  const FenceId fence = queue.enqueue_signal();
  queue.submit();
  queue.wait(fence);

  EXPECT_EQ(queue.status(ids[0]).state, RequestState::done);
  const auto mismatch = queue.status(ids[1]);
  EXPECT_EQ(mismatch.state, RequestState::failed);
  EXPECT_NE(mismatch.message.find("chunk " + std::to_string(chunks[1].first_element) + ": expected checksum"), std::string::npos)
      << mismatch.message;
  const auto eof = queue.status(past_end);
  EXPECT_EQ(eof.state, RequestState::failed);
  EXPECT_NE(eof.message.find(path), std::string::npos) << eof.message;
  const auto decode = queue.status(undecodable);
  EXPECT_EQ(decode.state, RequestState::failed);
  EXPECT_NE(decode.message.find("truncated chunk 2"), std::string::npos) << decode.message;
  EXPECT_EQ(queue.status(ids[2]).state, RequestState::done);
  EXPECT_EQ(queue.stats().requests.failed, 3u);
}

TEST(Queue, RejectsRequestsItCannotServe) {
  RawFile raw;
  Queue queue(small_options());
  const FileId file = queue.add_file(raw.path);
  std::vector<std::byte> out(4 << 20);
  auto device = range(file, 0, 4096, out.data());
  device.destination.kind = MemoryKind::device;
  EXPECT_THROW(queue.enqueue(device), UsageError);  // no GPU in this queue
  auto huge = range(file, 0, 2 << 20, out.data());
  huge.coding = "lz4";
  huge.raw_size = huge.destination.size_bytes = 4 << 20;
  EXPECT_THROW(queue.enqueue(huge), UsageError);  // 2 MiB of staging needed, 1 MiB there
  EXPECT_THROW(queue.enqueue(range(9, 0, 4096, out.data())), UsageError);
  auto wrong_size = range(file, 0, 4096, out.data());
  wrong_size.destination.size_bytes = 100;
  EXPECT_THROW(queue.enqueue(wrong_size), UsageError);
}

TEST(Queue, GpuOnlyOptionsOnAHostQueueAreRefusedByName) {
  auto options = small_options();
  options.pin_files = staging::PinPolicy::on;
  try {
    Queue queue(options);
    FAIL() << "pin_files accepted without a GPU";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("pin_files"), std::string::npos) << error.what();
  }
}

TEST(Queue, SmallStagingMakesSubmissionsWaitAndStillDeliversEverything) {
  testing::TempDirectory dir;
  const auto path = dir.file("data.hrc");
  testing::write_particles(path, 1, 40000, CodecId::zstd, 64 << 10);
  const auto container = format::Container::open(path);
  auto options = small_options();
  options.staging_bytes = 128 << 10;  // two chunks at a time
  Queue queue(options);
  const FileId file = queue.add_file(path);
  std::vector<std::byte> out(40000 * 32);
  for (const auto& chunk : container.chunks_of(0, 0)) queue.enqueue(chunk_request(file, chunk, out.data() + chunk.first_element * 32));
  queue.submit();
  queue.drain();
  const auto expected = testing::particle_values(40000, 0.0f);
  EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size()), 0);
  EXPECT_GT(queue.stats().staging_waits, 0u);
}

TEST(Queue, TheFlightTimelineAccountsForEveryFlightInStageOrderAndKeepsOnlyTheNewest) {
  testing::RawFile file(std::size_t{4096} * 300);
  auto options = small_options();
  options.max_batch = 1;  // a flight per request
  Queue queue(options);
  const FileId id = queue.add_file(file.path);
  std::vector<std::byte> out(file.bytes.size());
  const std::size_t rounds = flight_timeline_capacity / 300 + 2;  // more flights than the timeline keeps
  for (std::size_t round = 0; round < rounds; ++round) {
    for (std::uint64_t offset = 0; offset < out.size(); offset += 4096)
      queue.enqueue(range_request(id, offset, 4096, MemoryKind::host, reinterpret_cast<std::uintptr_t>(out.data() + offset)));
    queue.submit();
    queue.drain();
  }
  EXPECT_EQ(out, file.bytes);
  const auto timeline = queue.flight_timeline();
  const std::uint64_t flights = queue.stats().disk_lane_flights + queue.stats().cache_lane_flights;
  ASSERT_EQ(flights, rounds * 300);
  ASSERT_EQ(timeline.size(), flight_timeline_capacity);
  for (std::size_t k = 0; k < timeline.size(); ++k) {
    const FlightRecord& f = timeline[k];
    EXPECT_EQ(f.number, flights - flight_timeline_capacity + k);
    EXPECT_EQ(f.requests, 1u);
    EXPECT_EQ(f.reads, 1u);
    EXPECT_EQ(f.stored_bytes, 4096u);
    EXPECT_GT(f.dispatched_s, 0.0);
    EXPECT_LE(f.dispatched_s, f.taken_s);
    EXPECT_LE(f.taken_s, f.landed_s);
    EXPECT_LE(f.landed_s, f.checked_s);
    EXPECT_LE(f.checked_s, f.issued_s);
    EXPECT_LE(f.issued_s, f.done_s);
    if (k > 0) EXPECT_LE(timeline[k - 1].dispatched_s, f.dispatched_s);
  }
}

TEST(Queue, ThePageCachesReadsTravelInFlightsOfOneBackendTask) {
  testing::RawFile file(std::size_t{512} << 10);  // just written: the page cache holds it
  QueueOptions options;                           // the read path: cached ranges take the page cache's lane
  options.io.task_size_bytes = 64 << 10;
  options.staging_bytes = 4 << 20;
  Queue queue(options);
  const FileId id = queue.add_file(file.path);
  std::vector<std::byte> out(file.bytes.size());
  for (std::uint64_t offset = 0; offset < out.size(); offset += 16 << 10)
    queue.enqueue(range_request(id, offset, 16 << 10, MemoryKind::host, reinterpret_cast<std::uintptr_t>(out.data() + offset)));
  queue.submit();
  queue.drain();
  EXPECT_EQ(out, file.bytes);
  const auto timeline = queue.flight_timeline();
  ASSERT_FALSE(timeline.empty());
  for (const FlightRecord& f : timeline) {
    EXPECT_EQ(f.lane, 1u) << "cached ranges travel in the page cache's lane";
    EXPECT_LE(f.stored_bytes, options.io.task_size_bytes);
  }
  EXPECT_GE(timeline.size(), out.size() / options.io.task_size_bytes);
}

TEST(Queue, DestroyingAQueueWithWorkInFlightIsSafe) {
  RawFile raw;
  std::vector<std::byte> out(256 * 4096, std::byte{0});
  {
    Queue queue(small_options());
    const FileId file = queue.add_file(raw.path);
    for (int round = 0; round < 4; ++round)
      for (int i = 0; i < 64; ++i) queue.enqueue(range(file, i * 4096, 4096, out.data() + (round * 64 + i) * 4096));
    queue.submit();
  }  // destructor: undispatched requests cancelled, reads in flight awaited
  for (int i = 0; i < 256; ++i) {
    const std::byte* slot = out.data() + i * 4096;
    const bool untouched = std::all_of(slot, slot + 4096, [](std::byte b) { return b == std::byte{0}; });
    EXPECT_TRUE(untouched || std::memcmp(slot, raw.bytes.data() + (i % 64) * 4096, 4096) == 0) << i;
  }
}

}  // namespace
}  // namespace headrace::engine
