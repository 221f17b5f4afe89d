// The CUDA driver API, loaded at run time (libcuda.so.1): headrace builds without the CUDA toolkit and
// runs without a GPU; the GPU paths ask driver() and report why it is unavailable. Types are declared
// here with the ABI of cuda.h, so no CUDA header is needed to build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "headrace/shim/cuda_types.hpp"

namespace headrace::gpu {

using shim::CUcontext;
using shim::CUdevice;
using shim::CUdeviceptr;
using shim::CUevent;
using shim::CUfunction;
using shim::CUhostFn;
using shim::CUmodule;
using shim::CUresult;
using shim::CUstream;

inline constexpr CUresult cuda_success = 0;
inline constexpr CUresult cuda_error_out_of_memory = 2;
inline constexpr CUresult cuda_error_not_ready = 600;
inline constexpr unsigned stream_non_blocking = 0x1;
inline constexpr unsigned event_disable_timing = 0x2;
inline constexpr unsigned memhostalloc_portable = 0x1;
inline constexpr unsigned memhostregister_portable = 0x1;
inline constexpr unsigned memhostregister_read_only = 0x8;
inline constexpr unsigned stream_wait_value_geq = 0x0;
inline constexpr unsigned stream_write_value_default = 0x0;

// CUDA_MEMCPY2D, as cuda.h lays it out (memory types: 1 host, 2 device).
struct Memcpy2D {
  std::size_t src_x_bytes = 0, src_y = 0;
  int src_memory_type = 0;
  const void* src_host = nullptr;
  CUdeviceptr src_device = 0;
  void* src_array = nullptr;
  std::size_t src_pitch = 0;
  std::size_t dst_x_bytes = 0, dst_y = 0;
  int dst_memory_type = 0;
  void* dst_host = nullptr;
  CUdeviceptr dst_device = 0;
  void* dst_array = nullptr;
  std::size_t dst_pitch = 0;
  std::size_t width_bytes = 0, height = 0;
};
inline constexpr int memorytype_host = 0x1;
inline constexpr int memorytype_device = 0x2;

// Entry points, as cuda.h declares them (the versioned symbols the macros there resolve to).
struct CudaDriver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemHostAlloc)(void**, std::size_t, unsigned);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemHostRegister)(void*, std::size_t, unsigned);
  CUresult (*cuMemHostUnregister)(void*);
  CUresult (*cuMemGetInfo)(std::size_t*, std::size_t*);
  CUresult (*cuMemGetAddressRange)(CUdeviceptr*, std::size_t*, CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, std::size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, std::size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream);
  CUresult (*cuMemcpy2DAsync)(const Memcpy2D*, CUstream);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, std::size_t);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, std::size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, std::size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuStreamWaitValue32)(CUstream, CUdeviceptr, std::uint32_t, unsigned);
  CUresult (*cuStreamWriteValue32)(CUstream, CUdeviceptr, std::uint32_t, unsigned);
  CUresult (*cuLaunchHostFunc)(CUstream, CUhostFn, void*);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**);
};

// The loaded driver with cuInit done, or nullptr when there is none (why_no_driver() says why).
[[nodiscard]] const CudaDriver* driver() noexcept;
[[nodiscard]] const std::string& why_no_driver() noexcept;
// The driver, or UnavailableError naming why there is none.
[[nodiscard]] const CudaDriver& require_driver();
// Number of GPUs (0 without a driver).
[[nodiscard]] int device_count() noexcept;
// Whether there is a driver and a GPU; when not, *why says which is missing.
[[nodiscard]] bool gpu_present(std::string* why);

// The driver's name of a result ("CUDA_ERROR_ILLEGAL_ADDRESS"), or "unknown CUresult" without a driver.
[[nodiscard]] const char* result_name(CUresult result) noexcept;
// Throws CudaError (GpuOutOfMemoryError for out of memory) naming the call and the driver's error.
void check(CUresult result, const char* call, const std::string& detail = {});

}  // namespace headrace::gpu
