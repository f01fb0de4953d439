// The scalar references of the matmul kernels (kernels/ref/quant_ref.cpp, matmul_float.cpp): built
// everywhere, the kernel table's scalar rows, and what the tests hold every other row to.
//  - Plain rows: each weight block decoded once per tile of up to 8 tokens; per token the float
//    sums run in the order of the scalar dot products below.
//  - Interleaved rows (the "x8" twins): each record gathered into the 8 plain blocks it holds, then
//    exactly what the plain kernel does, so they give the plain kernel's bits.
#pragma once
#include "kernels/quant.h"

namespace hearth {

HEARTH_DECLARE_MATMUL(matmul_f32_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_f16_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_bf16_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q8_0_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q4_0_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q4_1_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q5_0_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q5_1_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_iq4_nl_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q2_k_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q3_k_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q4_k_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_iq4_xs_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q5_k_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q6_k_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q5_kx8_rows_scalar)

// Dot product of one weight row with one quantized activation row (n elements): the per-token
// order of the sums the scalar matmul keeps, and the tests' reference for it.
float vec_dot_q8_0_q8_0_scalar(int n, const void* w, const void* a);
float vec_dot_q4_0_q8_0_scalar(int n, const void* w, const void* a);
float vec_dot_q4_k_q8_k_scalar(int n, const void* w, const void* a);
float vec_dot_q6_k_q8_k_scalar(int n, const void* w, const void* a);

}  // namespace hearth
