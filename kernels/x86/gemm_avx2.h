// GEMM kernels for prompt processing: many activation rows x a quantized weight matrix (AVX2).
//
// Same contract as matmul_*_rows (kernels/quant.h):
//   out[t*out_stride + r] = dot(W row r, A row t)   for r in [r0, r1), t in [0, n_tokens)
// single-threaded (the caller splits rows), A = n_tokens rows of block_q8_0 (block_q8_K for the
// K types); only those out entries are written. Any n_tokens >= 1 and any row range work; they
// pay off from gemm_min_tokens(type) tokens on (below that, the tiled matmul_*_rows kernels are
// faster: packing 8 rows costs more than the few tokens gain from it).
//
// Built only with AVX2 + FMA + F16C; on other targets this header declares nothing.
#pragma once
#include <cstddef>

#include "kernels/isa.h"
#include "kernels/quant_types.h"

#if defined(HEARTH_ISA_AVX2)

// Break-even batch sizes, from tools/bench_kernels (Q4_K/Q6_K pack more per row than Q4_0/Q8_0).
inline int gemm_min_tokens(uint32_t type) {
    switch (type) {
        case TYPE_Q4_0:
        case TYPE_Q8_0: return 4;
        case TYPE_Q4_K: return 8;
        case TYPE_Q6_K: return 16;
        default: return 0;  // no GEMM for this type
    }
}

void matmul_q4_0_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                           int n_tokens, float* out, int out_stride, int r0, int r1);
// TYPE_Q4_0_X8 / TYPE_Q8_0_X8 weights (kernels/rows_x8.h); [r0, r1) must be whole groups of 8 rows.
void matmul_q4_0x8_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                             int n_tokens, float* out, int out_stride, int r0, int r1);
void matmul_q8_0x8_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                             int n_tokens, float* out, int out_stride, int r0, int r1);
void matmul_q8_0_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                           int n_tokens, float* out, int out_stride, int r0, int r1);
// Q4_K / Q6_K weights x Q8_K activations (kernels/gemm_k_avx2.cpp).
void matmul_q4_k_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                           int n_tokens, float* out, int out_stride, int r0, int r1);
// TYPE_Q4_K_X8 weights (kernels/q4_kx8.h); [r0, r1) must be whole groups of 8 rows.
void matmul_q4_kx8_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                             int n_tokens, float* out, int out_stride, int r0, int r1);
void matmul_q6_k_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                           int n_tokens, float* out, int out_stride, int r0, int r1);
// AVX-512 VNNI on zmm (kernels/gemm_avx512.cpp): TYPE_Q4_0_X8 / TYPE_Q8_0_X8 / TYPE_Q4_K_X8 weights, 16 rows (two
// interleaved groups) per tile; [r0, r1) must be whole groups of 8 rows. Chosen at compile time
// (-march=native on a CPU with AVX512F/BW/VL/VNNI); the ymm tiles above stay for other CPUs and for
// token counts below gemm_avx512_min_tokens.
#if defined(HEARTH_ISA_AVX512)
constexpr int gemm_avx512_min_tokens = 8;
void matmul_q4_0x8_gemm_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                               int n_tokens, float* out, int out_stride, int r0, int r1);
void matmul_q8_0x8_gemm_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                               int n_tokens, float* out, int out_stride, int r0, int r1);
void matmul_q4_kx8_gemm_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                               int n_tokens, float* out, int out_stride, int r0, int r1);
// Q6_K, plain rows: any [r0, r1), 16 rows per tile (the last panel's missing rows are not stored).
void matmul_q6_k_gemm_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                             int n_tokens, float* out, int out_stride, int r0, int r1);
#endif
#endif
