// What this machine offers the GPU paths: devices, driver and runtime versions, cuFile (GDS or
// compatibility mode) and nvCOMP, each loaded at run time; a missing piece says why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headrace/detail/enum_names.hpp"

namespace headrace::shim {

struct LibraryStatus {
  bool available = false;
  std::string path;     // where it was loaded from
  std::string version;  // as the library reports it; empty when it cannot say
  std::string why;      // why it is unavailable
};

struct GpuDevice {
  int ordinal = 0;
  std::string name;
  std::uint64_t memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
  std::string pci_bus_id;
};

enum class CufileMode : std::uint8_t {
  unavailable,    // no libcufile, or no GPU to use it with
  compatibility,  // libcufile without the nvidia-fs kernel module: cuFile reads through the page cache
  gds,            // nvidia-fs is loaded: DMA from storage into GPU memory
};

struct GpuEnvironment {
  LibraryStatus cuda_driver;   // libcuda; version = CUDA version the driver supports, e.g. "13.0"
  LibraryStatus nvml;          // libnvidia-ml; version = the display driver's, e.g. "580.82.07"
  LibraryStatus cuda_runtime;  // libcudart
  LibraryStatus cufile;
  LibraryStatus nvcomp;
  LibraryStatus nvcomp_cpu;    // nvCOMP's CPU codecs
  LibraryStatus nccl;          // what compositing on several GPUs uses (shim/nccl.hpp)
  std::vector<GpuDevice> gpus;
  CufileMode cufile_mode = CufileMode::unavailable;
  std::string cufile_mode_reason;
};

// Loads and asks each library once per call; cheap enough for `headrace info`.
[[nodiscard]] GpuEnvironment query_gpu_environment();
inline constexpr detail::EnumNames<CufileMode, 3> cufile_mode_names{
    {{CufileMode::unavailable, "unavailable"}, {CufileMode::compatibility, "compatibility"}, {CufileMode::gds, "gds"}}};
[[nodiscard]] constexpr const char* to_string(CufileMode mode) noexcept { return detail::name_of(cufile_mode_names, mode); }

}  // namespace headrace::shim
