// AArch64 NEON kernels. With dotprod (HEARTH_ISA_DOTPROD) the int8 products use SDOT (vdotq_s32);
// otherwise SMULL/SMULL2 + SADALP (vmull_s8 / vpadalq_s16), which exist on every ARMv8-A core.
// All weights are brought to signed int8 (Q4_0: q-8, Q5_0: q-16, IQ4_NL: its grid values, Q4_1 and
// Q5_1: 0..31, Q2_K: 0..3, Q3_K: -4..3, IQ4_XS: its grid values, Q4_K: 0..15, Q5_K: 0..31, Q6_K:
// q-32) so no offset correction is needed but Q4_1 and Q5_1's block offsets (times the activations'
// sums) and the Q4_K, Q5_K and Q2_K mins (the Q8_K block sums).
#include "kernels/arm/arm.h"
#include "kernels/quant.h"

#if defined(HEARTH_ISA_NEON)

#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/arm/rows_x8_neon.h"
#include "kernels/fp16.h"

namespace hearth {

namespace {

inline float f16(uint16_t h) {
    __fp16 v;
    std::memcpy(&v, &h, 2);
    return float(v);
}

// acc + sum of 16 int8 products (lane placement differs between the two paths, only the
// sum of the 4 lanes is meaningful).
inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if defined(HEARTH_ISA_DOTPROD)
    return vdotq_s32(acc, a, b);
#else
    const int16x8_t p0 = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    const int16x8_t p1 = vmull_high_s8(a, b);
    return vpadalq_s16(vpadalq_s16(acc, p0), p1);
#endif
}

inline int32x4_t dot32(const int8_t* w, const int8_t* a) {
    return dot16(dot16(vdupq_n_s32(0), vld1q_s8(w), vld1q_s8(a)), vld1q_s8(w + 16), vld1q_s8(a + 16));
}

// x * s clamped to [-127, 127], rounded half-to-even (matches the scalar quantizers).
inline int32x4_t quant_lane(float32x4_t x, float s) {
    float32x4_t v = vmulq_n_f32(x, s);
    v = vminq_f32(vmaxq_f32(v, vdupq_n_f32(-127.f)), vdupq_n_f32(127.f));
    return vcvtnq_s32_f32(v);
}

inline int8x16_t pack16(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) {
    const int16x8_t lo = vcombine_s16(vmovn_s32(a), vmovn_s32(b));
    const int16x8_t hi = vcombine_s16(vmovn_s32(c), vmovn_s32(d));
    return vcombine_s8(vmovn_s16(lo), vmovn_s16(hi));
}

// 16 bytes of packed nibbles -> the low ones (elements 0..15 of a 32-element block) and the high
// ones (16..31), 0..15.
inline void nibbles_unpack(const uint8_t* qs, uint8x16_t& lo, uint8x16_t& hi) {
    const uint8x16_t v = vld1q_u8(qs);
    lo = vandq_u8(v, vdupq_n_u8(0x0F));
    hi = vshrq_n_u8(v, 4);
}

// Q4_0 block -> 2 x int8x16 (elements 0..15, 16..31), values q-8.
inline void q4_0_unpack(const uint8_t* qs, int8x16_t& lo, int8x16_t& hi) {
    uint8x16_t l, h;
    nibbles_unpack(qs, l, h);
    lo = vsubq_s8(vreinterpretq_s8_u8(l), vdupq_n_s8(8));
    hi = vsubq_s8(vreinterpretq_s8_u8(h), vdupq_n_s8(8));
}

// Q4_K chunk c (64 elements): v[0..1] = sub-block 2c (low nibbles), v[2..3] = sub-block 2c+1.
inline void q4k_unpack_chunk(const uint8_t* qs, int8x16_t v[4]) {
    uint8x16_t l0, h0, l1, h1;
    nibbles_unpack(qs, l0, h0);
    nibbles_unpack(qs + 16, l1, h1);
    v[0] = vreinterpretq_s8_u8(l0);
    v[1] = vreinterpretq_s8_u8(l1);
    v[2] = vreinterpretq_s8_u8(h0);
    v[3] = vreinterpretq_s8_u8(h1);
}

// Q6_K half h (128 elements) -> 8 x int8x16 (groups 8h..8h+7, element order), values q-32.
inline void q6k_unpack_half(const uint8_t* ql, const uint8_t* qh, int8x16_t v[8]) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m30 = vdupq_n_u8(0x30);
    const int8x16_t m32 = vdupq_n_s8(32);
    for (int s = 0; s < 2; ++s) {  // 16-byte halves of the 32-byte rows
        const uint8x16_t l0 = vld1q_u8(ql + 16 * s), l1 = vld1q_u8(ql + 32 + 16 * s);
        const uint8x16_t h = vld1q_u8(qh + 16 * s);
        const uint8x16_t q1 = vorrq_u8(vandq_u8(l0, m4), vandq_u8(vshlq_n_u8(h, 4), m30));
        const uint8x16_t q2 = vorrq_u8(vandq_u8(l1, m4), vandq_u8(vshlq_n_u8(h, 2), m30));
        const uint8x16_t q3 = vorrq_u8(vshrq_n_u8(l0, 4), vandq_u8(h, m30));
        const uint8x16_t q4 = vorrq_u8(vshrq_n_u8(l1, 4), vandq_u8(vshrq_n_u8(h, 2), m30));
        v[0 + s] = vsubq_s8(vreinterpretq_s8_u8(q1), m32);
        v[2 + s] = vsubq_s8(vreinterpretq_s8_u8(q2), m32);
        v[4 + s] = vsubq_s8(vreinterpretq_s8_u8(q3), m32);
        v[6 + s] = vsubq_s8(vreinterpretq_s8_u8(q4), m32);
    }
}

}  // namespace

// =========================================================================================
// Activation quantizers (bytes identical to the scalar ones)
// =========================================================================================

void quantize_row_q8_0_neon(const float* x, void* vy, int64_t n) {
    block_q8_0* y = static_cast<block_q8_0*>(vy);
    for (int64_t i = 0; i < n / QK8_0; ++i, x += QK8_0) {
        float32x4_t v[8];
        float32x4_t m = vdupq_n_f32(0.f);
        for (int k = 0; k < 8; ++k) {
            v[k] = vld1q_f32(x + 4 * k);
            m = vmaxq_f32(m, vabsq_f32(v[k]));
        }
        const float amax = vmaxvq_f32(m);
        const uint16_t dh = fp32_to_fp16(amax / 127.f);
        const float d = fp16_to_fp32(dh);
        const float id = d != 0.f ? 1.f / d : 0.f;
        y[i].d = dh;
        vst1q_s8(y[i].qs, pack16(quant_lane(v[0], id), quant_lane(v[1], id), quant_lane(v[2], id), quant_lane(v[3], id)));
        vst1q_s8(y[i].qs + 16, pack16(quant_lane(v[4], id), quant_lane(v[5], id), quant_lane(v[6], id), quant_lane(v[7], id)));
    }
}

void quantize_row_q8_k_neon(const float* x, void* vy, int64_t n) {
    block_q8_K* y = static_cast<block_q8_K*>(vy);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        float32x4_t m = vdupq_n_f32(0.f);
        for (int j = 0; j < QK_K; j += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + j)));
        const float amax = vmaxvq_f32(m);
        if (amax == 0.f) {
            std::memset(&y[i], 0, sizeof(block_q8_K));
            continue;
        }
        const float d = q8k_scale(amax);
        const float id = 1.f / d;
        y[i].d = d;
        for (int j = 0; j < QK_K; j += 16) {
            const int8x16_t q = pack16(quant_lane(vld1q_f32(x + j), id), quant_lane(vld1q_f32(x + j + 4), id),
                                       quant_lane(vld1q_f32(x + j + 8), id), quant_lane(vld1q_f32(x + j + 12), id));
            vst1q_s8(y[i].qs + j, q);
            y[i].bsums[j / 16] = int16_t(vaddlvq_s8(q));
        }
    }
}

// =========================================================================================
// Tiled multi-token matmul
// =========================================================================================

namespace {

constexpr int kMaxTokens = 8;
constexpr size_t kChunkBytes = 64 << 10;

struct Ctx {
    const char* W;
    size_t wrb;
    const char* A;
    size_t arb;
    int nb;
    float* out;
    int os;
};

template <typename T>
inline const T* row(const char* base, size_t stride, int i) {
    return reinterpret_cast<const T*>(base + size_t(i) * stride);
}

template <int NR, int NT>
inline void store_tile(const Ctx& c, int r, int t0, const float32x4_t (&acc)[NR][NT]) {
    for (int t = 0; t < NT; ++t)
        for (int i = 0; i < NR; ++i) c.out[size_t(t0 + t) * c.os + r + i] = vaddvq_f32(acc[i][t]);
}

template <typename K, int NT>
void run_rows(const Ctx& c, int rb, int re, int t0) {
    constexpr int NR = NT == 1 ? K::kRowsFor1 : NT == 2 ? K::kRowsFor2 : 1;
    int r = rb;
    for (; r + NR <= re; r += NR) K::template tile<NR, NT>(c, r, t0);
    for (; r < re; ++r) K::template tile<1, NT>(c, r, t0);
}

template <typename K>
void drive(const Ctx& c, int n_tokens, int r0, int r1) {
    if (n_tokens <= 0 || r1 <= r0) return;
    int chunk = int(kChunkBytes / std::max<size_t>(c.wrb, 1));
    chunk = std::max(8, chunk - chunk % 4);
    for (int rb = r0; rb < r1; rb += chunk) {
        const int re = std::min(r1, rb + chunk);
        for (int t0 = 0; t0 < n_tokens; t0 += kMaxTokens) {
            switch (std::min(kMaxTokens, n_tokens - t0)) {
                case 1: run_rows<K, 1>(c, rb, re, t0); break;
                case 2: run_rows<K, 2>(c, rb, re, t0); break;
                case 3: run_rows<K, 3>(c, rb, re, t0); break;
                case 4: run_rows<K, 4>(c, rb, re, t0); break;
                case 5: run_rows<K, 5>(c, rb, re, t0); break;
                case 6: run_rows<K, 6>(c, rb, re, t0); break;
                case 7: run_rows<K, 7>(c, rb, re, t0); break;
                default: run_rows<K, 8>(c, rb, re, t0); break;
            }
        }
    }
}

// The 32-element block types x Q8_0: each weight block decoded once per tile to 2 x 16 signed
// bytes (Q8_0 as it is; Q4_0: q - 8; Q5_0: q - 16; IQ4_NL: the grid value; Q4_1, Q5_1: the
// unsigned quant 0..31, whose block offset m adds m * d8 * sum(q8)).
inline void block32_unpack(const block_q8_0& b, int8x16_t& lo, int8x16_t& hi) {
    lo = vld1q_s8(b.qs);
    hi = vld1q_s8(b.qs + 16);
}
inline void block32_unpack(const block_q4_0& b, int8x16_t& lo, int8x16_t& hi) { q4_0_unpack(b.qs, lo, hi); }
inline void block32_unpack(const block_q4_1& b, int8x16_t& lo, int8x16_t& hi) {
    uint8x16_t l, h;
    nibbles_unpack(b.qs, l, h);
    lo = vreinterpretq_s8_u8(l);
    hi = vreinterpretq_s8_u8(h);
}
inline void block32_unpack(const block_iq4_nl& b, int8x16_t& lo, int8x16_t& hi) {
    const int8x16_t grid = vld1q_s8(kIQ4Values);
    uint8x16_t l, h;
    nibbles_unpack(b.qs, l, h);
    lo = vqtbl1q_s8(grid, l);
    hi = vqtbl1q_s8(grid, h);
}
// Q5_0 / Q5_1: the nibbles with bit j of qh as bit 4 of element j, 0..31.
inline void q5_unpack_neon(const uint8_t* qh, const uint8_t* qs, uint8x16_t& lo, uint8x16_t& hi) {
    static const uint8_t kBits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t bits = vld1q_u8(kBits), b4 = vdupq_n_u8(0x10);
    nibbles_unpack(qs, lo, hi);
    const uint8x16_t h_lo = vcombine_u8(vdup_n_u8(qh[0]), vdup_n_u8(qh[1]));
    const uint8x16_t h_hi = vcombine_u8(vdup_n_u8(qh[2]), vdup_n_u8(qh[3]));
    lo = vorrq_u8(lo, vandq_u8(vtstq_u8(h_lo, bits), b4));
    hi = vorrq_u8(hi, vandq_u8(vtstq_u8(h_hi, bits), b4));
}
inline void block32_unpack(const block_q5_0& b, int8x16_t& lo, int8x16_t& hi) {
    uint8x16_t l, h;
    q5_unpack_neon(b.qh, b.qs, l, h);
    lo = vsubq_s8(vreinterpretq_s8_u8(l), vdupq_n_s8(16));
    hi = vsubq_s8(vreinterpretq_s8_u8(h), vdupq_n_s8(16));
}
inline void block32_unpack(const block_q5_1& b, int8x16_t& lo, int8x16_t& hi) {
    uint8x16_t l, h;
    q5_unpack_neon(b.qh, b.qs, l, h);
    lo = vreinterpretq_s8_u8(l);
    hi = vreinterpretq_s8_u8(h);
}

template <typename Block>
struct KBlock32 {
    static constexpr bool kOffset = std::is_same<Block, block_q4_1>::value || std::is_same<Block, block_q5_1>::value;
    static constexpr int kRowsFor1 = 4, kRowsFor2 = 2;
    template <int NR, int NT>
    static void tile(const Ctx& c, int r, int t0) {
        const Block* w[NR];
        const block_q8_0* a[NT];
        for (int i = 0; i < NR; ++i) w[i] = row<Block>(c.W, c.wrb, r + i);
        for (int t = 0; t < NT; ++t) a[t] = row<block_q8_0>(c.A, c.arb, t0 + t);
        float32x4_t acc[NR][NT];
        for (int i = 0; i < NR; ++i)
            for (int t = 0; t < NT; ++t) acc[i][t] = vdupq_n_f32(0.f);
        for (int b = 0; b < c.nb; ++b) {
            int8x16_t lo[NR], hi[NR];
            float dw[NR], mw[NR];
            for (int i = 0; i < NR; ++i) {
                block32_unpack(w[i][b], lo[i], hi[i]);
                dw[i] = f16(w[i][b].d);
                if constexpr (kOffset) mw[i] = f16(w[i][b].m);
            }
            for (int t = 0; t < NT; ++t) {
                const int8x16_t a0 = vld1q_s8(a[t][b].qs), a1 = vld1q_s8(a[t][b].qs + 16);
                const float da = f16(a[t][b].d);
                float32x4_t sum_a = vdupq_n_f32(0.f);  // lanes summing to sum(q8)
                if constexpr (kOffset) sum_a = vcvtq_f32_s32(vpaddlq_s16(vaddq_s16(vpaddlq_s8(a0), vpaddlq_s8(a1))));
                for (int i = 0; i < NR; ++i) {
                    const int32x4_t p = dot16(dot16(vdupq_n_s32(0), lo[i], a0), hi[i], a1);
                    acc[i][t] = vfmaq_n_f32(acc[i][t], vcvtq_f32_s32(p), dw[i] * da);
                    if constexpr (kOffset) acc[i][t] = vfmaq_n_f32(acc[i][t], sum_a, mw[i] * da);
                }
            }
        }
        store_tile<NR, NT>(c, r, t0, acc);
    }
};
using KQ8_0 = KBlock32<block_q8_0>;
using KQ4_0 = KBlock32<block_q4_0>;

inline int8x16_t fifth_bit(uint8x16_t qh, int bit) { return vreinterpretq_s8_u8(x8_neon::q5_k_bit4(qh, bit)); }

// Q5_K is Q4_K with bit 4 of each quant in qh (bit 2k of qh[l] for the low nibble of qs[32k + l],
// bit 2k + 1 for its high nibble): quants 0..31.
template <typename WBlock>
struct KQ4_K_or_Q5_K {
    static constexpr bool kFifthBit = std::is_same<WBlock, block_q5_K>::value;
    static constexpr int kRowsFor1 = 1, kRowsFor2 = 1;
    template <int NR, int NT>
    static void tile(const Ctx& c, int r, int t0) {
        static_assert(NR == 1, "one row per tile");
        const WBlock* w = row<WBlock>(c.W, c.wrb, r);
        const block_q8_K* a[NT];
        for (int t = 0; t < NT; ++t) a[t] = row<block_q8_K>(c.A, c.arb, t0 + t);
        float32x4_t acc[1][NT];
        for (int t = 0; t < NT; ++t) acc[0][t] = vdupq_n_f32(0.f);
        for (int b = 0; b < c.nb; ++b) {
            uint32_t u[4];
            q4k_unpack_scales(w[b].scales, u);
            const uint8_t* sc = reinterpret_cast<const uint8_t*>(u);
            const int16x8_t m16 = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(sc + 8)));
            const float d4 = f16(w[b].d), dm4 = -f16(w[b].dmin);
            int32x4_t sumi[NT];
            for (int t = 0; t < NT; ++t) sumi[t] = vdupq_n_s32(0);
            uint8x16_t qh0 = vdupq_n_u8(0), qh1 = qh0;
            if constexpr (kFifthBit) qh0 = vld1q_u8(w[b].qh), qh1 = vld1q_u8(w[b].qh + 16);
            for (int k = 0; k < 4; ++k) {
                int8x16_t v[4];
                q4k_unpack_chunk(w[b].qs + 32 * k, v);
                if constexpr (kFifthBit) {
                    v[0] = vorrq_s8(v[0], fifth_bit(qh0, 2 * k));
                    v[1] = vorrq_s8(v[1], fifth_bit(qh1, 2 * k));
                    v[2] = vorrq_s8(v[2], fifth_bit(qh0, 2 * k + 1));
                    v[3] = vorrq_s8(v[3], fifth_bit(qh1, 2 * k + 1));
                }
                const int32_t sl = sc[2 * k], sh = sc[2 * k + 1];
                for (int t = 0; t < NT; ++t) {
                    const int8_t* q8 = a[t][b].qs + 64 * k;
                    const int32x4_t pl = dot16(dot16(vdupq_n_s32(0), v[0], vld1q_s8(q8)), v[1], vld1q_s8(q8 + 16));
                    const int32x4_t ph = dot16(dot16(vdupq_n_s32(0), v[2], vld1q_s8(q8 + 32)), v[3], vld1q_s8(q8 + 48));
                    sumi[t] = vmlaq_n_s32(vmlaq_n_s32(sumi[t], pl, sl), ph, sh);
                }
            }
            for (int t = 0; t < NT; ++t) {
                const int16x8_t bsp = vpaddq_s16(vld1q_s16(a[t][b].bsums), vld1q_s16(a[t][b].bsums + 8));
                const int32x4_t pm = vmlal_high_s16(vmull_s16(vget_low_s16(m16), vget_low_s16(bsp)), m16, bsp);
                const float d8 = a[t][b].d;
                acc[0][t] = vfmaq_n_f32(acc[0][t], vcvtq_f32_s32(sumi[t]), d4 * d8);
                acc[0][t] = vfmaq_n_f32(acc[0][t], vcvtq_f32_s32(pm), dm4 * d8);
            }
        }
        store_tile<1, NT>(c, r, t0, acc);
    }
};

using KQ4_K = KQ4_K_or_Q5_K<block_q4_K>;
using KQ5_K = KQ4_K_or_Q5_K<block_q5_K>;

// Half h (128 elements) of Q2_K's and Q3_K's 2-bit fields qs[64] -> 8 x 16 (groups 8h..8h+7),
// 0..3 (Q2_K's quants, Q3_K's low two bits): chunk k = 4h + s is bits 2s..2s+1 of qs[32h..32h+31].
inline void two_bit_unpack_half(const uint8_t* qs, int h, uint8x16_t v[8]) {
    for (int j = 0; j < 2; ++j) {  // 16-byte halves of the 32-byte rows
        const uint8x16_t q2 = vld1q_u8(qs + 32 * h + 16 * j);
        for (int s = 0; s < 4; ++s) v[2 * s + j] = vandq_u8(vshlq_u8(q2, vdupq_n_s8(int8_t(-2 * s))), vdupq_n_u8(3));
    }
}
// Q3_K half h, values -4..3: the 2-bit fields and bit k of hmask, set for no offset.
inline void q3k_unpack_half(const block_q3_K& b, int h, int8x16_t v[8]) {
    const uint8x16_t four = vdupq_n_u8(4);
    uint8x16_t low[8];
    two_bit_unpack_half(b.qs, h, low);
    for (int j = 0; j < 2; ++j) {
        const uint8x16_t hm = vld1q_u8(b.hmask + 16 * j);
        for (int s = 0; s < 4; ++s) {
            const uint8x16_t high = vandq_u8(vtstq_u8(hm, vdupq_n_u8(uint8_t(1 << (4 * h + s)))), four);
            v[2 * s + j] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low[2 * s + j], high)), vreinterpretq_s8_u8(four));
        }
    }
}
inline void q2k_unpack_half(const block_q2_K& b, int h, int8x16_t v[8]) {
    uint8x16_t q[8];
    two_bit_unpack_half(b.qs, h, q);
    for (int i = 0; i < 8; ++i) v[i] = vreinterpretq_s8_u8(q[i]);
}
// IQ4_XS half h: sub-blocks 4h..4h+3, each two groups of grid values.
inline void iq4xs_unpack_half(const block_iq4_xs& b, int h, int8x16_t v[8]) {
    const int8x16_t grid = vld1q_s8(kIQ4Values);
    for (int s = 0; s < 4; ++s) {
        uint8x16_t lo, hi;
        nibbles_unpack(b.qs + 16 * (4 * h + s), lo, hi);
        v[2 * s] = vqtbl1q_s8(grid, lo);
        v[2 * s + 1] = vqtbl1q_s8(grid, hi);
    }
}
inline void group16_unpack_half(const block_iq4_xs& b, int h, int8x16_t v[8]) { iq4xs_unpack_half(b, h, v); }
inline void group16_unpack_half(const block_q6_K& b, int h, int8x16_t v[8]) { q6k_unpack_half(b.ql + 64 * h, b.qh + 32 * h, v); }
inline void group16_unpack_half(const block_q3_K& b, int h, int8x16_t v[8]) { q3k_unpack_half(b, h, v); }
inline void group16_unpack_half(const block_q2_K& b, int h, int8x16_t v[8]) { q2k_unpack_half(b, h, v); }
inline const int8_t* group16_scales(const block_q6_K& b, int8_t*) { return b.scales; }
inline const int8_t* group16_scales(const block_q3_K& b, int8_t* tmp) {
    q3k_unpack_scales(b.scales, tmp);
    return tmp;
}
inline const int8_t* group16_scales(const block_q2_K& b, int8_t* tmp) {  // the low nibbles
    vst1q_s8(tmp, vreinterpretq_s8_u8(vandq_u8(vld1q_u8(b.scales), vdupq_n_u8(0x0F))));
    return tmp;
}
inline const int8_t* group16_scales(const block_iq4_xs& b, int8_t* tmp) {
    int8_t ls[8];
    iq4xs_unpack_scales(b.scales_l, b.scales_h, ls);
    for (int g = 0; g < 16; ++g) tmp[g] = ls[g / 2];
    return tmp;
}

// Q6_K, Q3_K, IQ4_XS and Q2_K: 16 groups of 16 with a signed scale each (IQ4_XS: two groups to a
// sub-block's scale), the values signed. Q2_K's mins (the scales' high nibbles) times dmin: their
// dot with the Q8_K block sums, as Q4_K's.
template <typename Block>
struct KGroup16 {
    static constexpr bool kMins = std::is_same<Block, block_q2_K>::value;
    static constexpr int kRowsFor1 = 1, kRowsFor2 = 1;
    template <int NR, int NT>
    static void tile(const Ctx& c, int r, int t0) {
        static_assert(NR == 1, "one row per tile");
        const Block* w = row<Block>(c.W, c.wrb, r);
        const block_q8_K* a[NT];
        for (int t = 0; t < NT; ++t) a[t] = row<block_q8_K>(c.A, c.arb, t0 + t);
        float32x4_t acc[1][NT];
        for (int t = 0; t < NT; ++t) acc[0][t] = vdupq_n_f32(0.f);
        for (int b = 0; b < c.nb; ++b) {
            int32x4_t sumi[NT];
            for (int t = 0; t < NT; ++t) sumi[t] = vdupq_n_s32(0);
            int8_t tmp[16];
            const int8_t* scales = group16_scales(w[b], tmp);
            for (int h = 0; h < 2; ++h) {
                int8x16_t v[8];
                group16_unpack_half(w[b], h, v);
                const int8_t* sc = scales + 8 * h;
                for (int t = 0; t < NT; ++t) {
                    const int8_t* q8 = a[t][b].qs + 128 * h;
                    for (int g = 0; g < 8; ++g)
                        sumi[t] = vmlaq_n_s32(sumi[t], dot16(vdupq_n_s32(0), v[g], vld1q_s8(q8 + 16 * g)), sc[g]);
                }
            }
            const float dw = f16(w[b].d);
            for (int t = 0; t < NT; ++t) acc[0][t] = vfmaq_n_f32(acc[0][t], vcvtq_f32_s32(sumi[t]), dw * a[t][b].d);
            if constexpr (kMins) {
                const uint8x16_t m = vshrq_n_u8(vld1q_u8(w[b].scales), 4);
                const int16x8_t m0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(m)));
                const int16x8_t m1 = vreinterpretq_s16_u16(vmovl_high_u8(m));
                const float neg_dmin = -f16(w[b].dmin);
                for (int t = 0; t < NT; ++t) {
                    const int16x8_t b0 = vld1q_s16(a[t][b].bsums), b1 = vld1q_s16(a[t][b].bsums + 8);
                    int32x4_t pm = vmlal_high_s16(vmull_s16(vget_low_s16(m0), vget_low_s16(b0)), m0, b0);
                    pm = vmlal_high_s16(vmlal_s16(pm, vget_low_s16(m1), vget_low_s16(b1)), m1, b1);
                    acc[0][t] = vfmaq_n_f32(acc[0][t], vcvtq_f32_s32(pm), neg_dmin * a[t][b].d);
                }
            }
        }
        store_tile<1, NT>(c, r, t0, acc);
    }
};
using KQ6_K = KGroup16<block_q6_K>;

Ctx make_ctx(const void* W, size_t wrb, const void* A, size_t arb, int nb, float* out, int os) {
    return Ctx{static_cast<const char*>(W), wrb, static_cast<const char*>(A), arb, nb, out, os};
}

}  // namespace

void matmul_q8_0_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    drive<KQ8_0>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / QK8_0, out, out_stride), n_tokens, r0, r1);
}

void matmul_q4_0_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    drive<KQ4_0>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / QK4_0, out, out_stride), n_tokens, r0, r1);
}

void matmul_q4_1_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    drive<KBlock32<block_q4_1>>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / 32, out, out_stride), n_tokens, r0, r1);
}

void matmul_q5_0_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    drive<KBlock32<block_q5_0>>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / 32, out, out_stride), n_tokens, r0, r1);
}

void matmul_q5_1_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    drive<KBlock32<block_q5_1>>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / 32, out, out_stride), n_tokens, r0, r1);
}

void matmul_iq4_nl_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    drive<KBlock32<block_iq4_nl>>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / 32, out, out_stride), n_tokens, r0, r1);
}

void matmul_q2_k_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    drive<KGroup16<block_q2_K>>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / QK_K, out, out_stride), n_tokens, r0, r1);
}

void matmul_q3_k_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    drive<KGroup16<block_q3_K>>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / QK_K, out, out_stride), n_tokens, r0, r1);
}

void matmul_iq4_xs_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    drive<KGroup16<block_iq4_xs>>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / QK_K, out, out_stride), n_tokens, r0, r1);
}

void matmul_q4_k_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    drive<KQ4_K>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / QK_K, out, out_stride), n_tokens, r0, r1);
}

void matmul_q5_k_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    drive<KQ5_K>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / QK_K, out, out_stride), n_tokens, r0, r1);
}

void matmul_q6_k_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    drive<KQ6_K>(make_ctx(W, w_row_bytes, A, a_row_bytes, n_cols / QK_K, out, out_stride), n_tokens, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_NEON
