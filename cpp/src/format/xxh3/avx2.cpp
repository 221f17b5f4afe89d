// Compiled with -mavx2 (CMakeLists.txt); called only where the CPU has AVX2.
#define HEADRACE_XXH3_SET avx2
#include "variant.inc"
