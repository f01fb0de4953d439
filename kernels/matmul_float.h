// Multi-token matmul for fp32 and fp16 weights (prompt processing):
//   out[t * out_stride + r] = dot(W row r, x + t * cols)   for r in [r0, r1), t < n_tokens
// Single-threaded over the given rows; kernels/matmul.cpp splits rows across threads.
// The AVX2 version computes 3 rows × 4 tokens per step from registers, so each weight
// vector is loaded once for four tokens; the scalar twin is the plain double loop.
#pragma once

#include "kernels/isa.h"
#include <cstdint>

void matmul_f32_rows_scalar(const float* w, int cols, const float* x, int n_tokens, float* out, int out_stride, int r0, int r1);
void matmul_f16_rows_scalar(const uint16_t* w, int cols, const float* x, int n_tokens, float* out, int out_stride, int r0, int r1);
#if defined(HEARTH_ISA_AVX2)
void matmul_f32_rows_avx2(const float* w, int cols, const float* x, int n_tokens, float* out, int out_stride, int r0, int r1);
void matmul_f16_rows_avx2(const uint16_t* w, int cols, const float* x, int n_tokens, float* out, int out_stride, int r0, int r1);
#endif

inline void matmul_f32_rows(const float* w, int cols, const float* x, int n_tokens, float* out, int out_stride, int r0, int r1) {
#if defined(HEARTH_ISA_AVX2)
    matmul_f32_rows_avx2(w, cols, x, n_tokens, out, out_stride, r0, r1);
#else
    matmul_f32_rows_scalar(w, cols, x, n_tokens, out, out_stride, r0, r1);
#endif
}

inline void matmul_f16_rows(const uint16_t* w, int cols, const float* x, int n_tokens, float* out, int out_stride, int r0, int r1) {
#if defined(HEARTH_ISA_AVX2)
    matmul_f16_rows_avx2(w, cols, x, n_tokens, out, out_stride, r0, r1);
#else
    matmul_f16_rows_scalar(w, cols, x, n_tokens, out, out_stride, r0, r1);
#endif
}
