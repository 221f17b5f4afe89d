// The probe's test file: written once through .partial + rename, reused when its size matches,
// never written over a user's file, and made of bytes that do not compress.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/probe/test_file.hpp"
#include "support/temp_directory.hpp"

namespace headrace::probe {
namespace {

constexpr std::uint64_t MiB = 1024 * 1024;

std::vector<char> contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct timespec modified(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mtim;
}

TEST(ProbeTestFile, DirectoryGetsAFileOfTheRequestedSizeAndNoPartialIsLeft) {
  testing::TempDirectory directory;
  const auto file = prepare_test_file(directory.path().string(), 3 * MiB + 100, 7);
  EXPECT_TRUE(file.created);
  EXPECT_EQ(file.path, directory.file(kTestFileName));
  EXPECT_EQ(file.size_bytes, 3 * MiB + 100);
  EXPECT_EQ(std::filesystem::file_size(file.path), 3 * MiB + 100);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(directory.path())) ++entries;
  EXPECT_EQ(entries, 1u) << "a .partial file was left behind";
}

TEST(ProbeTestFile, IsReusedWhenItsSizeMatchesAndRewrittenWhenNot) {
  testing::TempDirectory directory;
  const auto first = prepare_test_file(directory.path().string(), 2 * MiB, 1);
  const auto bytes = contents(first.path);
  const auto first_modified = modified(first.path);

  const auto again = prepare_test_file(directory.path().string(), 2 * MiB, 99);  // another seed: still reused
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.path, first.path);
  EXPECT_EQ(contents(again.path), bytes);
  EXPECT_EQ(modified(again.path).tv_sec, first_modified.tv_sec);
  EXPECT_EQ(modified(again.path).tv_nsec, first_modified.tv_nsec);

  const auto bigger = prepare_test_file(directory.path().string(), 3 * MiB, 1);
  EXPECT_TRUE(bigger.created);
  EXPECT_EQ(std::filesystem::file_size(bigger.path), 3 * MiB);
}

TEST(ProbeTestFile, SameSeedSameBytesOtherSeedOtherBytes) {
  testing::TempDirectory directory;
  const auto a = prepare_test_file(directory.file("a.bin"), MiB, 5);
  const auto b = prepare_test_file(directory.file("b.bin"), MiB, 5);
  const auto c = prepare_test_file(directory.file("c.bin"), MiB, 6);
  EXPECT_TRUE(a.created);
  EXPECT_EQ(contents(a.path), contents(b.path));
  EXPECT_NE(contents(a.path), contents(c.path));
}

TEST(ProbeTestFile, BytesDoNotCompress) {
  testing::TempDirectory directory;
  const auto file = prepare_test_file(directory.file("data.bin"), MiB, 3);
  const auto bytes = contents(file.path);
  std::vector<char> compressed(ZSTD_compressBound(bytes.size()));
  const std::size_t size = ZSTD_compress(compressed.data(), compressed.size(), bytes.data(), bytes.size(), 19);
  ASSERT_FALSE(ZSTD_isError(size));
  EXPECT_GE(size, bytes.size());
}

TEST(ProbeTestFile, AnExistingFileIsReadAsItIsWhateverItsSize) {
  testing::TempDirectory directory;
  const auto path = directory.file("user-data.bin");
  std::ofstream(path, std::ios::binary) << std::string(12345, 'x');
  const auto file = prepare_test_file(path, 4 * MiB, 1);
  EXPECT_FALSE(file.created);
  EXPECT_EQ(file.path, path);
  EXPECT_EQ(file.size_bytes, 12345u);
  EXPECT_EQ(std::filesystem::file_size(path), 12345u);
}

TEST(ProbeTestFile, MissingParentDirectoryIsFileNotFound) {
  testing::TempDirectory directory;
  const auto path = directory.file("no-such-directory/probe.bin");
  try {
    (void)prepare_test_file(path, MiB, 1);
    ADD_FAILURE() << "no error";
  } catch (const FileNotFoundError& error) {
    EXPECT_NE(std::string(error.what()).find(path + ".partial"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace headrace::probe
