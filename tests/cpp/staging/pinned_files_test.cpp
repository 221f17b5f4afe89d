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

TEST(PinBudget, IsSharedByTheRanksALauncherStartedOnTheNode) {
  constexpr std::uint64_t gib = std::uint64_t{1} << 30;
  PinBudget four = default_pin_budget(512 * gib, std::nullopt, 4);
  EXPECT_EQ(four.bytes, 32 * gib);
  EXPECT_EQ(four.source, "a quarter of the machine's memory / 4 ranks on this node");
  EXPECT_EQ(default_pin_budget(128 * gib, 2 * gib, 2).bytes, gib / 4);
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
