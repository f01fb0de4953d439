// GEMM with AVX-512 VNNI on zmm registers (prompt processing): interleaved Q4_0 / Q8_0 weights
// (Q4_0 / Q8_0, kernels/rows_x8.h) x Q8_0 activations here; interleaved Q4_K
// and plain Q6_K, Q3_K and Q2_K x Q8_K in the sections further down.
//
// The scheme of x86/gemm_avx2.cpp, twice as wide: a panel is two groups of 8 interleaved rows
// (16 rows), so that one 64-byte step holds elements 4j..4j+3 of 16 rows (row i of the first group
// in bytes 4i..4i+3, of the second in 32 + 4i..), and one vpdpbusd against the 4 activation bytes
// of a token (an embedded {1to16} broadcast from memory) adds 64 products into the 16 rows' int32
// lanes. A tile is kTile tokens x 16 rows: kTile int32 accumulators per block, kTile float
// accumulators across blocks, each packed step loaded once per tile.
//  - Both types put the weights in dpbusd's unsigned operand and the activations (as they are,
//    signed) in the broadcast one, so no activation byte is widened or offset per step:
//    Q4_0 nibbles 0..15 (the -8 is the per-(token, block) term 8 * sum(a)), Q8_0 weights + 128
//    (w ^ 0x80 when packed; the term is 128 * sum(a)). The term is computed once per activation
//    block, when the activations are packed, and is the int32 accumulator's starting value
//    (negated), so it costs the tile no instruction beyond that broadcast. dpbusd does not saturate; a block's sum
//    is at most 32 * 255 * 128 < 2^21 in magnitude.
//  - Per block and token then one int -> float conversion and one FMA with the 16 rows' scales
//    times the token's (an embedded-broadcast multiply).
// The integer sums are those of the scalar kernels exactly; only the float operations differ.
// An odd group at the end of the row range is paired with itself, and only its 8 rows stored.
// Loop order (the interleaved formats' driver, x86/gemm_x8_avx512.h, shared with the AMX GEMMs):
// token blocks (kTokBlock tokens, activations packed once per block, kept in L2) -> 16-row
// panels -> K chunks (packed once per token block, L1-resident) -> tiles of kTile tokens; the
// next chunk's weight lines are prefetched a few per block of every tile (ChunkPrefetch).
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX512)

#include "kernels/x86/avx512_gcc_warnings.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/prefetch.h"
#include "kernels/quant_types.h"
#include "kernels/rows_x8.h"
#include "kernels/x86/avx512_util.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/group16_chunk.h"
#include "kernels/scratch.h"
#include "kernels/x86/gemm_x8_avx512.h"

namespace hearth {

namespace {

#ifndef HEARTH_ZMM_CHUNK  // tuning overrides for tools/bench_kernels builds
#define HEARTH_ZMM_CHUNK 32
#define HEARTH_ZMM_TOKBLOCK 128
#define HEARTH_ZMM_TILE 8
#endif
constexpr int kChunk = HEARTH_ZMM_CHUNK;  // blocks per packed chunk: 32 * 576 = 18 KB
constexpr int kTokBlock =
    HEARTH_ZMM_TOKBLOCK;                   // tokens per activation block: 16 tiles x 64 blocks x 320 B = 320 KB at 2048 columns
constexpr int kTile = HEARTH_ZMM_TILE;     // tokens per register tile
constexpr int kPackedBlock = 8 * 64 + 64;  // 8 steps of 16 rows, then the 16 rows' float scales

uint8_t* packed_buf() {
    alignas(64) thread_local uint8_t buf[kChunk * kPackedBlock];
    return buf;
}

// Activations of a tile of kTile tokens, one block: the quants of each token, their scales and
// the negated offset term (Q4_0: -8 * sum(q), Q8_0: -128 * sum(q)).
struct alignas(64) ActBlock {
    int8_t q[kTile][32];
    float d[kTile];
    int32_t neg_term[kTile];
};

ActBlock* act_buf(size_t n) {
    struct Tag;
    return thread_scratch<Tag, ActBlock>(n);
}

// Pack kn records of the group pair (ga, gb) (record b of each at + b * 8 * sizeof(WBlock)) into p.
template <typename WBlock>
void pack_x8_pair(const uint8_t* ga, const uint8_t* gb, int kn, uint8_t* p) {
    constexpr size_t kRec = 8 * sizeof(WBlock);
    const __m512i m4 = _mm512_set1_epi8(0x0F), bias = _mm512_set1_epi8(char(0x80));
    for (int b = 0; b < kn; ++b, p += kPackedBlock, ga += kRec, gb += kRec) {
        __m512i* q = reinterpret_cast<__m512i*>(p);
        if (sizeof(WBlock) == sizeof(block_q4_0)) {
            for (int k = 0; k < 4; ++k) {
                const __m512i w = join(loadu256(ga + 16 + 32 * k), loadu256(gb + 16 + 32 * k));
                _mm512_store_si512(q + k, _mm512_and_si512(w, m4));
                _mm512_store_si512(q + k + 4, _mm512_and_si512(_mm512_srli_epi16(w, 4), m4));
            }
        } else {
            for (int k = 0; k < 8; ++k)
                _mm512_store_si512(q + k, _mm512_xor_si512(join(loadu256(ga + 16 + 32 * k), loadu256(gb + 16 + 32 * k)), bias));
        }
        const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ga))),
                                                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)), 1);
        _mm512_store_ps(reinterpret_cast<float*>(p + 512), _mm512_cvtph_ps(h));
    }
}

// Activation tiles of tokens [t0, te): tile g holds tokens t0 + kTile*g + i (the last tile
// repeats its last token), nb blocks each. kShift: log2 of the offset (Q4_0 3, Q8_0 7).
template <int kShift>
void pack_acts(const char* A, size_t arb, int nb, int t0, int te, ActBlock* out) {
    const __m256i ones8 = _mm256_set1_epi8(1);
    for (int g = t0; g < te; g += kTile) {
        const block_q8_0* a[kTile];
        for (int i = 0; i < kTile; ++i) a[i] = reinterpret_cast<const block_q8_0*>(A + size_t(std::min(g + i, te - 1)) * arb);
        for (int b = 0; b < nb; ++b, ++out) {
            __m256i s[kTile];
            for (int i = 0; i < kTile; ++i) {
                const __m256i q = loadu256(a[i][b].qs);
                _mm256_store_si256(reinterpret_cast<__m256i*>(out->q[i]), q);
                out->d[i] = _cvtsh_ss(a[i][b].d);
                s[i] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones8, q);  // 8 partial sums
            }
            for (int i = 0; i < kTile; i += 4) {
                const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[i], s[i + 1]), _mm256_hadd_epi32(s[i + 2], s[i + 3]));
                const __m128i t = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
                _mm_store_si128(reinterpret_cast<__m128i*>(out->neg_term + i),
                                _mm_sub_epi32(_mm_setzero_si128(), _mm_slli_epi32(t, kShift)));
            }
        }
    }
}

// kn blocks of the packed chunk pw x the activation tile ab: res[t] = the 16 rows' partial dots
// with token t.
void tile(const uint8_t* pw, const ActBlock* ab, int kn, ChunkPrefetch& next, __m512 res[kTile]) {
    __m512 acc[kTile];
    for (int t = 0; t < kTile; ++t) acc[t] = _mm512_setzero_ps();
    for (int b = 0; b < kn; ++b, pw += kPackedBlock, ++ab) {
        next.step();
        const __m512i* q = reinterpret_cast<const __m512i*>(pw);
        __m512i s[kTile];
        for (int t = 0; t < kTile; ++t) s[t] = _mm512_set1_epi32(ab->neg_term[t]);
        for (int j = 0; j < 8; ++j) {
            const __m512i w = _mm512_load_si512(q + j);
            for (int t = 0; t < kTile; ++t) s[t] = dpbusd_bcast<false>(s[t], w, ab->q[t] + 4 * j);
        }
        const __m512 dw = _mm512_load_ps(reinterpret_cast<const float*>(pw + 512));
        for (int t = 0; t < kTile; ++t)
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[t]), _mm512_mul_ps(dw, _mm512_set1_ps(ab->d[t])), acc[t]);
    }
    for (int t = 0; t < kTile; ++t) res[t] = acc[t];
}

// ---- Q4_K and Q5_K (interleaved, kernels/rows_x8.h) x Q8_K ----
//
// The scheme of x86/gemm_k_avx2.cpp's VNNI tile on 16 rows: per sub-block of 32, 8 steps of
// one dpbusd per token (nibbles unsigned, activations signed, embedded broadcast) into a fresh
// int32 sum, then times the 16 rows' 6-bit scales (int32 multiply) into the super-block's int32
// sum (<= 256*15*128*63 < 2^25; Q5_K, quants 0..31 with the fifth bit packed in: < 2^26). The mins: sum_j m_j * (activation sum of sub-block j), as 4
// vpdpwssd of the (m_2k, m_2k+1) int16 pairs with the activation's paired sub-block sums
// (<= 256*128*63 < 2^21). Per super-block and token: (d * isum - dmin * msum) * d8, in floats.

constexpr int kChunkK = 4;  // super-blocks per packed chunk: 4 * 4992 = 20 KB

struct alignas(64) PanelQ4K16 {
    uint8_t q[8][8][64];   // [sub-block][step][4*row + e], quants 0..15 (Q5_K: 0..31)
    int32_t scale[8][16];  // [sub-block][row]
    Q4kMinsScales16 m;
};

using ActSuper = ActQ8KTile<kTile>;

PanelQ4K16* packed_buf_k() {
    thread_local PanelQ4K16 buf[kChunkK];
    return buf;
}

ActSuper* act_buf_k(size_t n) {
    struct Tag;
    return thread_scratch<Tag, ActSuper>(n);
}

// Byte j (0..3) of each 32-bit lane, zero-extended to the lane (a _mm256_shuffle_epi8 control).
inline __m256i lane_byte_to_int32(int j) {
    return _mm256_add_epi32(_mm256_setr_epi32(0, 4, 8, 12, 0, 4, 8, 12), _mm256_set1_epi32(int32_t(0x80808000u | uint32_t(j))));
}

// Super-block records ra and rb (the group pair's) into p. Q5_K: each step's fifth bits from the
// qh vector of step k (bit 2c for chunk c's low nibbles, 2c + 1 for its high ones).
template <typename WBlock>
void pack_q4k_pair(const uint8_t* ra, const uint8_t* rb, PanelQ4K16& p) {
    using R = KRecordX8<WBlock>;
    const __m512i m4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
    for (int c = 0; c < 4; ++c)
        for (int k = 0; k < 8; ++k) {
            const __m512i bits =
                join(loadu256(ra + R::kQsOffset + 256 * c + 32 * k), loadu256(rb + R::kQsOffset + 256 * c + 32 * k));
            __m512i lo = _mm512_and_si512(bits, m4), hi = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
            if constexpr (R::kFifthBit) {
                const __m512i h = join(loadu256(ra + R::kQhOffset + 32 * k), loadu256(rb + R::kQhOffset + 32 * k));
                // Bit 2c to bit 4: shifted left by 4 - 2c, or right by 2c - 4 (bits 6, 7).
                const __m512i hl = c < 3 ? _mm512_slli_epi16(h, unsigned(4 - 2 * c)) : _mm512_srli_epi16(h, 2);
                const __m512i hh = c < 2 ? _mm512_slli_epi16(h, unsigned(3 - 2 * c)) : _mm512_srli_epi16(h, unsigned(2 * c - 3));
                lo = _mm512_or_si512(lo, _mm512_and_si512(hl, bit4));
                hi = _mm512_or_si512(hi, _mm512_and_si512(hh, bit4));
            }
            _mm512_store_si512(p.q[2 * c][k], lo);
            _mm512_store_si512(p.q[2 * c + 1][k], hi);
        }
    const Q4kScalesX8 sa = q4k_unpack_scales_x8(ra + R::kScalesOffset), sb = q4k_unpack_scales_x8(rb + R::kScalesOffset);
    for (int j = 0; j < 8; ++j) {
        const __m256i ctl = lane_byte_to_int32(j % 4);
        _mm512_store_si512(p.scale[j], join(_mm256_shuffle_epi8(j < 4 ? sa.sc_lo : sa.sc_hi, ctl),
                                            _mm256_shuffle_epi8(j < 4 ? sb.sc_lo : sb.sc_hi, ctl)));
    }
    pack_q4k_mins_and_scales(ra, rb, sa, sb, p.m);
}

void tile_q4k(const PanelQ4K16* pw, const ActSuper* ab, int kn, ChunkPrefetch& next, __m512 res[kTile]) {
    __m512 acc[kTile];
    for (int t = 0; t < kTile; ++t) acc[t] = _mm512_setzero_ps();
    for (int b = 0; b < kn; ++b, ++pw, ++ab) {
        next.step();
        __m512i isum[kTile];
        for (int t = 0; t < kTile; ++t) isum[t] = _mm512_setzero_si512();
        for (int sb = 0; sb < 8; ++sb) {
            __m512i s[kTile];
            for (int t = 0; t < kTile; ++t) s[t] = _mm512_setzero_si512();
            for (int j = 0; j < 8; ++j) {
                const __m512i w = _mm512_load_si512(pw->q[sb][j]);
                for (int t = 0; t < kTile; ++t) s[t] = dpbusd_bcast<false>(s[t], w, ab->q[t] + 32 * sb + 4 * j);
            }
            const __m512i sc = _mm512_load_si512(pw->scale[sb]);
            for (int t = 0; t < kTile; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s[t], sc));
        }
        for (int t = 0; t < kTile; ++t) acc[t] = q4k_super_add(acc[t], isum[t], pw->m, ab->sub_sums[t], ab->d[t]);
    }
    for (int t = 0; t < kTile; ++t) res[t] = acc[t];
}

// ---- The formats of the driver (x86/gemm_x8_avx512.h) ----

struct NoScope {};

// Interleaved Q4_0 / Q8_0 x Q8_0.
template <typename WBlock>
struct FormatQ8_0Family {
    using Packed = uint8_t;  // kPackedBlock bytes per block
    using Act = ActBlock;
    using Scope = NoScope;
    static constexpr int kTile = hearth::kTile, kTokBlock = hearth::kTokBlock;
    static constexpr int kBlockCols = 32, kChunkBlocks = kChunk;
    static constexpr size_t kRec = 8 * sizeof(WBlock);
    static Packed* packed() { return packed_buf(); }
    static Act* acts(size_t n) { return act_buf(n); }
    static void pack_weights(const uint8_t* ga, const uint8_t* gb, int kn, Packed* p) { pack_x8_pair<WBlock>(ga, gb, kn, p); }
    static void pack_activations(const char* A, size_t arb, int nb, int t0, int te, Act* out) {
        pack_acts<sizeof(WBlock) == sizeof(block_q4_0) ? 3 : 7>(A, arb, nb, t0, te, out);
    }
    static void run_tile(const Packed* p, const Act* a, int kn, ChunkPrefetch& next, __m512 res[kTile]) {
        tile(p, a, kn, next, res);
    }
};

// Interleaved Q4_K or Q5_K x Q8_K.
template <typename WBlock>
struct FormatQ4_KOrQ5_K {
    using Packed = PanelQ4K16;
    using Act = ActSuper;
    using Scope = NoScope;
    static constexpr int kTile = hearth::kTile, kTokBlock = hearth::kTokBlock;
    static constexpr int kBlockCols = QK_K, kChunkBlocks = kChunkK;
    static constexpr size_t kRec = KRecordX8<WBlock>::kBytes;
    static Packed* packed() { return packed_buf_k(); }
    static Act* acts(size_t n) { return act_buf_k(n); }
    static void pack_weights(const uint8_t* ga, const uint8_t* gb, int kn, Packed* p) {
        for (int b = 0; b < kn; ++b) pack_q4k_pair<WBlock>(ga + size_t(b) * kRec, gb + size_t(b) * kRec, p[b]);
    }
    static void pack_activations(const char* A, size_t arb, int nb, int t0, int te, Act* out) {
        pack_acts_q8k(A, arb, nb, t0, te, out);
    }
    static void run_tile(const Packed* p, const Act* a, int kn, ChunkPrefetch& next, __m512 res[kTile]) {
        tile_q4k(p, a, kn, next, res);
    }
};

// ---- Q6_K, Q3_K and Q2_K (plain rows) x Q8_K ----
//
// The scheme of x86/gemm_k_avx2.cpp's Q6_K tile on 16 rows, for the types its panel holds: the
// weights packed signed (x86/group16_chunk.h: Q6_K q - 32, Q3_K q - 4, Q2_K q) with 16 rows'
// transposed steps per 64 bytes, the activations + 128 as dpbusd's unsigned operand (broadcast by
// a separate load: the embedded broadcast needs the signed operand), 4 steps per group of 16 into
// a fresh int32 sum, times the 16 rows' group scales (int32 multiply). The +128 adds
// 128 * sum_g sc_g * sum q per row: computed when packing, and the super-block's starting value,
// negated. Q2_K's mins (y = d * sc_g * q - dmin * m_g per group) are Q4_K's term on groups of 16:
// sum_g m_g * (the group's activation sum, the Q8_K bsums), 8 vpdpwssd of (m_2k, m_2k+1) pairs
// per token, with the float factor -dmin * d8 (super_add_with_mins). The int32 sums of a
// super-block (a group's 16 products, activations + 128 in 0..255, times its scale, 16 groups;
// and the correction):
//  - Q6_K, |q| <= 32, |sc| <= 128: <= 16*255*32*128*16 < 2^28, correction <= 128*128*256*32 = 2^27.
//  - Q3_K, |q| <= 4, |sc| <= 32: <= 16*255*4*32*16 < 2^23, correction <= 128*32*256*4 = 2^22.
//  - Q2_K, q <= 3, sc <= 15: <= 16*255*3*15*16 < 2^22, correction <= 128*15*256*3 < 2^21; the
//    mins' sum <= 16*15*16*128 < 2^19.

constexpr int kChunkQ6 = 4;  // super-blocks per packed chunk: 4 * 5248 = 21 KB (Q2_K: 4 * 5824 = 23 KB)

struct alignas(64) PanelQ6K16 {
    int8_t q[16][4][64];    // [group][step][4*row + e], the signed quants
    int32_t scale[16][16];  // [group][row]
    int32_t neg_corr[16];   // [row]: -128 * sum_g sc_g * sum q
    float d[16];
};

// Q2_K: Q6_K's panel of its quants and scales, and the groups' mins.
struct alignas(64) PanelQ2K16 : PanelQ6K16 {
    uint32_t min_pair[8][16];  // [k][row]: m_2k | m_2k+1 << 16
    float neg_dmin[16];
};

template <typename Block>
constexpr bool kHasMins = std::is_same<Block, block_q2_K>::value;

template <typename Block>
using PanelOf = std::conditional_t<kHasMins<Block>, PanelQ2K16, PanelQ6K16>;

template <typename Panel>
Panel* packed_buf_group16() {
    thread_local Panel buf[kChunkQ6];
    return buf;
}

// Activations of a tile of kTile tokens, one super-block: the quants + 128 (dpbusd's unsigned
// operand), the scales, and the group sums (the Q8_K bsums) for Q2_K's mins.
struct alignas(64) ActGroup16 {
    uint8_t q[kTile][256];
    float d[kTile];
    int16_t group_sums[kTile][16];
};

ActGroup16* act_buf_group16(size_t n) {
    struct Tag;
    return thread_scratch<Tag, ActGroup16>(n);
}

// An fp16 field of each of the 16 rows' super-block sb (d, dmin) as floats.
template <typename Block, typename Get>
__m512 fp16_per_row(const Block* const row[16], int sb, Get get) {
    alignas(32) uint16_t h[16];
    for (int i = 0; i < 16; ++i) h[i] = get(row[i][sb]);
    return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h)));
}

// Super-block sb of the 16 rows row[0..15] into p.
template <typename Block>
void pack_group16(const Block* const row[16], int sb, PanelOf<Block>& p) {
    for (int c = 0; c < 8; ++c) {  // groups 2c, 2c + 1
        __m256i va[8], vb[8];
        for (int i = 0; i < 8; ++i) {
            va[i] = group16_chunk(row[i][sb], c);
            vb[i] = group16_chunk(row[8 + i][sb], c);
        }
        transpose8(va);
        transpose8(vb);
        for (int j = 0; j < 8; ++j) _mm512_store_si512(p.q[2 * c + j / 4][j % 4], join(va[j], vb[j]));
    }
    // The scales as 32-bit words of 4 groups, row i's in lanes 0-3 of v[i] and row 8 + i's in
    // lanes 4-7; transposed, lane i of v[w] (v[4 + w]) is row i's (8 + i's) groups 4w..4w+3, one
    // byte each, sign-extended into the lanes of scale[4w + j].
    __m256i v[8];
    for (int i = 0; i < 8; ++i)
        v[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(group16_scales(row[i][sb])), group16_scales(row[8 + i][sb]), 1);
    transpose8(v);
    for (int w = 0; w < 4; ++w) {
        const __m512i s = join(v[w], v[4 + w]);
        for (int j = 0; j < 4; ++j)
            _mm512_store_si512(p.scale[4 * w + j], _mm512_srai_epi32(_mm512_slli_epi32(s, unsigned(24 - 8 * j)), 24));
    }
    _mm512_store_ps(p.d, fp16_per_row(row, sb, [](const Block& b) { return b.d; }));
    // A group's 4 steps added as bytes (4 * [-32, 31] fits in int8), summed per row by a dpbusd
    // with 1s, times the group's scales.
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i corr = _mm512_setzero_si512();
    for (int g = 0; g < 16; ++g) {
        const __m512i s8 = _mm512_add_epi8(_mm512_add_epi8(_mm512_load_si512(p.q[g][0]), _mm512_load_si512(p.q[g][1])),
                                           _mm512_add_epi8(_mm512_load_si512(p.q[g][2]), _mm512_load_si512(p.q[g][3])));
        corr = _mm512_add_epi32(
            corr, _mm512_mullo_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, s8), _mm512_load_si512(p.scale[g])));
    }
    _mm512_store_si512(p.neg_corr, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(corr, 7)));
    if constexpr (kHasMins<Block>) {
        // Per row its 16 mins as 8 int16 pairs; transposed, the panel's vectors.
        __m256i ma[8], mb[8];
        for (int i = 0; i < 8; ++i) {
            ma[i] = q2k_mins_epi16(row[i][sb]);
            mb[i] = q2k_mins_epi16(row[8 + i][sb]);
        }
        transpose8(ma);
        transpose8(mb);
        for (int k = 0; k < 8; ++k) _mm512_store_si512(p.min_pair[k], join(ma[k], mb[k]));
        _mm512_store_ps(p.neg_dmin,
                        _mm512_sub_ps(_mm512_setzero_ps(), fp16_per_row(row, sb, [](const Block& b) { return b.dmin; })));
    }
}

void pack_acts_group16(const char* A, size_t arb, int nsb, int t0, int te, ActGroup16* out) {
    const __m256i bias = _mm256_set1_epi8(char(0x80));
    for (int g = t0; g < te; g += kTile) {
        const block_q8_K* a[kTile];
        for (int i = 0; i < kTile; ++i) a[i] = reinterpret_cast<const block_q8_K*>(A + size_t(std::min(g + i, te - 1)) * arb);
        for (int b = 0; b < nsb; ++b, ++out)
            for (int i = 0; i < kTile; ++i) {
                const block_q8_K& x = a[i][b];
                out->d[i] = x.d;
                for (int k = 0; k < 256; k += 32)  // a + 128 == a ^ 0x80 as a byte
                    _mm256_store_si256(reinterpret_cast<__m256i*>(out->q[i] + k), _mm256_xor_si256(loadu256(x.qs + k), bias));
                std::memcpy(out->group_sums[i], x.bsums, sizeof x.bsums);
            }
    }
}

template <typename Panel>
void tile_group16(const Panel* pw, const ActGroup16* ab, int kn, __m512 res[kTile]) {
    __m512 acc[kTile];
    for (int t = 0; t < kTile; ++t) acc[t] = _mm512_setzero_ps();
    for (int b = 0; b < kn; ++b, ++pw, ++ab) {
        __m512i isum[kTile];
        for (int t = 0; t < kTile; ++t) isum[t] = _mm512_load_si512(pw->neg_corr);
        for (int g = 0; g < 16; ++g) {
            __m512i s[kTile];
            for (int t = 0; t < kTile; ++t) s[t] = _mm512_setzero_si512();
            for (int k = 0; k < 4; ++k) {
                const __m512i w = _mm512_load_si512(pw->q[g][k]);
                for (int t = 0; t < kTile; ++t) {
                    int32_t a4;
                    std::memcpy(&a4, ab->q[t] + 16 * g + 4 * k, 4);
                    s[t] = _mm512_dpbusd_epi32(s[t], _mm512_set1_epi32(a4), w);
                }
            }
            const __m512i sc = _mm512_load_si512(pw->scale[g]);
            for (int t = 0; t < kTile; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s[t], sc));
        }
        if constexpr (std::is_same<Panel, PanelQ2K16>::value) {
            for (int t = 0; t < kTile; ++t)
                acc[t] = super_add_with_mins<8>(acc[t], isum[t], pw->min_pair, ab->group_sums[t], pw->d, pw->neg_dmin, ab->d[t]);
        } else {
            const __m512 d = _mm512_load_ps(pw->d);
            for (int t = 0; t < kTile; ++t)
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, _mm512_set1_ps(ab->d[t])), acc[t]);
        }
    }
    for (int t = 0; t < kTile; ++t) res[t] = acc[t];
}

// Q6_K, Q3_K or Q2_K weights, any rows [r0, r1) (plain layout): panels of 16 rows, the last one's
// missing rows repeating its last row and not stored.
template <typename Block>
void gemm_group16(const void* W, size_t wrb, const void* A, size_t arb, int n_cols, int n_tokens, float* out, int os, int r0,
                  int r1) {
    if (r0 >= r1 || n_tokens <= 0) return;
    const int nsb = n_cols / QK_K;
    const char* Wc = static_cast<const char*>(W);
    PanelOf<Block>* pw = packed_buf_group16<PanelOf<Block>>();
    ActGroup16* acts = act_buf_group16(size_t((kTokBlock + kTile - 1) / kTile) * nsb);
    for (int t0 = 0; t0 < n_tokens; t0 += kTokBlock) {
        const int te = std::min(n_tokens, t0 + kTokBlock);
        pack_acts_group16(static_cast<const char*>(A), arb, nsb, t0, te, acts);
        for (int r = r0; r < r1; r += 16) {
            const int nr = std::min(16, r1 - r);
            const __mmask16 keep = __mmask16((1u << nr) - 1);
            const Block* row[16];
            for (int i = 0; i < 16; ++i) row[i] = reinterpret_cast<const Block*>(Wc + size_t(r + std::min(i, nr - 1)) * wrb);
            for (int kb = 0; kb < nsb; kb += kChunkQ6) {
                const int kn = std::min(kChunkQ6, nsb - kb);
                for (int b = 0; b < kn; ++b) {
                    pack_group16(row, kb + b, pw[b]);
                    if (r + 16 < r1)  // the next panel's super-block, so that its packing does not wait on memory
                        for (int i = 0; i < 16; ++i) prefetch_ahead<sizeof(Block)>(row[i] + kb + b, 16 * wrb);
                }
                for (int t = t0; t < te; t += kTile) {
                    __m512 res[kTile];
                    tile_group16(pw, acts + size_t(t - t0) / kTile * nsb + kb, kn, res);
                    const int nt = std::min(kTile, te - t);
                    for (int i = 0; i < nt; ++i) {
                        float* o = out + size_t(t + i) * size_t(os) + r;
                        const __m512 v = kb == 0 ? res[i] : _mm512_add_ps(res[i], _mm512_maskz_loadu_ps(keep, o));
                        _mm512_mask_storeu_ps(o, keep, v);
                    }
                }
            }
        }
    }
}

}  // namespace

void matmul_q4_0x8_gemm_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                               float* out, int out_stride, int r0, int r1) {
    gemm_x8_panels<FormatQ8_0Family<block_q4_0>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q8_0x8_gemm_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                               float* out, int out_stride, int r0, int r1) {
    gemm_x8_panels<FormatQ8_0Family<block_q8_0>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_kx8_gemm_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                               float* out, int out_stride, int r0, int r1) {
    gemm_x8_panels<FormatQ4_KOrQ5_K<block_q4_K>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_kx8_gemm_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                               float* out, int out_stride, int r0, int r1) {
    gemm_x8_panels<FormatQ4_KOrQ5_K<block_q5_K>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q6_k_gemm_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm_group16<block_q6_K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q3_k_gemm_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm_group16<block_q3_K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q2_k_gemm_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm_group16<block_q2_K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX512
