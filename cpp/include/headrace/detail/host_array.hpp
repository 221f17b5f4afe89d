// A vector whose resize leaves trivial elements uninitialised: a large array about to be filled whole (by a
// copy home from the GPU) is not zeroed first, page by page on one thread, only to be written again.
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace headrace::detail {

template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() noexcept = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* where) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(where)) U;  // default-initialised: nothing written for trivial types
  }
  template <typename U, typename... Args>
  void construct(U* where, Args&&... args) {
    std::allocator_traits<std::allocator<T>>::construct(*this, where, std::forward<Args>(args)...);
  }
};

template <typename T>
using HostArray = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace headrace::detail
