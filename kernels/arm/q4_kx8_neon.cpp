// Matmul of Q4_K and Q5_K rows interleaved by 8 (kernels/rows_x8.h) x Q8_K activations, AArch64
// NEON with or without dotprod: sub-block sums times each row's 6-bit scale, mins against the
// activation's sub-block sums, as x86/q4_kx8_avx2.cpp does (the bounds are there); arm/rows_x8_neon.h
// has the scheme of the tiles. Q5_K: the record's qh vector of step k (one per step, shared by
// the chunks) gives bit 4 of the quants, bit 2c for chunk c's low nibbles, 2c + 1 for its high.
#include "kernels/arm/arm.h"
#include "kernels/isa.h"

#if defined(HEARTH_ISA_NEON)

#include "kernels/arm/rows_x8_neon.h"
#include "kernels/rows_x8.h"

namespace hearth {

namespace x8_neon {
namespace {

// Interleaved Q4_K or Q5_K records (kernels/rows_x8.h) x Q8_K activations.
template <typename WBlock>
struct X8Q4KOrQ5K {
    using R = KRecordX8<WBlock>;  // the record's layout (kernels/rows_x8.h)
    static constexpr bool kFifthBit = R::kFifthBit;
    static constexpr size_t kRecordBytes = R::kBytes;
    static constexpr size_t kScalesOffset = R::kScalesOffset, kQhOffset = R::kQhOffset, kQsOffset = R::kQsOffset;
    static constexpr int kBlockElems = QK_K;
    // Registers per token: the sub-block sums 4 (8 without dotprod), the scaled sums 2, the floats
    // 2. With dotprod 4 tokens: the step loop keeps its 16 sums and the weights in registers, and
    // the scaled sums and floats, used once per 8 steps, go to the stack. Without, 2 tokens.
    static constexpr int kTileTokens = kDotprod ? 4 : 2;
    static constexpr int kSumChunk = kX8KSumChunkSuperBlocks;
    using ABlock = block_q8_K;

    // Per activation super-block: its scale and its sub-block sums bsums[2j] + bsums[2j + 1].
    struct Terms {
        float d;
        int32_t sums[8];
    };
    static Terms terms(const block_q8_K& a) {
        Terms e{a.d, {}};
        for (int j = 0; j < 8; ++j) e.sums[j] = a.bsums[2 * j] + a.bsums[2 * j + 1];
        return e;
    }

    template <int NT>
    static void records(const uint8_t* rec, const block_q8_K* const a[NT], const Terms* const e[NT], int n, size_t pf,
                        float32x4_t (&acc)[NT][2]) {
        const uint8x16_t m4 = vdupq_n_u8(0x0F), m6 = vdupq_n_u8(0x3F);
        for (int b = 0; b < n; ++b, rec += kRecordBytes) {
            prefetch_ahead<kQsOffset>(rec, pf);
            // Rows 4h..4h+3: q4k_unpack_scales a byte at a time, one row per 32-bit lane. Byte j of
            // a lane of sc[h][0] is its row's scale of sub-block j, of sc[h][1] that of sub-block
            // 4 + j; mn[h][..] likewise hold the mins.
            uint8x16_t sc[2][2], mn[2][2];
            for (int h = 0; h < 2; ++h) {
                const uint8_t* p = rec + kScalesOffset + 16 * h;
                const uint8x16_t u0 = vld1q_u8(p), u1 = vld1q_u8(p + 32), u2 = vld1q_u8(p + 64);
                sc[h][0] = vandq_u8(u0, m6);
                sc[h][1] = vorrq_u8(vandq_u8(u2, m4), vshlq_n_u8(vshrq_n_u8(u0, 6), 4));
                mn[h][0] = vandq_u8(u1, m6);
                mn[h][1] = vorrq_u8(vshrq_n_u8(u2, 4), vshlq_n_u8(vshrq_n_u8(u1, 6), 4));
            }
            const float32x4_t d[2] = {load_f16x4(rec), load_f16x4(rec + 8)};
            const float32x4_t dmin[2] = {load_f16x4(rec + 16), load_f16x4(rec + 24)};
            // Mins first, straight into the floats: sum_j m_j * s_j per row (<= 8 * 63 * 4096).
            for (int h = 0; h < 2; ++h) {
                int32x4_t msum[NT];
                for (int t = 0; t < NT; ++t) msum[t] = vdupq_n_s32(0);
                for (int j = 0; j < 8; ++j) {
                    const int32x4_t m = lane_byte(mn[h][j / 4], j % 4);
                    for (int t = 0; t < NT; ++t) msum[t] = vmlaq_n_s32(msum[t], m, e[t][b].sums[j]);
                }
                for (int t = 0; t < NT; ++t)
                    acc[t][h] = vfmsq_f32(acc[t][h], vcvtq_f32_s32(msum[t]), vmulq_n_f32(dmin[h], e[t][b].d));
            }
            int32x4_t isum[NT][2];
            for (int t = 0; t < NT; ++t) isum[t][0] = isum[t][1] = vdupq_n_s32(0);
            const uint8_t* qw = rec + kQsOffset;
            for (int c = 0; c < 4; ++c, qw += 256) {  // chunk c: sub-blocks 2c (low nibbles), 2c + 1 (high)
                prefetch_ahead<256>(qw, pf);
                NibbleDots lo_dots[NT][2], hi_dots[NT][2];
                for (int k = 0; k < 8; ++k) {
                    int8x16_t lo[2], hi[2];
                    for (int h = 0; h < 2; ++h) {
                        const uint8x16_t w = vld1q_u8(qw + 32 * k + 16 * h);
                        uint8x16_t l = vandq_u8(w, m4), u = vshrq_n_u8(w, 4);
                        if constexpr (kFifthBit) {
                            const uint8x16_t qh = vld1q_u8(rec + kQhOffset + 32 * k + 16 * h);
                            l = vorrq_u8(l, q5_k_bit4(qh, 2 * c));
                            u = vorrq_u8(u, q5_k_bit4(qh, 2 * c + 1));
                        }
                        lo[h] = vreinterpretq_s8_u8(l);
                        hi[h] = vreinterpretq_s8_u8(u);
                    }
                    for (int t = 0; t < NT; ++t) {
                        const int8_t* q = a[t][b].qs + 64 * c + 4 * k;
                        const int8x16_t al = bcast4(q), ah = bcast4(q + 32);
                        for (int h = 0; h < 2; ++h) {
                            lo_dots[t][h].add(lo[h], al);
                            hi_dots[t][h].add(hi[h], ah);
                        }
                    }
                    step_barrier();
                }
                for (int h = 0; h < 2; ++h) {
                    const int32x4_t s_lo = lane_byte(sc[h][c / 2], 2 * c % 4), s_hi = lane_byte(sc[h][c / 2], 2 * c % 4 + 1);
                    for (int t = 0; t < NT; ++t)
                        isum[t][h] = vmlaq_s32(vmlaq_s32(isum[t][h], lo_dots[t][h].rows(), s_lo), hi_dots[t][h].rows(), s_hi);
                }
            }
            for (int t = 0; t < NT; ++t)
                for (int h = 0; h < 2; ++h)
                    acc[t][h] = vfmaq_f32(acc[t][h], vcvtq_f32_s32(isum[t][h]), vmulq_n_f32(d[h], e[t][b].d));
        }
    }
};

}  // namespace
}  // namespace x8_neon

void matmul_q4_kx8_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    x8_neon::matmul_x8<x8_neon::X8Q4KOrQ5K<block_q4_K>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0,
                                                        r1);
}

void matmul_q5_kx8_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    x8_neon::matmul_x8<x8_neon::X8Q4KOrQ5K<block_q5_K>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0,
                                                        r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_NEON
