#include "headrace/workloads/streamlines/mapped_units.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "headrace/error.hpp"

namespace headrace::workloads::streamlines {

MappedUnits::MappedUnits(const std::string& path, std::uint64_t unit_bytes, std::vector<std::uint64_t> offsets,
                         std::uint64_t start, MappedUnitsOptions options)
    : fd_(detail::FileDescriptor::open_read(path, 0)),
      unit_bytes_(unit_bytes),
      offsets_(std::move(offsets)),
      start_(start),
      options_(options) {
  struct stat info {};
  if (::fstat(fd_.get(), &info) != 0) HEADRACE_THROW_SYSTEM("fstat", path);
  HEADRACE_EXPECT(info.st_size > 0 && unit_bytes > 0, UsageError, path + ": nothing to map");
  mapping_ = detail::MemoryMapping::map_read(fd_.get(), 0, static_cast<std::size_t>(info.st_size), path);
  if (options_.madvise_interval_s > 0 || options_.memory_budget_bytes > 0) watcher_ = std::thread([this] { watch(); });
}

MappedUnits::~MappedUnits() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_changed_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

std::uint64_t MappedUnits::resident_bytes() const {
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((mapping_.size_bytes() + page - 1) / page);
  if (::mincore(const_cast<std::byte*>(mapping_.data()), mapping_.size_bytes(), resident.data()) != 0) return 0;
  std::uint64_t pages = 0;
  for (unsigned char r : resident) pages += r & 1u;
  return pages * page;
}

void MappedUnits::watch() {
  using Clock = std::chrono::steady_clock;
  const auto budget_period = std::chrono::milliseconds(50);
  auto next_madvise = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(options_.madvise_interval_s));
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    auto wake = options_.memory_budget_bytes > 0 ? Clock::now() + budget_period : next_madvise;
    if (options_.madvise_interval_s > 0 && next_madvise < wake) wake = next_madvise;
    if (stop_changed_.wait_until(lock, wake, [this] { return stopping_; })) return;
    if (options_.madvise_interval_s > 0 && Clock::now() >= next_madvise) {
      mapping_.advise_dontneed();
      ++madvise_calls_;
      next_madvise = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(options_.madvise_interval_s));
    }
    if (options_.memory_budget_bytes > 0) {
      const std::uint64_t resident = resident_bytes();
      if (resident > max_resident_) max_resident_ = resident;
      if (resident > options_.memory_budget_bytes) {
        // Out of the process and out of the page cache: the next access reads the disk again.
        mapping_.advise_dontneed();
        (void)::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_DONTNEED);
        ++budget_drops_;
      }
    }
  }
}

MappedUnitsStats MappedUnits::stats() const {
  return {madvise_calls_.load(), budget_drops_.load(), max_resident_.load()};
}

}  // namespace headrace::workloads::streamlines
