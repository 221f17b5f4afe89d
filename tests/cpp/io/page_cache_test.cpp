// The page cache's answer per range: a file just written is resident, an evicted range is not, and the
// policy names parse both ways.
#include "headrace/io/page_cache.hpp"

#include <gtest/gtest.h>

#include "headrace/error.hpp"
#include "support/evict.hpp"
#include "support/raw_file.hpp"

namespace headrace::io {
namespace {

TEST(PageCacheResidency, AFileJustWrittenIsCachedAndAnEvictedRangeIsNot) {
  testing::RawFile raw(1 << 20);
  const PageCacheResidency residency(raw.path);
  EXPECT_EQ(residency.file_size(), raw.bytes.size());
  EXPECT_TRUE(residency.fully_resident(0, raw.bytes.size()));
  EXPECT_EQ(residency.resident_bytes(100, 5000), 5000u);  // unaligned ranges count their own bytes
  EXPECT_EQ(residency.resident_bytes(raw.bytes.size() - 10, 100), 10u);  // past the end: absent
  EXPECT_FALSE(residency.fully_resident(0, 0));
  if (!testing::evict(raw.path, 0, raw.bytes.size())) GTEST_SKIP() << "this file system keeps evicted pages (tmpfs)";
  EXPECT_EQ(residency.resident_bytes(0, raw.bytes.size()), 0u);
  EXPECT_FALSE(residency.fully_resident(768 << 10, 4096));
}

TEST(PageCacheResidency, AMissingFileIsASystemErrorNamingIt) {
  EXPECT_THROW(PageCacheResidency("/nonexistent/headrace/file"), SystemError);
}

TEST(CachePolicy, NamesParseBackAndOthersAreUsageErrors) {
  for (const CachePolicy policy : {CachePolicy::auto_, CachePolicy::bypass, CachePolicy::use})
    EXPECT_EQ(parse_cache_policy(to_string(policy)), policy);
  try {
    (void)parse_cache_policy("sometimes");
    FAIL() << "accepted";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("auto|bypass|use|keep"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace headrace::io
