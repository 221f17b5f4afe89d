// The budget auto page-locks within: a quarter of the machine's memory, or of a cgroup's memory.max that
// is less, so that locked pages never push a limited group into the OOM killer; said in describe().
#include "headrace/staging/pinned_files.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace headrace::staging {
namespace {

TEST(PinBudget, IsAQuarterOfTheMachineOrOfALowerCgroupLimit) {
  constexpr std::uint64_t gib = std::uint64_t{1} << 30;
  PinBudget machine = default_pin_budget(128 * gib, std::nullopt);
  EXPECT_EQ(machine.bytes, 32 * gib);
  EXPECT_EQ(machine.source, "a quarter of the machine's memory");
  PinBudget group = default_pin_budget(128 * gib, 2 * gib);
  EXPECT_EQ(group.bytes, gib / 2);
  EXPECT_EQ(group.source, "a quarter of the cgroup's memory.max");
  EXPECT_EQ(default_pin_budget(128 * gib, 512 * gib).bytes, 32 * gib);  // a limit above the machine's memory
  EXPECT_GT(default_pin_budget().bytes, 0u);
}

TEST(PinBudget, HeldCopiesTakeTheirProcesssShareOfItWhenALauncherStartedSeveral) {
  // Four ranks each holding a quarter of the machine would lock all of it; page-locked files are the page
  // cache's pages, shared, and keep the whole budget.
  PinnedFiles four(PinnedFilesOptions{.budget_bytes = 400, .gpu = true, .local_processes = 4});
  std::string note;
  EXPECT_TRUE(four.reserve_held(60, note));
  EXPECT_FALSE(four.reserve_held(60, note));
  EXPECT_EQ(note, "not held (this process's share of the pin budget, 0 MiB with 4 ranks on this node, 0 MiB held)");
  EXPECT_EQ(four.locked_bytes(), 60u);
  four.release_held(60);
  EXPECT_TRUE(four.reserve_held(100, note));
  PinnedFiles off(PinnedFilesOptions{.policy = PinPolicy::off, .budget_bytes = 400, .gpu = true});
  EXPECT_FALSE(off.reserve_held(1, note));
  EXPECT_EQ(note, "not held (pin_files off)");
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3", 1);
  EXPECT_EQ(local_processes(), 3u);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "many", 1);
  EXPECT_EQ(local_processes(), 1u);
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
}

TEST(PinBudget, DescribeSaysTheBudgetAndWhy) {
  const PinnedFiles given(PinnedFilesOptions{.budget_bytes = std::uint64_t{64} << 20});
  EXPECT_EQ(given.describe(), "pin-files=auto (budget 64 MiB: given, 0 MiB locked)");
  const PinnedFiles defaulted(PinnedFilesOptions{});
  EXPECT_EQ(defaulted.budget_bytes(), default_pin_budget().bytes);
  EXPECT_NE(defaulted.describe().find(default_pin_budget().source), std::string::npos) << defaulted.describe();
}

}  // namespace
}  // namespace headrace::staging
