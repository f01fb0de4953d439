// Q4_K with rows interleaved by 8 (TYPE_Q4_K_X8, "q4_Kx8"): the layout of Q4_K matrices that
// the matmul kernels of every build read (AVX2, NEON, scalar). Files keep GGUF's Q4_K layout
// (kernels/quant_types.h); the loader repacks at load time with repack_rows_to_x8
// (kernels/rows_x8.h).
//
// Why: a single-token kernel on plain Q4_K rows reduces each row's products horizontally and
// unpacks each row's 12 packed scale bytes on its own. With 8 rows interleaved, each 32-bit lane
// of a 32-byte load holds 4 quant bytes of one row, so _mm256_maddubs_epi16 against 4 broadcast
// activation bytes gives the 8 rows' partial sums in 8 lanes; and the 8 rows' packed scales lie
// one row per 32-bit lane in three vectors, so a few and/shift/or ops unpack all 8 rows' 6-bit
// scales and mins at once. No horizontal work at all.
//
// Layout of a matrix of R rows x C columns (nb = C / 256 super-blocks per row): the rows are
// taken in groups of 8; a whole group is nb records of 1152 bytes (8 * 144, the bytes of 8
// plain super-blocks), record b holding super-block b of the group's rows 0..7 (row i below):
//   bytes    0..15    fp16 d of row i at 2i
//   bytes   16..31    fp16 dmin of row i at 16 + 2i
//   bytes   32..63    scales[0..3]  of row i at  32 + 4i   (u0 of q4k_unpack_scales)
//   bytes   64..95    scales[4..7]  of row i at  64 + 4i   (u1)
//   bytes   96..127   scales[8..11] of row i at  96 + 4i   (u2)
//   bytes  128..1151  the quants: for chunk c (0..3) and step k (0..7), 32 bytes at
//                     128 + 256c + 32k hold qs[32c + 4k .. 32c + 4k + 3] of row i at 4i.
// So qs[j] of row i (j = 32c + 4k + m, m < 4) is at 128 + 256c + 32k + 4i + m. Its low nibble is
// element 64c + 4k + m (sub-block 2c), its high nibble element 64c + 32 + 4k + m (sub-block
// 2c + 1): step k of chunk c meets activation bytes 64c + 4k .. +3 and 64c + 32 + 4k .. +3.
// The R % 8 rows after the last whole group stay in plain Q4_K. A group of 8 rows takes the
// bytes of 8 plain rows, so the matrix keeps its size (generation reads every weight byte once
// and is bound by memory bandwidth) and every group starts where its first row started.
#pragma once
#include <cstdint>

#include "kernels/quant.h"

// TYPE_Q4_K_X8 weights x Q8_K activations, any number of tokens: the contract of matmul_*_rows
// (kernels/quant.h) plus: r0 is a multiple of 8, and so is r1 unless it is the matrix's row count
// (the rows after the last whole group are plain Q4_K). The scalar twin (kernels/quant_ref.cpp),
// built everywhere, computes exactly what matmul_q4_k_rows_scalar computes on the plain layout.
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_rows_scalar)
#if defined(HEARTH_ISA_AVX2)
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_rows_avx2)  // kernels/q4_kx8_avx2.cpp
#elif defined(HEARTH_ISA_NEON)
HEARTH_DECLARE_MATMUL(matmul_q4_kx8_rows_neon)  // kernels/rows_x8_neon.cpp
#endif
