// The CUDA driver's C types, with the ABI of cuda.h, for the libraries loaded here whose entry points
// take them (nvCOMP's streams); gpu/cuda_driver.hpp loads the driver and names them in headrace::gpu.
#pragma once

#include <cstdint>

namespace headrace::shim {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = std::uint64_t;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUhostFn = void (*)(void* user_data);

}  // namespace headrace::shim
