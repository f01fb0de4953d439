// Matmul of Q4_0 / Q8_0 rows interleaved by 8 (kernels/rows_x8.h) x Q8_0 activations, AArch64
// NEON with or without dotprod (arm/rows_x8_neon.h has the scheme).
#include "kernels/arm/arm.h"
#include "kernels/isa.h"

#if defined(HEARTH_ISA_NEON)

#include "kernels/arm/rows_x8_neon.h"

namespace hearth {

namespace x8_neon {
namespace {

// Q4_0 / Q8_0 records (kernels/rows_x8.h) x Q8_0 activations.
template <typename Block>
struct X8Q {
    static constexpr bool kNibbles = sizeof(Block) == sizeof(block_q4_0);
    static constexpr size_t kRecordBytes = 8 * sizeof(Block);
    static constexpr int kBlockElems = 32;
    static constexpr int kTileTokens = 4;  // 2 + 2 accumulator registers per token (4 + 2 without dotprod)
    static constexpr int kSumChunk = kX8SumChunkBlocks;
    using ABlock = block_q8_0;
    using Dots = std::conditional_t<kNibbles, NibbleDots, ByteDots>;

    // Per activation block: its scale and, for Q4_0, the offset term 8 * sum(q).
    struct Terms {
        float d;
        int32_t c8;
    };
    static Terms terms(const block_q8_0& a) {
        const int32_t sum = kNibbles ? vaddlvq_s8(vld1q_s8(a.qs)) + vaddlvq_s8(vld1q_s8(a.qs + 16)) : 0;
        return {fp16_to_fp32(a.d), 8 * sum};
    }

    // acc[t][h] (rows 4h..4h+3) += the dots of n records at rec with the activation blocks a[t].
    template <int NT>
    static void records(const uint8_t* rec, const block_q8_0* const a[NT], const Terms* const e[NT], int n, size_t pf,
                        float32x4_t (&acc)[NT][2]) {
        const uint8x16_t m4 = vdupq_n_u8(0x0F);
        for (int b = 0; b < n; ++b, rec += kRecordBytes) {
            prefetch_ahead<(kRecordBytes + 63) / 64 * 64>(rec, pf);
            Dots dots[NT][2];
            const uint8_t* qw = rec + 16;
            if (kNibbles) {
                for (int k = 0; k < 4; ++k) {  // low nibbles: elements 4k.., high: 16 + 4k..
                    int8x16_t lo[2], hi[2];
                    for (int h = 0; h < 2; ++h) {
                        const uint8x16_t w = vld1q_u8(qw + 32 * k + 16 * h);
                        lo[h] = vreinterpretq_s8_u8(vandq_u8(w, m4));
                        hi[h] = vreinterpretq_s8_u8(vshrq_n_u8(w, 4));
                    }
                    for (int t = 0; t < NT; ++t) {
                        const int8x16_t al = bcast4(a[t][b].qs + 4 * k), ah = bcast4(a[t][b].qs + 16 + 4 * k);
                        for (int h = 0; h < 2; ++h) {
                            dots[t][h].add(lo[h], al);
                            dots[t][h].add(hi[h], ah);
                        }
                    }
                    step_barrier();
                }
            } else {
                for (int k = 0; k < 8; ++k) {
                    const int8x16_t w[2] = {vld1q_s8(reinterpret_cast<const int8_t*>(qw + 32 * k)),
                                            vld1q_s8(reinterpret_cast<const int8_t*>(qw + 32 * k + 16))};
                    for (int t = 0; t < NT; ++t) {
                        const int8x16_t x = bcast4(a[t][b].qs + 4 * k);
                        for (int h = 0; h < 2; ++h) dots[t][h].add(w[h], x);
                    }
                    step_barrier();
                }
            }
            const float32x4_t dw[2] = {load_f16x4(rec), load_f16x4(rec + 8)};
            for (int t = 0; t < NT; ++t)
                for (int h = 0; h < 2; ++h) {
                    int32x4_t s = dots[t][h].rows();
                    if (kNibbles) s = vsubq_s32(s, vdupq_n_s32(e[t][b].c8));
                    acc[t][h] = vfmaq_f32(acc[t][h], vcvtq_f32_s32(s), vmulq_n_f32(dw[h], e[t][b].d));
                }
        }
    }
};

}  // namespace
}  // namespace x8_neon

void matmul_q4_0x8_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    x8_neon::matmul_x8<x8_neon::X8Q<block_q4_0>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q8_0x8_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    x8_neon::matmul_x8<x8_neon::X8Q<block_q8_0>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_NEON
