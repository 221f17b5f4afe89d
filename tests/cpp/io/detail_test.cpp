// The RAII helpers and the request planner under the backends.
#include <gtest/gtest.h>

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/detail/byte_size.hpp"
#include "headrace/detail/file_descriptor.hpp"
#include "headrace/detail/huge_pages.hpp"
#include "headrace/detail/memory_mapping.hpp"
#include "headrace/detail/thread_name.hpp"
#include "headrace/detail/thread_pool.hpp"
#include "headrace/error.hpp"
#include "headrace/io/detail/read_plan.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_directory.hpp"

namespace headrace {
namespace {

TEST(IoThreadPool, RunsEveryTaskOnAKnownWorkerAndDrainsOnDestruction) {
  std::atomic<int> ran{0};
  std::atomic<bool> bad_worker{false};
  {
    detail::ThreadPool pool(3, "hr-test");
    EXPECT_EQ(pool.thread_count(), 3u);
    for (int i = 0; i < 1000; ++i) {
      pool.submit([&](unsigned worker) {
        if (worker >= 3) bad_worker = true;
        ++ran;
      });
    }
  }  // the destructor runs what is still queued
  EXPECT_EQ(ran.load(), 1000);
  EXPECT_FALSE(bad_worker.load());
}

TEST(IoThreadPool, ZeroThreadsIsAUsageError) { EXPECT_THROW(detail::ThreadPool(0, "hr-test"), UsageError); }

// A process's CPU is told apart by its threads' names (headrace.measurement.cpu_by_stage).
TEST(IoThreadPool, NamesItsWorkers) {
  std::array<char, 16> seen{};
  {
    detail::ThreadPool pool(1, detail::reader_thread_name);
    pool.submit([&](unsigned) { ::pthread_getname_np(::pthread_self(), seen.data(), seen.size()); });
  }
  EXPECT_STREQ(seen.data(), detail::reader_thread_name);
}

TEST(IoAlignedBuffer, IsAlignedAndMovesOwnership) {
  detail::AlignedBuffer buffer(10000);
  ASSERT_NE(buffer.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % 4096, 0u);
  EXPECT_EQ(buffer.size_bytes(), 10000u);
  std::memset(buffer.data(), 0x5a, buffer.size_bytes());
  std::byte* data = buffer.data();
  detail::AlignedBuffer moved(std::move(buffer));
  EXPECT_EQ(moved.data(), data);
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(buffer.size_bytes(), 0u);
  EXPECT_EQ(detail::AlignedBuffer(0).data(), nullptr);
}

// AnonHugePages of the mapping that starts at address (/proc/self/smaps), in bytes; -1 when none does.
long long huge_bytes_of_mapping_at(const void* address) {
  char header[32];
  std::snprintf(header, sizeof header, "%lx-", reinterpret_cast<unsigned long>(address));
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < line.find(' '))
      inside = line.rfind(header, 0) == 0;
    else if (inside && line.rfind("AnonHugePages:", 0) == 0)
      return std::stoll(line.substr(line.find(':') + 1)) << 10;
  }
  return -1;
}

TEST(HugePageMemory, IsWholeHugePagesOrSaysWhyNot) {
  std::string why_not;
  auto memory = detail::HugePageMemory::make(5 << 20, why_not);  // rounded up to 6 MiB
  if (!memory) {
    // Transparent huge pages off, memory fragmented or an old kernel: the reason names the call.
    EXPECT_NE(why_not.find("MADV_"), std::string::npos) << why_not;
    GTEST_SKIP() << why_not;
  }
  EXPECT_EQ(memory->size_bytes(), std::size_t{6} << 20);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(memory->data()) % detail::huge_page_bytes, 0u);
  EXPECT_EQ(huge_bytes_of_mapping_at(memory->data()), 6 << 20);
  std::memset(memory->data(), 0x5a, memory->size_bytes());
  std::byte* data = memory->data();
  detail::HugePageMemory moved(std::move(*memory));
  EXPECT_EQ(moved.data(), data);
  EXPECT_EQ(memory->data(), nullptr);
  EXPECT_EQ(moved.data()[moved.size_bytes() - 1], std::byte{0x5a});
  moved = detail::HugePageMemory();  // unmapped
  EXPECT_EQ(huge_bytes_of_mapping_at(data), -1);
}

TEST(IoFileDescriptor, MovesAndClosesOnce) {
  testing::TempDirectory scratch;
  const std::string path = scratch.write("f.bin", testing::pseudo_random_bytes(5000, 3));
  auto fd = detail::FileDescriptor::open_read(path, 0);
  ASSERT_TRUE(fd.is_open());
  char first = 0;
  EXPECT_EQ(::pread(fd.get(), &first, 1, 0), 1);
  detail::FileDescriptor moved(std::move(fd));
  EXPECT_FALSE(fd.is_open());
  EXPECT_TRUE(moved.is_open());
  moved.close();
  moved.close();
  EXPECT_FALSE(moved.is_open());
}

TEST(IoFileDescriptor, OpenFailureNamesCallPathAndErrno) {
  try {
    (void)detail::FileDescriptor::open_read("/nonexistent/headrace", 0);
    FAIL() << "opened a missing path";
  } catch (const SystemError& error) {
    EXPECT_EQ(error.error_number(), ENOENT);
    EXPECT_EQ(std::string(error.what()).rfind("open(/nonexistent/headrace) failed: ", 0), 0u) << error.what();
  }
}

TEST(IoMemoryMapping, MapsAnUnalignedRange) {
  testing::TempDirectory scratch;
  const auto bytes = testing::pseudo_random_bytes(20000, 4);
  const std::string path = scratch.write("f.bin", bytes);
  auto fd = detail::FileDescriptor::open_read(path, 0);
  auto mapping = detail::MemoryMapping::map_read(fd.get(), 4097, 9000, path);
  ASSERT_EQ(mapping.size_bytes(), 9000u);
  EXPECT_EQ(0, std::memcmp(mapping.data(), bytes.data() + 4097, 9000));
  mapping.advise_dontneed();  // the pages come back from the file on the next touch
  EXPECT_EQ(0, std::memcmp(mapping.data(), bytes.data() + 4097, 9000));
  mapping.close();
  mapping.close();
  EXPECT_EQ(mapping.data(), nullptr);
}

TEST(IoByteSize, UsesTheLargestExactUnit) {
  EXPECT_EQ(detail::format_byte_size(4 << 20), "4MiB");
  EXPECT_EQ(detail::format_byte_size(64 << 10), "64KiB");
  EXPECT_EQ(detail::format_byte_size(1536), "1536B");
  EXPECT_EQ(detail::format_byte_size(0), "0B");
}

TEST(IoReadPlan, SplitsAtTaskBoundariesOfTheFile) {
  std::vector<std::byte> destination(300000);
  io::ReadBatch batch(1);
  const auto tasks = io::detail::plan_reads({io::ReadRequest{100, 200000, destination.data()}}, 1 << 20, 65536,
                                            "/f", batch);
  ASSERT_EQ(tasks.size(), 4u);
  const std::uint64_t expected[][2] = {{100, 65436}, {65536, 65536}, {131072, 65536}, {196608, 3492}};
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(tasks[i].file_offset, expected[i][0]) << i;
    EXPECT_EQ(tasks[i].size_bytes, expected[i][1]) << i;
    EXPECT_EQ(tasks[i].destination, destination.data() + (expected[i][0] - 100)) << i;
  }
  for (const auto& task : tasks) batch.complete_part(0, task.size_bytes, 0, "");
  ASSERT_TRUE(batch.is_done());
  EXPECT_TRUE(batch.statuses()[0].ok());
  EXPECT_EQ(batch.statuses()[0].bytes_read, 200000u);
}

TEST(IoReadPlan, BufferedReadsAreCutFromTheRequestsStart) {
  std::vector<std::byte> destination(300000);
  io::ReadBatch batch(2);
  const auto tasks = io::detail::plan_reads({io::ReadRequest{100, 65536, destination.data()},
                                             io::ReadRequest{70000, 140000, destination.data() + 65536}},
                                            1 << 20, 65536, "/f", batch, io::detail::TaskCut::from_request_start);
  ASSERT_EQ(tasks.size(), 4u);  // a request of one task's size is one task, wherever it starts
  const std::uint64_t expected[][3] = {{0, 100, 65536}, {1, 70000, 65536}, {1, 135536, 65536}, {1, 201072, 8928}};
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(tasks[i].request_index, expected[i][0]) << i;
    EXPECT_EQ(tasks[i].file_offset, expected[i][1]) << i;
    EXPECT_EQ(tasks[i].size_bytes, expected[i][2]) << i;
  }
  for (const auto& task : tasks) batch.complete_part(task.request_index, task.size_bytes, 0, "");
  ASSERT_TRUE(batch.is_done());
  EXPECT_EQ(batch.statuses()[1].bytes_read, 140000u);
}

TEST(IoReadPlan, RequestPastTheEndKeepsItsBytesAndFails) {
  std::vector<std::byte> destination(100);
  io::ReadBatch batch(3);
  const auto tasks = io::detail::plan_reads({io::ReadRequest{950, 100, destination.data()},
                                             io::ReadRequest{2000, 0, destination.data()},
                                             io::ReadRequest{~std::uint64_t{0}, ~std::uint64_t{0}, destination.data()}},
                                            1000, 65536, "/f", batch);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].size_bytes, 50u);
  batch.complete_part(0, 50, 0, "");
  ASSERT_TRUE(batch.is_done());
  const auto& statuses = batch.statuses();
  EXPECT_EQ(statuses[0].bytes_read, 50u);
  EXPECT_EQ(statuses[0].error_number, io::ReadStatus::end_of_file_error_number);
  EXPECT_EQ(statuses[0].message.rfind("/f: offset 950: expected 100 bytes, found end of file at 1000", 0), 0u)
      << statuses[0].message;
  EXPECT_TRUE(statuses[1].ok());  // size 0 needs no bytes, wherever it starts
  EXPECT_EQ(statuses[2].error_number, io::ReadStatus::end_of_file_error_number);
}

}  // namespace
}  // namespace headrace
