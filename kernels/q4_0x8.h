// Q4_0 with rows interleaved by 8 (TYPE_Q4_0_X8): the in-memory layout of Q4_0 matrices for
// the AVX2 kernels. Files keep GGUF's Q4_0 layout; the loader repacks at load time
// (model/model.cpp) when q4_0x8_kernels_built(); docs/format.md describes the layout too.
//
// Why: a single-token kernel on plain Q4_0 rows must gather 8 rows' fp16 scales one 16-bit
// insert at a time and reduce each row's products horizontally. With 8 rows interleaved, one
// 16-byte load holds the 8 rows' scales of a block, and each 32-bit lane of a 32-byte load
// holds 4 bytes of one row, so _mm256_maddubs_epi16 against 4 broadcast activation bytes gives
// the 8 rows' partial sums in 8 lanes, with no horizontal work at all.
//
// Layout of a matrix of R rows x C columns (nb = C / 32 blocks per row): the rows are taken in
// groups of 8; a whole group is nb records of 144 bytes, record b being block b of the 8 rows:
//   bytes  0..15   the 8 rows' fp16 scales d (row i at 2i)
//   bytes 16..143  4 chunks of 32 bytes; chunk k holds qs[4k .. 4k+3] of row i at 16 + 32k + 4i
//                  (low nibbles: elements 4k..4k+3, high nibbles: elements 16+4k..16+4k+3)
// The R % 8 rows after the last whole group stay in plain Q4_0. A group of 8 rows takes the
// bytes of 8 plain rows, so the matrix keeps its size and every group starts where its first
// row started.
#pragma once
#include <cstdint>

// A rows x cols matrix from plain Q4_0 at src to TYPE_Q4_0_X8 at dst, and back (src and dst
// do not overlap; cols is a multiple of 32). Threaded with OpenMP over groups.
void repack_q4_0_to_x8(const void* src, void* dst, int64_t rows, int64_t cols);
void repack_x8_to_q4_0(const void* src, void* dst, int64_t rows, int64_t cols);

// True when this build has kernels for TYPE_Q4_0_X8 (AVX2); elsewhere the loader leaves Q4_0 as it is.
bool q4_0x8_kernels_built();
