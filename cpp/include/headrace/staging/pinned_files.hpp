// Which files an engine page-locks for DMA from their page-cache pages (pinned_file.hpp), within a
// budget of bytes. Thread-safe; pin() takes a while per GB (it faults in and locks every page) and
// holds no lock meanwhile: its share of the budget is reserved first.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "headrace/detail/enum_names.hpp"
#include "headrace/io/page_cache.hpp"
#include "headrace/staging/pinned_file.hpp"

namespace headrace::staging {

enum class PinPolicy : std::uint8_t {
  off,
  on,     // every file of a GPU engine: adding a cold file reads it whole
  auto_,  // the read path's choice: a file whose pages are all cached and that fits the budget
};
// true/1 and false/0 are aliases of on and off.
inline constexpr detail::EnumNames<PinPolicy, 7> pin_policy_names{{{PinPolicy::auto_, "auto"},
                                                                  {PinPolicy::on, "on"},
                                                                  {PinPolicy::off, "off"},
                                                                  {PinPolicy::on, "true"},
                                                                  {PinPolicy::on, "1"},
                                                                  {PinPolicy::off, "false"},
                                                                  {PinPolicy::off, "0"}}};
[[nodiscard]] constexpr const char* to_string(PinPolicy policy) noexcept { return detail::name_of(pin_policy_names, policy); }
// Throws UsageError naming the choices.
[[nodiscard]] inline PinPolicy parse_pin_policy(const std::string& text) { return detail::parse_name(pin_policy_names, text, "pin_files"); }

struct PinnedFilesOptions {
  PinPolicy policy = PinPolicy::auto_;
  std::uint64_t budget_bytes = 0;  // bytes auto may keep locked; 0: default_pin_budget()
  bool gpu = false;                // page-locked files serve GPU copies only
  std::optional<std::string> forced_backend;  // auto pins only for the read path, not a forced backend
  bool strict = false;             // a refused page-lock throws instead of being reported
  // The processes an MPI launcher started on this node: each holds copies of its own (a page-locked file's
  // pages are the page cache's, shared), so held copies take at most the budget divided among them.
  unsigned local_processes = 1;
};

// The budget auto page-locks (and holds) within when none is given, and why: a quarter of the machine's
// memory, or of the cgroup's memory.max where that is less (locked pages count against the group, and a
// group that cannot reclaim them meets the OOM killer).
struct PinBudget {
  std::uint64_t bytes = 0;
  std::string source;  // "a quarter of the machine's memory" or "a quarter of the cgroup's memory.max"
};
[[nodiscard]] PinBudget default_pin_budget(std::uint64_t machine_bytes, std::optional<std::uint64_t> cgroup_limit);
// default_pin_budget of this machine and this process's cgroup.
[[nodiscard]] PinBudget default_pin_budget();
// The processes an MPI launcher started on this node (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS); 1 without one.
[[nodiscard]] unsigned local_processes();

class PinnedFiles {
 public:
  explicit PinnedFiles(PinnedFilesOptions options);

  struct Outcome {
    std::unique_ptr<PinnedFile> file;  // null: not page-locked
    std::string note;                  // why it is (not) page-locked, for describe()
    std::string fallback;              // the driver refused and the file is read instead (empty: no fallback)
  };
  // Page-locks path when the policy says so (auto asks residency whether the page cache holds it
  // whole; null: a forced backend, which auto leaves alone). The caller's thread needs the GPU's
  // context current. Throws CudaError when the driver refuses and the policy is on or strict.
  Outcome pin(const std::string& path, const io::PageCacheResidency* residency);
  // Gives a page-locked file's bytes back to the budget (the caller drops the file).
  void unpin(const PinnedFile& file);
  // auto's share of the budget for a held copy (held_copy.hpp) of size bytes: false, saying why in
  // note, when the policy is not auto, the budget has no room, or this process's held copies would pass
  // its share of it (budget / local_processes). release gives it back.
  bool reserve_held(std::uint64_t size, std::string& note);
  void release_held(std::uint64_t size);

  [[nodiscard]] PinPolicy policy() const noexcept { return options_.policy; }
  [[nodiscard]] std::uint64_t budget_bytes() const noexcept { return options_.budget_bytes; }
  [[nodiscard]] std::uint64_t locked_bytes() const;
  // "pin-files=auto (budget 32768 MiB: a quarter of the machine's memory, 3052 MiB locked)"
  [[nodiscard]] std::string describe() const;

 private:
  PinnedFilesOptions options_;
  std::string budget_source_ = "given";  // why the budget is what it is
  mutable std::mutex mutex_;
  std::uint64_t locked_bytes_ = 0;  // of files page-locked and held copies, and reserved by pins under way
  std::uint64_t held_bytes_ = 0;    // of held copies
};

}  // namespace headrace::staging
