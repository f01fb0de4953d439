// The AArch64 kernels (kernels/arm/*.cpp): each is defined only where its ISA is built
// (HEARTH_ISA_NEON, with SDOT inside where HEARTH_ISA_DOTPROD; HEARTH_ISA_I8MM: kernels/isa.h)
// and reached through the kernel table (kernels/table.cpp), which says from how many tokens each
// applies. The contract of every matmul here is matmul_rows_fn's (kernels/quant.h).
#pragma once
#include "kernels/isa.h"
#include "kernels/quant.h"

namespace hearth {

// NEON (arm/quant_neon.cpp): activation quantizers (bytes of the scalar references) and tiles of
// a few plain rows x up to 8 tokens.
void quantize_row_q8_0_neon(const float* x, void* y, int64_t n);
void quantize_row_q8_k_neon(const float* x, void* y, int64_t n);
HEARTH_DECLARE_MATMUL(matmul_q8_0_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q4_0_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q4_1_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q5_0_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q5_1_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_iq4_nl_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q2_k_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q3_k_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q4_k_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_iq4_xs_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q5_k_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q6_k_rows_neon)
// Interleaved rows, a group's 8 rows in the lanes of two registers (arm/rows_x8_neon.cpp,
// arm/q4_kx8_neon.cpp).
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q5_kx8_rows_neon)

// i8mm: the SMMLA GEMMs of interleaved rows (arm/gemm_neon_i8mm.cpp).
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_gemm_i8mm)
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_gemm_i8mm)
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_gemm_i8mm)

}  // namespace hearth
