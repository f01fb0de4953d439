// GEMM of rows interleaved by 8 (kernels/rows_x8.h: Q4_0, Q8_0 x Q8_0 activations; Q4_K x Q8_K),
// AArch64 NEON with the int8 matrix multiply extension (FEAT_I8MM: SMMLA, vmmlaq_s32), for prompt
// processing: the kernel table picks it from a few tokens on (kernels/table.cpp).
//
// SMMLA multiplies a 2x8 int8 matrix (two rows of 8 bytes) by the transpose of another one and
// adds the 2x2 int32 result to an accumulator: with the first operand 8 quants of 2 weight rows
// and the second the 8 matching activation quants of 2 tokens, one instruction gives 4 dots of
// 8 elements, lanes [r0 t0, r0 t1, r1 t0, r1 t1]. A tile is a group's 8 rows (4 row pairs) x 4
// tokens (2 token pairs): 8 int32x4 sums per block, 32 SMMLAs for its 4 slices of 8 elements.
//
// The x8 record keeps 4 bytes per row per step; SMMLA wants 8 consecutive elements per row. So
// each call first packs a chunk of a group's records (kChunkBlocks blocks) into a panel: per block,
// 16 registers [slice s][row pair p] of signed int8 weights, and the 8 rows' scales as floats.
// Zipping the 32-bit lanes of steps 2s and 2s+1 gives exactly that (vzip1q / vzip2q: rows 0, 1
// and rows 2, 3 of a 16-byte half). Q4_0 nibbles are unpacked to -8..7 here (SMMLA is signed x
// signed), so the tiles need no offset term and both types share them. The panel (9 KB) stays in
// L1 while every token tile of the call reads it.
//
// Q4_K: the same per 32-element sub-block (its 4 slices, nibbles 0..15 as they are), the sums
// times the rows' 6-bit scales into int32, the mins times the tokens' sub-block sums likewise,
// both to floats once per super-block. Its panel holds 4 super-blocks (12 KB): per super-block the
// weights [sub-block][slice][row pair] and the scales and mins spread to SMMLA's lanes.
//
// A last tile of fewer than 4 tokens repeats its last token and stores only the real ones. Per
// block, the int32 sums are exact; they are converted to float and added times the row scale x the
// token scale, so results equal the scalar twin (kernels/ref/quant_ref.cpp) within the float rounding
// of that running sum (tests/kernels/test_x8_kernels.cpp).
//
// Speed: not measured. This machine has no ARM CPU, and the tests run under qemu-user, whose
// timings say nothing about hardware; whether this beats the dotprod tiles of rows_x8_neon.cpp,
// and from how many tokens, is still to be measured on an i8mm CPU (Graviton 3, Apple M2+, ...).
#include "kernels/arm/arm.h"

#if defined(HEARTH_ISA_NEON) && defined(HEARTH_ISA_I8MM)

#include "kernels/arm/rows_x8_neon.h"

#include <arm_neon.h>

#include <algorithm>
#include <cstring>

namespace hearth {

namespace {

// Blocks per panel: 32 * 288 bytes = 9 KB, in L1 with the activations; a panel's sums are added to
// the output after the first, the partial sums of the rows kernel (arm/rows_x8_neon.h), so that a
// batch here gives each token the bits it gets alone there.
constexpr int kChunkBlocks = x8_neon::kX8SumChunkBlocks;
constexpr int kTileTokens = 4;  // 2 token pairs

// One block of a group in SMMLA order: w[s][p] holds elements 8s..8s+7 of rows 2p and 2p+1
// (8 bytes each), signed; d the 8 rows' scales.
struct PanelBlock {
    int8x16_t w[4][4];
    float d[8];
};

// Rows 0..3 / 4..7 of two 16-byte halves of steps k and k+1 (4 bytes per row each) to row pairs:
// elements 4k..4k+7 of rows (0, 1) and (2, 3) of that half.
inline void zip_steps(int8x16_t step_k, int8x16_t step_k1, int8x16_t& pair_lo, int8x16_t& pair_hi) {
    const int32x4_t a = vreinterpretq_s32_s8(step_k), b = vreinterpretq_s32_s8(step_k1);
    pair_lo = vreinterpretq_s8_s32(vzip1q_s32(a, b));
    pair_hi = vreinterpretq_s8_s32(vzip2q_s32(a, b));
}

inline void scales_to_float(const uint8_t* rec, float* d) {
    vst1q_f32(d, vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(rec))));
    vst1q_f32(d + 4, vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(rec + 8))));
}

// A Q8_0 record (8 steps of 32 bytes: step k = elements 4k..4k+3, row i at 4i) to a panel block.
void pack_q8_0(const uint8_t* rec, PanelBlock& pb) {
    scales_to_float(rec, pb.d);
    const int8_t* q = reinterpret_cast<const int8_t*>(rec + 16);
    for (int s = 0; s < 4; ++s) {
        const int8_t* k0 = q + 64 * s;                                            // steps 2s and 2s + 1
        zip_steps(vld1q_s8(k0), vld1q_s8(k0 + 32), pb.w[s][0], pb.w[s][1]);       // rows 0..3
        zip_steps(vld1q_s8(k0 + 16), vld1q_s8(k0 + 48), pb.w[s][2], pb.w[s][3]);  // rows 4..7
    }
}

// A Q4_0 record (4 steps of 32 bytes: low nibbles of step k = elements 4k..4k+3, high nibbles
// 16 + 4k..) to a panel block, the nibbles minus 8.
void pack_q4_0(const uint8_t* rec, PanelBlock& pb) {
    scales_to_float(rec, pb.d);
    const uint8_t* q = rec + 16;
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    const int8x16_t eight = vdupq_n_s8(8);
    for (int s = 0; s < 2; ++s) {      // steps 2s, 2s + 1: slice s (low nibbles), slice 2 + s (high)
        for (int h = 0; h < 2; ++h) {  // rows 4h..4h+3
            const uint8x16_t u0 = vld1q_u8(q + 64 * s + 16 * h), u1 = vld1q_u8(q + 64 * s + 32 + 16 * h);
            const int8x16_t lo0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(u0, m4)), eight);
            const int8x16_t lo1 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(u1, m4)), eight);
            const int8x16_t hi0 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(u0, 4)), eight);
            const int8x16_t hi1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(u1, 4)), eight);
            zip_steps(lo0, lo1, pb.w[s][2 * h], pb.w[s][2 * h + 1]);
            zip_steps(hi0, hi1, pb.w[2 + s][2 * h], pb.w[2 + s][2 * h + 1]);
        }
    }
}

// Q4_0 / Q8_0: 8 rows x tokens t[0..3] (their activation rows at the panel's first block) over
// the n blocks of the panel, added to acc[p][q] (rows 2p, 2p+1 x tokens 2q, 2q+1, lanes
// [r0 t0, r0 t1, r1 t0, r1 t1]).
void accumulate(const PanelBlock* panel, int n, const block_q8_0* const t[kTileTokens], float32x4_t (&acc)[4][2]) {
    for (int b = 0; b < n; ++b) {
        const PanelBlock& pb = panel[b];
        int32x4_t sum[4][2];
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) sum[p][0] = sum[p][1] = vdupq_n_s32(0);
            // The loops over registers are unrolled so that sum[][] and acc[][] stay in registers
            // (GCC 12 -O2 otherwise keeps the s and p loops and indexes them through the stack).
#pragma GCC unroll 4
        for (int s = 0; s < 4; ++s) {
            const int8x16_t x[2] = {vcombine_s8(vld1_s8(t[0][b].qs + 8 * s), vld1_s8(t[1][b].qs + 8 * s)),
                                    vcombine_s8(vld1_s8(t[2][b].qs + 8 * s), vld1_s8(t[3][b].qs + 8 * s))};
#pragma GCC unroll 4
            for (int p = 0; p < 4; ++p)
#pragma GCC unroll 2
                for (int q = 0; q < 2; ++q) sum[p][q] = vmmlaq_s32(sum[p][q], pb.w[s][p], x[q]);
            // A scheduling barrier (as step_barrier in rows_x8_neon.cpp): without it GCC loads the
            // weights of all 4 slices first and spills the float sums acc[][] every block.
            asm volatile("");
        }
        // Lane scales: row scale of [r0, r0, r1, r1] times token scale of [t0, t1, t0, t1].
        // The 4 token scales converted together (FCVTL), not one software fp16_to_fp32 each.
        const uint16x4_t dt16 = {t[0][b].d, t[1][b].d, t[2][b].d, t[3][b].d};
        const float32x4_t dt4 = vcvt_f32_f16(vreinterpret_f16_u16(dt16));
        const float32x4_t dt[2] = {vcombine_f32(vget_low_f32(dt4), vget_low_f32(dt4)),
                                   vcombine_f32(vget_high_f32(dt4), vget_high_f32(dt4))};
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
            const float32x4_t dr = float32x4_t{pb.d[2 * p], pb.d[2 * p], pb.d[2 * p + 1], pb.d[2 * p + 1]};
#pragma GCC unroll 2
            for (int q = 0; q < 2; ++q) acc[p][q] = vfmaq_f32(acc[p][q], vcvtq_f32_s32(sum[p][q]), vmulq_f32(dr, dt[q]));
        }
    }
}

// Q4_K (kernels/rows_x8.h) x Q8_K: one super-block of a group in SMMLA order. w[j][s][p]: elements
// 8s..8s+7 of sub-block j of rows 2p, 2p+1 (nibbles 0..15, signed int8 as SMMLA wants them);
// sc[j][p] and mn[j][p]: the 6-bit scale / min of sub-block j of rows [2p, 2p, 2p+1, 2p+1], the
// lanes of an SMMLA result; d and dmin the rows' super-block scales.
struct PanelSuperBlock {
    int8x16_t w[8][4][4];
    int32x4_t sc[8][4], mn[8][4];
    float d[8], dmin[8];
};

constexpr int kChunkSuperBlocks = x8_neon::kX8KSumChunkSuperBlocks;  // 4 * 3.1 KB: in L1 with the activations

void pack_q4_k(const uint8_t* rec, PanelSuperBlock& pb) {
    scales_to_float(rec, pb.d);
    scales_to_float(rec + 16, pb.dmin);
    // Once per super-block and group, reused by every token tile: scalar is fine. Row i's 12
    // packed bytes are 4 at each of 32 + 4i, 64 + 4i, 96 + 4i.
    uint8_t sc[8][8], mn[8][8];  // [row][sub-block]
    for (int i = 0; i < 8; ++i) {
        uint8_t packed[12];
        for (int m = 0; m < 3; ++m) std::memcpy(packed + 4 * m, rec + 32 + 32 * m + 4 * i, 4);
        uint32_t u[4];
        q4k_unpack_scales(packed, u);
        std::memcpy(sc[i], u, 8);
        std::memcpy(mn[i], u + 2, 8);
    }
    for (int j = 0; j < 8; ++j)
        for (int p = 0; p < 4; ++p) {
            pb.sc[j][p] = int32x4_t{sc[2 * p][j], sc[2 * p][j], sc[2 * p + 1][j], sc[2 * p + 1][j]};
            pb.mn[j][p] = int32x4_t{mn[2 * p][j], mn[2 * p][j], mn[2 * p + 1][j], mn[2 * p + 1][j]};
        }
    // Chunk c, steps 2s and 2s + 1: low nibbles elements 8s.. of sub-block 2c, high of 2c + 1.
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    for (int c = 0; c < 4; ++c)
        for (int s = 0; s < 4; ++s)
            for (int h = 0; h < 2; ++h) {  // rows 4h..4h+3
                const uint8_t* q = rec + 128 + 256 * c + 64 * s + 16 * h;
                const uint8x16_t u0 = vld1q_u8(q), u1 = vld1q_u8(q + 32);
                zip_steps(vreinterpretq_s8_u8(vandq_u8(u0, m4)), vreinterpretq_s8_u8(vandq_u8(u1, m4)), pb.w[2 * c][s][2 * h],
                          pb.w[2 * c][s][2 * h + 1]);
                zip_steps(vreinterpretq_s8_u8(vshrq_n_u8(u0, 4)), vreinterpretq_s8_u8(vshrq_n_u8(u1, 4)),
                          pb.w[2 * c + 1][s][2 * h], pb.w[2 * c + 1][s][2 * h + 1]);
            }
}

// Q4_K: as accumulate above, over n super-blocks. Per sub-block j the SMMLA sums times the rows'
// scales go to isum (|sum| <= 32 * 15 * 128, times 63, 8 sub-blocks: < 2^25); the mins times the
// tokens' sub-block sums (bsums[2j] + bsums[2j + 1]) to msum; both exact, then to floats once per
// super-block, as the scalar twin's d * isum - dmin * msum.
void accumulate(const PanelSuperBlock* panel, int n, const block_q8_K* const t[kTileTokens], float32x4_t (&acc)[4][2]) {
    for (int b = 0; b < n; ++b) {
        const PanelSuperBlock& pb = panel[b];
        int32x4_t isum[4][2];
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) isum[p][0] = isum[p][1] = vdupq_n_s32(0);
        for (int j = 0; j < 8; ++j) {
            int32x4_t sum[4][2];
#pragma GCC unroll 4
            for (int p = 0; p < 4; ++p) sum[p][0] = sum[p][1] = vdupq_n_s32(0);
#pragma GCC unroll 4
            for (int s = 0; s < 4; ++s) {
                const int o = 32 * j + 8 * s;
                const int8x16_t x[2] = {vcombine_s8(vld1_s8(t[0][b].qs + o), vld1_s8(t[1][b].qs + o)),
                                        vcombine_s8(vld1_s8(t[2][b].qs + o), vld1_s8(t[3][b].qs + o))};
#pragma GCC unroll 4
                for (int p = 0; p < 4; ++p)
#pragma GCC unroll 2
                    for (int q = 0; q < 2; ++q) sum[p][q] = vmmlaq_s32(sum[p][q], pb.w[j][s][p], x[q]);
                asm volatile("");  // as in accumulate above
            }
#pragma GCC unroll 4
            for (int p = 0; p < 4; ++p)
#pragma GCC unroll 2
                for (int q = 0; q < 2; ++q) isum[p][q] = vmlaq_s32(isum[p][q], sum[p][q], pb.sc[j][p]);
        }
        int32x4_t msum[4][2];
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) msum[p][0] = msum[p][1] = vdupq_n_s32(0);
        for (int j = 0; j < 8; ++j) {
            int32_t bs[kTileTokens];
            for (int k = 0; k < kTileTokens; ++k) bs[k] = t[k][b].bsums[2 * j] + t[k][b].bsums[2 * j + 1];
            const int32x4_t bv[2] = {int32x4_t{bs[0], bs[1], bs[0], bs[1]}, int32x4_t{bs[2], bs[3], bs[2], bs[3]}};
#pragma GCC unroll 4
            for (int p = 0; p < 4; ++p)
#pragma GCC unroll 2
                for (int q = 0; q < 2; ++q) msum[p][q] = vmlaq_s32(msum[p][q], pb.mn[j][p], bv[q]);
        }
        const float32x4_t dt[2] = {float32x4_t{t[0][b].d, t[1][b].d, t[0][b].d, t[1][b].d},
                                   float32x4_t{t[2][b].d, t[3][b].d, t[2][b].d, t[3][b].d}};
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
            const float32x4_t dr = float32x4_t{pb.d[2 * p], pb.d[2 * p], pb.d[2 * p + 1], pb.d[2 * p + 1]};
            const float32x4_t mr = float32x4_t{pb.dmin[2 * p], pb.dmin[2 * p], pb.dmin[2 * p + 1], pb.dmin[2 * p + 1]};
#pragma GCC unroll 2
            for (int q = 0; q < 2; ++q) {
                // The mins first, as the rows kernel (arm/q4_kx8_neon.cpp) takes them: its bits.
                acc[p][q] = vfmsq_f32(acc[p][q], vcvtq_f32_s32(msum[p][q]), vmulq_f32(mr, dt[q]));
                acc[p][q] = vfmaq_f32(acc[p][q], vcvtq_f32_s32(isum[p][q]), vmulq_f32(dr, dt[q]));
            }
        }
    }
}

// The first nt tokens of acc (as accumulate leaves it) written (first chunk) or added to out, rows
// r..r+7 of tokens t0.. . Token 2q + j, rows 4h..4h+3: lanes j and 2 + j of row pairs 2h and
// 2h + 1 (uzp1: j = 0, uzp2: j = 1).
void store(const float32x4_t (&acc)[4][2], int nt, bool first, float* out, int os, int r, int t0) {
#pragma GCC unroll 2
    for (int q = 0; q < 2; ++q)
#pragma GCC unroll 2
        for (int j = 0; j < 2; ++j) {
            const int tok = 2 * q + j;
            if (tok >= nt) return;
            float* o = out + size_t(t0 + tok) * os + r;
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {
                const float32x4_t v =
                    j == 0 ? vuzp1q_f32(acc[2 * h][q], acc[2 * h + 1][q]) : vuzp2q_f32(acc[2 * h][q], acc[2 * h + 1][q]);
                vst1q_f32(o + 4 * h, first ? v : vaddq_f32(v, vld1q_f32(o + 4 * h)));
            }
        }
}

// Whole groups of rows [r0, r1) through panels of kChunk blocks and tiles. Panel: PanelBlock or PanelSuperBlock; ABlock: the activation block; kBlockBytes: the
// weight block's bytes (a record is 8 of them).
template <typename Panel, typename ABlock, size_t kBlockBytes, int kBlockElems, int kChunk, void (*Pack)(const uint8_t*, Panel&)>
void gemm_x8(const void* W, size_t wrb, const void* A, size_t arb, int n_cols, int n_tokens, float* out, int os, int r0, int r1) {
    if (r0 >= r1 || n_tokens <= 0) return;
    const int nb = n_cols / kBlockElems;
    const size_t record_bytes = 8 * kBlockBytes;
    Panel panel[kChunk];
    for (int r = r0; r < r1; r += 8) {
        const uint8_t* g = static_cast<const uint8_t*>(W) + size_t(r) * wrb;
        for (int kb = 0; kb < nb; kb += kChunk) {
            const int n = std::min(kChunk, nb - kb);
            for (int b = 0; b < n; ++b) Pack(g + size_t(kb + b) * record_bytes, panel[b]);
            for (int t0 = 0; t0 < n_tokens; t0 += kTileTokens) {
                const int nt = std::min(kTileTokens, n_tokens - t0);
                const ABlock* t[kTileTokens];
                for (int j = 0; j < kTileTokens; ++j)  // past the last token: the last one again
                    t[j] = reinterpret_cast<const ABlock*>(static_cast<const char*>(A) + size_t(t0 + std::min(j, nt - 1)) * arb) +
                           kb;
                float32x4_t acc[4][2];
#pragma GCC unroll 4
                for (int p = 0; p < 4; ++p) acc[p][0] = acc[p][1] = vdupq_n_f32(0.f);
                accumulate(panel, n, t, acc);
                store(acc, nt, kb == 0, out, os, r, t0);
            }
        }
    }
}

}  // namespace

void matmul_q4_0x8_gemm_i8mm(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm_x8<PanelBlock, block_q8_0, sizeof(block_q4_0), 32, kChunkBlocks, pack_q4_0>(W, w_row_bytes, A, a_row_bytes, n_cols,
                                                                                     n_tokens, out, out_stride, r0, r1);
}

void matmul_q8_0x8_gemm_i8mm(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm_x8<PanelBlock, block_q8_0, sizeof(block_q8_0), 32, kChunkBlocks, pack_q8_0>(W, w_row_bytes, A, a_row_bytes, n_cols,
                                                                                     n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_kx8_gemm_i8mm(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm_x8<PanelSuperBlock, block_q8_K, sizeof(block_q4_K), QK_K, kChunkSuperBlocks, pack_q4_k>(
        W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_I8MM
