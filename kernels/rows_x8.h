// Rows interleaved by 8 (TYPE_Q4_0_X8, TYPE_Q8_0_X8; TYPE_Q4_K_X8 in kernels/q4_kx8.h): the
// layout of Q4_0, Q8_0 (and Q4_K) matrices that the matmul kernels of every build read (AVX2,
// NEON with or without dotprod, scalar). Files keep GGUF's layout; the loader repacks at load
// time (model/model.cpp) to x8_type_for(type); docs/format.md describes the layout too.
//
// Why: a single-token kernel on plain rows must gather 8 rows' fp16 scales one 16-bit insert at
// a time and reduce each row's products horizontally. With 8 rows interleaved, one 16-byte load
// holds the 8 rows' scales of a block, and each 32-bit lane of a 32-byte load holds 4 bytes of
// one row, so _mm256_maddubs_epi16 (NEON: vdotq_s32, two 16-byte halves) against 4 broadcast
// activation bytes gives the 8 rows' partial sums in 8 lanes, with no horizontal work at all.
//
// Layout of a matrix of R rows x C columns (nb = C / 32 blocks per row; a block is an fp16
// scale d and Q quant bytes qs, Q = 16 for Q4_0, 32 for Q8_0): the rows are taken in groups of
// 8; a whole group is nb records of 8 * (2 + Q) bytes, record b being block b of the 8 rows:
//   bytes 0..15            the 8 rows' scales d (row i at 2i)
//   then Q/4 chunks of 32  chunk k holds qs[4k .. 4k+3] of row i at 16 + 32k + 4i
// For Q4_0 the low nibbles of chunk k are elements 4k..4k+3 and the high nibbles elements
// 16+4k..16+4k+3; for Q8_0 chunk k is elements 4k..4k+3. The R % 8 rows after the last whole
// group stay plain. A group takes the bytes of 8 plain rows, so the matrix keeps its size and
// every group starts where its first row started.
#pragma once
#include <cstdint>

#include "kernels/quant.h"

// The layout the matmul kernels read for weights of `type`: rows_x8 for Q4_0, Q8_0 and Q4_K, on
// every build; rows for every other type.
Layout kernel_layout(uint32_t type);

// The kernels' internal id of an interleaved type: TYPE_Q4_0_X8, TYPE_Q8_0_X8 and TYPE_Q4_K_X8
// (kernels/q4_kx8.h) for Q4_0, Q8_0 and Q4_K; 0 for any other type.
uint32_t x8_type_for(uint32_t type);

// The best matmul kernel of this build (AVX2, else NEON, else scalar) for an interleaved type,
// any number of tokens; nullptr for any other type.
matmul_rows_fn x8_matmul_kernel(uint32_t type);

// A rows x cols matrix of `type` (Q4_0, Q8_0 or Q4_K) from the plain layout at src to the
// interleaved one at dst, and back. src and dst do not overlap; cols is a multiple of the
// block size. Threaded with OpenMP over groups.
void repack_rows_to_x8(uint32_t type, const void* src, void* dst, int64_t rows, int64_t cols);
void repack_x8_to_rows(uint32_t type, const void* src, void* dst, int64_t rows, int64_t cols);

// Row `row` of a rows x cols matrix of `type` (Q4_0, Q8_0 or Q4_K) in the interleaved layout, as
// fp32 (quantize reads rows of a stored matrix this way to convert it to another type).
void dequantize_x8_row(uint32_t type, const void* w, int64_t rows, int64_t cols, int64_t row, float* out);

// One record (block b of a whole group's 8 rows) of a matrix of `type` (Q4_0, Q8_0 or Q4_K) in
// the interleaved layout, to the 8 plain blocks it holds, row i's at blocks + i * block bytes.
void x8_record_to_blocks(uint32_t type, const void* rec, void* blocks);

// Matmul kernels for the interleaved types, any number of tokens: the contract of matmul_*_rows
// (kernels/quant.h) plus: r0 is a multiple of 8, and so is r1 unless it is the matrix's row
// count (the rows after the last whole group are plain and go to the plain kernels).
// The scalar twins (kernels/quant_ref.cpp), built everywhere, compute exactly what
// matmul_q4_0_rows_scalar / matmul_q8_0_rows_scalar compute on the plain layout, bit for bit.
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_rows_scalar)
#if defined(HEARTH_ISA_AVX2)
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_rows_avx2)  // kernels/rows_x8_avx2.cpp
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_rows_avx2)
#elif defined(HEARTH_ISA_NEON)
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_rows_neon)  // kernels/rows_x8_neon.cpp
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_rows_neon)
#if defined(HEARTH_ISA_I8MM)
// The i8mm (SMMLA) GEMM (kernels/gemm_neon_i8mm.cpp), any number of tokens; the NEON kernels above
// call it from i8mm_gemm_min_tokens tokens on (a guess: not measured, there is no ARM CPU here).
constexpr int i8mm_gemm_min_tokens = 4;
HEARTH_DECLARE_MATMUL(matmul_q4_0x8_gemm_i8mm)
HEARTH_DECLARE_MATMUL(matmul_q8_0x8_gemm_i8mm)
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_gemm_i8mm)  // TYPE_Q4_K_X8 (kernels/q4_kx8.h) x Q8_K
#endif
#endif
