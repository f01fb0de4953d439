// In-place softmax of fp32 values (attention scores, sampling), with AVX2 and NEON versions
// whose exp is a polynomial (Cephes' expf, about 2 ulp) instead of a libm call per value.
#pragma once

void softmax_f32_scalar(float* x, int n);
#if defined(__AVX2__) && defined(__FMA__)
void softmax_f32_avx2(float* x, int n);
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define HEARTH_SOFTMAX_NEON 1
void softmax_f32_neon(float* x, int n);
#endif

inline void softmax_f32(float* x, int n) {
#if defined(__AVX2__) && defined(__FMA__)
    softmax_f32_avx2(x, n);
#elif defined(HEARTH_SOFTMAX_NEON)
    softmax_f32_neon(x, n);
#else
    softmax_f32_scalar(x, n);
#endif
}
