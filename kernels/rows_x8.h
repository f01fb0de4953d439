// Rows interleaved by 8: the layout of Q4_0, Q8_0, Q4_K and Q5_K matrices that the matmul kernels of
// every build read (AVX2, NEON with or without dotprod, scalar). GGUF files keep the plain layout;
// the loader repacks at load time (model/model.cpp) where kernel_layout says so, hearth files hold
// it already (docs/format.md describes the layout too).
//
// Why: a single-token kernel on plain rows must gather 8 rows' fp16 scales one 16-bit insert at
// a time and reduce each row's products horizontally. With 8 rows interleaved, one 16-byte load
// holds the 8 rows' scales of a block, and each 32-bit lane of a 32-byte load holds 4 bytes of
// one row, so _mm256_maddubs_epi16 (NEON: vdotq_s32, two 16-byte halves) against 4 broadcast
// activation bytes gives the 8 rows' partial sums in 8 lanes, with no horizontal work at all.
//
// Layout of a matrix of R rows x C columns of a type whose blocks start with h fp16 fields
// (x8_head_bytes = 2h in its row of kTypeTraits: h = 1 for Q4_0 and Q8_0, d; h = 2 for Q4_K and
// Q5_K, d and dmin) followed by U 4-byte units (the rest of the block): the rows are taken in groups of 8;
// a whole group is nb = C / block_size records, record b being block b of the 8 rows (row i):
//   bytes 16f .. 16f+15          fp16 field f (f < h) of row i at 16f + 2i
//   then U chunks of 32 bytes    chunk k holds unit k (block bytes 2h+4k .. 2h+4k+3) of row i at 4i
// A record takes the bytes of 8 plain blocks, so the matrix keeps its size and every group starts
// where its first row started. The R % 8 rows after the last whole group stay plain.
//  - Q4_0 (units = qs[4k .. 4k+3]): the low nibbles of chunk k are elements 4k..4k+3, the high
//    nibbles 16+4k..16+4k+3. Q8_0: chunk k is elements 4k..4k+3.
//  - Q4_K: d at 0..15, dmin at 16..31, scales[0..3] at 32 + 4i (u0 of q4k_unpack_scales),
//    scales[4..7] at 64 + 4i (u1), scales[8..11] at 96 + 4i (u2), then the quants: qs[j] of row
//    i (j = 32c + 4k + m, m < 4) at 128 + 256c + 32k + 4i + m. Its low nibble is element
//    64c + 4k + m (sub-block 2c), its high nibble element 64c + 32 + 4k + m (sub-block 2c + 1):
//    step k of chunk c meets activation bytes 64c + 4k .. +3 and 64c + 32 + 4k .. +3. So the 8
//    rows' packed scales lie one row per 32-bit lane in three vectors, and a few and/shift/or ops
//    unpack all 8 rows' 6-bit scales and mins at once.
//  - Q5_K: Q4_K's record with the 8 rows' qh between the scales and the quants: d, dmin and the
//    scales as Q4_K's, qh[4k .. 4k+3] of row i at 128 + 32k + 4i (k < 8), then qs[j] of row i
//    (j = 32c + 4k + m) at 384 + 256c + 32k + 4i + m. Step k of chunk c meets the same
//    activation bytes as Q4_K's; bit 2c of qh byte 4k + m of the row's lane is bit 4 of its low
//    nibble's quant, bit 2c + 1 of its high nibble's: the qh vector at 128 + 32k serves step k
//    of every chunk.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/quant_types.h"

namespace hearth {

// Where the fields of an interleaved Q4_K or Q5_K record lie (above): the one place the kernels
// of every ISA take them from.
template <typename WBlock>
struct KRecordX8 {
    static constexpr bool kFifthBit = std::is_same<WBlock, block_q5_K>::value;
    static constexpr size_t kBytes = 8 * sizeof(WBlock);  // 1152 (Q4_K), 1408 (Q5_K)
    static constexpr size_t kScalesOffset = 32, kQhOffset = 128, kQsOffset = kFifthBit ? 384 : 128;
};

// The layout the matmul kernels read for weights of `type`: rows_x8 where the kernel table has
// interleaved rows for it (Q4_0, Q8_0, Q4_K and Q5_K, on every build: their scalar rows are built
// everywhere); rows for every other type.
Layout kernel_layout(uint32_t type);

// A rows x cols matrix of `type` (one with an interleaved layout) from the plain layout at src to
// the interleaved one at dst, and back. src and dst do not overlap; cols is a multiple of the
// block size. Threaded with OpenMP over groups.
void repack_rows_to_x8(uint32_t type, const void* src, void* dst, int64_t rows, int64_t cols);
void repack_x8_to_rows(uint32_t type, const void* src, void* dst, int64_t rows, int64_t cols);

// Row `row` of a rows x cols matrix of `type` in the interleaved layout, as fp32 (quantize reads
// rows of a stored matrix this way to convert it to another type).
void dequantize_x8_row(uint32_t type, const void* w, int64_t rows, int64_t cols, int64_t row, float* out);

// One record (block b of a whole group's 8 rows) of a matrix of `type` in the interleaved layout,
// to the 8 plain blocks it holds, row i's at blocks + i * block bytes.
void x8_record_to_blocks(uint32_t type, const void* rec, void* blocks);

}  // namespace hearth
