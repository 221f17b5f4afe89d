// cuFile (GPUDirect Storage), loaded at run time (libcufile.so.0 from the nvidia-cufile wheel or the
// CUDA toolkit). The few C types are declared here with the ABI of cufile.h, so no header is needed.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace headrace::shim {

// CUfileError_t: a cuFile status (CUfileOpError, 0 or 5001..5050) and, for
// CU_FILE_CUDA_DRIVER_ERROR, the CUDA driver's CUresult.
struct CufileError {
  int err = 0;
  int cu_err = 0;
};
inline constexpr int cufile_success = 0;
inline constexpr int cufile_cuda_driver_error = 5011;  // CU_FILE_CUDA_DRIVER_ERROR

using CufileHandle = void*;  // CUfileHandle_t

// CUfileDescr_t.
struct CufileDescription {
  int type = 1;  // CU_FILE_HANDLE_TYPE_OPAQUE_FD
  union {
    int fd;
    void* handle;
  } handle{};
  const void* fs_ops = nullptr;  // const CUfileFSOps_t*: none for a kernel file system
};

// CUfileDrvProps_t.
struct CufileDriverProperties {
  struct {
    unsigned major_version;  // of nvidia-fs; 0.0 when it is not loaded
    unsigned minor_version;
    std::size_t poll_thresh_size;
    std::size_t max_direct_io_size;
    unsigned dstatusflags;
    unsigned dcontrolflags;
  } nvfs;
  unsigned fflags;
  unsigned max_device_cache_size;
  unsigned per_buffer_cache_size;
  unsigned max_device_pinned_mem_size;
  unsigned max_batch_io_size;
  unsigned max_batch_io_timeout_msecs;
};

// Entry points, as cufile.h declares them (cuFileDriverClose is the macro for cuFileDriverClose_v2).
struct Cufile {
  CufileError (*cuFileDriverOpen)();
  CufileError (*cuFileDriverClose)();
  CufileError (*cuFileDriverGetProperties)(CufileDriverProperties*);
  CufileError (*cuFileHandleRegister)(CufileHandle*, CufileDescription*);
  void (*cuFileHandleDeregister)(CufileHandle);
  CufileError (*cuFileBufRegister)(const void* buffer_base, std::size_t length, int flags);
  CufileError (*cuFileBufDeregister)(const void* buffer_base);
  // Bytes read; -1 with errno for a system error; -(CUfileOpError) for a cuFile error.
  ssize_t (*cuFileRead)(CufileHandle, void* buffer_base, std::size_t size, off_t file_offset, off_t buffer_offset);
  CufileError (*cuFileGetVersion)(int*);  // may be absent (older cuFile): then nullptr
};

// libcufile, loaded once per process (libcufile.so.0, libcufile.so in the registered library
// directories, then the system's), or nullptr; why_no_cufile() says why.
[[nodiscard]] const Cufile* cufile() noexcept;
[[nodiscard]] const std::string& why_no_cufile() noexcept;
[[nodiscard]] const std::string& cufile_path() noexcept;

// "CU_FILE_IO_NOT_SUPPORTED (5008): GPUDirect Storage not supported on current file"; a CUDA driver
// error names its CUresult too, by the driver's name for it (gpu::result_name) when given.
[[nodiscard]] std::string cufile_error_text(CufileError error, std::string_view cuda_result_name = "unknown CUresult");
// Text for a negative cuFileRead result: errno's strerror for -1, the cuFile error otherwise.
[[nodiscard]] std::string cufile_read_error_text(ssize_t result, int error_number);

}  // namespace headrace::shim
