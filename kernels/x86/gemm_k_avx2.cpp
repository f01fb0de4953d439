// GEMM for Q4_K / Q5_K / Q6_K / Q3_K / Q2_K weights x Q8_K activations (AVX2 + FMA + F16C, no AVX-512).
//
// The scheme of x86/gemm_avx2.cpp, for super-blocks of 256: a panel of 8 weight rows x a
// chunk of kChunk super-blocks is repacked into a small buffer in row-interleaved order. Per 32
// elements there are 8 steps of 32 bytes, step j holding elements 4j..4j+3 of each of the 8 rows
// (row i in bytes 4i..4i+3), so that a broadcast of 4 activation bytes and one
// _mm256_maddubs_epi16 give the 8 rows' partial sums. Each step is used for kTile tokens in
// registers, and the packed chunk for all tokens of a token block.
//
// Sub-block scales are applied in integers: the int16 sums of a few steps are multiplied by the
// 8 rows' scales with _mm256_madd_epi16 (a row's scale in both of its int16 lanes) and summed in
// int32 over the super-block, so there is one int -> float conversion per super-block and token.
// The bounds below hold for any weight bytes and activations down to -128 (the quantizer makes
// -127 at most).
//  - Q4_K: x = d*sc_j*q - dmin*m_j, q in 0..15 (the unsigned maddubs operand), 6-bit sc_j and
//    m_j per sub-block of 32. The 8 steps of a sub-block are summed in int16: a lane adds 16
//    products, <= 16*15*128 = 30720 < 32767 (no saturation). Scaled and summed over the
//    super-block: <= 256*15*128*63 < 2^25. The min term sum_j m_j * (activation sum of
//    sub-block j, from the Q8_K bsums) is a madd of (m_2k, m_2k+1) x (sum_2k, sum_2k+1) per pair
//    of sub-blocks (<= 256*128*63 < 2^21), with its own float factor -dmin*d8.
//  - Q5_K: Q4_K with q in 0..31 (bit 4 from qh, packed into the same panel). 16 products would
//    reach 16*31*128 = 63488, so the int16 sums take 4 steps (8 products, <= 31744) at a time.
//    Per super-block <= 256*31*128*63 < 2^26.
//  - Q6_K: x = d*sc_g*(q - 32), q in 0..63, int8 sc_g per group of 16. The weights are packed
//    signed (q - 32 in -32..31) and the activations unsigned (a + 128 in 0..255), so that
//    sum (a+128)*(q-32) = sum a*(q-32) + 128*sum (q-32): the correction depends on the row
//    only and is computed once, when packing. maddubs pair sums reach 2*255*32 = 16320, so two
//    steps (8 elements) are summed in int16 (<= 32640 < 32767) before the madd with the scale.
//    Per super-block: |sum| <= 256*255*32*128 < 2^28 and |correction| <= 128*256*32*128 = 2^27,
//    so the int32 accumulator, which starts at -correction, stays below 2^29.
//  - Q3_K: Q6_K's panel with q - 4 in -4..3 and its 6-bit scales -32..31: within Q6_K's bounds.
//  - Q2_K: x = d*sc_g*q - dmin*m_g, q in 0..3, 4-bit sc_g and m_g per group of 16. The d*sc_g*q
//    part is Q6_K's panel with q in 0..3 and scales 0..15 (within Q6_K's bounds); the min term
//    sum_g m_g * (the group's activation sum, the Q8_K bsums) is Q4_K's, a madd per pair of
//    groups (<= 16*15*16*128 < 2^19), with its own float factor -dmin*d8.
// With VNNI (kernels/x86/avx2_util.h) the steps of a sub-block (Q4_K) or group (Q6_K) go straight
// into int32 lanes by dpbusd, one per step and token, and the scale is applied with an int32
// multiply; the operands and offsets are the same. The int32 bounds: Q4_K as above; Q6_K a
// group's sum <= 16*255*32, times |sc| <= 128, 16 groups and the correction: < 2^29.
// Interleaved Q4_K and Q5_K weights (kernels/rows_x8.h) pack from their records without transposes.
// Loop order: token blocks (kTokBlock tokens, their activations stay in L2) -> 8-row panels
// -> K chunks (packed once per token block) -> tiles of kTile tokens.
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX2)

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/x86/avx2_util.h"
#include "kernels/x86/group16_chunk.h"
#include "kernels/scratch.h"
#include "kernels/prefetch.h"
#include "kernels/quant.h"
#include "kernels/rows_x8.h"

namespace hearth {

namespace {

constexpr int kChunk = 8;  // super-blocks per packed chunk: 20 KB (Q4_K), 23 KB (Q6_K)
// A chunk's sums are added to the output after the first: the partial sums of interleaved Q4_K
// and Q5_K rows that their other kernels sum in too (x86/avx2_util.h).
static_assert(kChunk == kX8KSumChunkSuperBlocks, "the GEMM's chunks are the interleaved rows' partial sums");
constexpr int kTokBlock = 64;  // tokens per activation block
constexpr int kTile = 4;       // tokens per register tile

// One super-block of 8 rows, packed.
struct alignas(32) PanelQ4K {
    uint8_t q[8][8][32];      // [sub-block][step][4*row + e], 0..15
    uint32_t scale[8][8];     // [sub-block][row]: sc as int16, twice
    uint32_t min_pair[4][8];  // [k][row]: m_2k | m_2k+1 << 16
    float d[8];
    float neg_dmin[8];
};

struct alignas(32) PanelQ6K {
    int8_t q[16][4][32];    // [group][step][4*row + e], q - 32
    uint32_t scale[16][8];  // [group][row]: sc as int16, twice
    int32_t neg_corr[8];    // [row]: -128 * sum_g sc_g * sum (q - 32)
    float d[8];
};

// Q2_K: Q6_K's panel of its quants and scales, and the groups' mins.
struct alignas(32) PanelQ2K : PanelQ6K {
    uint32_t min_pair[8][8];  // [k][row]: m_2k | m_2k+1 << 16
    float neg_dmin[8];
};

// Activations of a tile of kTile tokens, one super-block.
struct alignas(32) ActSuper {
    uint8_t q[kTile][256];  // Q4_K: the int8 quants; Q6_K: quants + 128, unsigned
    float d[kTile];
    int16_t sub_sums[kTile][8];     // Q4_K: sums of the 8 sub-blocks of 32 (|.| <= 32*128)
    int16_t group_sums[kTile][16];  // Q6_K's panel: the Q8_K bsums (Q2_K's mins take them)
};

template <typename Panel>
Panel* packed_buf() {
    thread_local Panel buf[kChunk];
    return buf;
}

ActSuper* act_buf(size_t n) {
    struct Tag;
    return thread_scratch<Tag, ActSuper>(n);
}

inline __m256i load(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }
inline void store(void* p, __m256i v) { _mm256_store_si256(static_cast<__m256i*>(p), v); }

#if defined(HEARTH_ISA_AVX_VNNI)
// One sub-block (Q4_K) or group (Q6_K) of kSteps steps for the kTile tokens of a tile, under
// VNNI: i_t += sc * sum_j dpbusd(step j of w, the 4 bytes of token t at a + 256 t + 4 j).
// kWeightsUnsigned: Q4_K's nibbles are dpbusd's unsigned operand; for Q6_K the activations
// (+ 128) are. sc_pair is the int16 scale twice per lane (the madd form the AVX2 tile uses);
// its high half, shifted down, is the scale as int32.
template <int kSteps, bool kWeightsUnsigned>
inline void add_scaled_steps_vnni(const uint8_t (*w)[32], const uint8_t* a, const void* sc_pair, __m256i& i0, __m256i& i1,
                                  __m256i& i2, __m256i& i3) {
    auto dot = [](__m256i acc, __m256i wv, const uint8_t* at) {
        return kWeightsUnsigned ? dot4_u8s8_add(acc, wv, bcast32(at)) : dot4_u8s8_add(acc, bcast32(at), wv);
    };
    const __m256i z = _mm256_setzero_si256();
    __m256i s0 = z, s1 = z, s2 = z, s3 = z;
    for (int j = 0; j < kSteps; ++j) {
        const __m256i wv = load(w[j]);
        s0 = dot(s0, wv, a + 4 * j);
        s1 = dot(s1, wv, a + 256 + 4 * j);
        s2 = dot(s2, wv, a + 512 + 4 * j);
        s3 = dot(s3, wv, a + 768 + 4 * j);
    }
    const __m256i sc = _mm256_srai_epi32(load(sc_pair), 16);
    i0 = _mm256_add_epi32(i0, _mm256_mullo_epi32(s0, sc));
    i1 = _mm256_add_epi32(i1, _mm256_mullo_epi32(s1, sc));
    i2 = _mm256_add_epi32(i2, _mm256_mullo_epi32(s2, sc));
    i3 = _mm256_add_epi32(i3, _mm256_mullo_epi32(s3, sc));
}
#endif

// 8 rows' 32 consecutive elements (one vector per row) -> 8 steps of 32 bytes at dst.
inline void store_steps(__m256i v[8], void* dst) {
    transpose8(v);
    for (int j = 0; j < 8; ++j) store(static_cast<char*>(dst) + 32 * j, v[j]);
}

// ---- Q4_K ----

// Q4_K, or Q5_K: Q4_K's fields and, in qh, bit 4 of each quant (quants 0..31).
template <typename Block>
void pack_q4k(const Block* const row[8], int sb, PanelQ4K& p) {
    constexpr bool kFifthBit = std::is_same<Block, block_q5_K>::value;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {  // qs[32c..32c+31]: sub-block 2c in the low nibbles, 2c+1 in the high
        __m256i lo[8], hi[8];
        for (int i = 0; i < 8; ++i) {
            const __m256i bits = loadu(row[i][sb].qs + 32 * c);
            lo[i] = _mm256_and_si256(bits, m4);
            hi[i] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            if constexpr (kFifthBit) {
                const __m256i qh = loadu(row[i][sb].qh);
                lo[i] = _mm256_or_si256(lo[i], q5_k_bit4(qh, 2 * c));
                hi[i] = _mm256_or_si256(hi[i], q5_k_bit4(qh, 2 * c + 1));
            }
        }
        store_steps(lo, p.q[2 * c]);
        store_steps(hi, p.q[2 * c + 1]);
    }
    // Per row one vector of its 8 scales, and one of its 4 min pairs, d and -dmin; transposed,
    // they are the panel's vectors.
    __m256i sc[8], rest[8];
    for (int i = 0; i < 8; ++i) {
        const Block& b = row[i][sb];
        uint32_t u[4];
        q4k_unpack_scales(b.scales, u);
        const __m256i s32 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(u)));
        sc[i] = _mm256_or_si256(s32, _mm256_slli_epi32(s32, 16));
        const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(u + 2)));
        uint32_t d_dmin;
        std::memcpy(&d_dmin, &b.d, 4);  // d and dmin are adjacent
        const __m128 dd = _mm_xor_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(int(d_dmin))), _mm_setr_ps(0.f, -0.f, 0.f, 0.f));
        rest[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(mins), _mm_castps_si128(dd), 1);
    }
    transpose8(sc);
    transpose8(rest);
    for (int j = 0; j < 8; ++j) store(p.scale[j], sc[j]);
    static_assert(
        offsetof(PanelQ4K, d) == offsetof(PanelQ4K, min_pair) + 128 && offsetof(PanelQ4K, neg_dmin) == offsetof(PanelQ4K, d) + 32,
        "min_pair, d, neg_dmin are the first 6 transposed vectors");
    for (int j = 0; j < 6; ++j) store(reinterpret_cast<__m256i*>(p.min_pair) + j, rest[j]);
}

// The same panel from an interleaved Q4_K or Q5_K record (kernels/rows_x8.h), which already holds
// the 8 rows' quants step by step (Q5_K: and their fifth bits, a qh vector per step) and their
// packed scales one row per 32-bit lane: no transposes.
template <typename Block>
void pack_q4k_x8(const uint8_t* rec, PanelQ4K& p) {
    using R = KRecordX8<Block>;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c)
        for (int k = 0; k < 8; ++k) {
            const __m256i bits = loadu(rec + R::kQsOffset + 256 * c + 32 * k);
            __m256i lo = _mm256_and_si256(bits, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            if constexpr (R::kFifthBit) {
                const __m256i qh = loadu(rec + R::kQhOffset + 32 * k);
                lo = _mm256_or_si256(lo, q5_k_bit4(qh, 2 * c));
                hi = _mm256_or_si256(hi, q5_k_bit4(qh, 2 * c + 1));
            }
            store(p.q[2 * c][k], lo);
            store(p.q[2 * c + 1][k], hi);
        }
    const Q4kScalesX8 s = q4k_unpack_scales_x8(rec + R::kScalesOffset);
    for (int j = 0; j < 8; ++j)
        store(p.scale[j], _mm256_shuffle_epi8(j < 4 ? s.sc_lo : s.sc_hi, lane_bytes_to_int16(j % 4, j % 4)));
    for (int k = 0; k < 4; ++k)  // (m_2k, m_2k+1)
        store(p.min_pair[k], _mm256_shuffle_epi8(k < 2 ? s.mn_lo : s.mn_hi, lane_bytes_to_int16(2 * k % 4, 2 * k % 4 + 1)));
    _mm256_store_ps(p.d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec))));
    _mm256_store_ps(p.neg_dmin, _mm256_xor_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 16))),
                                              _mm256_set1_ps(-0.f)));
}

// The min terms' integer part for the kTile tokens: m_t = sum_k madd(min pair k of the 8 rows,
// sums 2k and 2k + 1 of token t).
template <int kPairs, int kSums>
inline void add_min_sums(const uint32_t (*min_pair)[8], const int16_t (*sums)[kSums], __m256i& m0, __m256i& m1, __m256i& m2,
                         __m256i& m3) {
    for (int k = 0; k < kPairs; ++k) {
        const __m256i mp = load(min_pair[k]);
        m0 = _mm256_add_epi32(m0, _mm256_madd_epi16(mp, bcast32(sums[0] + 2 * k)));
        m1 = _mm256_add_epi32(m1, _mm256_madd_epi16(mp, bcast32(sums[1] + 2 * k)));
        m2 = _mm256_add_epi32(m2, _mm256_madd_epi16(mp, bcast32(sums[2] + 2 * k)));
        m3 = _mm256_add_epi32(m3, _mm256_madd_epi16(mp, bcast32(sums[3] + 2 * k)));
    }
}

// acc + (d*d8)*isum - (dmin*d8)*msum: a super-block's scaled sum and min term for one token, in
// the float operations of the interleaved rows' other kernels (x86/q4_kx8_avx2.cpp,
// gemv_q4_k_avx512.cpp), so that a batch here gives each token their bits.
inline __m256 add_with_mins(__m256 acc, __m256i isum, __m256i msum, __m256 d, __m256 neg_dmin, float d8) {
    const __m256 da = _mm256_set1_ps(d8);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, da), acc);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(neg_dmin, da), acc);
}

// kn packed super-blocks x the activation tile ab: res[t][i] = partial dot of row i with token t.
// kFifthBit (Q5_K, quants 0..31): a lane of 8 steps would add 16 products up to 31*128, past
// int16, so each half of a sub-block (8 products, <= 31744) is scaled on its own.
template <bool kFifthBit>
void tile_q4k(const PanelQ4K* pw, const ActSuper* ab, int kn, float res[kTile][8]) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    for (int b = 0; b < kn; ++b, ++pw, ++ab) {
        __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256(), i2 = _mm256_setzero_si256(),
                i3 = _mm256_setzero_si256();
        for (int s = 0; s < 8; ++s) {
            const uint8_t* a = &ab->q[0][32 * s];
#if defined(HEARTH_ISA_AVX_VNNI)
            add_scaled_steps_vnni<8, true>(pw->q[s], a, pw->scale[s], i0, i1, i2, i3);
#else
            constexpr int kSteps = kFifthBit ? 4 : 8;  // steps summed in int16
            const __m256i sc = load(pw->scale[s]);
            for (int j0 = 0; j0 < 8; j0 += kSteps) {
                __m256i w = load(pw->q[s][j0]);
                __m256i s0 = _mm256_maddubs_epi16(w, bcast32(a + 4 * j0));
                __m256i s1 = _mm256_maddubs_epi16(w, bcast32(a + 256 + 4 * j0));
                __m256i s2 = _mm256_maddubs_epi16(w, bcast32(a + 512 + 4 * j0));
                __m256i s3 = _mm256_maddubs_epi16(w, bcast32(a + 768 + 4 * j0));
                for (int j = j0 + 1; j < j0 + kSteps; ++j) {
                    w = load(pw->q[s][j]);
                    s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(w, bcast32(a + 4 * j)));
                    s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(w, bcast32(a + 256 + 4 * j)));
                    s2 = _mm256_add_epi16(s2, _mm256_maddubs_epi16(w, bcast32(a + 512 + 4 * j)));
                    s3 = _mm256_add_epi16(s3, _mm256_maddubs_epi16(w, bcast32(a + 768 + 4 * j)));
                    keep_step_order(s0, s1, s2, s3);
                }
                i0 = _mm256_add_epi32(i0, _mm256_madd_epi16(s0, sc));
                i1 = _mm256_add_epi32(i1, _mm256_madd_epi16(s1, sc));
                i2 = _mm256_add_epi32(i2, _mm256_madd_epi16(s2, sc));
                i3 = _mm256_add_epi32(i3, _mm256_madd_epi16(s3, sc));
            }
#endif
        }
        __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
        add_min_sums<4>(pw->min_pair, ab->sub_sums, m0, m1, m2, m3);
        const __m256 d = _mm256_load_ps(pw->d), neg_dmin = _mm256_load_ps(pw->neg_dmin);
        acc0 = add_with_mins(acc0, i0, m0, d, neg_dmin, ab->d[0]);
        acc1 = add_with_mins(acc1, i1, m1, d, neg_dmin, ab->d[1]);
        acc2 = add_with_mins(acc2, i2, m2, d, neg_dmin, ab->d[2]);
        acc3 = add_with_mins(acc3, i3, m3, d, neg_dmin, ab->d[3]);
    }
    _mm256_storeu_ps(res[0], acc0);
    _mm256_storeu_ps(res[1], acc1);
    _mm256_storeu_ps(res[2], acc2);
    _mm256_storeu_ps(res[3], acc3);
}

template <typename BlockType>
struct Q4KOrQ5K {
    using Block = BlockType;
    using Panel = PanelQ4K;
    static constexpr bool kActsPlus128 = false;
    static void pack(const Block* const row[8], int sb, Panel& p) { pack_q4k(row, sb, p); }
    static void tile(const Panel* pw, const ActSuper* ab, int kn, float res[kTile][8]) {
        tile_q4k<std::is_same<Block, block_q5_K>::value>(pw, ab, kn, res);
    }
    // The next panel's super-block sb (row[] points at this panel's rows, wrb bytes apart).
    static void prefetch_next(const Block* const row[8], int sb, size_t wrb) {
        for (int i = 0; i < 8; ++i) prefetch_ahead<sizeof(Block)>(row[i] + sb, 8 * wrb);
    }
};

using Q4K = Q4KOrQ5K<block_q4_K>;
using Q5K = Q4KOrQ5K<block_q5_K>;

// Interleaved Q4_K or Q5_K: whole groups of 8 rows; row[0] is the group, whose record sb is
// super-block sb of its 8 rows, and the next group follows it.
template <typename Plain>
struct X8Of : Plain {
    using Block = typename Plain::Block;
    using Panel = typename Plain::Panel;
    static void pack(const Block* const row[8], int sb, Panel& p) {
        pack_q4k_x8<Block>(reinterpret_cast<const uint8_t*>(row[0] + 8 * size_t(sb)), p);
    }
    static void prefetch_next(const Block* const row[8], int sb, size_t wrb) {
        prefetch_ahead<8 * sizeof(Block)>(row[0] + 8 * size_t(sb), 8 * wrb);
    }
};
using Q4KX8 = X8Of<Q4K>;
using Q5KX8 = X8Of<Q5K>;

// ---- Q6_K ----

// Q6_K, Q3_K or Q2_K (their quants as x86/group16_chunk.h gives them, their scales as
// group16_scales) into Q6_K's panel; pack_q2k adds Q2_K's mins.
template <typename Block>
void pack_q6k(const Block* const row[8], int sb, PanelQ6K& p) {
    for (int c = 0; c < 8; ++c) {
        __m256i v[8];
        for (int i = 0; i < 8; ++i) v[i] = group16_chunk(row[i][sb], c);
        store_steps(v, p.q[2 * c]);  // groups 2c, 2c+1
    }
    // Per row its scales 0..7 and 8..15, as int16 twice; transposed, the panel's vectors.
    __m256i lo[8], hi[8];
    alignas(16) uint16_t d[8];
    const __m256i low16 = _mm256_set1_epi32(0xFFFF);
    for (int i = 0; i < 8; ++i) {
        const Block& b = row[i][sb];
        const __m128i s8 = group16_scales(b);
        const __m256i l = _mm256_cvtepi8_epi32(s8), h = _mm256_cvtepi8_epi32(_mm_srli_si128(s8, 8));
        lo[i] = _mm256_or_si256(_mm256_and_si256(l, low16), _mm256_slli_epi32(l, 16));
        hi[i] = _mm256_or_si256(_mm256_and_si256(h, low16), _mm256_slli_epi32(h, 16));
        d[i] = b.d;
    }
    transpose8(lo);
    transpose8(hi);
    for (int j = 0; j < 8; ++j) {
        store(p.scale[j], lo[j]);
        store(p.scale[8 + j], hi[j]);
    }
    _mm256_store_ps(p.d, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d))));
    // The +128 of the activations: 128 * sum_g sc_g * sum (q - 32), per row. A group's 4 steps
    // are added as bytes (4 * [-32, 31] fits in int8), then summed per row by a maddubs with 1s.
    const __m256i ones = _mm256_set1_epi8(1);
    __m256i corr = _mm256_setzero_si256();
    for (int g = 0; g < 16; ++g) {
        const __m256i s8 =
            _mm256_add_epi8(_mm256_add_epi8(load(p.q[g][0]), load(p.q[g][1])), _mm256_add_epi8(load(p.q[g][2]), load(p.q[g][3])));
        corr = _mm256_add_epi32(corr, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, s8), load(p.scale[g])));
    }
    store(p.neg_corr, _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 7)));
}

// Q6_K's panel with Q2_K's mins: per row its 16 mins (the scales' high nibbles) as int16 pairs,
// and -dmin; transposed, the panel's vectors.
void pack_q2k(const block_q2_K* const row[8], int sb, PanelQ2K& p) {
    pack_q6k(row, sb, p);
    __m256i mins[8];
    alignas(16) uint16_t dmin[8];
    for (int i = 0; i < 8; ++i) {
        const block_q2_K& b = row[i][sb];
        mins[i] = q2k_mins_epi16(b);
        dmin[i] = b.dmin;
    }
    transpose8(mins);
    for (int k = 0; k < 8; ++k) store(p.min_pair[k], mins[k]);
    _mm256_store_ps(p.neg_dmin,
                    _mm256_xor_ps(_mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dmin))), _mm256_set1_ps(-0.f)));
}

template <typename Panel>
void tile_q6k(const Panel* pw, const ActSuper* ab, int kn, float res[kTile][8]) {
    constexpr bool kMins = std::is_same<Panel, PanelQ2K>::value;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    for (int b = 0; b < kn; ++b, ++pw, ++ab) {
        __m256i i0 = load(pw->neg_corr), i1 = i0, i2 = i0, i3 = i0;
        for (int g = 0; g < 16; ++g) {
#if defined(HEARTH_ISA_AVX_VNNI)
            add_scaled_steps_vnni<4, false>(reinterpret_cast<const uint8_t(*)[32]>(pw->q[g]), &ab->q[0][16 * g], pw->scale[g], i0,
                                            i1, i2, i3);
#else
            const __m256i sc = load(pw->scale[g]);
            for (int h = 0; h < 2; ++h) {  // two steps (8 elements) in int16, then scaled
                const uint8_t* a = &ab->q[0][16 * g + 8 * h];
                const __m256i w0 = load(pw->q[g][2 * h]), w1 = load(pw->q[g][2 * h + 1]);
                const __m256i s0 =
                    _mm256_add_epi16(_mm256_maddubs_epi16(bcast32(a), w0), _mm256_maddubs_epi16(bcast32(a + 4), w1));
                const __m256i s1 =
                    _mm256_add_epi16(_mm256_maddubs_epi16(bcast32(a + 256), w0), _mm256_maddubs_epi16(bcast32(a + 260), w1));
                const __m256i s2 =
                    _mm256_add_epi16(_mm256_maddubs_epi16(bcast32(a + 512), w0), _mm256_maddubs_epi16(bcast32(a + 516), w1));
                const __m256i s3 =
                    _mm256_add_epi16(_mm256_maddubs_epi16(bcast32(a + 768), w0), _mm256_maddubs_epi16(bcast32(a + 772), w1));
                i0 = _mm256_add_epi32(i0, _mm256_madd_epi16(s0, sc));
                i1 = _mm256_add_epi32(i1, _mm256_madd_epi16(s1, sc));
                i2 = _mm256_add_epi32(i2, _mm256_madd_epi16(s2, sc));
                i3 = _mm256_add_epi32(i3, _mm256_madd_epi16(s3, sc));
                keep_step_order(i0, i1, i2, i3);
            }
#endif
        }
        const __m256 d = _mm256_load_ps(pw->d);
        if constexpr (kMins) {
            __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
            add_min_sums<8>(pw->min_pair, ab->group_sums, m0, m1, m2, m3);
            const __m256 neg_dmin = _mm256_load_ps(pw->neg_dmin);
            acc0 = add_with_mins(acc0, i0, m0, d, neg_dmin, ab->d[0]);
            acc1 = add_with_mins(acc1, i1, m1, d, neg_dmin, ab->d[1]);
            acc2 = add_with_mins(acc2, i2, m2, d, neg_dmin, ab->d[2]);
            acc3 = add_with_mins(acc3, i3, m3, d, neg_dmin, ab->d[3]);
        } else {
            acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i0), _mm256_mul_ps(d, _mm256_set1_ps(ab->d[0])), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i1), _mm256_mul_ps(d, _mm256_set1_ps(ab->d[1])), acc1);
            acc2 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i2), _mm256_mul_ps(d, _mm256_set1_ps(ab->d[2])), acc2);
            acc3 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i3), _mm256_mul_ps(d, _mm256_set1_ps(ab->d[3])), acc3);
        }
    }
    _mm256_storeu_ps(res[0], acc0);
    _mm256_storeu_ps(res[1], acc1);
    _mm256_storeu_ps(res[2], acc2);
    _mm256_storeu_ps(res[3], acc3);
}

// Q6_K, Q3_K and Q2_K (with its mins) in Q6_K's panel.
template <typename BlockType>
struct Group16 {
    using Block = BlockType;
    static constexpr bool kMins = std::is_same<Block, block_q2_K>::value;
    using Panel = std::conditional_t<kMins, PanelQ2K, PanelQ6K>;
    static constexpr bool kActsPlus128 = true;
    static void pack(const Block* const row[8], int sb, Panel& p) {
        if constexpr (kMins)
            pack_q2k(row, sb, p);
        else
            pack_q6k(row, sb, p);
    }
    static void tile(const Panel* pw, const ActSuper* ab, int kn, float res[kTile][8]) { tile_q6k(pw, ab, kn, res); }
    static void prefetch_next(const Block* const row[8], int sb, size_t wrb) {
        for (int i = 0; i < 8; ++i) prefetch_ahead<sizeof(Block)>(row[i] + sb, 8 * wrb);
    }
};

// ---- driver ----

// Activation tiles of tokens [t0, te): tile g holds tokens t0 + kTile*g + i (the last tile
// repeats its last token), nsb super-blocks each.
template <bool kActsPlus128>
void pack_acts(const char* A, size_t arb, int nsb, int t0, int te, ActSuper* out) {
    const __m256i bias = _mm256_set1_epi8(char(0x80));
    for (int g = t0; g < te; g += kTile) {
        const block_q8_K* a[kTile];
        for (int i = 0; i < kTile; ++i) a[i] = reinterpret_cast<const block_q8_K*>(A + size_t(std::min(g + i, te - 1)) * arb);
        for (int b = 0; b < nsb; ++b, ++out) {
            for (int i = 0; i < kTile; ++i) {
                const block_q8_K& x = a[i][b];
                out->d[i] = x.d;
                if (kActsPlus128) {  // a + 128 == a ^ 0x80 as a byte
                    for (int k = 0; k < 256; k += 32) store(out->q[i] + k, _mm256_xor_si256(loadu(x.qs + k), bias));
                    std::memcpy(out->group_sums[i], x.bsums, sizeof x.bsums);
                } else {
                    std::memcpy(out->q[i], x.qs, 256);
                    const __m256i bs = loadu(x.bsums);
                    const __m128i s8 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
                    _mm_store_si128(reinterpret_cast<__m128i*>(out->sub_sums[i]), s8);
                }
            }
        }
    }
}

template <typename K>
void gemm(const void* W, size_t wrb, const void* A, size_t arb, int n_cols, int n_tokens, float* out, int os, int r0, int r1) {
    static_assert(kTile == 4, "the tiles are written for 4 tokens");
    if (r0 >= r1 || n_tokens <= 0) return;
    const int nsb = n_cols / QK_K;
    const char* Wc = static_cast<const char*>(W);
    typename K::Panel* pw = packed_buf<typename K::Panel>();
    ActSuper* acts = act_buf(size_t(kTokBlock / kTile) * nsb);
    for (int t0 = 0; t0 < n_tokens; t0 += kTokBlock) {
        const int te = std::min(n_tokens, t0 + kTokBlock);
        pack_acts<K::kActsPlus128>(static_cast<const char*>(A), arb, nsb, t0, te, acts);
        for (int r = r0; r < r1; r += 8) {
            const int nr = std::min(8, r1 - r);
            const typename K::Block* row[8];
            for (int i = 0; i < 8; ++i)
                row[i] = reinterpret_cast<const typename K::Block*>(Wc + size_t(r + std::min(i, nr - 1)) * wrb);
            for (int kb = 0; kb < nsb; kb += kChunk) {
                const int kn = std::min(kChunk, nsb - kb);
                for (int b = 0; b < kn; ++b) {
                    K::pack(row, kb + b, pw[b]);
                    // The next panel's rows, so that its packing does not wait on memory (with
                    // few tokens, packing is a large part of the time).
                    if (r + 8 < r1) K::prefetch_next(row, kb + b, wrb);
                }
                for (int t = t0; t < te; t += kTile) {
                    const int nt = std::min(kTile, te - t);
                    alignas(32) float res[kTile][8];
                    K::tile(pw, acts + size_t((t - t0) / kTile) * nsb + kb, kn, res);
                    store_gemm_tile(out, size_t(os), r, nr, t, nt, res, kb == 0);
                }
            }
        }
    }
}

}  // namespace

void matmul_q4_k_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemm<Q4K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_kx8_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm<Q4KX8>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_k_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemm<Q5K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_kx8_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm<Q5KX8>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q6_k_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemm<Group16<block_q6_K>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q3_k_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemm<Group16<block_q3_K>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q2_k_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemm<Group16<block_q2_K>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX2
