#include "headrace/gpu/device.hpp"

#include <utility>

#include "headrace/error.hpp"

namespace headrace::gpu {

Device::Device(int ordinal) : ordinal_(ordinal) {
  const CudaDriver& api = require_driver();
  const int count = device_count();
  HEADRACE_EXPECT(ordinal >= 0 && ordinal < count, UsageError,
                  "GPU " + std::to_string(ordinal) + " does not exist (" + std::to_string(count) + " GPUs)");
  check(api.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  check(api.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  make_current();
}

Device::~Device() noexcept {
  if (context_ != nullptr) driver()->cuDevicePrimaryCtxRelease(device_);
}

Device::Device(Device&& other) noexcept
    : ordinal_(other.ordinal_), device_(other.device_), context_(std::exchange(other.context_, nullptr)) {}

void Device::make_current() const { check(driver()->cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

}  // namespace headrace::gpu
