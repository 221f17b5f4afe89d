// A vector whose resize leaves trivial elements uninitialised, its large buffers in transparent huge pages:
// an array about to be filled whole (a result copied home from the GPU) is neither zeroed first, page by page
// on one thread, only to be written again, nor faulted in 4 KiB at a time.
#pragma once

#include <sys/mman.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace headrace::detail {

template <typename T>
struct DefaultInitAllocator {
  using value_type = T;
  // From this size on, a buffer is 2 MiB-aligned and advised into huge pages (where the kernel has them).
  static constexpr std::size_t huge_from = std::size_t{4} << 20, huge_page = std::size_t{2} << 20;

  DefaultInitAllocator() noexcept = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}

  [[nodiscard]] T* allocate(std::size_t count) {
    const std::size_t bytes = count * sizeof(T);
    if (bytes < huge_from) return std::allocator<T>{}.allocate(count);
    void* memory = std::aligned_alloc(huge_page, (bytes + huge_page - 1) / huge_page * huge_page);
    if (memory == nullptr) throw std::bad_alloc();
    (void)::madvise(memory, bytes, MADV_HUGEPAGE);  // advice: 4 KiB pages where refused
    return static_cast<T*>(memory);
  }
  void deallocate(T* memory, std::size_t count) noexcept {
    if (count * sizeof(T) < huge_from) std::allocator<T>{}.deallocate(memory, count);
    else std::free(memory);
  }
  // Nothing written for an element the memory itself makes (trivially copyable and destructible: an
  // implicit-lifetime type, even one whose members have default values, such as Vec3); others default-initialised.
  template <typename U>
  void construct(U* where) noexcept(std::is_nothrow_default_constructible_v<U>) {
    if constexpr (!(std::is_trivially_copyable_v<U> && std::is_trivially_destructible_v<U>)) ::new (static_cast<void*>(where)) U;
  }
  template <typename U, typename... Args>
  void construct(U* where, Args&&... args) {
    ::new (static_cast<void*>(where)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const DefaultInitAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using HostArray = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace headrace::detail
