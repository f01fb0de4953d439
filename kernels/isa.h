// The instruction sets hearth's kernels are written for, as one family of macros, and their
// names at run time. A kernel file for an ISA compiles to nothing unless its macro is set (the
// compiler's -march decides); ISA #ifs live only here, in the ISA files (x86/, arm/, and the
// SIMD sections of the float operations) and in the kernel table (kernels/table.cpp).
//   HEARTH_ISA_AVX2      AVX2 + FMA + F16C (x86/)
//   HEARTH_ISA_AVX_VNNI  ... and u8 x s8 dot products on ymm (AVX512-VNNI with VL, or AVX-VNNI):
//                        the AVX2 GEMM tiles use them (x86/avx2_util.h), no rows of their own
//   HEARTH_ISA_AVX512    AVX512F + BW + VL + VNNI: the zmm GEMMs (x86/gemm_avx512.cpp) and
//                        the zmm attention kernels (kernels/attention.cpp)
//   HEARTH_ISA_AMX       ... and AMX-TILE + AMX-INT8, and AVX512-VBMI (every CPU with AMX has
//                        it): the tile GEMMs (x86/gemm_amx.cpp; their float side is AVX-512,
//                        and the Q4_K one packs its weights with a byte permute). Usable only
//                        once the OS grants the tiles' state (kernels/table.cpp asks,
//                        base/platform.h)
//   HEARTH_ISA_NEON      AArch64 Advanced SIMD (arm/)
//   HEARTH_ISA_DOTPROD   ... and SDOT: the NEON kernels use it inside, no rows of their own
//   HEARTH_ISA_I8MM      ... and SMMLA: the GEMMs of arm/gemm_neon_i8mm.cpp
#pragma once
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define HEARTH_ISA_AVX2 1
#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__)
#define HEARTH_ISA_AVX_VNNI 1
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#define HEARTH_ISA_AVX512 1
#if defined(__AMX_INT8__) && defined(__AMX_TILE__) && defined(__AVX512VBMI__)
#define HEARTH_ISA_AMX 1
#endif
#endif
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
#define HEARTH_ISA_NEON 1
#if defined(__ARM_FEATURE_DOTPROD)
#define HEARTH_ISA_DOTPROD 1
#endif
#if defined(__ARM_FEATURE_DOTPROD) && defined(__ARM_FEATURE_MATMUL_INT8)
#define HEARTH_ISA_I8MM 1
#endif
#endif

// What this build's kernels use, for messages ("avx2+vnni", "neon+dotprod+i8mm", ...).
#if defined(HEARTH_ISA_AMX)
#define HEARTH_ISA_NAME "avx2+vnni+avx512+amx"
#elif defined(HEARTH_ISA_AVX512)
#define HEARTH_ISA_NAME "avx2+vnni+avx512"
#elif defined(HEARTH_ISA_AVX_VNNI)
#define HEARTH_ISA_NAME "avx2+vnni"
#elif defined(HEARTH_ISA_AVX2)
#define HEARTH_ISA_NAME "avx2"
#elif defined(HEARTH_ISA_I8MM)
#define HEARTH_ISA_NAME "neon+dotprod+i8mm"
#elif defined(HEARTH_ISA_DOTPROD)
#define HEARTH_ISA_NAME "neon+dotprod"
#elif defined(HEARTH_ISA_NEON)
#define HEARTH_ISA_NAME "neon"
#else
#define HEARTH_ISA_NAME "scalar"
#endif
