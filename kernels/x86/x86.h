// The x86 kernels (kernels/x86/*.cpp): each is defined only where its ISA is built
// (HEARTH_ISA_AVX2, HEARTH_ISA_AVX512, HEARTH_ISA_AMX: kernels/isa.h) and reached through the kernel table
// (kernels/table.cpp), which says from how many tokens each applies. The contract of every matmul
// here is matmul_rows_fn's (kernels/quant.h).
#pragma once
#include "kernels/isa.h"
#include "kernels/quant.h"

namespace hearth {

// AVX2 + FMA + F16C (with VNNI where built: x86/avx2_util.h).
void quantize_row_q8_0_avx2(const float* x, void* y, int64_t n);  // bytes of the scalar reference
void quantize_row_q8_k_avx2(const float* x, void* y, int64_t n);
HEARTH_DECLARE_MATMUL(matmul_f32_rows_avx2)  // kernels/matmul_float.cpp: a row x tokens, summed as its dot
HEARTH_DECLARE_MATMUL(matmul_f16_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_bf16_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_f32_tiles_avx2)  // 3 rows x 4 tokens per step
HEARTH_DECLARE_MATMUL(matmul_f16_tiles_avx2)
HEARTH_DECLARE_MATMUL(matmul_bf16_tiles_avx2)
// Tiles of a few rows x up to 8 tokens on plain rows (x86/quant_avx2.cpp).
HEARTH_DECLARE_MATMUL(matmul_q8_0_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q4_0_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q4_1_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q5_0_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q5_1_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_iq4_nl_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q2_k_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q3_k_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q4_k_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_iq4_xs_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q5_k_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q6_k_rows_avx2)
// Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL rows read 4 at a time for one token (x86/gemv_avx2.cpp); more
// tokens, one after another.
HEARTH_DECLARE_MATMUL(matmul_q4_0_gemv_avx2)
HEARTH_DECLARE_MATMUL(matmul_q4_1_gemv_avx2)
HEARTH_DECLARE_MATMUL(matmul_q5_0_gemv_avx2)
HEARTH_DECLARE_MATMUL(matmul_q5_1_gemv_avx2)
HEARTH_DECLARE_MATMUL(matmul_iq4_nl_gemv_avx2)  // Q4_0's nibbles through the IQ4_NL grid
// GEMMs for prompt processing: 8 weight rows packed into a panel per chunk of blocks, tiles of
// tokens against it (x86/gemm_avx2.cpp, gemm_k_avx2.cpp). The x8 ones pack from the interleaved
// records (kernels/rows_x8.h).
HEARTH_DECLARE_MATMUL(matmul_q4_0_gemm_avx2)
HEARTH_DECLARE_MATMUL(matmul_q8_0_gemm_avx2)
HEARTH_DECLARE_MATMUL(matmul_q5_0_gemm_avx2)  // packed as Q8_0
HEARTH_DECLARE_MATMUL(matmul_q4_1_gemm_avx2)  // packed as Q8_0, with block offsets
HEARTH_DECLARE_MATMUL(matmul_q5_1_gemm_avx2)
HEARTH_DECLARE_MATMUL(matmul_iq4_nl_gemm_avx2)
HEARTH_DECLARE_MATMUL(matmul_iq4_xs_gemm_avx2)  // x Q8_K, packed as IQ4_NL
HEARTH_DECLARE_MATMUL(matmul_q4_k_gemm_avx2)
HEARTH_DECLARE_MATMUL(matmul_q5_k_gemm_avx2)
HEARTH_DECLARE_MATMUL(matmul_q6_k_gemm_avx2)
HEARTH_DECLARE_MATMUL(matmul_q3_k_gemm_avx2)  // in Q6_K's panel
HEARTH_DECLARE_MATMUL(matmul_q2_k_gemm_avx2)  // in Q6_K's panel, with the mins
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_gemm_avx2)
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_gemm_avx2)
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_gemm_avx2)
HEARTH_DECLARE_MATMUL(matmul_q5_kx8_gemm_avx2)
// Interleaved rows, a group's 8 rows in the 8 lanes (x86/rows_x8_avx2.cpp, q4_kx8_avx2.cpp).
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_rows_prefetch8k_avx2)  // prefetching 8 KB ahead (kernels/table.cpp: Zen 5)
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q5_kx8_rows_avx2)
// A few tokens, two to a vector, on interleaved Q4_0 (x86/few_q4_0x8_avx2.cpp); built without VNNI only.
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_few_avx2)

// The Q8_0 activation quantizer on zmm, 16 blocks at a time (x86/quant_avx512.cpp): the bytes of the
// scalar reference.
void quantize_row_q8_0_avx512(const float* x, void* y, int64_t n);

// AVX-512 VNNI on zmm (x86/gemm_avx512.cpp): 16 rows (two interleaved groups; Q6_K, Q3_K, Q2_K:
// plain rows, any range) per panel.
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_gemm_avx512)
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_gemm_avx512)
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_gemm_avx512)
HEARTH_DECLARE_MATMUL(matmul_q5_kx8_gemm_avx512)
HEARTH_DECLARE_MATMUL(matmul_q6_k_gemm_avx512)
HEARTH_DECLARE_MATMUL(matmul_q3_k_gemm_avx512)  // in Q6_K's panel
HEARTH_DECLARE_MATMUL(matmul_q2_k_gemm_avx512)  // in Q6_K's panel, with the mins
// Few tokens (generation, small batches) on interleaved Q4_0 / Q8_0 (x86/gemv_avx512.cpp): two
// groups per pass, each record read once per block of up to 8 tokens, nothing packed.
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_few_avx512)
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_few_avx512)
// The same kernels prefetching into L2, not L1 (kernels/prefetch.h): for AMD Zen 4.
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_few_l2_avx512)
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_few_l2_avx512)
// Few tokens on plain Q6_K rows (x86/gemv_q6_k_avx512.cpp): a row at a time, each super-block
// decoded once per block of up to 8 tokens.
HEARTH_DECLARE_MATMUL(matmul_q6_k_few_avx512)
HEARTH_DECLARE_MATMUL(matmul_q6_k_few_l2_avx512)  // prefetching into L2, for Zen 4
// The same for interleaved Q4_K x Q8_K (x86/gemv_q4_k_avx512.cpp): sub-block scales applied per
// token and chunk, the mins by their activation sums.
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_few_avx512)
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_few_l2_avx512)  // prefetching into L2, for Zen 4
// Interleaved Q5_K: Q4_K's with the fifth bit of each quant from the record's qh.
HEARTH_DECLARE_MATMUL(matmul_q5_kx8_few_avx512)
HEARTH_DECLARE_MATMUL(matmul_q5_kx8_few_l2_avx512)

// AMX tiles, TDPBSSD (x86/gemm_amx.cpp; HEARTH_ISA_AMX): 16 tokens x 16 rows (two interleaved
// groups) per tile, the float side on zmm. Each call configures the tiles on its own thread.
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_gemm_amx)
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_gemm_amx)
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_gemm_amx)

}  // namespace hearth
