// SwiGLU of the feed-forward block: g[i] = silu(g[i]) * u[i], silu(x) = x / (1 + e^-x).
// The AVX2 version uses the polynomial exp of kernels/x86/exp_avx2.h instead of a libm call per
// value (the loop ran at 2-3% of prompt processing time with libm's expf).
#pragma once

#include "kernels/isa.h"
#include <cstddef>

namespace hearth {

void swiglu_f32_scalar(float* g, const float* u, size_t n);
#if defined(HEARTH_ISA_AVX2)
void swiglu_f32_avx2(float* g, const float* u, size_t n);
#endif

inline void swiglu_f32(float* g, const float* u, size_t n) {
#if defined(HEARTH_ISA_AVX2)
    swiglu_f32_avx2(g, u, n);
#else
    swiglu_f32_scalar(g, u, n);
#endif
}

}  // namespace hearth
