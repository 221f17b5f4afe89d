#include "headrace/shim/gpu_environment.hpp"

#include <array>
#include <filesystem>
#include <fstream>

#include "headrace/shim/nccl.hpp"
#include "headrace/shim/shared_library.hpp"

namespace headrace::shim {
namespace {

// The few driver API entry points info needs; signatures as in cuda.h (CUdevice is an int).
using CuInit = int (*)(unsigned);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceTotalMem = int (*)(std::size_t*, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
using CuDeviceGetPCIBusId = int (*)(char*, int, int);
constexpr int attribute_compute_major = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int attribute_compute_minor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

LibraryStatus status_of(const SharedLibrary& library) {
  LibraryStatus status;
  status.available = library.loaded();
  status.path = library.path();
  status.why = library.why();
  return status;
}

void query_cuda(GpuEnvironment& environment) {
  SharedLibrary cuda({"libcuda.so.1", "libcuda.so"});
  environment.cuda_driver = status_of(cuda);
  if (!cuda.loaded()) return;
  auto init = cuda.function<CuInit>("cuInit");
  auto driver_version = cuda.function<CuDriverGetVersion>("cuDriverGetVersion");
  auto device_count = cuda.function<CuDeviceGetCount>("cuDeviceGetCount");
  auto device_get = cuda.function<CuDeviceGet>("cuDeviceGet");
  auto device_name = cuda.function<CuDeviceGetName>("cuDeviceGetName");
  auto total_mem = cuda.function<CuDeviceTotalMem>("cuDeviceTotalMem_v2");
  auto attribute = cuda.function<CuDeviceGetAttribute>("cuDeviceGetAttribute");
  auto bus_id = cuda.function<CuDeviceGetPCIBusId>("cuDeviceGetPCIBusId");
  if (!init || !driver_version || !device_count || !device_get || !device_name || !total_mem || !attribute || !bus_id) {
    environment.cuda_driver.available = false;
    environment.cuda_driver.why = environment.cuda_driver.path + " lacks a driver API entry point headrace needs";
    return;
  }
  int version = 0;
  if (driver_version(&version) == 0) environment.cuda_driver.version = cuda_version_text(version);
  if (const int status = init(0); status != 0) {
    environment.cuda_driver.available = false;
    environment.cuda_driver.why = "cuInit failed with CUresult " + std::to_string(status) +
                                  (status == 100 ? " (CUDA_ERROR_NO_DEVICE: no GPU)" : "");
    return;
  }
  int count = 0;
  if (device_count(&count) != 0) count = 0;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    int device = 0;
    if (device_get(&device, ordinal) != 0) continue;
    GpuDevice gpu;
    gpu.ordinal = ordinal;
    std::array<char, 256> text{};
    if (device_name(text.data(), static_cast<int>(text.size()), device) == 0) gpu.name = text.data();
    std::size_t bytes = 0;
    if (total_mem(&bytes, device) == 0) gpu.memory_bytes = bytes;
    attribute(&gpu.compute_major, attribute_compute_major, device);
    attribute(&gpu.compute_minor, attribute_compute_minor, device);
    text.fill(0);
    if (bus_id(text.data(), static_cast<int>(text.size()), device) == 0) gpu.pci_bus_id = text.data();
    environment.gpus.push_back(gpu);
  }
}

void query_nvml(GpuEnvironment& environment) {
  SharedLibrary nvml({"libnvidia-ml.so.1", "libnvidia-ml.so"});
  environment.nvml = status_of(nvml);
  auto init = nvml.function<int (*)()>("nvmlInit_v2");
  auto driver_version = nvml.function<int (*)(char*, unsigned)>("nvmlSystemGetDriverVersion");
  auto shutdown = nvml.function<int (*)()>("nvmlShutdown");
  if (!init || !driver_version || !shutdown || init() != 0) return;
  std::array<char, 96> text{};
  if (driver_version(text.data(), static_cast<unsigned>(text.size())) == 0) environment.nvml.version = text.data();
  shutdown();
}

void query_cuda_runtime(GpuEnvironment& environment) {
  SharedLibrary runtime({"libcudart.so.13", "libcudart.so.12", "libcudart.so"});
  environment.cuda_runtime = status_of(runtime);
  int version = 0;
  if (auto get = runtime.function<int (*)(int*)>("cudaRuntimeGetVersion"); get && get(&version) == 0)
    environment.cuda_runtime.version = cuda_version_text(version);
}

void query_cufile(GpuEnvironment& environment) {
  SharedLibrary cufile({"libcufile.so.0", "libcufile.so"});
  environment.cufile = status_of(cufile);
  int version = 0;
  if (auto get = cufile.function<int (*)(int*)>("cuFileGetVersion"); get && get(&version) == 0)
    environment.cufile.version = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  const bool nvidia_fs = std::filesystem::exists("/proc/driver/nvidia-fs/version");
  if (!cufile.loaded()) {
    environment.cufile_mode_reason = "libcufile not found: " + cufile.why();
  } else if (environment.gpus.empty()) {
    environment.cufile_mode_reason = "no GPU";
  } else if (nvidia_fs) {
    environment.cufile_mode = CufileMode::gds;
    environment.cufile_mode_reason = "nvidia-fs kernel module loaded";
  } else {
    environment.cufile_mode = CufileMode::compatibility;
    environment.cufile_mode_reason = "no nvidia-fs kernel module (/proc/driver/nvidia-fs): cuFile reads through the page cache";
  }
}

void query_nvcomp(GpuEnvironment& environment) {
  SharedLibrary nvcomp({"libnvcomp.so.6", "libnvcomp.so.5", "libnvcomp.so"});
  environment.nvcomp = status_of(nvcomp);
  // nvcompProperties_t begins with two uint32 (version, cudart_version); give it room to grow.
  std::array<std::uint32_t, 16> properties{};
  if (auto get = nvcomp.function<int (*)(void*)>("nvcompGetProperties"); get && get(properties.data()) == 0) {
    const std::uint32_t v = properties[0];
    environment.nvcomp.version = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 100) + "." + std::to_string(v % 100);
  }
  SharedLibrary nvcomp_cpu({"libnvcomp_cpu.so.6", "libnvcomp_cpu.so.5", "libnvcomp_cpu.so"});
  environment.nvcomp_cpu = status_of(nvcomp_cpu);
}

void query_nccl(GpuEnvironment& environment) {
  if (const Nccl* loaded = nccl()) {
    environment.nccl.available = true;
    environment.nccl.path = loaded->path;
    environment.nccl.version = loaded->version_text();
  } else {
    environment.nccl.why = why_no_nccl();
  }
}

}  // namespace

GpuEnvironment query_gpu_environment() {
  GpuEnvironment environment;
  query_cuda(environment);
  query_nvml(environment);
  query_cuda_runtime(environment);
  query_cufile(environment);
  query_nvcomp(environment);
  query_nccl(environment);
  return environment;
}

}  // namespace headrace::shim
