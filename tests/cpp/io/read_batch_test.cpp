// ReadBatch bookkeeping, backend kind names, and how open_backend refuses what cannot work.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "headrace/error.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/io/uring_backend.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_directory.hpp"

namespace headrace::io {
namespace {

TEST(IoReadBatch, EmptyBatchIsDoneAtOnce) {
  ReadBatch batch(0);
  EXPECT_TRUE(batch.is_done());
  EXPECT_TRUE(batch.statuses().empty());
  EXPECT_NO_THROW(batch.check());
}

TEST(IoReadBatch, CompletesInAnyOrderAndKeepsRequestOrder) {
  ReadBatch batch(3);
  batch.complete(2, ReadStatus{30, 0, ""});
  batch.complete(0, ReadStatus{10, 0, ""});
  EXPECT_FALSE(batch.is_done());
  batch.complete(1, ReadStatus{20, 0, ""});
  ASSERT_TRUE(batch.is_done());
  const auto& statuses = batch.statuses();
  EXPECT_EQ(statuses[0].bytes_read, 10u);
  EXPECT_EQ(statuses[1].bytes_read, 20u);
  EXPECT_EQ(statuses[2].bytes_read, 30u);
}

TEST(IoReadBatch, PartsAddBytesAndKeepTheFirstError) {
  ReadBatch batch(1);
  batch.set_parts(0, 3);
  batch.complete_part(0, 10, 0, "");
  batch.complete_part(0, 0, EIO, "first failure");
  EXPECT_FALSE(batch.is_done());
  batch.complete_part(0, 5, EBADF, "second failure");
  ASSERT_TRUE(batch.is_done());
  const ReadStatus& status = batch.statuses()[0];
  EXPECT_EQ(status.bytes_read, 15u);
  EXPECT_EQ(status.error_number, EIO);
  EXPECT_EQ(status.message, "first failure");
  EXPECT_FALSE(status.ok());
}

TEST(IoReadBatch, CheckThrowsSystemErrorWithErrno) {
  ReadBatch batch(2);
  batch.complete(0, ReadStatus{4, 0, ""});
  batch.complete(1, ReadStatus{0, EIO, "pread(/x, offset 4) failed: Input/output error"});
  try {
    batch.check();
    FAIL() << "check() passed a failed batch";
  } catch (const SystemError& error) {
    EXPECT_EQ(error.error_number(), EIO);
    EXPECT_STREQ(error.what(), "pread(/x, offset 4) failed: Input/output error");
  }
}

TEST(IoReadBatch, CheckThrowsTruncatedFileForEndOfFile) {
  ReadBatch batch(1);
  batch.complete(0, ReadStatus{0, ReadStatus::end_of_file_error_number, "/x: offset 9: expected 4 bytes"});
  EXPECT_THROW(batch.check(), TruncatedFileError);
}

TEST(IoReadBatch, WaitReturnsWhenAnotherThreadCompletes) {
  ReadBatch batch(1);
  std::thread completer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    batch.complete(0, ReadStatus{7, 0, ""});
  });
  batch.wait();
  EXPECT_EQ(batch.statuses()[0].bytes_read, 7u);
  completer.join();
}

TEST(IoReadBatch, CompletingTwiceIsAUsageError) {
  ReadBatch batch(2);
  batch.complete(0, ReadStatus{});
  EXPECT_THROW(batch.complete(0, ReadStatus{}), UsageError);
  EXPECT_THROW(batch.complete(5, ReadStatus{}), UsageError);
}

TEST(IoBackendKind, NamesRoundTrip) {
  const auto kinds = all_backend_kinds();
  ASSERT_EQ(kinds.size(), 5u);
  for (BackendKind kind : kinds) EXPECT_EQ(parse_backend_kind(to_string(kind)), kind);
  EXPECT_STREQ(to_string(BackendKind::uring), "uring");
}

TEST(IoBackendKind, UnknownNameIsAUsageErrorListingTheChoices) {
  try {
    (void)parse_backend_kind("aio");
    FAIL() << "parsed 'aio'";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("'aio'"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("posix|direct|mmap|uring|ram"), std::string::npos);
  }
}

TEST(IoOpenBackend, InvalidSettingsAreAUsageErrorNamingTheSetting) {
  testing::TempDirectory scratch;
  const std::string path = scratch.write("small.bin", testing::pseudo_random_bytes(100, 1));
  BackendOptions options;
  options.settings.threads = 0;
  try {
    (void)open_backend(BackendKind::posix, path, options);
    FAIL() << "opened with threads=0";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("threads"), std::string::npos) << error.what();
  }
}

TEST(IoOpenBackend, DirectoryIsNotAFile) {
  testing::TempDirectory scratch;
  try {
    (void)open_backend(BackendKind::posix, scratch.path().string());
    FAIL() << "opened a directory";
  } catch (const FileNotFoundError& error) {
    EXPECT_EQ(error.error_number(), EISDIR);
  }
}

TEST(IoOpenBackend, PlainBackendsAreAlwaysAvailable) {
  testing::TempDirectory scratch;
  const std::string path = scratch.write("small.bin", testing::pseudo_random_bytes(100, 1));
  for (BackendKind kind : {BackendKind::posix, BackendKind::mmap, BackendKind::ram}) {
    EXPECT_EQ(unavailable_reason(kind, path), std::nullopt) << to_string(kind);
  }
}

// procfs refuses O_DIRECT like tmpfs did before Linux 6.6: the caller learns why and can fall back.
TEST(IoOpenBackend, DirectWithoutODirectSupportIsUnavailableWithTheReason) {
  const std::string path = "/proc/self/status";
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd >= 0) ::close(fd);
  if (fd >= 0 || errno != EINVAL) GTEST_SKIP() << path << " accepts O_DIRECT here; no file system to refuse it";
  const auto reason = unavailable_reason(BackendKind::direct, path);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("O_DIRECT"), std::string::npos) << *reason;
  EXPECT_NE(reason->find(path), std::string::npos) << *reason;
  try {
    (void)open_backend(BackendKind::direct, path);
    FAIL() << "opened " << path << " with O_DIRECT";
  } catch (const UnavailableError& error) {
    EXPECT_EQ(std::string(error.what()), *reason);
  }
}

TEST(IoOpenBackend, UringWithoutODirectSupportIsUnavailableOnlyWithODirect) {
  const std::string path = "/proc/self/status";
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd >= 0) ::close(fd);
  if (fd >= 0 || errno != EINVAL) GTEST_SKIP() << path << " accepts O_DIRECT here; no file system to refuse it";
  Settings settings = headrace::settings();
  const auto ring_reason = uring_unavailable_reason(settings);  // no liburing, or io_uring refused
  settings.uring_o_direct = true;
  {
    ScopedSettings scoped(settings);
    const auto reason = unavailable_reason(BackendKind::uring, path);
    ASSERT_TRUE(reason.has_value());
    if (!ring_reason) EXPECT_NE(reason->find("O_DIRECT"), std::string::npos) << *reason;
  }
  settings.uring_o_direct = false;
  ScopedSettings scoped(settings);
  EXPECT_EQ(unavailable_reason(BackendKind::uring, path), ring_reason);
}

}  // namespace
}  // namespace headrace::io
