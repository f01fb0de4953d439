// Matmul of rows interleaved by 8 (TYPE_Q4_0_X8, TYPE_Q8_0_X8, TYPE_Q4_K_X8; kernels/rows_x8.h,
// kernels/q4_kx8.h) x Q8_0 / Q8_K activations, AArch64 NEON, with or without dotprod.
//
// A 32-byte step of a record holds 4 bytes of each of the group's 8 rows, one row per 32-bit lane:
// two 16-byte registers, rows 0..3 and rows 4..7. Each is multiplied with the step's 4 activation
// bytes broadcast to every lane, so that each lane is one row from start to end: no horizontal
// sums, no transposes, and one 8-byte load gives 4 rows' fp16 scales.
//  - With dotprod, SDOT (vdotq_s32) adds the 4 products of each lane into it.
//  - Without, SMULL / SMULL2 give the 16 products as int16, rows 0-1 and rows 2-3. Byte weights
//    (Q8_0): a product reaches 128 * 128, two overflow int16, so each step is added into int32
//    pairs with SADALP. 4-bit weights (Q4_0, Q4_K): |product| <= 15 * 128 = 1920, so SMLAL /
//    SMLAL2 sum the up to 8 steps of a block or sub-block in int16 (<= 15360 < 32767), widened
//    once. A pairwise add then gives one row per lane.
// Q4_0: unsigned nibbles (low: elements 4k.., high: 16 + 4k..), the -8 offset subtracted as the
// integer 8 * sum(q) of the activation block. Q4_K: sub-block sums times each row's 6-bit scale,
// mins against the activation's sub-block sums, as q4_kx8_avx2.cpp does (the bounds are there).
//
// Tiles: a group's 8 rows x up to kTileTokens tokens, whose accumulators stay in registers (32 of
// them), so that each record is read once per tile. One token (generation) is a tile of one that
// streams the group's records once, with prefetches a few KB ahead (kernels/prefetch.h). With more
// tokens than one tile, a group is taken in chunks of kChunkBytes of records, read from memory by
// the first tile and from L1 by the others. The rows after the last whole group are plain and go
// to the plain NEON kernels.
//
// With i8mm (__ARM_FEATURE_MATMUL_INT8), calls of i8mm_gemm_min_tokens tokens or more go to the
// SMMLA GEMM of kernels/gemm_neon_i8mm.cpp instead.
#include "kernels/q4_kx8.h"
#include "kernels/rows_x8.h"

#if defined(HEARTH_ISA_NEON)

#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/prefetch.h"

namespace {

constexpr size_t kChunkBytes = 8 << 10;  // a chunk of records, with several tiles: stays in L1

#if defined(HEARTH_ISA_DOTPROD)
constexpr bool kDotprod = true;
#else
constexpr bool kDotprod = false;
#endif

// 4 bytes at p in every 32-bit lane: one step's activation bytes.
inline int8x16_t bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// The 4 fp16 values at p (4 rows' scales) as floats.
inline float32x4_t load_f16x4(const uint8_t* p) { return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p))); }

// Per-row sums of the products of 16-byte weight registers (4 bytes of each of 4 rows, one row
// per 32-bit lane) with broadcast activation bytes, over the steps of a block or sub-block;
// rows() has row i in lane i. ByteDots takes any int8 weights, NibbleDots weights 0..15 and, with
// no dotprod, at most 8 steps.
#if defined(HEARTH_ISA_DOTPROD)
struct ByteDots {
    int32x4_t s = vdupq_n_s32(0);
    void add(int8x16_t w, int8x16_t a) { s = vdotq_s32(s, w, a); }
    int32x4_t rows() const { return s; }
};
using NibbleDots = ByteDots;
#else
struct ByteDots {
    int32x4_t s01 = vdupq_n_s32(0), s23 = vdupq_n_s32(0);  // rows 0, 1 and rows 2, 3: 2 pair sums each
    void add(int8x16_t w, int8x16_t a) {
        s01 = vpadalq_s16(s01, vmull_s8(vget_low_s8(w), vget_low_s8(a)));
        s23 = vpadalq_s16(s23, vmull_high_s8(w, a));
    }
    int32x4_t rows() const { return vpaddq_s32(s01, s23); }
};
struct NibbleDots {
    int16x8_t s01 = vdupq_n_s16(0), s23 = vdupq_n_s16(0);  // rows 0, 1 and rows 2, 3: 4 sums each
    void add(int8x16_t w, int8x16_t a) {
        s01 = vmlal_s8(s01, vget_low_s8(w), vget_low_s8(a));
        s23 = vmlal_high_s8(s23, w, a);
    }
    int32x4_t rows() const { return vpaddq_s32(vpaddlq_s16(s01), vpaddlq_s16(s23)); }
};
#endif

// An empty volatile asm after each step of a tile: GCC's scheduler otherwise hoists the loads of
// all the steps of a block or chunk above their first use and spills what it loaded (GCC 12 -O3,
// counted in this file's objdump: with dotprod, Q4_K spilled and reloaded ~17 registers per chunk
// of 8 steps for one token and ~150 for 4 tokens, Q4_0 ~48 per block for 4 tokens; with it, none
// in the step loops). A volatile asm is a scheduling barrier and sends nothing to memory.
inline void step_barrier() { asm volatile(""); }

// Byte j of each 32-bit lane of v, zero-extended (TBL gives 0 for indices past 15).
inline int32x4_t lane_byte(uint8x16_t v, int j) {
    const uint32x4_t lane_base = {0xFFFFFF00u, 0xFFFFFF04u, 0xFFFFFF08u, 0xFFFFFF0Cu};
    return vreinterpretq_s32_u8(vqtbl1q_u8(v, vreinterpretq_u8_u32(vaddq_u32(lane_base, vdupq_n_u32(uint32_t(j))))));
}

// Per-call scratch: the activations' per-block terms, once per token and block.
template <typename T>
T* scratch(size_t n) {
    thread_local std::vector<T> buf;
    if (buf.size() < n) buf.resize(n);
    return buf.data();
}

// Q4_0 / Q8_0 records (kernels/rows_x8.h) x Q8_0 activations.
template <typename Block>
struct X8Q {
    static constexpr bool kNibbles = sizeof(Block) == sizeof(block_q4_0);
    static constexpr size_t kRecordBytes = 8 * sizeof(Block);
    static constexpr int kBlockElems = 32;
    static constexpr int kTileTokens = 4;  // 2 + 2 accumulator registers per token (4 + 2 without dotprod)
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

// Q4_K records (kernels/q4_kx8.h) x Q8_K activations.
struct X8Q4K {
    static constexpr size_t kRecordBytes = 8 * sizeof(block_q4_K);
    static constexpr size_t kScalesOffset = 32, kQsOffset = 128;  // layout in q4_kx8.h
    static constexpr int kBlockElems = QK_K;
    // Registers per token: the sub-block sums 4 (8 without dotprod), the scaled sums 2, the floats
    // 2. With dotprod 4 tokens: the step loop keeps its 16 sums and the weights in registers, and
    // the scaled sums and floats, used once per 8 steps, go to the stack. Without, 2 tokens.
    static constexpr int kTileTokens = kDotprod ? 4 : 2;
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
                        lo[h] = vreinterpretq_s8_u8(vandq_u8(w, m4));
                        hi[h] = vreinterpretq_s8_u8(vshrq_n_u8(w, 4));
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

// Tokens [t0, t0 + NT) x records [kb, kb + kn) of the group of rows r..r+7 at g: the partial dots
// written (kb == 0) or added to out.
template <typename K, int NT>
void tile(const uint8_t* g, const char* A, size_t arb, const typename K::Terms* at, int nb, int kb, int kn, int t0,
          size_t pf, float* out, int os, int r) {
    const typename K::ABlock* a[NT];
    const typename K::Terms* e[NT];
    for (int t = 0; t < NT; ++t) {
        a[t] = reinterpret_cast<const typename K::ABlock*>(A + size_t(t0 + t) * arb) + kb;
        e[t] = at + size_t(t0 + t) * nb + kb;
    }
    float32x4_t acc[NT][2];
    for (int t = 0; t < NT; ++t) acc[t][0] = acc[t][1] = vdupq_n_f32(0.f);
    K::template records<NT>(g + size_t(kb) * K::kRecordBytes, a, e, kn, pf, acc);
    for (int t = 0; t < NT; ++t)
        for (int h = 0; h < 2; ++h) {
            float* o = out + size_t(t0 + t) * os + r + 4 * h;
            vst1q_f32(o, kb == 0 ? acc[t][h] : vaddq_f32(acc[t][h], vld1q_f32(o)));
        }
}

// tile<K, nt> for nt = 1 .. NT tokens.
template <typename K, int NT = K::kTileTokens, typename... Args>
void tile_for(int nt, Args... args) {
    if constexpr (NT > 1)
        if (nt < NT) return tile_for<K, NT - 1>(nt, args...);
    tile<K, NT>(args...);
}

// Whole groups of rows [r0, r1) (multiples of 8) to the tiles, the plain tail to `plain`.
template <typename K>
void matmul_x8(matmul_rows_fn plain, const void* W, size_t wrb, const void* A, size_t arb, int n_cols, int n_tokens,
               float* out, int os, int r0, int r1) {
    if (r0 >= r1 || n_tokens <= 0) return;
    // Rows from the first one not in a whole group of [r0, r1) on are the plain tail
    // (r0 is a multiple of 8, and r1 is either one or the matrix's last row + 1).
    const int g1 = r0 + (r1 - r0) / 8 * 8;
    if (g1 > r0) {
        const int nb = n_cols / K::kBlockElems;
        const char* Ac = static_cast<const char*>(A);
        typename K::Terms* at = scratch<typename K::Terms>(size_t(nb) * n_tokens);
        for (int t = 0; t < n_tokens; ++t)
            for (int b = 0; b < nb; ++b)
                at[size_t(t) * nb + b] = K::terms(reinterpret_cast<const typename K::ABlock*>(Ac + size_t(t) * arb)[b]);
        const int chunk = n_tokens <= K::kTileTokens ? nb : std::max(1, int(kChunkBytes / K::kRecordBytes));
        const size_t pf = prefetch_distance(K::kRecordBytes);
        for (int r = r0; r < g1; r += 8) {
            const uint8_t* g = static_cast<const uint8_t*>(W) + size_t(r) * wrb;
            for (int kb = 0; kb < nb; kb += chunk)
                for (int t0 = 0; t0 < n_tokens; t0 += K::kTileTokens)
                    tile_for<K>(std::min(K::kTileTokens, n_tokens - t0), g, Ac, arb, at, nb, kb, std::min(chunk, nb - kb), t0,
                                pf, out, os, r);
        }
    }
    if (g1 < r1) plain(W, wrb, A, arb, n_cols, n_tokens, out, os, g1, r1);
}

}  // namespace

void matmul_q4_0x8_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                             int n_tokens, float* out, int out_stride, int r0, int r1) {
#if defined(HEARTH_ISA_I8MM)
    if (n_tokens >= i8mm_gemm_min_tokens)
        return matmul_q4_0x8_gemm_i8mm(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
#endif
    matmul_x8<X8Q<block_q4_0>>(matmul_q4_0_rows_neon, W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride,
                               r0, r1);
}

void matmul_q8_0x8_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                             int n_tokens, float* out, int out_stride, int r0, int r1) {
#if defined(HEARTH_ISA_I8MM)
    if (n_tokens >= i8mm_gemm_min_tokens)
        return matmul_q8_0x8_gemm_i8mm(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
#endif
    matmul_x8<X8Q<block_q8_0>>(matmul_q8_0_rows_neon, W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride,
                               r0, r1);
}

void matmul_q4_kx8_rows_neon(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                             int n_tokens, float* out, int out_stride, int r0, int r1) {
#if defined(HEARTH_ISA_I8MM)
    if (n_tokens >= i8mm_gemm_min_tokens)
        return matmul_q4_kx8_gemm_i8mm(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
#endif
    matmul_x8<X8Q4K>(matmul_q4_k_rows_neon, W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

#endif  // HEARTH_ISA_NEON
