// HEADRACE_HD marks math shared by a CUDA kernel and its CPU reference: __host__ __device__ under
// nvcc, nothing under a host compiler, so the CPU tests run the very code the GPU runs.
#pragma once

#if defined(__CUDACC__)
#define HEADRACE_HD __host__ __device__
#else
#define HEADRACE_HD
#endif
