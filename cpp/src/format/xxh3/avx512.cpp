// Compiled with -mavx512f (CMakeLists.txt); called only where the CPU has AVX-512F.
#define HEADRACE_XXH3_SET avx512
#include "variant.inc"
