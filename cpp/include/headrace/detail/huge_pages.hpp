// Anonymous memory backed whole by transparent huge pages (2 MiB), faulted in: what the staging ring
// page-locks (gpu::PinnedBuffer). The driver locks it in a fraction of cuMemHostAlloc's time (61 ms
// against 129 to 424 ms for 256 MiB on the H200 machine), and O_DIRECT reads fill it as fast, where
// memory in 4 KiB pages made them a quarter slower (bench/staging_memory_probe.py, docs/results.md).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace headrace::detail {

inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

class HugePageMemory {
 public:
  // size_bytes rounded up to whole huge pages; nullopt, saying why in why_not, when the kernel did not
  // back all of it with huge pages (transparent huge pages off, no free 2 MiB runs of memory, or a
  // kernel without MADV_COLLAPSE, which says so).
  [[nodiscard]] static std::optional<HugePageMemory> make(std::size_t size_bytes, std::string& why_not);

  HugePageMemory() noexcept = default;
  ~HugePageMemory() noexcept { close(); }
  HugePageMemory(HugePageMemory&& other) noexcept;
  HugePageMemory& operator=(HugePageMemory&& other) noexcept;
  HugePageMemory(const HugePageMemory&) = delete;
  HugePageMemory& operator=(const HugePageMemory&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_bytes_; }

 private:
  void close() noexcept;
  std::byte* data_ = nullptr;  // 2 MiB-aligned, mapped exactly [data_, data_ + size_bytes_)
  std::size_t size_bytes_ = 0;
};

}  // namespace headrace::detail
