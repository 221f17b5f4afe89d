#include "headrace/staging/pinned_files.hpp"

#include <unistd.h>

#include <algorithm>

#include "headrace/detail/environment.hpp"
#include "headrace/error.hpp"

namespace headrace::staging {

PinBudget default_pin_budget(std::uint64_t machine_bytes, std::optional<std::uint64_t> cgroup_limit) {
  if (cgroup_limit && *cgroup_limit < machine_bytes) return {*cgroup_limit / 4, "a quarter of the cgroup's memory.max"};
  return {machine_bytes / 4, "a quarter of the machine's memory"};
}

PinBudget default_pin_budget() {
  const auto pages = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES));
  return default_pin_budget(pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)), io::cgroup_memory_limit());
}

unsigned local_processes() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const auto value = detail::environment(name);
    if (!value) continue;
    try {
      const std::uint64_t count = detail::parse_unsigned(name, *value);
      if (count >= 1 && count <= 4096) return static_cast<unsigned>(count);
    } catch (const UsageError&) {  // a launcher's variable, not ours: one process then
    }
  }
  return 1;
}

PinnedFiles::PinnedFiles(PinnedFilesOptions options) : options_(std::move(options)) {
  if (options_.budget_bytes == 0) {
    PinBudget budget = default_pin_budget();
    options_.budget_bytes = budget.bytes;
    budget_source_ = std::move(budget.source);
  }
}

PinnedFiles::Outcome PinnedFiles::pin(const std::string& path, const io::PageCacheResidency* residency) {
  Outcome outcome;
  if (!options_.gpu || options_.policy == PinPolicy::off) {
    outcome.note = std::string("not page-locked (") + (options_.gpu ? "pin_files off)" : "no GPU)");
    return outcome;
  }
  const bool automatic = options_.policy == PinPolicy::auto_;
  if (automatic && (options_.forced_backend || residency == nullptr)) {
    outcome.note = "not page-locked (backend " + options_.forced_backend.value_or("?") + " forced)";
    return outcome;
  }
  // auto: only a file the page cache holds whole (page-locking faults in what is missing, so a cold
  // file would be read page by page), only within the budget, reserved before the long part.
  std::uint64_t reserved = 0;
  if (automatic) {
    const std::uint64_t size = residency->file_size();
    if (!residency->fully_resident(0, size)) {
      outcome.note = "not page-locked (not cached whole when added)";
      return outcome;
    }
    std::lock_guard lock(mutex_);
    if (locked_bytes_ + size > options_.budget_bytes) {
      outcome.note = "not page-locked (pin budget " + std::to_string(options_.budget_bytes >> 20) + " MiB, " +
                     std::to_string(locked_bytes_ >> 20) + " MiB in use)";
      return outcome;
    }
    locked_bytes_ += size;
    reserved = size;
  }
  std::string refusal;
  try {
    outcome.file = std::make_unique<PinnedFile>(path);
  } catch (const Error& error) {
    if (!automatic || options_.strict) {
      std::lock_guard lock(mutex_);
      locked_bytes_ -= reserved;
      throw;
    }
    refusal = error.what();
  }
  std::lock_guard lock(mutex_);
  if (!outcome.file) {
    locked_bytes_ -= reserved;
    outcome.note = "not page-locked (the driver refused: " + refusal + ")";
    outcome.fallback = path + ": read instead of DMA from its pages: page-locking failed";
    return outcome;
  }
  if (!automatic) locked_bytes_ += outcome.file->size_bytes();
  outcome.note = automatic ? "page-locked (cached whole, auto)" : "page-locked (pin_files on)";
  return outcome;
}

void PinnedFiles::unpin(const PinnedFile& file) {
  std::lock_guard lock(mutex_);
  locked_bytes_ -= file.size_bytes();
}

bool PinnedFiles::reserve_held(std::uint64_t size, std::string& note) {
  if (!options_.gpu || options_.policy != PinPolicy::auto_ || options_.forced_backend) {
    note = "not held (pin_files " + std::string(to_string(options_.policy)) + (options_.forced_backend ? ", a backend forced)" : ")");
    return false;
  }
  std::lock_guard lock(mutex_);
  if (locked_bytes_ + size > options_.budget_bytes) {
    note = "not held (pin budget " + std::to_string(options_.budget_bytes >> 20) + " MiB, " + std::to_string(locked_bytes_ >> 20) +
           " MiB in use)";
    return false;
  }
  const unsigned processes = std::max(options_.local_processes, 1u);
  if (held_bytes_ + size > options_.budget_bytes / processes) {
    note = "not held (this process's share of the pin budget, " + std::to_string((options_.budget_bytes / processes) >> 20) +
           " MiB with " + std::to_string(processes) + " ranks on this node, " + std::to_string(held_bytes_ >> 20) + " MiB held)";
    return false;
  }
  locked_bytes_ += size;
  held_bytes_ += size;
  return true;
}

void PinnedFiles::release_held(std::uint64_t size) {
  std::lock_guard lock(mutex_);
  locked_bytes_ -= size;
  held_bytes_ -= size;
}

std::uint64_t PinnedFiles::locked_bytes() const {
  std::lock_guard lock(mutex_);
  return locked_bytes_;
}

std::string PinnedFiles::describe() const {
  return std::string("pin-files=") + to_string(options_.policy) + " (budget " + std::to_string(options_.budget_bytes >> 20) +
         " MiB: " + budget_source_ + ", " + std::to_string(locked_bytes() >> 20) + " MiB locked)";
}

}  // namespace headrace::staging
