#include "headrace/staging/pinned_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>

#include "headrace/error.hpp"

namespace headrace::staging {

PinnedFile::PinnedFile(const std::string& path) : fd_(detail::FileDescriptor::open_read(path, 0)) {
  const gpu::CudaDriver& api = gpu::require_driver();
  struct stat info {};
  if (::fstat(fd_.get(), &info) != 0) HEADRACE_THROW_SYSTEM("fstat", path);
  const auto size = static_cast<std::size_t>(info.st_size);
  HEADRACE_EXPECT(size > 0, UsageError, path + ": an empty file cannot be page-locked");
  mapping_ = detail::MemoryMapping::map_read(fd_.get(), 0, size, path, detail::MemoryMapping::Sharing::shared_pages);
  const auto start = std::chrono::steady_clock::now();
  gpu::check(api.cuMemHostRegister(const_cast<std::byte*>(mapping_.data()), size, gpu::memhostregister_read_only),
        "cuMemHostRegister", path + ": page-locking its " + std::to_string(size) + " mapped bytes for DMA");
  register_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  registered_ = true;
}

PinnedFile::~PinnedFile() noexcept {
  // The owner synchronises every stream that copies from here before dropping it.
  if (registered_) (void)gpu::driver()->cuMemHostUnregister(const_cast<std::byte*>(mapping_.data()));
}

}  // namespace headrace::staging
