// Every backend, in every mode, returns exactly the bytes of the file (issue 3, item 5): one
// suite, instantiated for each configuration. Small settings make requests split into many tasks.
// cufile reads into GPU memory: its case reads through a mirror (GPU buffers laid out like the
// suite's host ones, copied back once read), so the same checks hold for it where a GPU and cuFile are.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/error.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/io/cufile_backend.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_directory.hpp"

namespace headrace::io {
namespace {

constexpr std::uint64_t task_bytes = 64 << 10;
// A few MiB and an odd tail, so the last task and the last 4096 block are partial.
constexpr std::uint64_t file_bytes = (3 << 20) + 12345;

struct BackendCase {
  std::string name;
  BackendKind kind;
  Settings settings;
};

// Names the configuration in gtest's failure lines instead of dumping its bytes.
void PrintTo(const BackendCase& backend_case, std::ostream* out) { *out << backend_case.name; }

Settings small_settings() {
  Settings settings;
  settings.threads = 4;
  settings.task_size_bytes = task_bytes;
  settings.queue_depth = 8;
  settings.submit_batch = 3;  // not a divisor of the queue depth: partial batches get flushed
  return settings;
}

BackendCase make_case(std::string name, BackendKind kind, void (*adjust)(Settings&) = nullptr) {
  Settings settings = small_settings();
  if (adjust != nullptr) adjust(settings);
  return {std::move(name), kind, settings};
}

std::vector<BackendCase> all_cases() {
  return {
      make_case("posix", BackendKind::posix),
      make_case("posix_one_thread", BackendKind::posix, [](Settings& s) { s.threads = 1; }),
      make_case("direct", BackendKind::direct),
      make_case("mmap_whole", BackendKind::mmap, [](Settings& s) { s.mmap_mode = MmapMode::whole; }),
      make_case("mmap_segment", BackendKind::mmap, [](Settings& s) { s.mmap_mode = MmapMode::segment; }),
      make_case("mmap_window", BackendKind::mmap, [](Settings& s) {
        s.mmap_mode = MmapMode::window;
        s.mmap_window_segments = 2;
      }),
      make_case("mmap_whole_dontneed", BackendKind::mmap, [](Settings& s) {
        s.mmap_mode = MmapMode::whole;
        s.mmap_dontneed_bytes = 256 << 10;
      }),
      make_case("mmap_segment_dontneed", BackendKind::mmap, [](Settings& s) {
        s.mmap_mode = MmapMode::segment;
        s.mmap_dontneed_bytes = 100000;
      }),
      make_case("uring_direct_fixed_files", BackendKind::uring, [](Settings& s) {
        s.uring_o_direct = true;
        s.uring_register_files = true;
        s.uring_register_buffers = false;
      }),
      make_case("uring_buffered", BackendKind::uring, [](Settings& s) {
        s.uring_o_direct = false;
        s.uring_register_files = false;
        s.uring_register_buffers = false;
      }),
      make_case("uring_direct_fixed_buffers", BackendKind::uring, [](Settings& s) {
        s.uring_o_direct = true;
        s.uring_register_files = false;
        s.uring_register_buffers = true;
      }),
      make_case("uring_buffered_fixed_buffers_and_files", BackendKind::uring, [](Settings& s) {
        s.uring_o_direct = false;
        s.uring_register_files = true;
        s.uring_register_buffers = true;
      }),
      make_case("uring_queue_depth_1", BackendKind::uring, [](Settings& s) {
        s.queue_depth = 1;
        s.submit_batch = 1;
      }),
      make_case("ram", BackendKind::ram),
      make_case("cufile", BackendKind::cufile),
      make_case("cufile_one_thread", BackendKind::cufile, [](Settings& s) { s.threads = 1; }),
  };
}

// GPU 0's primary context, retained for the test program (cuFile caches buffers in it).
gpu::Device& process_device() {
  static gpu::Device device(0);
  device.make_current();
  return device;
}

// cufile through host destinations: each submit reads into one GPU buffer spanning the requests'
// destinations (same offsets), then copies each request's bytes back. Synchronous: enough for bytes.
class DeviceMirror final : public Backend {
 public:
  explicit DeviceMirror(std::unique_ptr<Backend> device_backend)
      : Backend(device_backend->path(), device_backend->file_size()), inner_(std::move(device_backend)) {}
  [[nodiscard]] BackendKind kind() const noexcept override { return inner_->kind(); }
  [[nodiscard]] std::string describe() const override { return inner_->describe(); }
  [[nodiscard]] std::shared_ptr<ReadBatch> submit(std::vector<ReadRequest> requests) override {
    auto* low = reinterpret_cast<std::byte*>(UINTPTR_MAX);
    std::byte* high = nullptr;
    for (const auto& r : requests) {
      low = std::min(low, static_cast<std::byte*>(r.destination));
      high = std::max(high, static_cast<std::byte*>(r.destination) + r.size_bytes);
    }
    process_device();
    gpu::DeviceBuffer mirror(std::max<std::size_t>(high > low ? high - low : 0, 1));
    std::vector<ReadRequest> device_requests = requests;
    for (auto& r : device_requests) {
      r.destination = reinterpret_cast<void*>(mirror.pointer() + (static_cast<std::byte*>(r.destination) - low));
      r.on_landed = nullptr;  // runs once the mirror's copy put the bytes where the caller asked
    }
    const auto statuses = inner_->read(device_requests);
    auto batch = std::make_shared<ReadBatch>(std::span<ReadRequest>(requests));
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (statuses[i].bytes_read > 0)
        gpu::copy_to_host(requests[i].destination, reinterpret_cast<std::uintptr_t>(device_requests[i].destination),
                          statuses[i].bytes_read);
      batch->complete(i, statuses[i]);
    }
    return batch;
  }

 private:
  std::unique_ptr<Backend> inner_;
};

// open_backend, with the GPU's context for cufile (read through a DeviceMirror).
std::unique_ptr<Backend> open_case(BackendKind kind, const std::string& path) {
  if (kind != BackendKind::cufile) return open_backend(kind, path);
  BackendOptions options;
  options.gpu_context = process_device().context();
  return std::make_unique<DeviceMirror>(open_backend(kind, path, options));
}

// Where one request's bytes go inside a shared destination buffer.
struct Placed {
  ReadRequest request;
  std::size_t destination_offset = 0;
};

class BackendConformance : public ::testing::TestWithParam<BackendCase> {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new testing::TempDirectory();
    contents_ = new std::vector<std::byte>(testing::pseudo_random_bytes(file_bytes, 2024));
    path_ = new std::string(scratch_->write("data.bin", *contents_));
  }
  static void TearDownTestSuite() {
    delete path_;
    delete contents_;
    delete scratch_;
  }

  void SetUp() override {
    scoped_.emplace(GetParam().settings);
    if (auto reason = unavailable_reason(GetParam().kind, *path_)) GTEST_SKIP() << *reason;
    try {
      backend_ = open_case(GetParam().kind, *path_);
    } catch (const UnavailableError& error) {  // cuFile present but unable to register this file system's files
      GTEST_SKIP() << error.what();
    }
  }

  // Requests for ranges, placed in one buffer at destination_offset + misalignment each.
  static std::vector<Placed> place(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges,
                                   std::vector<std::byte>& buffer, std::mt19937_64* misalign) {
    std::vector<Placed> placed;
    std::size_t end = 0;
    for (auto [offset, size] : ranges) {
      const std::size_t skew = misalign != nullptr ? (*misalign)() % 4096 : 0;
      placed.push_back(Placed{ReadRequest{offset, size, nullptr}, end + skew});
      end += skew + size;
    }
    buffer.assign(end, std::byte{0xEE});
    for (auto& p : placed) p.request.destination = buffer.data() + p.destination_offset;
    return placed;
  }

  static std::vector<ReadRequest> requests_of(const std::vector<Placed>& placed) {
    std::vector<ReadRequest> requests;
    for (const auto& p : placed) requests.push_back(p.request);
    return requests;
  }

  // Each request succeeded with every byte equal to the file's.
  static void expect_file_bytes(const std::vector<ReadRequest>& requests, const std::vector<ReadStatus>& statuses) {
    ASSERT_EQ(statuses.size(), requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const ReadRequest& r = requests[i];
      ASSERT_TRUE(statuses[i].ok()) << "request " << i << ": " << statuses[i].message;
      ASSERT_EQ(statuses[i].bytes_read, r.size_bytes) << "request " << i;
      if (r.size_bytes == 0) continue;
      ASSERT_EQ(0, std::memcmp(r.destination, contents_->data() + r.file_offset, r.size_bytes))
          << "request " << i << " offset " << r.file_offset << " size " << r.size_bytes;
    }
  }

  void read_and_check(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges, std::mt19937_64* misalign) {
    std::vector<std::byte> buffer;
    const auto requests = requests_of(place(ranges, buffer, misalign));
    expect_file_bytes(requests, backend_->read(requests));
  }

  static std::vector<std::pair<std::uint64_t, std::uint64_t>> random_ranges(std::mt19937_64& random, std::size_t count,
                                                                            std::uint64_t max_size) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint64_t offset = random() % (file_bytes + 1);
      const std::uint64_t size = random() % (std::min(max_size, file_bytes - offset) + 1);
      ranges.emplace_back(offset, size);
    }
    return ranges;
  }

  static testing::TempDirectory* scratch_;
  static std::vector<std::byte>* contents_;
  static std::string* path_;
  std::optional<ScopedSettings> scoped_;
  std::unique_ptr<Backend> backend_;
};

testing::TempDirectory* BackendConformance::scratch_ = nullptr;
std::vector<std::byte>* BackendConformance::contents_ = nullptr;
std::string* BackendConformance::path_ = nullptr;

TEST_P(BackendConformance, ReportsKindSizeAndKnobs) {
  EXPECT_EQ(backend_->kind(), GetParam().kind);
  EXPECT_EQ(backend_->path(), *path_);
  EXPECT_EQ(backend_->file_size(), file_bytes);
  const std::string description = backend_->describe();
  EXPECT_EQ(description.rfind(to_string(GetParam().kind), 0), 0u) << description;
  EXPECT_NE(description.find("task=64KiB"), std::string::npos) << description;
}

TEST_P(BackendConformance, RandomRangesMatchFile) {
  std::mt19937_64 random(7);
  read_and_check(random_ranges(random, 300, 200 << 10), &random);
}

TEST_P(BackendConformance, AlignedRangesIntoAlignedDestinations) {
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges = {
      {0, 4096}, {4096 * 3, task_bytes}, {task_bytes, 4 * task_bytes}, {8192, 3 * task_bytes},
      {(file_bytes / 4096 - 2) * 4096, 8192}};
  std::uint64_t total = 0;
  for (auto [offset, size] : ranges) total += size;
  headrace::detail::AlignedBuffer buffer(total);
  std::vector<ReadRequest> requests;
  std::uint64_t at = 0;
  for (auto [offset, size] : ranges) {
    requests.push_back(ReadRequest{offset, size, buffer.data() + at});
    at += size;
  }
  expect_file_bytes(requests, backend_->read(requests));
}

TEST_P(BackendConformance, UnalignedOffsetsSizesAndDestinations) {
  std::mt19937_64 misalign(11);
  read_and_check({{1, 4095},
                  {4095, 2},
                  {4097, task_bytes + 1},
                  {task_bytes - 1, 3},
                  {2 * task_bytes - 7, 2 * task_bytes + 13},
                  {12345, 777777}},
                 &misalign);
}

TEST_P(BackendConformance, EdgeSizes) {
  const std::uint64_t last_block = (file_bytes - 1) / 4096 * 4096;
  read_and_check({{0, 0},
                  {file_bytes, 0},
                  {0, 1},
                  {file_bytes - 1, 1},
                  {0, file_bytes},
                  {file_bytes - 100, 100},
                  {last_block, file_bytes - last_block},
                  {last_block - 4096, file_bytes - last_block + 4096},
                  {last_block + 1, file_bytes - last_block - 1}},
                 nullptr);
}

TEST_P(BackendConformance, ManyRequestsInOneSubmitReassembleTheFile) {
  std::mt19937_64 random(3);
  std::vector<std::byte> whole(file_bytes, std::byte{0});
  std::vector<ReadRequest> requests;
  for (std::uint64_t offset = 0; offset < file_bytes;) {
    const std::uint64_t size = std::min<std::uint64_t>(1 + random() % 6000, file_bytes - offset);
    requests.push_back(ReadRequest{offset, size, whole.data() + offset});
    offset += size;
  }
  ASSERT_GT(requests.size(), 900u);
  const auto statuses = backend_->read(requests);
  for (std::size_t i = 0; i < statuses.size(); ++i) ASSERT_TRUE(statuses[i].ok()) << i << ": " << statuses[i].message;
  EXPECT_TRUE(whole == *contents_);
}

TEST_P(BackendConformance, SeveralSubmitsInFlightAtOnce) {
  std::mt19937_64 random(5);
  std::vector<std::vector<std::byte>> buffers(8);
  std::vector<std::vector<ReadRequest>> requests(8);
  std::vector<std::shared_ptr<ReadBatch>> batches;
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    requests[b] = requests_of(place(random_ranges(random, 40, 300 << 10), buffers[b], &random));
    batches.push_back(backend_->submit(requests[b]));
  }
  for (std::size_t b = 0; b < batches.size(); ++b) expect_file_bytes(requests[b], batches[b]->statuses());
}

TEST_P(BackendConformance, SubmitsFromSeveralThreads) {
  std::vector<std::thread> threads;
  std::vector<std::string> failures(4);
  for (std::size_t t = 0; t < failures.size(); ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(100 + t);
      for (int round = 0; round < 5; ++round) {
        std::vector<std::byte> buffer;
        const auto requests = requests_of(place(random_ranges(random, 30, 150 << 10), buffer, &random));
        const auto statuses = backend_->read(requests);
        for (std::size_t i = 0; i < requests.size(); ++i) {
          const auto& r = requests[i];
          if (!statuses[i].ok() || statuses[i].bytes_read != r.size_bytes ||
              (r.size_bytes != 0 && std::memcmp(r.destination, contents_->data() + r.file_offset, r.size_bytes) != 0)) {
            failures[t] = "thread " + std::to_string(t) + " request at " + std::to_string(r.file_offset) + ": " +
                          statuses[i].message;
            return;
          }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) EXPECT_EQ(failure, "");
}

TEST_P(BackendConformance, PastEndOfFileFailsOnlyThatRequest) {
  std::vector<std::byte> buffer;
  const auto requests = requests_of(place({{0, 1000},
                                           {file_bytes - 100, 300},
                                           {file_bytes + 10, 5},
                                           {5000, 3 * task_bytes}},
                                          buffer, nullptr));
  const auto batch = backend_->submit(requests);
  const auto& statuses = batch->statuses();
  expect_file_bytes({requests[0], requests[3]}, {statuses[0], statuses[3]});

  const ReadStatus& straddling = statuses[1];
  EXPECT_EQ(straddling.error_number, ReadStatus::end_of_file_error_number);
  EXPECT_EQ(straddling.bytes_read, 100u);  // the bytes up to the end still arrive
  EXPECT_EQ(0, std::memcmp(requests[1].destination, contents_->data() + file_bytes - 100, 100));
  EXPECT_NE(straddling.message.find(*path_), std::string::npos) << straddling.message;
  EXPECT_NE(straddling.message.find("offset " + std::to_string(file_bytes - 100)), std::string::npos)
      << straddling.message;
  EXPECT_NE(straddling.message.find("end of file at " + std::to_string(file_bytes)), std::string::npos)
      << straddling.message;

  const ReadStatus& beyond = statuses[2];
  EXPECT_EQ(beyond.error_number, ReadStatus::end_of_file_error_number);
  EXPECT_EQ(beyond.bytes_read, 0u);
  EXPECT_NE(beyond.message.find("offset " + std::to_string(file_bytes + 10)), std::string::npos) << beyond.message;

  EXPECT_THROW(batch->check(), TruncatedFileError);
}

// A request's on_landed runs once it was read whole, with its bytes in place, before the batch is done;
// never for a request that failed.
TEST_P(BackendConformance, OnLandedRunsOncePerRequestReadWholeBeforeTheBatchIsDone) {
  std::vector<std::byte> buffer;
  auto requests = requests_of(place({{0, 1000}, {5000, 3 * task_bytes}, {file_bytes + 10, 5}}, buffer, nullptr));
  std::array<std::atomic<int>, 3> landed{}, intact{};
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const ReadRequest r = requests[i];
    requests[i].on_landed = [&, i, r] {
      ++landed[i];
      if (std::memcmp(r.destination, contents_->data() + r.file_offset, r.size_bytes) == 0) ++intact[i];
    };
  }
  const auto batch = backend_->submit(requests);
  batch->wait();
  EXPECT_EQ(landed[0], 1);
  EXPECT_EQ(landed[1], 1);
  EXPECT_EQ(landed[2], 0);  // past the end of the file: failed
  EXPECT_EQ(intact[0], 1);
  EXPECT_EQ(intact[1], 1);
}

TEST_P(BackendConformance, MissingPathThrowsFileNotFound) {
  const std::string missing = (scratch_->path() / "no-such-file.bin").string();
  try {
    (void)open_case(GetParam().kind, missing);
    FAIL() << "opened a missing file";
  } catch (const FileNotFoundError& error) {
    EXPECT_EQ(error.error_number(), ENOENT);
    EXPECT_NE(std::string(error.what()).find(missing), std::string::npos) << error.what();
  }
}

TEST_P(BackendConformance, EmptyFileReadsNothingAndEndsAtZero) {
  const std::string empty = scratch_->write("empty-" + GetParam().name + ".bin", {});
  auto backend = open_case(GetParam().kind, empty);
  EXPECT_EQ(backend->file_size(), 0u);
  std::byte sink[4] = {};
  const auto statuses = backend->read({ReadRequest{0, 0, sink}, ReadRequest{0, 1, sink}});
  EXPECT_TRUE(statuses[0].ok());
  EXPECT_EQ(statuses[1].error_number, ReadStatus::end_of_file_error_number);
  EXPECT_NE(statuses[1].message.find("end of file at 0"), std::string::npos) << statuses[1].message;
}

// The size seen at open bounds the plan; a file cut shorter afterwards must still end in a
// per-request error, which exercises each backend's own end-of-file detection (short reads).
TEST_P(BackendConformance, FileShrunkAfterOpenEndsInAnError) {
  if (GetParam().kind == BackendKind::mmap) {
    GTEST_SKIP() << "touching a mapping past a truncated end raises SIGBUS; mmap cannot turn that into an error";
  }
  const std::string path = scratch_->write("shrinking-" + GetParam().name + ".bin",
                                           std::vector<std::byte>(contents_->begin(), contents_->begin() + 4 * task_bytes));
  auto backend = open_case(GetParam().kind, path);
  ASSERT_EQ(::truncate(path.c_str(), 100000), 0);
  std::vector<std::byte> buffer(4 * task_bytes);
  const auto status = backend->read({ReadRequest{0, 4 * task_bytes, buffer.data()}})[0];
  if (GetParam().kind == BackendKind::ram) {  // read whole at open: the bytes it has are the file's
    EXPECT_TRUE(status.ok()) << status.message;
    EXPECT_EQ(0, std::memcmp(buffer.data(), contents_->data(), buffer.size()));
    return;
  }
  EXPECT_EQ(status.error_number, ReadStatus::end_of_file_error_number) << status.message;
  EXPECT_LE(status.bytes_read, 100000u);
  EXPECT_NE(status.message.find(path), std::string::npos) << status.message;
  EXPECT_NE(status.message.find("end of file at "), std::string::npos) << status.message;
}

TEST_P(BackendConformance, DestructionWaitsForReadsInFlight) {
  std::mt19937_64 random(9);
  std::vector<std::byte> buffer;
  const auto requests = requests_of(place(random_ranges(random, 200, 256 << 10), buffer, &random));
  const auto batch = backend_->submit(requests);
  backend_.reset();
  ASSERT_TRUE(batch->is_done());
  expect_file_bytes(requests, batch->statuses());
}

INSTANTIATE_TEST_SUITE_P(AllBackends, BackendConformance, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<BackendCase>& info) { return info.param.name; });

}  // namespace
}  // namespace headrace::io
