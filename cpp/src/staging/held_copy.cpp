#include "headrace/staging/held_copy.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

#include "headrace/detail/huge_pages.hpp"
#include "headrace/error.hpp"
#include "headrace/gpu/cuda_driver.hpp"

namespace headrace::staging {
namespace {

// Spans are locked in whole 4 KiB pages, where a container's chunks start: a span that ends past its
// last chunk ends where the next chunk begins, so no chunk lies across two registrations (spans in 2 MiB
// pages cut one chunk in two, read from the disk every pass).
constexpr std::uint64_t page = 4096;

// The run of `runs` (start -> end, apart) holding offset, or end().
template <class Runs>
auto run_holding(Runs& runs, std::uint64_t offset) {
  auto it = runs.upper_bound(offset);
  if (it == runs.begin()) return runs.end();
  --it;
  return offset < it->second ? it : runs.end();
}

}  // namespace

HeldCopy::HeldCopy(std::uint64_t size_bytes, const std::string& what) : size_bytes_(size_bytes) {
  HEADRACE_EXPECT(size_bytes > 0, UsageError, what + ": an empty file cannot be held");
  mapped_bytes_ = (size_bytes + detail::huge_page_bytes - 1) / detail::huge_page_bytes * detail::huge_page_bytes;
  void* mapped = ::mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapped == MAP_FAILED) HEADRACE_THROW_SYSTEM("mmap", what + ": holding its " + std::to_string(size_bytes) + " bytes");
  data_ = static_cast<std::byte*>(mapped);
  // Advice only: 4 KiB pages serve as well, they fault in and lock more slowly.
  (void)::madvise(data_, mapped_bytes_, MADV_HUGEPAGE);
}

HeldCopy::~HeldCopy() noexcept {
  // The owner synchronises every stream that copies from here before dropping it.
  for (const auto& [start, end] : locked_) (void)gpu::driver()->cuMemHostUnregister(data_ + start);
  ::munmap(data_, mapped_bytes_);
}

void HeldCopy::lock() {
  std::lock_guard registering(registering_);
  // Per stretch between the spans locked before: its filled bytes' first to last, in whole pages.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  {
    std::lock_guard lock(mutex_);
    if (refused()) return;
    std::uint64_t gap_start = 0;
    for (auto span = locked_.begin();; ++span) {
      const std::uint64_t gap_end = span == locked_.end() ? mapped_bytes_ : span->first;
      auto first = filled_.upper_bound(gap_start);
      if (first != filled_.begin() && std::prev(first)->second > gap_start) --first;
      if (gap_start < gap_end && first != filled_.end() && first->first < gap_end) {
        const auto last = std::prev(filled_.lower_bound(gap_end));
        const std::uint64_t begin = std::max(first->first, gap_start) / page * page;
        spans.emplace_back(begin, std::min(gap_end, (std::min(last->second, gap_end) + page - 1) / page * page));
      }
      if (span == locked_.end()) break;
      gap_start = span->second;
    }
  }
  for (const auto& [begin, end] : spans) register_span(begin, end);
}

void HeldCopy::lock_range(std::uint64_t offset, std::uint64_t size) {
  std::lock_guard registering(registering_);
  std::uint64_t begin = offset / page * page, end = std::min(mapped_bytes_, (offset + size + page - 1) / page * page);
  {
    std::lock_guard lock(mutex_);
    if (refused()) return;
    // Clipped to the gap holding its start (what a span before it locks is left out; a span inside ends it).
    auto after = locked_.upper_bound(begin);
    if (after != locked_.begin() && std::prev(after)->second > begin) begin = std::prev(after)->second;
    after = locked_.upper_bound(begin);
    if (after != locked_.end()) end = std::min(end, after->first);
  }
  if (begin < end) register_span(begin, end);
}

void HeldCopy::register_span(std::uint64_t begin, std::uint64_t end) {
  const auto start = std::chrono::steady_clock::now();
  // Writable, so that the driver pins the pages the fills write (a read-only pin of an untouched page
  // could take the shared zero page, which a later write replaces).
  const gpu::CUresult result = gpu::require_driver().cuMemHostRegister(data_ + begin, end - begin, gpu::memhostregister_portable);
  if (result != gpu::cuda_success) {
    refused_.store(true, std::memory_order_release);
    gpu::check(result, "cuMemHostRegister", "page-locking " + std::to_string(end - begin) + " bytes of a held copy");
  }
  {
    std::lock_guard lock(mutex_);
    locked_.emplace(begin, end);
  }
  lock_seconds_.store(lock_seconds() + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                      std::memory_order_relaxed);
}

bool HeldCopy::locked(std::uint64_t offset, std::uint64_t size) const {
  if (refused()) return false;
  std::lock_guard lock(mutex_);
  const auto span = run_holding(locked_, offset);
  return span != locked_.end() && offset + size <= span->second;
}

bool HeldCopy::unlocked_fills() const {
  std::lock_guard lock(mutex_);
  std::uint64_t covered = 0;  // filled bytes inside locked spans
  for (const auto& [start, end] : filled_) {
    auto span = locked_.upper_bound(start);
    if (span != locked_.begin()) --span;
    for (; span != locked_.end() && span->first < end; ++span) {
      const std::uint64_t from = std::max(start, span->first), to = std::min(end, span->second);
      if (from < to) covered += to - from;
    }
  }
  return covered < filled_bytes_;
}

std::uint64_t HeldCopy::locked_bytes() const {
  std::lock_guard lock(mutex_);
  std::uint64_t bytes = 0;
  for (const auto& [start, end] : locked_) bytes += end - start;
  return bytes;
}

void HeldCopy::fill(std::uint64_t offset, const std::byte* bytes, std::uint64_t size) {
  if (refused() || offset >= size_bytes_) return;
  std::memcpy(data_ + offset, bytes, std::min(size, size_bytes_ - offset));
  record_filled(offset, size);
}

void HeldCopy::record_filled(std::uint64_t offset, std::uint64_t size) {
  if (refused() || offset >= size_bytes_) return;
  size = std::min(size, size_bytes_ - offset);
  std::uint64_t start = offset, end = offset + size;
  std::lock_guard lock(mutex_);
  // Joins the runs it touches or meets.
  auto it = filled_.upper_bound(start);
  if (it != filled_.begin() && std::prev(it)->second >= start) --it;
  while (it != filled_.end() && it->first <= end) {
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    filled_bytes_ -= it->second - it->first;
    it = filled_.erase(it);
  }
  filled_.emplace(start, end);
  filled_bytes_ += end - start;
}

bool HeldCopy::filled_locked(std::uint64_t offset, std::uint64_t size) const {
  const auto run = run_holding(filled_, offset);
  return run != filled_.end() && offset + size <= run->second;
}

bool HeldCopy::filled(std::uint64_t offset, std::uint64_t size) const {
  std::lock_guard lock(mutex_);
  return filled_locked(offset, size);
}

std::optional<std::uint64_t> HeldCopy::held_until(std::uint64_t offset, std::uint64_t size) const {
  if (refused()) return std::nullopt;
  std::lock_guard lock(mutex_);
  const auto span = run_holding(locked_, offset);
  if (span == locked_.end() || offset + size > span->second || !filled_locked(offset, size)) return std::nullopt;
  return span->second;
}

std::uint64_t HeldCopy::filled_bytes() const {
  std::lock_guard lock(mutex_);
  return filled_bytes_;
}

}  // namespace headrace::staging
