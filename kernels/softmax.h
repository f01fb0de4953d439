// In-place softmax of fp32 values (attention scores, sampling), with AVX2 and NEON versions
// whose exp is a polynomial (Cephes' expf, about 2 ulp) instead of a libm call per value.
#pragma once

#include "kernels/isa.h"

namespace hearth {

void softmax_f32_scalar(float* x, int n);
#if defined(HEARTH_ISA_AVX2)
void softmax_f32_avx2(float* x, int n);
#elif defined(HEARTH_ISA_NEON)
void softmax_f32_neon(float* x, int n);
#endif

inline void softmax_f32(float* x, int n) {
#if defined(HEARTH_ISA_AVX2)
    softmax_f32_avx2(x, n);
#elif defined(HEARTH_ISA_NEON)
    softmax_f32_neon(x, n);
#else
    softmax_f32_scalar(x, n);
#endif
}

}  // namespace hearth
