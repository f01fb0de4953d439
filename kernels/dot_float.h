// Dot products of an fp32 activation vector with an fp32, fp16 or bf16 weight row.
// Each SIMD version has a scalar twin; tests/kernels/test_dot_float.cpp holds them together.
#pragma once
#include <cstdint>

#include "kernels/isa.h"

namespace hearth {

float dot_f32_scalar(const float* w, const float* x, int n);
float dot_f16_scalar(const uint16_t* w, const float* x, int n);
float dot_bf16_scalar(const uint16_t* w, const float* x, int n);
void f16_to_f32_row_scalar(const uint16_t* h, float* out, int n);
void f32_to_f16_row_scalar(const float* x, uint16_t* out, int n);
#if defined(HEARTH_ISA_AVX2)
float dot_f32_avx2(const float* w, const float* x, int n);
float dot_f16_avx2(const uint16_t* w, const float* x, int n);
float dot_bf16_avx2(const uint16_t* w, const float* x, int n);
void f16_to_f32_row_avx2(const uint16_t* h, float* out, int n);
void f32_to_f16_row_avx2(const float* x, uint16_t* out, int n);
#endif
#if defined(HEARTH_ISA_NEON)
float dot_f32_neon(const float* w, const float* x, int n);
float dot_f16_neon(const uint16_t* w, const float* x, int n);
float dot_bf16_neon(const uint16_t* w, const float* x, int n);
void f16_to_f32_row_neon(const uint16_t* h, float* out, int n);
void f32_to_f16_row_neon(const float* x, uint16_t* out, int n);
#endif

// The best version for the target this file is compiled for.
inline float dot_f32(const float* w, const float* x, int n) {
#if defined(HEARTH_ISA_AVX2)
    return dot_f32_avx2(w, x, n);
#elif defined(HEARTH_ISA_NEON)
    return dot_f32_neon(w, x, n);
#else
    return dot_f32_scalar(w, x, n);
#endif
}

inline float dot_f16(const uint16_t* w, const float* x, int n) {
#if defined(HEARTH_ISA_AVX2)
    return dot_f16_avx2(w, x, n);
#elif defined(HEARTH_ISA_NEON)
    return dot_f16_neon(w, x, n);
#else
    return dot_f16_scalar(w, x, n);
#endif
}

inline float dot_bf16(const uint16_t* w, const float* x, int n) {
#if defined(HEARTH_ISA_AVX2)
    return dot_bf16_avx2(w, x, n);
#elif defined(HEARTH_ISA_NEON)
    return dot_bf16_neon(w, x, n);
#else
    return dot_bf16_scalar(w, x, n);
#endif
}

// Widens a row of fp16 values to fp32 (weights used by several tokens at once).
inline void f16_to_f32_row(const uint16_t* h, float* out, int n) {
#if defined(HEARTH_ISA_AVX2)
    f16_to_f32_row_avx2(h, out, n);
#elif defined(HEARTH_ISA_NEON)
    f16_to_f32_row_neon(h, out, n);
#else
    f16_to_f32_row_scalar(h, out, n);
#endif
}

// Rounds a row of fp32 values to fp16, to nearest even, as fp32_to_fp16 (the f16 KV cache).
inline void f32_to_f16_row(const float* x, uint16_t* out, int n) {
#if defined(HEARTH_ISA_AVX2)
    f32_to_f16_row_avx2(x, out, n);
#elif defined(HEARTH_ISA_NEON)
    f32_to_f16_row_neon(x, out, n);
#else
    f32_to_f16_row_scalar(x, out, n);
#endif
}

}  // namespace hearth
