// Reads from a file straight into GPU memory through cuFile (loaded at run time): by DMA from storage
// where GPUDirect Storage works (nvidia-fs), otherwise through cuFile's compatibility mode (the page
// cache and a bounce buffer). The mode in effect is reported, never chosen silently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "headrace/detail/file_descriptor.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/shim/cufile.hpp"
#include "headrace/shim/gpu_environment.hpp"

namespace headrace::io {

// Why cuFile cannot read into GPU memory here (no libcufile, no CUDA driver, no GPU, the driver
// session would not open), or empty when it can. Opens the process's driver session to find out.
[[nodiscard]] std::string cufile_unavailable_reason();

// The process's cuFile driver session (cuFileDriverOpen once, cuFileDriverClose when the last holder
// lets go; the process holds it until exit): every reader and registration holds it, so it outlives
// them. cuFile keeps buffers in the GPU's primary context: keep that context retained (a gpu::Device)
// for as long as cuFile is used.
class CufileDriver {
 public:
  // The session, opened on first use; throws UnavailableError with cufile_unavailable_reason().
  [[nodiscard]] static std::shared_ptr<const CufileDriver> shared();

  ~CufileDriver() noexcept;
  CufileDriver(const CufileDriver&) = delete;
  CufileDriver& operator=(const CufileDriver&) = delete;

  // gds when the nvidia-fs kernel module serves cuFile, compatibility otherwise.
  [[nodiscard]] shim::CufileMode mode() const noexcept { return mode_; }
  [[nodiscard]] const std::string& mode_reason() const noexcept { return mode_reason_; }
  // cuFileDriverGetProperties, when it answered (properties_known()).
  [[nodiscard]] bool properties_known() const noexcept { return properties_known_; }
  [[nodiscard]] const shim::CufileDriverProperties& properties() const noexcept { return properties_; }
  [[nodiscard]] const std::string& version() const noexcept { return version_; }  // "1.15", or empty

 private:
  struct OpenTag {};

 public:
  explicit CufileDriver(OpenTag);  // for shared() only

 private:
  shim::CufileMode mode_ = shim::CufileMode::compatibility;
  std::string mode_reason_;
  shim::CufileDriverProperties properties_{};
  bool properties_known_ = false;
  std::string version_;
};

// A device range registered with cuFile (cuFileBufRegister): pinned once for DMA, so reads into it
// skip cuFile's own bounce buffers. Pays for large, reused, 4096-aligned destinations.
class CufileBufferRegistration {
 public:
  CufileBufferRegistration() noexcept = default;
  // Throws UnavailableError without cuFile, CudaError (naming the cuFile error, address and size).
  CufileBufferRegistration(gpu::CUdeviceptr base, std::size_t size_bytes);
  ~CufileBufferRegistration() noexcept;
  CufileBufferRegistration(CufileBufferRegistration&& other) noexcept;
  CufileBufferRegistration& operator=(CufileBufferRegistration&& other) noexcept;
  CufileBufferRegistration(const CufileBufferRegistration&) = delete;
  CufileBufferRegistration& operator=(const CufileBufferRegistration&) = delete;

  [[nodiscard]] gpu::CUdeviceptr base() const noexcept { return base_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_bytes_; }
  [[nodiscard]] bool registered() const noexcept { return base_ != 0; }
  // cuFileBufDeregister; idempotent. Call it only when no read into the range is in flight.
  void unregister_buffer() noexcept;

 private:
  std::shared_ptr<const CufileDriver> driver_;
  gpu::CUdeviceptr base_ = 0;
  std::size_t size_bytes_ = 0;
};

// Registers [base, base + size_bytes) with cuFile.
[[nodiscard]] CufileBufferRegistration register_buffer(gpu::CUdeviceptr base, std::size_t size_bytes);

// One file open for cuFile reads. read() is synchronous and thread-safe: callers run several at once.
class CufileReader {
 public:
  // Opens path with O_DIRECT, or buffered where the file system refuses O_DIRECT (open_note() says so;
  // cuFile then reads in compatibility mode), and registers it with cuFile. context, when given, is
  // made current on each thread that calls read() (the queue's workers need not know it); without it
  // the caller's current context is used. Throws UnavailableError (cufile_unavailable_reason(), or
  // cuFileHandleRegister refusing this file: then read it another way and say so), FileNotFoundError.
  explicit CufileReader(const std::string& path, gpu::CUcontext context = nullptr);
  ~CufileReader() noexcept;
  CufileReader(CufileReader&& other) noexcept;
  CufileReader& operator=(CufileReader&&) = delete;
  CufileReader(const CufileReader&) = delete;
  CufileReader& operator=(const CufileReader&) = delete;

  // Reads size bytes at file_offset into device memory at destination; loops over short reads and
  // retries EINTR and EAGAIN. Returns size, or fewer when the file ends first. Throws SystemError
  // naming the path, offset, size and the cuFile error (or errno).
  std::size_t read(gpu::CUdeviceptr destination, std::size_t size, std::uint64_t file_offset) const;
  // The same into a registered buffer, at buffer_offset from its base (cuFile wants the registered
  // base and an offset, not an address inside it).
  std::size_t read(const CufileBufferRegistration& buffer, std::size_t buffer_offset, std::size_t size,
                   std::uint64_t file_offset) const;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] std::uint64_t file_size() const noexcept { return file_size_; }
  [[nodiscard]] bool o_direct() const noexcept { return o_direct_; }
  // How the file was opened: "O_DIRECT", or why it is buffered.
  [[nodiscard]] const std::string& open_note() const noexcept { return open_note_; }
  // gds only when the driver is in GDS mode and the file is open with O_DIRECT; cuFile may still send
  // a file system without GDS support through compatibility mode.
  [[nodiscard]] shim::CufileMode mode() const noexcept;
  [[nodiscard]] std::string mode_reason() const;
  // Deregisters and closes; idempotent. No read may be in flight.
  void close() noexcept;

 private:
  std::size_t read_into(gpu::CUdeviceptr base, std::size_t base_offset, std::size_t size, std::uint64_t file_offset) const;

  std::shared_ptr<const CufileDriver> driver_;
  std::string path_;
  gpu::CUcontext context_ = nullptr;
  detail::FileDescriptor fd_;
  shim::CufileHandle handle_ = nullptr;
  std::uint64_t file_size_ = 0;
  bool o_direct_ = false;
  std::string open_note_;
};

}  // namespace headrace::io
