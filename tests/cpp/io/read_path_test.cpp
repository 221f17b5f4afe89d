// A file's read path picks a route per read: cached pages buffered, the rest O_DIRECT, or as the policy
// or a forced backend says; the backend of each route reads the right bytes.
#include "headrace/io/read_path.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include "headrace/error.hpp"
#include "support/evict.hpp"
#include "support/raw_file.hpp"

namespace headrace::io {
namespace {

ReadPathOptions options(CachePolicy policy, std::optional<BackendKind> forced = std::nullopt) {
  ReadPathOptions o;
  o.forced = forced;
  o.cache_policy = policy;
  o.settings.threads = 2;
  o.settings.queue_depth = 4;
  o.settings.submit_batch = 2;
  return o;
}

TEST(FileReadPath, RoutesFollowThePageCacheAndThePolicy) {
  testing::RawFile raw(256 << 10);
  const FileReadPath path(raw.path, options(CachePolicy::auto_));
  if (!path.fallback().empty()) GTEST_SKIP() << path.fallback();
  EXPECT_EQ(path.route(0, 4096), ReadRoute::cached);  // just written: cached
  EXPECT_EQ(FileReadPath(raw.path, options(CachePolicy::bypass)).route(0, 4096), ReadRoute::direct);
  EXPECT_EQ(FileReadPath(raw.path, options(CachePolicy::use)).route(0, 4096), ReadRoute::cached);
  EXPECT_EQ(FileReadPath(raw.path, options(CachePolicy::auto_, BackendKind::posix)).route(0, 4096), ReadRoute::forced_buffered);
  EXPECT_EQ(FileReadPath(raw.path, options(CachePolicy::auto_, BackendKind::direct)).route(0, 4096), ReadRoute::forced_direct);
  if (!testing::evict(raw.path, 0, raw.bytes.size())) GTEST_SKIP() << "this file system keeps evicted pages";
  EXPECT_EQ(path.route(0, 4096), ReadRoute::direct);
  std::vector<std::byte> out(8192);
  const auto statuses = path.backend(ReadRoute::direct).read({{4096, 8192, out.data()}});
  ASSERT_TRUE(statuses[0].ok()) << statuses[0].message;
  EXPECT_TRUE(std::equal(out.begin(), out.end(), raw.bytes.begin() + 4096));
  EXPECT_EQ(path.residency()->resident_bytes(4096, 8192), 0u);  // O_DIRECT left the cache alone
}

TEST(FileReadPath, KeepReadsAFileThatFitsBufferedSoItsNextPassFindsItCached) {
  testing::RawFile raw(256 << 10);
  ReadPathOptions fits = options(CachePolicy::keep);
  fits.page_cache_bytes = std::uint64_t{1} << 30;
  const FileReadPath kept(raw.path, fits);
  if (!kept.fallback().empty()) GTEST_SKIP() << kept.fallback();
  EXPECT_TRUE(kept.keeps());
  EXPECT_EQ(kept.cache_choice(), "kept: its 0.00 GB fit half of the 1.07 GB the page cache may take; uncached reads by "
                                 "io_uring, buffered, the kernel 512 MiB ahead");
  ReadPathOptions tight = options(CachePolicy::keep);
  tight.page_cache_bytes = 256 << 10;  // half of it is less than the file
  const FileReadPath passed(raw.path, tight);
  EXPECT_FALSE(passed.keeps());
  EXPECT_EQ(passed.cache_choice().rfind("uncached reads O_DIRECT: ", 0), 0u) << passed.cache_choice();
  EXPECT_EQ(FileReadPath(raw.path, options(CachePolicy::auto_)).cache_choice(), "");
  if (!testing::evict(raw.path, 0, raw.bytes.size())) GTEST_SKIP() << "this file system keeps evicted pages";
  EXPECT_EQ(passed.route(4096, 8192), ReadRoute::direct);
  ASSERT_EQ(kept.route(4096, 8192), ReadRoute::kept);
  kept.will_read(ReadRoute::kept, 4096, 8192);
  std::vector<std::byte> out(8192);
  const auto statuses = kept.backend(ReadRoute::kept).read({{4096, 8192, out.data()}});
  ASSERT_TRUE(statuses[0].ok()) << statuses[0].message;
  EXPECT_TRUE(std::equal(out.begin(), out.end(), raw.bytes.begin() + 4096));
  EXPECT_EQ(kept.residency()->resident_bytes(4096, 8192), 8192u);  // the next pass finds them cached
  EXPECT_EQ(kept.route(4096, 8192), ReadRoute::cached);
  // The kernel read the rest ahead: the file's tail, which no read touched, comes into the cache.
  EXPECT_TRUE(testing::becomes_resident(*kept.residency(), 192 << 10, 64 << 10));
}

TEST(ReadAhead, AsksTheKernelForTheBytesAheadOfWhatIsWanted) {
  testing::RawFile raw(1 << 20);
  if (!testing::evict(raw.path, 0, raw.bytes.size())) GTEST_SKIP() << "this file system keeps evicted pages";
  const PageCacheResidency residency(raw.path);
  {
    ReadAhead ahead(raw.path, raw.bytes.size(), 256 << 10);
    ahead.want(4096);  // up to 4 KiB + 256 KiB
    EXPECT_TRUE(testing::becomes_resident(residency, 0, (256 << 10) + 4096));
    EXPECT_TRUE(testing::eventually([&] { return ahead.advised_bytes() == (256u << 10) + 4096u; }));
    ahead.want(1 << 30);  // never past the file's end
    EXPECT_TRUE(testing::becomes_resident(residency, 0, 1 << 20));
    EXPECT_TRUE(testing::eventually([&] { return ahead.advised_bytes() == 1u << 20; }));
  }
}

TEST(PageCache, MemoryForThePageCacheIsSomeOfTheMachinesMemory) {
  const std::uint64_t memory = memory_for_page_cache();
  EXPECT_GT(memory, 0u);
  EXPECT_LE(memory, static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(parse_cache_policy("keep"), CachePolicy::keep);
  EXPECT_STREQ(to_string(CachePolicy::keep), "keep");
}

TEST(FileReadPath, ACachePolicyWithAForcedBackendIsAUsageError) {
  testing::RawFile raw(4096);
  try {
    FileReadPath path(raw.path, options(CachePolicy::use, BackendKind::uring));
    FAIL() << "accepted";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("cache_policy=use needs the read path"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace headrace::io
