// cuFile reads into GPU memory compared with pread of the same ranges; without cuFile or a GPU, the
// reason and the UnavailableError are checked exactly.
#include "headrace/io/cufile_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_directory.hpp"

namespace headrace::io {
namespace {

using namespace headrace::gpu;  // devices, buffers and copies of the tests

// GPU 0's primary context, retained for the whole test program and current on the calling thread, or
// nullptr without a GPU: the cuFile session outlives each test and caches its buffers in this context.
Device* process_device() {
  if (device_count() == 0) return nullptr;
  static Device device(0);
  device.make_current();
  return &device;
}

// The reason cufile_unavailable_reason() must give, from what it depends on; empty when usable.
std::optional<std::string> expected_reason_before_open() {
  if (shim::cufile() == nullptr) return shim::why_no_cufile();
  if (gpu::driver() == nullptr) return why_no_driver();
  if (device_count() == 0) return std::string("no GPU");
  return std::nullopt;  // decided by cuFileDriverOpen
}

TEST(CufileUnavailable, SaysWhyAndThrowsUnavailable) {
  (void)process_device();
  const std::string reason = cufile_unavailable_reason();
  if (reason.empty()) GTEST_SKIP() << "cuFile is usable here (the GPU tests cover it)";
  if (const auto expected = expected_reason_before_open()) {
    EXPECT_EQ(reason, *expected);
  } else {
    EXPECT_EQ(reason.rfind("cuFileDriverOpen failed: ", 0), 0u) << reason;
  }
  if (shim::cufile() == nullptr) EXPECT_NE(reason.find("libcufile"), std::string::npos) << reason;
  try {
    CufileReader reader("/no/such/file");
    FAIL() << "no error without cuFile";
  } catch (const UnavailableError& error) {
    EXPECT_NE(std::string(error.what()).find("cuFile unavailable: " + reason), std::string::npos) << error.what();
  }
  EXPECT_THROW((void)register_buffer(0x1000, 4096), UnavailableError);
  EXPECT_THROW((void)CufileDriver::shared(), UnavailableError);
}

TEST(CufileErrors, TextNamesTheCufileError) {
  EXPECT_EQ(shim::cufile_error_text({5008, 0}), "CU_FILE_IO_NOT_SUPPORTED (5008): GPUDirect Storage not supported on current file");
  EXPECT_EQ(shim::cufile_read_error_text(-5044, 0), "CU_FILE_IO_ERROR (5044): cufile io error");
  EXPECT_EQ(shim::cufile_read_error_text(-1, EIO).rfind("Input/output error (errno 5)", 0), 0u);
  EXPECT_EQ(shim::cufile_error_text({4999, 0}), "unknown cuFile error (4999)");
}

TEST(CufileReaderOpen, MissingFileIsFileNotFound) {
  Device* device = process_device();
  if (device == nullptr) GTEST_SKIP() << "no GPU: " << (gpu::driver() == nullptr ? why_no_driver() : "0 devices");
  if (const std::string reason = cufile_unavailable_reason(); !reason.empty()) GTEST_SKIP() << "no cuFile: " << reason;
  testing::TempDirectory directory;
  EXPECT_THROW(CufileReader(directory.file("missing.bin"), device->context()), FileNotFoundError);
}

// A test file that cuFile accepts: in the test directory, else in /dev/shm; skips, with cuFile's
// reasons, where it accepts neither (a container without /run/udev).
class CufileReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = process_device();
    if (device_ == nullptr) GTEST_SKIP() << "no GPU: " << (gpu::driver() == nullptr ? why_no_driver() : "0 devices");
    if (const std::string reason = cufile_unavailable_reason(); !reason.empty()) GTEST_SKIP() << "no cuFile: " << reason;
    bytes_ = testing::pseudo_random_bytes(file_size, 42);
    std::string refusals;
    for (const std::string& candidate : {directory_.file("data.bin"), shared_memory_file()}) {
      if (candidate.empty()) continue;
      std::ofstream(candidate, std::ios::binary).write(reinterpret_cast<const char*>(bytes_.data()),
                                                      static_cast<std::streamsize>(bytes_.size()));
      try {
        CufileReader probe(candidate, device_->context());
        path_ = candidate;
        return;
      } catch (const UnavailableError& error) {
        refusals += std::string(error.what()) + "; ";
      }
    }
    GTEST_SKIP() << "cuFile accepts no test file here: " << refusals;
  }

  void TearDown() override {
    if (!shm_path_.empty()) ::unlink(shm_path_.c_str());
  }

  // A fresh file name in /dev/shm (tmpfs), or empty without it.
  std::string shared_memory_file() {
    std::string pattern = "/dev/shm/headrace-cufile-XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) return {};
    ::close(fd);
    shm_path_ = pattern;
    return shm_path_;
  }

  // What pread returns for the range (the reference).
  std::vector<std::byte> pread_range(std::uint64_t offset, std::size_t size) const {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    std::vector<std::byte> out(size);
    const ssize_t got = ::pread(fd, out.data(), size, static_cast<off_t>(offset));
    ::close(fd);
    out.resize(got < 0 ? 0 : static_cast<std::size_t>(got));
    return out;
  }

  static std::vector<std::byte> download(gpu::CUdeviceptr source, std::size_t size) {
    std::vector<std::byte> bytes(size);
    if (size > 0) copy_to_host(bytes.data(), source, size);
    return bytes;
  }

  static constexpr std::size_t file_size = (std::size_t{8} << 20) + 123;  // not a multiple of 4096
  testing::TempDirectory directory_;
  Device* device_ = nullptr;
  std::vector<std::byte> bytes_;
  std::string path_;
  std::string shm_path_;
};

TEST_F(CufileReaderTest, ReportsModeAndOpening) {
  CufileReader reader(path_, device_->context());
  EXPECT_EQ(reader.file_size(), file_size);
  EXPECT_EQ(reader.path(), path_);
  EXPECT_NE(reader.mode(), shim::CufileMode::unavailable);
  EXPECT_FALSE(reader.mode_reason().empty());
  EXPECT_EQ(reader.open_note() == "O_DIRECT", reader.o_direct()) << reader.open_note();
  const auto driver_session = CufileDriver::shared();
  if (driver_session->mode() == shim::CufileMode::compatibility) EXPECT_EQ(reader.mode(), shim::CufileMode::compatibility);
  std::cout << "cuFile " << driver_session->version() << ", mode " << shim::to_string(reader.mode()) << ": "
            << reader.mode_reason() << "; opened " << reader.open_note() << "\n";
}

TEST_F(CufileReaderTest, RandomRangesFromManyThreadsMatchPread) {
  CufileReader reader(path_, device_->context());
  constexpr std::size_t reads_per_thread = 12, threads = 8, max_read = std::size_t{1} << 20;
  struct Range {
    std::uint64_t offset;
    std::size_t size;
    std::size_t slot;  // where in the device buffer
  };
  std::vector<Range> ranges;
  std::mt19937_64 random(7);
  for (std::size_t i = 0; i < reads_per_thread * threads; ++i) {
    Range range{random() % file_size, 1 + random() % max_read, i * max_read};
    if (i % 3 == 0) range.offset &= ~std::uint64_t{4095};        // some aligned starts
    if (i % 4 == 0) range.size = (range.size + 4095) & ~std::size_t{4095};  // some aligned sizes
    ranges.push_back(range);
  }
  DeviceBuffer destination(ranges.size() * max_read);
  std::vector<std::size_t> got(ranges.size(), 0);
  std::vector<std::string> errors(threads);
  std::vector<std::thread> workers;
  for (std::size_t t = 0; t < threads; ++t) {
    // Worker threads have no current context: the reader makes its own current.
    workers.emplace_back([&, t] {
      try {
        for (std::size_t i = t; i < ranges.size(); i += threads)
          got[i] = reader.read(destination.pointer() + ranges[i].slot, ranges[i].size, ranges[i].offset);
      } catch (const std::exception& error) {
        errors[t] = error.what();
      }
    });
  }
  for (auto& worker : workers) worker.join();
  for (const auto& error : errors) ASSERT_TRUE(error.empty()) << error;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto expected = pread_range(ranges[i].offset, ranges[i].size);
    ASSERT_EQ(got[i], expected.size()) << "read " << i << " at " << ranges[i].offset << " of " << ranges[i].size;
    EXPECT_TRUE(download(destination.pointer() + ranges[i].slot, got[i]) == expected)
        << "read " << i << " at " << ranges[i].offset << " of " << ranges[i].size;
  }
}

TEST_F(CufileReaderTest, ReadPastTheEndReturnsWhatIsThere) {
  CufileReader reader(path_, device_->context());
  DeviceBuffer destination(1 << 16);
  EXPECT_EQ(reader.read(destination.pointer(), 1 << 16, file_size - 100), 100u);
  EXPECT_TRUE(download(destination.pointer(), 100) == pread_range(file_size - 100, 100));
  EXPECT_EQ(reader.read(destination.pointer(), 4096, file_size + 4096), 0u);
}

TEST_F(CufileReaderTest, RegisteredBufferReadsAtAnOffset) {
  CufileReader reader(path_, device_->context());
  DeviceBuffer destination(std::size_t{4} << 20);
  CufileBufferRegistration registration = register_buffer(destination.pointer(), destination.size_bytes());
  ASSERT_TRUE(registration.registered());
  EXPECT_EQ(reader.read(registration, 8192, std::size_t{1} << 20, 4096 * 3), std::size_t{1} << 20);
  EXPECT_TRUE(download(destination.pointer() + 8192, std::size_t{1} << 20) == pread_range(4096 * 3, std::size_t{1} << 20));
  EXPECT_THROW((void)reader.read(registration, destination.size_bytes() - 10, 11, 0), UsageError);
  registration.unregister_buffer();
  EXPECT_FALSE(registration.registered());
  registration.unregister_buffer();  // idempotent
}

TEST_F(CufileReaderTest, ClosedReaderIsAUsageError) {
  CufileReader reader(path_, device_->context());
  reader.close();
  reader.close();
  DeviceBuffer destination(4096);
  EXPECT_THROW((void)reader.read(destination.pointer(), 4096, 0), UsageError);
}

}  // namespace
}  // namespace headrace::io
