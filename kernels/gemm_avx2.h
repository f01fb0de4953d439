// GEMM kernels for prompt processing: many activation rows x a quantized weight matrix (AVX2).
//
// Same contract as matmul_*_rows (kernels/quant.h):
//   out[t*out_stride + r] = dot(W row r, A row t)   for r in [r0, r1), t in [0, n_tokens)
// single-threaded (the caller splits rows), A = n_tokens rows of block_q8_0; only those out
// entries are written. Any n_tokens >= 1 and any row range work; they pay off from
// kGemmMinTokens tokens on (below that, the tiled matmul_*_rows kernels are faster).
//
// Built only with AVX2 + FMA + F16C; on other targets this header declares nothing.
#pragma once
#include <cstddef>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define HEARTH_GEMM_AVX2 1

constexpr int kGemmMinTokens = 4;

void matmul_q4_0_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                           int n_tokens, float* out, int out_stride, int r0, int r1);
void matmul_q8_0_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                           int n_tokens, float* out, int out_stride, int r0, int r1);
#endif
