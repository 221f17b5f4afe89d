// Kernels of ours, compiled by nvcc into a fatbin at build time and loaded through the driver at run
// time (cuModuleLoadData): the library keeps building and running where there is no GPU.
#pragma once

#include <cstdint>
#include <string>

#include "headrace/gpu/cuda_driver.hpp"

// Embeds the fatbin at `path` (a string literal; nvcc wrote it at build time) as the read-only array
// `symbol`: the assembler copies the file, no generated source is compiled. At namespace scope.
#define HEADRACE_EMBED_FATBIN(symbol, path)                                                           \
  __asm__(".section .rodata\n.balign 16\n.global " #symbol "\n.hidden " #symbol "\n" #symbol ":\n" \
          ".incbin \"" path "\"\n.previous\n");                                                     \
  extern "C" const unsigned char symbol[]

namespace headrace::gpu {

class KernelModule {
 public:
  // Loads image (a fatbin) into the current context; throws UnavailableError for a null image (a
  // build without nvcc: `what` were not built; `instead` says what to do), and CudaError naming `what`
  // when the driver refuses it (no code for this GPU's architecture, say).
  KernelModule(const void* image, std::string what, const std::string& instead);
  ~KernelModule() noexcept;
  KernelModule(const KernelModule&) = delete;
  KernelModule& operator=(const KernelModule&) = delete;

  // An extern "C" kernel of the module; throws CudaError naming it when there is none.
  [[nodiscard]] CUfunction function(const char* name) const;

 private:
  CUmodule module_ = nullptr;
  std::string what_;
};

// Launches a 1-D grid covering `threads` threads in blocks of block_threads, on stream.
// args: one pointer per kernel parameter, as cuLaunchKernel takes them.
void launch_1d(CUfunction kernel, std::uint64_t threads, unsigned block_threads, CUstream stream, void** args);

}  // namespace headrace::gpu
