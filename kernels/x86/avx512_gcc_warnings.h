// Included by the AVX-512 kernel files, inside their ISA guard and before <immintrin.h>.
// GCC 12 warns, wrongly, that the _mm512_undefined_* operands inside its own AVX-512 intrinsics
// (cvtepi32_ps, castsi256_si512) may be used uninitialized, and where one's result feeds
// another's (inserti64x4 into a vector from zext, x86/quant_avx2.cpp), that it is. A diagnostic
// pragma holds to the end of the file that includes this. (clang has no such warning, and would
// warn of the unknown name.)
#pragma once

#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
