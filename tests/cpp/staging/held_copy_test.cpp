// A held copy's bookkeeping on the host: which ranges were filled (runs joined as they meet), what lies
// past the file's end, and that nothing is DMA'd before the copy is page-locked (the GPU tests lock it).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/staging/held_copy.hpp"

namespace headrace::staging {
namespace {

std::vector<std::byte> bytes_from(std::size_t size, unsigned first) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((first + i) & 0xff);
  return bytes;
}

TEST(HeldCopy, FilledRunsJoinWhereTheyMeetAndHolesStayUnfilled) {
  HeldCopy copy(1 << 20, "data.hrc");
  EXPECT_EQ(copy.size_bytes(), 1u << 20);
  EXPECT_FALSE(copy.filled(0, 1));
  const auto a = bytes_from(4096, 1), b = bytes_from(8192, 7), c = bytes_from(4096, 9);
  copy.fill(0, a.data(), a.size());
  copy.fill(16384, c.data(), c.size());  // a hole of 12 KiB before it
  EXPECT_TRUE(copy.filled(0, 4096));
  EXPECT_FALSE(copy.filled(0, 4097));
  EXPECT_TRUE(copy.filled(16384, 4096));
  EXPECT_FALSE(copy.filled(12288, 8192));
  EXPECT_EQ(copy.filled_bytes(), 8192u);
  copy.fill(4096, b.data(), b.size());  // meets the first run: one run of 12 KiB
  EXPECT_TRUE(copy.filled(0, 12288));
  EXPECT_FALSE(copy.filled(0, 16384 + 4096));
  copy.fill(12288, a.data(), a.size());  // the hole: one run of 20 KiB
  EXPECT_TRUE(copy.filled(0, 20480));
  EXPECT_EQ(copy.filled_bytes(), 20480u);
  copy.fill(2048, a.data(), a.size());  // overlapping what is there: counted once
  EXPECT_EQ(copy.filled_bytes(), 20480u);
  EXPECT_EQ(std::memcmp(copy.data() + 16384, c.data(), c.size()), 0);
  EXPECT_EQ(std::memcmp(copy.data() + 4096, a.data() + 2048, 2048), 0);  // the last fill wrote over the second
}

TEST(HeldCopy, BytesPastTheEndOfTheFileAreNotKept) {
  HeldCopy copy(10000, "data.hrc");
  const auto bytes = bytes_from(4096, 3);
  copy.fill(8192, bytes.data(), bytes.size());  // the file ends 1808 bytes in
  EXPECT_TRUE(copy.filled(8192, 1808));
  EXPECT_FALSE(copy.filled(8192, 1809));
  copy.fill(12288, bytes.data(), bytes.size());
  EXPECT_EQ(copy.filled_bytes(), 1808u);
}

TEST(HeldCopy, NothingIsHeldForDmaBeforeItIsPageLocked) {
  HeldCopy copy(1 << 16, "data.hrc");
  const auto bytes = bytes_from(1 << 16, 0);
  copy.fill(0, bytes.data(), bytes.size());
  EXPECT_TRUE(copy.filled(0, 1 << 16));
  EXPECT_TRUE(copy.unlocked_fills());
  EXPECT_EQ(copy.locked_bytes(), 0u);
  EXPECT_FALSE(copy.held_until(0, 1 << 16).has_value());
}

TEST(HeldCopy, LockingACopyWithNothingFilledLocksNothing) {
  HeldCopy copy(1 << 20, "data.hrc");
  copy.lock();  // no driver needed: nothing to register
  EXPECT_FALSE(copy.unlocked_fills());
  EXPECT_EQ(copy.locked_bytes(), 0u);
}

// A 16 MiB copy on GPU 0's context, and 4 MiB of bytes to fill it with.
class HeldCopyGpu : public ::testing::Test {
 protected:
  static constexpr std::uint64_t mib = 1 << 20;
  void SetUp() override {
    if (gpu::device_count() == 0) GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver());
    device_.emplace(0);
    device_->make_current();
  }
  std::optional<gpu::Device> device_;
  HeldCopy copy{16 * mib, "data.hrc"};
  const std::vector<std::byte> bytes = bytes_from(4 * mib, 5);
};

TEST_F(HeldCopyGpu, EachLockRegistersWhatWasFilledSinceAndNoSpanCrossesAnother) {
  copy.fill(0, bytes.data(), 4 * mib);
  copy.lock();
  EXPECT_EQ(copy.locked_bytes(), 4 * mib);
  EXPECT_FALSE(copy.unlocked_fills());
  EXPECT_EQ(copy.held_until(mib, mib), 4 * mib);
  copy.fill(8 * mib, bytes.data(), 2 * mib);  // past the span: filled, not held until the next lock
  EXPECT_TRUE(copy.unlocked_fills());
  EXPECT_FALSE(copy.held_until(8 * mib, mib).has_value());
  copy.lock();
  EXPECT_EQ(copy.locked_bytes(), 6 * mib);
  EXPECT_EQ(copy.held_until(8 * mib, 2 * mib), 10 * mib);
  copy.fill(4 * mib, bytes.data(), 4 * mib);  // the hole between the spans
  copy.lock();
  EXPECT_EQ(copy.locked_bytes(), 10 * mib);
  EXPECT_EQ(copy.held_until(4 * mib, 4 * mib), 8 * mib);
  EXPECT_FALSE(copy.held_until(3 * mib, 2 * mib).has_value()) << "a copy across two registrations is refused by the driver";
  EXPECT_FALSE(copy.held_until(9 * mib, 2 * mib).has_value()) << "not filled past 10 MiB";
  EXPECT_EQ(std::memcmp(copy.data() + 4 * mib, bytes.data(), 4 * mib), 0);
}

TEST(HeldCopy, BytesADmaWroteAreRecordedHeldWithoutACopy) {
  constexpr std::uint64_t mib = 1 << 20;
  HeldCopy copy(4 * mib, "data.hrc");
  copy.record_filled(mib, mib);
  EXPECT_TRUE(copy.filled(mib, mib));
  EXPECT_FALSE(copy.filled(0, 2 * mib));
  EXPECT_EQ(copy.filled_bytes(), mib);
  EXPECT_EQ(copy.data()[mib], std::byte{0}) << "recorded, not written";
  EXPECT_FALSE(copy.locked(mib, mib)) << "nothing is locked without the driver";
}

TEST_F(HeldCopyGpu, ARangeIsLockedClippedToTheGapItStartsIn) {
  copy.fill(0, bytes.data(), 4 * mib);
  copy.lock();  // [0, 4 MiB)
  copy.lock_range(2 * mib, 4 * mib);  // starts in a span: [4, 6 MiB)
  EXPECT_EQ(copy.locked_bytes(), 6 * mib);
  EXPECT_TRUE(copy.locked(4 * mib, 2 * mib));
  EXPECT_FALSE(copy.locked(3 * mib, 2 * mib)) << "across two registrations";
  EXPECT_FALSE(copy.held_until(4 * mib, mib).has_value()) << "locked, not filled";
  copy.lock_range(8 * mib, 4 * mib);
  copy.lock_range(6 * mib + 100, 4 * mib);  // whole pages, up to the span at 8 MiB
  EXPECT_EQ(copy.locked_bytes(), 12 * mib);
  EXPECT_TRUE(copy.locked(6 * mib, 2 * mib));
  copy.lock_range(4 * mib, mib);  // all locked: nothing registered again
  EXPECT_EQ(copy.locked_bytes(), 12 * mib);
  // What a DMA wrote, once recorded, is held for later passes.
  std::memcpy(copy.fill_target(8 * mib), bytes.data(), 2 * mib);
  copy.record_filled(8 * mib, 2 * mib);
  EXPECT_EQ(copy.held_until(8 * mib, 2 * mib), 12 * mib);
  copy.lock();  // the fills are all locked: nothing more
  EXPECT_EQ(copy.locked_bytes(), 12 * mib);
}

TEST(HeldCopy, AnEmptyFileIsNotHeld) {
  EXPECT_THROW(HeldCopy(0, "empty.hrc"), UsageError);
}

}  // namespace
}  // namespace headrace::staging
