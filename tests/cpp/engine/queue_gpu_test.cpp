// The queue with GPU destinations, against the CPU reference: every codec and route (nvCOMP, CPU
// decode, pinned files), fences that consumer streams wait on, cancellation and teardown with work in
// flight. Skipped without a GPU; the device script runs this file under compute-sanitizer too.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <tuple>

#include "headrace/codec/cpu/gdeflate.hpp"
#include "headrace/error.hpp"
#include "headrace/format/container.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/engine/queue.hpp"
#include "headrace/io/page_cache.hpp"
#include "support/container_fixture.hpp"
#include "support/evict.hpp"
#include "support/raw_file.hpp"
#include "support/temp_directory.hpp"

namespace headrace::engine {
using namespace headrace::queue;  // requests, statuses, fences
namespace {

using format::CodecId;

#define SKIP_WITHOUT_GPU()                                                              \
  do {                                                                                  \
    if (gpu::device_count() == 0)                                                       \
      GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver()); \
  } while (false)

QueueOptions gpu_options(bool decode_on_gpu = true, bool pin_files = false, bool stream_value_fences = false) {
  QueueOptions options;
  options.backend = io::BackendKind::posix;
  options.device = 0;
  options.io.threads = 4;
  options.io.task_size_bytes = 64 << 10;
  options.staging_bytes = 1 << 20;
  options.max_batch = 8;
  options.decode_on_gpu = decode_on_gpu;
  options.pin_files = pin_files ? staging::PinPolicy::on : staging::PinPolicy::off;
  options.stream_value_fences = stream_value_fences;
  return options;
}

Request device_chunk(FileId file, const format::ChunkInfo& chunk, gpu::CUdeviceptr destination) {
  Request r = queue::chunk_request(file, chunk, {MemoryKind::device, static_cast<std::uintptr_t>(destination), chunk.raw_size});
  r.label = "chunk " + std::to_string(chunk.first_element);
  return r;
}

// size bytes at offset of the file, uncompressed, into device memory at destination.
Request device_range(FileId file, std::uint64_t offset, std::uint64_t size, gpu::CUdeviceptr destination, std::uint64_t tag = 0) {
  Request r = range_request(file, offset, size, MemoryKind::device, static_cast<std::uintptr_t>(destination));
  r.tag = tag;
  return r;
}

std::vector<std::byte> to_host(const gpu::DeviceBuffer& buffer) {
  std::vector<std::byte> bytes(buffer.size_bytes());
  gpu::copy_to_host(bytes.data(), buffer.pointer(), bytes.size());
  return bytes;
}

void fill(const gpu::DeviceBuffer& buffer, unsigned char value) {
  gpu::check(gpu::driver()->cuMemsetD8Async(buffer.pointer(), value, buffer.size_bytes(), nullptr), "cuMemsetD8Async");
  gpu::check(gpu::driver()->cuStreamSynchronize(nullptr), "cuStreamSynchronize");
}

// A one-field particle container of count elements per frame, written in 64 KiB chunks.
struct Particles {
  testing::TempDirectory dir;
  std::string path = dir.file("data.hrc");
  format::Container container;
  Particles(std::uint32_t frames, std::uint64_t count, CodecId codec)
      : container((testing::write_particles(path, frames, count, codec, 64 << 10), format::Container::open(path))) {}
};

// (codec, decode on the GPU, pinned file)
class QueueGpuTest : public ::testing::TestWithParam<std::tuple<CodecId, bool, bool>> {};

TEST_P(QueueGpuTest, DeliversEveryChunkIntoDeviceMemory) {
  SKIP_WITHOUT_GPU();
  const auto [codec, decode_on_gpu, pinned] = GetParam();
  std::string no_gdeflate;
  if (codec == CodecId::gdeflate && !codec::cpu::gdeflate_available(&no_gdeflate)) GTEST_SKIP() << no_gdeflate;
  const Particles data(2, 20000, codec);
  const auto& container = data.container;
  const auto expected = testing::particle_values(20000, 1.0f);
  gpu::Device device(0);
  Queue queue(gpu_options(decode_on_gpu, pinned));
  const FileId file = queue.add_file(data.path);
  gpu::DeviceBuffer out(expected.size() * sizeof(float));
  fill(out, 0xEE);
  std::vector<RequestId> ids;
  for (const auto& chunk : container.chunks_of(1, 0))
    ids.push_back(queue.enqueue(device_chunk(file, chunk, out.pointer() + chunk.first_element * 32)));
  const FenceId fence = queue.enqueue_signal();
  queue.submit();
  queue.wait(fence);
  double h2d_s = 0, decode_s = 0;
  for (RequestId id : ids) {
    EXPECT_EQ(queue.status(id).state, RequestState::done) << queue.status(id).message;
    h2d_s += queue.status(id).h2d_s;
    decode_s += queue.status(id).decode_s;
  }
  EXPECT_GT(h2d_s, 0);  // CUDA events timed the batches' copies
  EXPECT_EQ(decode_s > 0, codec != CodecId::none);
  const auto got = to_host(out);
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0) << queue.describe();
  EXPECT_EQ(queue.stats().requests.raw_bytes, got.size());
  if (pinned) EXPECT_NE(queue.describe().find("page-locked (pin_files on)"), std::string::npos) << queue.describe();
}

INSTANTIATE_TEST_SUITE_P(
    CodecsAndRoutes, QueueGpuTest,
    ::testing::Combine(::testing::Values(CodecId::none, CodecId::lz4, CodecId::zstd, CodecId::gdeflate), ::testing::Bool(),
                       ::testing::Bool()),
    [](const auto& info) {
      return std::string(format::to_string(std::get<0>(info.param))) + (std::get<1>(info.param) ? "_gpu" : "_cpu") +
             "_decode" + (std::get<2>(info.param) ? "_pinned" : "_read");
    });

// Fire and forget (seed 000, algorithm 2) with stream_value_fences: the consumer stream is told to
// wait before the data is even submitted; its copy of the destination must still see the data.
TEST(QueueGpu, ConsumerStreamWaitsOnAValueFenceEnqueuedBeforeSubmit) {
  SKIP_WITHOUT_GPU();
  const testing::RawFile raw(1 << 20, 5);
  const auto& bytes = raw.bytes;
  const auto& path = raw.path;
  gpu::Device device(0);
  for (const bool pinned : {false, true}) {
    Queue queue(gpu_options(false, pinned, true));
    const FileId file = queue.add_file(path);
    gpu::DeviceBuffer out(bytes.size());
    fill(out, 0);
    for (std::uint64_t offset = 0; offset < bytes.size(); offset += 64 << 10)
      queue.enqueue(device_range(file, offset, 64 << 10, out.pointer() + offset));
    const FenceId fence = queue.enqueue_signal();
    gpu::Stream consumer;
    gpu::PinnedBuffer host(bytes.size());
    queue.wait_on_stream(fence, reinterpret_cast<std::uintptr_t>(consumer.handle()));
    gpu::check(gpu::driver()->cuMemcpyDtoHAsync(host.data(), out.pointer(), bytes.size(), consumer.handle()), "cuMemcpyDtoHAsync");
    queue.submit();
    consumer.synchronize();  // the data are there once the consumer has passed the fence's value ...
    EXPECT_EQ(std::memcmp(host.data(), bytes.data(), bytes.size()), 0) << queue.describe();
    queue.wait(fence);  // ... while the host learns that the copies ended from their events, a little later
    EXPECT_TRUE(queue.is_signaled(fence));
  }
}

TEST(QueueGpu, ValueFencesAreRefusedWithGpuDecoding) {
  SKIP_WITHOUT_GPU();
  gpu::Device device(0);
  EXPECT_THROW(Queue(gpu_options(true, false, true)), UsageError);
}

// The default: the stream waits on the fence's event, which the caller waits to be recorded.
TEST(QueueGpu, EventFencesAskForSubmitBeforeAStreamWaitsThenWaitOnTheEvent) {
  SKIP_WITHOUT_GPU();
  const Particles data(1, 20000, CodecId::lz4);
  const auto& path = data.path;
  const auto& container = data.container;
  gpu::Device device(0);
  Queue queue(gpu_options(true));
  const FileId file = queue.add_file(path);
  gpu::DeviceBuffer out(20000 * 32);
  for (const auto& chunk : container.chunks_of(0, 0)) queue.enqueue(device_chunk(file, chunk, out.pointer() + chunk.first_element * 32));
  const FenceId fence = queue.enqueue_signal();
  gpu::Stream consumer;
  EXPECT_THROW(queue.wait_on_stream(fence, reinterpret_cast<std::uintptr_t>(consumer.handle())), UsageError);
  queue.submit();
  queue.wait_on_stream(fence, reinterpret_cast<std::uintptr_t>(consumer.handle()));
  gpu::PinnedBuffer host(out.size_bytes());
  gpu::check(gpu::driver()->cuMemcpyDtoHAsync(host.data(), out.pointer(), out.size_bytes(), consumer.handle()), "cuMemcpyDtoHAsync");
  consumer.synchronize();
  const auto expected = testing::particle_values(20000, 0.0f);
  EXPECT_EQ(std::memcmp(host.data(), expected.data(), out.size_bytes()), 0);
}

TEST(QueueGpu, StagingInHugePagesOrFromCuMemHostAllocDeliversTheSameBytesAndSaysWhichItIs) {
  SKIP_WITHOUT_GPU();
  const testing::RawFile raw(std::size_t{3} << 20, 13);
  gpu::Device device(0);
  for (const bool huge_pages : {true, false}) {
    QueueOptions options = gpu_options();
    options.staging_bytes = 4 << 20;  // two huge pages
    options.staging_huge_pages = huge_pages;
    Queue queue(options);
    const FileId file = queue.add_file(raw.path);
    gpu::DeviceBuffer out(raw.bytes.size());
    fill(out, 0);
    for (std::uint64_t offset = 0; offset < raw.bytes.size(); offset += 256 << 10)
      queue.enqueue(device_range(file, offset, 256 << 10, out.pointer() + offset));
    queue.submit();
    queue.drain();
    EXPECT_EQ(to_host(out), raw.bytes) << queue.describe();
    const std::string described = queue.describe();
    if (huge_pages) {
      EXPECT_TRUE(described.find("pinned, huge pages") != std::string::npos ||
                  described.find("pinned, cuMemHostAlloc (no huge pages: ") != std::string::npos)
          << described;
    } else {
      EXPECT_NE(described.find("pinned, cuMemHostAlloc"), std::string::npos) << described;
      EXPECT_EQ(described.find("huge pages"), std::string::npos) << described;
    }
  }
}

TEST(QueueGpu, CancelledRequestsNeverWriteAndNeighboursStayIntact) {
  SKIP_WITHOUT_GPU();
  const testing::RawFile raw(1 << 20, 9);
  const auto& bytes = raw.bytes;
  const auto& path = raw.path;
  gpu::Device device(0);
  Queue queue(gpu_options());
  const FileId file = queue.add_file(path);
  constexpr std::uint64_t piece = 16 << 10;
  gpu::DeviceBuffer out(bytes.size());
  fill(out, 0xAB);
  std::vector<RequestId> ids;
  for (std::uint64_t offset = 0; offset < bytes.size(); offset += piece)
    ids.push_back(queue.enqueue(device_range(file, offset, piece, out.pointer() + offset, (offset / piece) % 2)));  // odd: tag 1
  EXPECT_EQ(queue.cancel_tag(1), ids.size() / 2);
  queue.submit();
  queue.drain();
  const auto got = to_host(out);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::byte* slot = got.data() + i * piece;
    if (i % 2 == 0) {
      EXPECT_EQ(queue.status(ids[i]).state, RequestState::done) << i;
      EXPECT_EQ(std::memcmp(slot, bytes.data() + i * piece, piece), 0) << i;
    } else {
      EXPECT_EQ(queue.status(ids[i]).state, RequestState::cancelled) << i;
      EXPECT_TRUE(std::all_of(slot, slot + piece, [](std::byte b) { return b == std::byte{0xAB}; })) << i;
    }
  }
}

// A consumer has a frame once its copies are issued (fence_event), and may close the file right
// after: the close waits for those copies (from the file's page-locked pages here), it does not refuse.
TEST(QueueGpu, AFileClosesRightAfterItsCopiesAreIssued) {
  SKIP_WITHOUT_GPU();
  const testing::RawFile raw(64 << 20, 5);
  gpu::Device device(0);
  Queue queue(gpu_options(true, true));
  const FileId file = queue.add_file(raw.path);
  constexpr std::uint64_t piece = 1 << 20;
  gpu::DeviceBuffer out(raw.bytes.size());
  for (std::uint64_t offset = 0; offset < raw.bytes.size(); offset += piece)
    queue.enqueue(device_range(file, offset, piece, out.pointer() + offset, 0));
  const FenceId fence = queue.enqueue_signal();
  queue.submit();
  (void)queue.fence_event(fence);  // issued, perhaps still copying
  EXPECT_NO_THROW(queue.close_file(file));
  queue.drain();
  EXPECT_EQ(to_host(out), raw.bytes);
  EXPECT_EQ(queue.stats().requests.done, raw.bytes.size() / piece);
}

// The page cache's reads into staging are hashed by the threads that read them, so one read must not
// outgrow a backend task (the thread landing last would hash the whole read alone): small chunks join
// up to one task, and every chunk is still checked once and lands right.
TEST(QueueGpu, ThePageCachesReadsJoinUpToOneTaskAndEachChunkIsCheckedOnce) {
  SKIP_WITHOUT_GPU();
  testing::TempDirectory dir;
  const std::string path = dir.file("small-chunks.hrc");
  constexpr std::uint64_t count = 40000;
  testing::write_particles(path, 1, count, CodecId::none, 8 << 10);
  const auto container = format::Container::open(path);
  const auto chunks = container.chunks_of(0, 0);
  std::uint64_t stored = 0;
  for (const auto& chunk : chunks) stored += chunk.stored_size;
  const auto file_bytes = testing::read_file(path);  // and in the page cache now
  gpu::Device device(0);
  QueueOptions options = gpu_options();
  options.backend.reset();          // the read path: these reads take the page cache's lane
  options.staging_bytes = 8 << 20;  // its flights up to 512 KiB, eight tasks of 64 KiB
  options.max_batch = 256;
  Queue queue(options);
  const FileId file = queue.add_file(path);
  gpu::DeviceBuffer out(count * 32);
  std::vector<RequestId> ids;
  for (const auto& chunk : chunks) ids.push_back(queue.enqueue(device_chunk(file, chunk, out.pointer() + chunk.first_element * 32)));
  queue.submit();
  queue.drain();
  for (const RequestId id : ids) {
    const auto status = queue.status(id);
    ASSERT_EQ(status.state, RequestState::done) << status.message;
    EXPECT_EQ(status.source, ReadSource::page_cache);
  }
  const auto host = to_host(out);
  for (const auto& chunk : chunks)
    ASSERT_EQ(0, std::memcmp(host.data() + chunk.first_element * 32, file_bytes.data() + chunk.offset, chunk.raw_size));
  const auto stats = queue.stats();
  EXPECT_GE(stats.backend_reads, (stored + options.io.task_size_bytes - 1) / options.io.task_size_bytes);
  EXPECT_LT(stats.backend_reads, ids.size());  // small chunks still join
  EXPECT_EQ(stats.checksums_checked, ids.size());
}

// nvCOMP trusts its input (a truncated zstd frame makes its kernel read wild addresses, which
// compute-sanitizer shows and which kills the context): the host checks every chunk first.
TEST(QueueGpu, CorruptChunkFailsByItsLabelBeforeTheGpuDecoderSeesIt) {
  SKIP_WITHOUT_GPU();
  const Particles data(1, 20000, CodecId::zstd);
  const auto& path = data.path;
  const auto chunks = data.container.chunks_of(0, 0);
  ASSERT_GE(chunks.size(), 3u);
  auto file_bytes = testing::read_file(path);
  file_bytes[chunks[1].offset + chunks[1].stored_size / 2] ^= std::byte{0x5A};
  testing::write_file(path, file_bytes);
  gpu::Device device(0);
  Queue queue(gpu_options(true));
  const FileId file = queue.add_file(path);
  gpu::DeviceBuffer out(20000 * 32);
  Request unchecked = device_chunk(file, chunks[0], out.pointer());
  unchecked.checksum.reset();
  EXPECT_THROW(queue.enqueue(unchecked), UsageError);
  std::vector<RequestId> ids;
  for (const auto& chunk : chunks) ids.push_back(queue.enqueue(device_chunk(file, chunk, out.pointer() + chunk.first_element * 32)));
  queue.submit();
  queue.drain();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto status = queue.status(ids[i]);
    if (i == 1) {
      EXPECT_EQ(status.state, RequestState::failed);
      EXPECT_NE(status.message.find("chunk " + std::to_string(chunks[1].first_element) + ": expected checksum"), std::string::npos)
          << status.message;
    } else {
      EXPECT_EQ(status.state, RequestState::done) << i << ": " << status.message;
    }
  }
}

// A plain chunk is copied while its checksum is checked (on the host beside the DMA, or on the GPU where
// it landed): a corrupt one still fails by its label, and its neighbours land whole (read and
// page-locked alike).
TEST(QueueGpu, CorruptPlainChunkCopiedWhileCheckedFailsByItsLabelAndItsNeighboursLand) {
  SKIP_WITHOUT_GPU();
  const Particles data(1, 20000, CodecId::none);
  const auto chunks = data.container.chunks_of(0, 0);
  ASSERT_GE(chunks.size(), 3u);
  auto file_bytes = testing::read_file(data.path);
  file_bytes[chunks[1].offset + chunks[1].stored_size / 2] ^= std::byte{0x5A};
  testing::write_file(data.path, file_bytes);
  const auto expected = testing::particle_values(20000, 0.0f);
  const auto* expected_bytes = reinterpret_cast<const std::byte*>(expected.data());
  gpu::Device device(0);
  for (const bool on_gpu : {false, true})
  for (const bool pinned : {false, true}) {
    QueueOptions options = gpu_options(false, pinned);
    options.check_on_gpu = on_gpu;  // the sums of the bytes where they landed, on the GPU
    Queue queue(options);
    if (on_gpu) EXPECT_NE(queue.describe().find("checksums=gpu"), std::string::npos) << queue.describe();
    const FileId file = queue.add_file(data.path);
    gpu::DeviceBuffer out(20000 * 32);
    fill(out, 0xEE);
    std::vector<RequestId> ids;
    for (const auto& chunk : chunks) ids.push_back(queue.enqueue(device_chunk(file, chunk, out.pointer() + chunk.first_element * 32)));
    queue.submit();
    queue.drain();
    const auto got = to_host(out);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto status = queue.status(ids[i]);
      const std::uint64_t at = chunks[i].first_element * 32, size = chunks[i].raw_size;
      if (i == 1) {
        EXPECT_EQ(status.state, RequestState::failed) << pinned;
        EXPECT_NE(status.message.find("chunk " + std::to_string(chunks[1].first_element) + ": expected checksum"),
                  std::string::npos)
            << status.message;
      } else {
        EXPECT_EQ(status.state, RequestState::done) << i << ": " << status.message;
        EXPECT_EQ(std::memcmp(got.data() + at, expected_bytes + at, size), 0)
            << "chunk " << i << (pinned ? " pinned" : " read") << (on_gpu ? ", checked on the GPU" : "");
      }
    }
    EXPECT_EQ(queue.stats().requests.failed, 1u) << queue.describe();
  }
}

// Under compute-sanitizer (bench/engine_on_device.sh): no copy or kernel touches the destination or
// staging after the queue is gone and the destination freed.
TEST(QueueGpu, DestroyingAQueueWithDeviceWorkInFlightIsSafe) {
  SKIP_WITHOUT_GPU();
  const Particles data(1, 200000, CodecId::lz4);
  const auto& path = data.path;
  const auto& container = data.container;
  gpu::Device device(0);
  for (const bool decode_on_gpu : {true, false}) {
    gpu::DeviceBuffer out(200000 * 32);
    {
      Queue queue(gpu_options(decode_on_gpu));
      const FileId file = queue.add_file(path);
      for (const auto& chunk : container.chunks_of(0, 0))
        queue.enqueue(device_chunk(file, chunk, out.pointer() + chunk.first_element * 32));
      queue.submit();
    }  // cancels what is not dispatched, waits for reads, copies and kernels in flight
  }    // then the destination is freed
  SUCCEED();
}

// A pinned file's pages cannot be re-read from disk: each chunk's checksum is computed once.
TEST(QueueGpu, PinnedFilesCheckEachChunkOnceAndReadFilesEveryTime) {
  SKIP_WITHOUT_GPU();
  const Particles data(1, 20000, CodecId::none);
  const auto chunks = data.container.chunks_of(0, 0);
  gpu::Device device(0);
  for (const bool on_gpu : {false, true})
  for (const bool pinned : {false, true}) {
    QueueOptions options = gpu_options(false, pinned);
    options.check_on_gpu = on_gpu;
    Queue queue(options);
    const FileId file = queue.add_file(data.path);
    gpu::DeviceBuffer out(20000 * 32);
    for (int pass = 0; pass < 3; ++pass) {
      for (const auto& chunk : chunks) queue.enqueue(device_chunk(file, chunk, out.pointer() + chunk.first_element * 32));
      queue.submit();
      queue.drain();
    }
    const auto stats = queue.stats();
    EXPECT_EQ(stats.requests.done, 3 * chunks.size());
    EXPECT_EQ(stats.checksums_checked, (pinned ? 1 : 3) * chunks.size()) << queue.describe();
    const auto got = to_host(out);
    const auto expected = testing::particle_values(20000, 0.0f);
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0);
  }
}

TEST(QueueGpu, DmaFromPinnedPagesIsNotBoundByMaxBatchButReadsAre) {
  SKIP_WITHOUT_GPU();
  const testing::RawFile raw(std::size_t{2} << 20, 17);
  gpu::Device device(0);
  for (const bool pinned : {false, true}) {
    QueueOptions options = gpu_options(false, pinned);  // max_batch 8; 1 MiB of staging: flights of 64 KiB unpinned
    options.staging_bytes = 16 << 20;                    // the page cache's ring of 4 MiB: flights up to 1 MiB
    Queue queue(options);
    const FileId file = queue.add_file(raw.path);
    gpu::DeviceBuffer out(raw.bytes.size());
    for (std::uint64_t offset = 0; offset < raw.bytes.size(); offset += 16 << 10)
      queue.enqueue(device_range(file, offset, 16 << 10, out.pointer() + offset));
    queue.submit();
    queue.drain();
    EXPECT_EQ(to_host(out), raw.bytes) << queue.describe();
    std::uint32_t most = 0, total = 0;
    for (const FlightRecord& flight : queue.flight_timeline()) {
      most = std::max(most, flight.requests);
      total += flight.requests;
    }
    EXPECT_EQ(total, raw.bytes.size() / (16 << 10));
    if (pinned) EXPECT_GT(most, options.max_batch) << "a flight of DMA copies counts bytes, not requests";
    else EXPECT_LE(most, options.max_batch);
  }
}

// The largest flight of a queue: the most requests one held, and the most stored bytes.
struct LargestFlight {
  std::uint32_t requests = 0;
  std::uint64_t stored_bytes = 0;
};

// Every zstd chunk of the frame into GPU memory through a queue of `options` (by default max_batch 8 and
// 64 MiB of staging), the values checked.
LargestFlight largest_flight_of_decoded_chunks(const Particles& data, bool pin_files, std::uint64_t staging_bytes = 64 << 20,
                                               unsigned max_batch = 8) {
  const auto chunks = data.container.chunks_of(0, 0);
  gpu::Device device(0);
  QueueOptions options = gpu_options(true, pin_files);
  options.staging_bytes = staging_bytes;
  options.max_batch = max_batch;
  Queue queue(options);
  const FileId file = queue.add_file(data.path);
  gpu::DeviceBuffer out(200000 * 32);
  for (const auto& chunk : chunks) queue.enqueue(device_chunk(file, chunk, out.pointer() + chunk.first_element * 32));
  queue.submit();
  queue.drain();
  EXPECT_EQ(queue.stats().requests.done, chunks.size()) << queue.describe();
  LargestFlight most;
  for (const FlightRecord& flight : queue.flight_timeline()) {
    most.requests = std::max(most.requests, flight.requests);
    most.stored_bytes = std::max(most.stored_bytes, flight.stored_bytes);
  }
  const auto got = to_host(out);
  const auto expected = testing::particle_values(200000, 0.0f);
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0);
  return most;
}

TEST(QueueGpu, FlightsOfGpuDecodedChunksFromPinnedPagesStayWithinOneDecoderCall) {
  SKIP_WITHOUT_GPU();
  // Many small zstd chunks of a page-locked file, and staging large enough that a flight's bytes take
  // far more than max_batch of them: a flight holds as many as one decoder call per codec takes (the
  // pool has two; a flight needing three would wait for itself), not max_batch (which bounds reads).
  const Particles data(1, 200000, CodecId::zstd);
  ASSERT_GT(data.container.chunks_of(0, 0).size(), 3u * 8u);
  EXPECT_GT(largest_flight_of_decoded_chunks(data, true).requests, 8u)
      << "decoded chunks of page-locked pages read nothing: max_batch does not bound them";
}

TEST(QueueGpu, FlightsOfGpuDecodedChunksFromPinnedPagesTakeUpToHalfOfTheRing) {
  SKIP_WITHOUT_GPU();
  // nvCOMP decodes a call's chunks side by side: flights of a quarter of the ring decoded a hot zstd file
  // at a quarter of the rate a frame's worth of chunks does. A flight that reads nothing takes half.
  const Particles data(1, 200000, CodecId::zstd);
  const LargestFlight most = largest_flight_of_decoded_chunks(data, true, 1 << 20, 1024);
  EXPECT_GT(most.stored_bytes, std::uint64_t{1} << 18) << "more than a quarter of the ring";
  EXPECT_LE(most.stored_bytes, std::uint64_t{1} << 19) << "at most half of it";
}

TEST(QueueGpu, FlightsDecodedSideBySideAreInPlaceForAStreamWaitingOnTheirFence) {
  SKIP_WITHOUT_GPU();
  // Decoded flights take turns on two decode streams, each after its copies on the copy stream: a fence
  // after them (one per part of the frame, each part many flights of a small ring) waits for both, so a
  // consumer stream waiting on each fence reads every decoded byte, and so does the copy stream after it.
  const Particles data(1, 200000, CodecId::zstd);
  const auto chunks = data.container.chunks_of(0, 0);
  gpu::Device device(0);
  for (const bool pin_files : {false, true}) {
    QueueOptions options = gpu_options(true, pin_files);
    Queue queue(options);
    const FileId file = queue.add_file(data.path);
    gpu::DeviceBuffer out(200000 * 32);
    fill(out, 0);
    std::vector<FenceId> fences;
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      queue.enqueue(device_chunk(file, chunks[c], out.pointer() + chunks[c].first_element * 32));
      if (c % 8 == 7 || c + 1 == chunks.size()) fences.push_back(queue.enqueue_signal());
    }
    queue.submit();
    gpu::Stream consumer;
    for (const FenceId fence : fences) queue.wait_on_stream(fence, reinterpret_cast<std::uintptr_t>(consumer.handle()));
    gpu::PinnedBuffer by_consumer(out.size_bytes()), by_copy_stream(out.size_bytes());
    gpu::check(gpu::driver()->cuMemcpyDtoHAsync(by_consumer.data(), out.pointer(), out.size_bytes(), consumer.handle()),
               "cuMemcpyDtoHAsync");
    queue.wait(fences.back());  // its fence marked: the copy stream has passed the decoding before it
    const auto copy_stream = reinterpret_cast<gpu::CUstream>(queue.copy_stream());
    gpu::check(gpu::driver()->cuMemcpyDtoHAsync(by_copy_stream.data(), out.pointer(), out.size_bytes(), copy_stream),
               "cuMemcpyDtoHAsync");
    consumer.synchronize();
    gpu::check(gpu::driver()->cuStreamSynchronize(copy_stream), "cuStreamSynchronize");
    std::size_t decoded_flights = 0;
    for (const FlightRecord& flight : queue.flight_timeline()) decoded_flights += flight.requests > 0;
    EXPECT_GT(decoded_flights, 2u) << "one flight decodes alone: nothing side by side";
    const auto expected = testing::particle_values(200000, 0.0f);
    EXPECT_EQ(std::memcmp(by_consumer.data(), expected.data(), out.size_bytes()), 0) << "pinned files " << pin_files;
    EXPECT_EQ(std::memcmp(by_copy_stream.data(), expected.data(), out.size_bytes()), 0) << "pinned files " << pin_files;
  }
}

TEST(QueueGpu, FlightsOfGpuDecodedChunksReadFromTheFileJoinAcrossTheirAlignmentPadding) {
  SKIP_WITHOUT_GPU();
  // Compressed chunks lie 4 KiB-aligned, most with padding in front: read, each joins the read of the
  // one before (read_coalescing), so a flight holds more than max_batch of them (64 KiB GDeflate chunks
  // counted one a read made flights of 36 chunks and a cold frame at half the disk's rate).
  const Particles data(1, 200000, CodecId::zstd);
  const auto chunks = data.container.chunks_of(0, 0);
  ASSERT_GT(chunks.size(), 3u * 8u);
  std::size_t padded = 0;
  for (std::size_t c = 1; c < chunks.size(); ++c) padded += chunks[c].offset != chunks[c - 1].offset + chunks[c - 1].stored_size;
  ASSERT_GT(padded, 0u) << "the test's chunks lie back to back: it says nothing about padding";
  EXPECT_GT(largest_flight_of_decoded_chunks(data, false).requests, 8u)
      << "chunks a padding apart are one read: max_batch does not count each";
}

TEST(QueueGpu, PinnedFileRequestBeyondTheEndFailsAsAShortRead) {
  SKIP_WITHOUT_GPU();
  const testing::RawFile raw(64 << 10, 3);
  const auto& bytes = raw.bytes;
  const auto& path = raw.path;
  gpu::Device device(0);
  Queue queue(gpu_options(false, true));
  const FileId file = queue.add_file(path);
  gpu::DeviceBuffer out(64 << 10);
  const RequestId id = queue.enqueue(device_range(file, 32 << 10, 64 << 10, out.pointer()));
  queue.submit();
  queue.drain();
  EXPECT_EQ(queue.status(id).state, RequestState::failed);
  EXPECT_NE(queue.status(id).message.find("expected 65536 bytes, read 32768"), std::string::npos) << queue.status(id).message;
}

}  // namespace
}  // namespace headrace::engine

namespace headrace::engine {
namespace {

// A queue with the defaults (the read path's O_DIRECT for what the page cache lacks, pin_files auto).
QueueOptions default_gpu_options() {
  QueueOptions options;
  options.device = 0;
  options.staging_bytes = 1 << 20;
  return options;
}

// Passes over a cold file until every chunk came from the held copy (the copy is page-locked beside the
// first pass, so the second may still read some); returns the passes it took, 0 when it never did.
int passes_until_held(Queue& queue, FileId file, std::span<const format::ChunkInfo> chunks, const gpu::DeviceBuffer& out,
                      std::vector<RequestSummary>& summaries) {
  for (int pass = 1; pass <= 4; ++pass) {
    std::vector<RequestId> ids;
    for (const auto& chunk : chunks) ids.push_back(queue.enqueue(device_chunk(file, chunk, out.pointer() + chunk.first_element * 32)));
    queue.submit();
    queue.drain();
    summaries.push_back(queue.summarize(ids));
    if (summaries.back().done == ids.size() && summaries.back().bytes_pinned == summaries.back().stored_bytes) return pass;
    ::usleep(100000);  // the copy may still be locking
  }
  return 0;
}

TEST(QueueGpu, AColdFileReadFromTheDiskIsHeldAndItsLaterPassesAreDmaFromTheCopy) {
  SKIP_WITHOUT_GPU();
  const Particles data(1, 200000, CodecId::none);
  const auto chunks = data.container.chunks_of(0, 0);
  if (!testing::evict(data.path, 0, std::filesystem::file_size(data.path))) GTEST_SKIP() << "this file system keeps evicted pages";
  gpu::Device device(0);
  Queue queue(default_gpu_options());
  const FileId file = queue.add_file(data.path);
  gpu::DeviceBuffer out(200000 * 32);
  fill(out, 0xee);
  std::vector<RequestSummary> passes;
  const int hot = passes_until_held(queue, file, chunks, out, passes);
  if (passes.front().bytes_from_disk == 0) GTEST_SKIP() << "the read path did not read from the disk here: " << queue.describe();
  EXPECT_EQ(passes.front().bytes_from_disk, passes.front().stored_bytes);  // the first pass: O_DIRECT
  ASSERT_GE(hot, 2) << queue.describe();
  EXPECT_EQ(hot, 2) << "the first pass's copies filled the held copy back by DMA, locked flight by flight: " << queue.describe();
  EXPECT_NE(queue.describe().find("MiB held"), std::string::npos) << queue.describe();
  // The held bytes are the file's: the last pass came from the copy alone.
  const auto got = to_host(out);
  const auto expected = testing::particle_values(200000, 0.0f);
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0);
  // Nothing of it went to the page cache: O_DIRECT, then memory the engine owns.
  EXPECT_EQ(io::PageCacheResidency(data.path).resident_bytes(0, std::filesystem::file_size(data.path)), 0u);
  Request probe = device_chunk(file, chunks.front(), out.pointer());
  EXPECT_EQ(queue.explain(probe).read, "held");
}

TEST(QueueGpu, AFileReadInPartLocksOnlyThePartItRead) {
  SKIP_WITHOUT_GPU();
  // A rank's share of a file: its flights' bytes locked as they are read (their copies fill the held copy
  // back by DMA), only the span it read (4 ranks of a job would otherwise each lock the whole file).
  const Particles data(1, 400000, CodecId::none);  // 12.8 MB of values
  const auto all = data.container.chunks_of(0, 0);
  const auto half = all.subspan(0, all.size() / 2);
  if (!testing::evict(data.path, 0, std::filesystem::file_size(data.path))) GTEST_SKIP() << "this file system keeps evicted pages";
  gpu::Device device(0);
  Queue queue(default_gpu_options());
  const FileId file = queue.add_file(data.path);
  gpu::DeviceBuffer out(400000 * 32);
  std::vector<RequestSummary> passes;
  const int hot = passes_until_held(queue, file, half, out, passes);
  if (passes.front().bytes_from_disk == 0) GTEST_SKIP() << "the read path did not read from the disk here: " << queue.describe();
  ASSERT_GE(hot, 2) << queue.describe();
  const std::string text = queue.describe();
  const auto at = text.rfind(" MiB locked in");  // the copy's, not the budget's
  ASSERT_NE(at, std::string::npos) << text;
  const auto locked_mib = std::stoull(text.substr(text.rfind(", ", at) + 2, at - text.rfind(", ", at) - 2));
  EXPECT_LE(locked_mib, 7u) << "about half of 12.8 MB: " << text;
  const auto got = to_host(out);
  const auto expected = testing::particle_values(400000, 0.0f);
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), half.back().first_element * 32), 0);
}

TEST(QueueGpu, NothingIsHeldWhenTheCacheIsBypassedOrPinsAreOff) {
  SKIP_WITHOUT_GPU();
  const Particles data(1, 100000, CodecId::none);
  const auto chunks = data.container.chunks_of(0, 0);
  gpu::Device device(0);
  for (const bool bypass : {true, false}) {
    if (!testing::evict(data.path, 0, std::filesystem::file_size(data.path))) GTEST_SKIP() << "this file system keeps evicted pages";
    QueueOptions options = default_gpu_options();
    if (bypass) options.cache_policy = io::CachePolicy::bypass;
    else options.pin_files = staging::PinPolicy::off;
    Queue queue(options);
    const FileId file = queue.add_file(data.path);
    gpu::DeviceBuffer out(100000 * 32);
    std::vector<RequestSummary> passes;
    EXPECT_EQ(passes_until_held(queue, file, chunks, out, passes), 0) << queue.describe();
    for (const auto& pass : passes) EXPECT_EQ(pass.bytes_pinned, 0u);
    EXPECT_NE(queue.describe().find("not held"), std::string::npos) << queue.describe();
  }
}

}  // namespace
}  // namespace headrace::engine
