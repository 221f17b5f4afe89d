#include "resident_kernel_image.hpp"

#if defined(HEADRACE_RESIDENT_FATBIN)
// The assembler copies the file nvcc wrote into read-only data: no generated source to compile.
__asm__(".section .rodata\n"
        ".balign 16\n"
        ".global headrace_resident_rounds_fatbin\n"
        ".hidden headrace_resident_rounds_fatbin\n"
        "headrace_resident_rounds_fatbin:\n"
        ".incbin \"" HEADRACE_RESIDENT_FATBIN "\"\n"
        ".previous\n");
extern "C" const unsigned char headrace_resident_rounds_fatbin[];
#endif

namespace headrace::workloads::streamlines {

const void* resident_kernel_image() noexcept {
#if defined(HEADRACE_RESIDENT_FATBIN)
  return headrace_resident_rounds_fatbin;
#else
  return nullptr;
#endif
}

}  // namespace headrace::workloads::streamlines
