// GEMM for Q4_0 / Q8_0 weights x Q8_0 activations (AVX2 + FMA + F16C, no AVX-512); Q5_0 and
// IQ4_NL rows are packed as the Q8_0 blocks they equal, and IQ4_XS rows (x Q8_K activations) as
// the IQ4_NL blocks their sub-blocks of 32 are, each with its scale d * (ls - 32). Q4_1 and Q5_1
// blocks (d * q + m) are packed as Q4_0's, unsigned, with the 8 rows' offsets m, which the tile
// multiplies by each token's d * sum(a) (TileKind).
//
// Weights are repacked, a panel of 8 rows x a chunk of kChunk blocks at a time, into a small
// L1-resident buffer in row-interleaved order: for block b, step j (0..7) is one 32-byte vector
// holding elements 4j..4j+3 of each of the 8 rows (row i in bytes 4i..4i+3), and the 8 rows'
// block scales are one float vector. For a token, 4 activation bytes are broadcast
// (_mm256_set1_epi32) and _mm256_maddubs_epi16 gives the 8 rows' partial dot products at once,
// so a block of 32 costs 8 maddubs per token, then one madd / cvt / mul / fma for all 8 rows.
// Each packed step is used for kTile tokens in a row (kTile int accumulators + kTile float
// accumulators in registers), and the packed chunk for all tokens of a token block.
//
//  - Q4_0: nibbles kept unsigned (0..15); the -8 is folded into a per-(token, block) term
//    8*sum(a), subtracted from the block's int32 sums. The 8 maddubs of a block are summed
//    in int16: |pair sum| <= 2*15*128 = 3840, 8 of them <= 30720 < 32767 (no saturation).
//    Q4_1 likewise, Q5_1's quants (0..31) 4 steps at a time (4 * 2*31*128 = 31744).
//  - Q8_0: sign trick, maddubs(|w|, sign(a, w)) (activations are never -128, so the pair
//    sums are <= 2*127*127 < 32767), widened with madd every step.
// With VNNI (kernels/x86/avx2_util.h) a step is one dpbusd per token into int32 lanes. Q4_0 keeps
// the -8 term; Q8_0 drops the sign trick: activations + 128 (unsigned) x weights (signed), minus
// 128 * the row's weight sum, computed once when the block is packed. (Likewise the other
// unsigned and signed types.)
// Interleaved Q4_0 / Q8_0 weights (kernels/rows_x8.h) are stored interleaved already: their
// packing only splits the nibbles or copies.
// Loop order: token blocks (kTokBlock tokens, their activations stay in L2) -> 8-row panels
// -> K chunks (packed once per token block) -> tiles of kTile tokens.
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX2)

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/x86/avx2_util.h"
#include "kernels/scratch.h"
#include "kernels/prefetch.h"
#include "kernels/quant.h"
#include "kernels/quant_types.h"

namespace hearth {

namespace {

constexpr int kChunk = 64;     // blocks per packed chunk: 16 KB of quants + 2 (VNNI: 4) KB of scales and sums
constexpr int kTokBlock = 64;  // tokens per activation block
constexpr int kTile = 4;       // tokens per register tile

// A packed chunk: per block, 8 steps x 32 bytes of quants, then the 8 rows' scales (and, for
// signed weights under VNNI, the rows' weight sums x 128: store_row_sums_x128), then for Q4_1 and
// Q5_1 the 8 rows' block offsets / 8.
#if defined(HEARTH_ISA_AVX_VNNI)
constexpr int kPackedBlock = 256 + 32 + 32;
#else
constexpr int kPackedBlock = 256 + 32;
#endif
constexpr int kOffsetsAt = kPackedBlock;

// How the tile takes a weight type's packed blocks.
struct TileKind {
    bool unsigned_quants;  // Q4_0, Q4_1, Q5_1 (else signed values, Q8_0's path)
    bool minus_8_sum;      // Q4_0: q - 8, through 8 * sum(a)
    bool offsets;          // Q4_1, Q5_1: + the block's m x d * sum(a)
    int int16_steps;       // unsigned quants: maddubs steps summed in int16 before they are widened
};
template <typename WBlock>
constexpr TileKind kTileKind = {false, false, false, 0};
template <>
constexpr TileKind kTileKind<block_q4_0> = {true, true, false, 8};
template <>
constexpr TileKind kTileKind<block_q4_1> = {true, false, true, 8};
template <>
constexpr TileKind kTileKind<block_q5_1> = {true, false, true, 4};

constexpr int packed_block_bytes(bool offsets) { return kPackedBlock + (offsets ? 32 : 0); }

uint8_t* packed_buf() {
    alignas(64) thread_local uint8_t buf[kChunk * packed_block_bytes(true)];
    return buf;
}

// Activations of a tile of kTile tokens, one block: quants of each token, their scales and
// 8 * sum of the quants (Q4_0's -8 offset; Q4_1 and Q5_1's block offsets, which are stored / 8).
struct alignas(32) ActBlock {
    int8_t q[kTile][32];
    float d[kTile];
    int32_t s8[kTile];
};
static_assert(sizeof(ActBlock) == 160, "ActBlock layout");

ActBlock* act_buf(size_t n) {
    struct Tag;
    return thread_scratch<Tag, ActBlock>(n);
}

#if defined(HEARTH_ISA_AVX_VNNI)
// Q8_0 under VNNI: the tile takes the activations as a + 128 (unsigned bytes, the u8 operand of
// dpbusd) and the weights as they are (signed), so a row's sum carries 128 * (the sum of its
// 32 weights), which depends on the row only: computed here, once per packed block, and
// subtracted by the tile. |sum| <= 32*128, so the int16 pair sums cannot saturate.
inline void store_row_sums_x128(uint8_t* p) {
    const __m256i ones8 = _mm256_set1_epi8(1);
    __m256i s = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j)
        s = _mm256_add_epi16(s, _mm256_maddubs_epi16(ones8, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 32 * j))));
    _mm256_store_si256(reinterpret_cast<__m256i*>(p + 288), _mm256_slli_epi32(_mm256_madd_epi16(s, _mm256_set1_epi16(1)), 7));
}
#endif

// The 32 quants of a block in element order, as bytes: unsigned for Q4_0, Q4_1 and Q5_1; signed
// values for the others, which take Q8_0's path (Q5_0's q - 16 and the IQ4 grid values are exactly
// Q8_0 blocks with the same scale, and never -128).
inline __m256i quants(const block_q4_0& b) { return unpack_nibbles16(b.qs); }
inline __m256i quants(const block_q8_0& b) { return loadu(b.qs); }
inline __m256i quants(const block_q5_0& b) {
    return _mm256_sub_epi8(_mm256_or_si256(unpack_nibbles16(b.qs), q5_bit4(b.qh)), _mm256_set1_epi8(16));
}
inline __m256i quants(const block_iq4_nl& b) { return iq4_values(b.qs); }
inline __m256i quants(const block_q4_1& b) { return unpack_nibbles16(b.qs); }
inline __m256i quants(const block_q5_1& b) { return _mm256_or_si256(unpack_nibbles16(b.qs), q5_bit4(b.qh)); }

// Block k (32 elements) of a weight row: its quants, and its scale.
template <typename WBlock>
inline __m256i block32(const WBlock* row, int k, float& d) {
    d = _cvtsh_ss(row[k].d);
    return quants(row[k]);
}
// Sub-block k % 8 of super-block k / 8 (fp16 d times a 6-bit integer: exact in fp32).
inline __m256i block32(const block_iq4_xs* row, int k, float& d) {
    const block_iq4_xs& b = row[k / 8];
    d = _cvtsh_ss(b.d) * float(iq4xs_scale(b.scales_l, b.scales_h, k % 8));
    return iq4_values(b.qs + 16 * (k % 8));
}

// A Q4_1 / Q5_1 block's offset m, / 8: the tile multiplies it by the activations' 8 * sum(a).
template <typename WBlock>
inline float block_offset_x8(const WBlock* row, int k) {
    return _cvtsh_ss(row[k].m) * 0.125f;
}

// Pack blocks [kb, kb+kn) of rows row[0..7] into p.
template <typename WBlock>
void pack_weights(const WBlock* const row[8], int kb, int kn, uint8_t* p) {
    for (int b = 0; b < kn; ++b, p += packed_block_bytes(kTileKind<WBlock>.offsets)) {
        __m256i v[8];
        float* d = reinterpret_cast<float*>(p + 256);
        for (int i = 0; i < 8; ++i) v[i] = block32(row[i], kb + b, d[i]);
        if constexpr (kTileKind<WBlock>.offsets)
            for (int i = 0; i < 8; ++i) reinterpret_cast<float*>(p + kOffsetsAt)[i] = block_offset_x8(row[i], kb + b);
        transpose8(v);
        for (int j = 0; j < 8; ++j) _mm256_store_si256(reinterpret_cast<__m256i*>(p + 32 * j), v[j]);
#if defined(HEARTH_ISA_AVX_VNNI)
        if (!kTileKind<WBlock>.unsigned_quants) store_row_sums_x128(p);
#endif
    }
}

// Pack kn records of an interleaved group (Q4_0 / Q8_0, kernels/rows_x8.h),
// starting at rec, into p: the records already hold the 8 rows' bytes side by side in the steps' order, so packing
// is the nibble split (Q4_0) or a copy (Q8_0), and the scales' conversion.
template <typename WBlock>
void pack_weights_x8(const uint8_t* rec, int kn, uint8_t* p) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int b = 0; b < kn; ++b, p += kPackedBlock, rec += 8 * sizeof(WBlock)) {
        for (int k = 0; k < 4; ++k) {
            __m256i* q = reinterpret_cast<__m256i*>(p);
            if (sizeof(WBlock) == sizeof(block_q4_0)) {
                const __m256i w = loadu(rec + 16 + 32 * k);
                _mm256_store_si256(q + k, _mm256_and_si256(w, m4));
                _mm256_store_si256(q + k + 4, _mm256_and_si256(_mm256_srli_epi16(w, 4), m4));
            } else {
                _mm256_store_si256(q + 2 * k, loadu(rec + 16 + 64 * k));
                _mm256_store_si256(q + 2 * k + 1, loadu(rec + 48 + 64 * k));
            }
        }
        _mm256_store_ps(reinterpret_cast<float*>(p + 256),
                        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec))));
#if defined(HEARTH_ISA_AVX_VNNI)
        if (!kTileKind<WBlock>.unsigned_quants) store_row_sums_x128(p);
#endif
    }
}

// Block k (32 elements) of an activation row: its quants, and its scale. Q8_K's sub-blocks of 32
// share the super-block's.
inline const int8_t* act32(const block_q8_0* row, int k, float& d) {
    d = _cvtsh_ss(row[k].d);
    return row[k].qs;
}
inline const int8_t* act32(const block_q8_K* row, int k, float& d) {
    d = row[k / 8].d;
    return row[k / 8].qs + 32 * (k % 8);
}

// Activation tiles of tokens [t0, te): tile g holds tokens t0 + kTile*g + i (the last tile
// repeats its last token), nb blocks each. kPlus128: the quants are stored + 128, as unsigned
// bytes (signed weights under VNNI).
template <typename ABlock, bool kPlus128>
void pack_acts(const char* A, size_t arb, int nb, int t0, int te, ActBlock* out) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1), bias = _mm256_set1_epi8(char(0x80));
    for (int g = t0; g < te; g += kTile) {
        const ABlock* a[kTile];
        for (int i = 0; i < kTile; ++i) a[i] = reinterpret_cast<const ABlock*>(A + size_t(std::min(g + i, te - 1)) * arb);
        for (int b = 0; b < nb; ++b, ++out) {
            __m256i s[kTile];
            for (int i = 0; i < kTile; ++i) {
                const __m256i q = loadu(act32(a[i], b, out->d[i]));
                _mm256_store_si256(reinterpret_cast<__m256i*>(out->q[i]), kPlus128 ? _mm256_xor_si256(q, bias) : q);
                s[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16);  // 8 partial sums
            }
            // 4 tokens x 8 partial sums -> 4 sums
            const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
            const __m128i t = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            _mm_store_si128(reinterpret_cast<__m128i*>(out->s8), _mm_slli_epi32(t, 3));
        }
    }
}

// kn blocks of the packed weight chunk pw x the activation tile ab: res[t][i] = partial dot of
// row i with token t, continuing the sums in init (or from zero: null). res may be init.
template <typename WBlock>
void tile(const uint8_t* pw, const ActBlock* ab, int kn, ChunkPrefetch& next, const float (*init)[8], float res[kTile][8]) {
    constexpr TileKind K = kTileKind<WBlock>;
#if !defined(HEARTH_ISA_AVX_VNNI)
    const __m256i ones = _mm256_set1_epi16(1);
#endif
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    if (init) {
        acc0 = _mm256_loadu_ps(init[0]);
        acc1 = _mm256_loadu_ps(init[1]);
        acc2 = _mm256_loadu_ps(init[2]);
        acc3 = _mm256_loadu_ps(init[3]);
    }
    for (int b = 0; b < kn; ++b, pw += packed_block_bytes(K.offsets), ++ab) {
        next.step();
        const __m256i* q = reinterpret_cast<const __m256i*>(pw);
        __m256i s0, s1, s2, s3;
#if defined(HEARTH_ISA_AVX_VNNI)
        // One dpbusd per step and token, straight into int32 lanes. Unsigned quants x
        // activations; signed values: activations + 128 (unsigned) x weights. Two chains per
        // token (even and odd steps), as each dpbusd waits on the one before it in its chain.
        auto dot = [](__m256i acc, __m256i w, const int8_t* a) {
            return K.unsigned_quants ? dot4_u8s8_add(acc, w, bcast32(a)) : dot4_u8s8_add(acc, bcast32(a), w);
        };
        const __m256i z = _mm256_setzero_si256();
        __m256i e0 = z, e1 = z, e2 = z, e3 = z, o0 = z, o1 = z, o2 = z, o3 = z;
        for (int j = 0; j < 8; j += 2) {
            const __m256i w0 = _mm256_load_si256(q + j), w1 = _mm256_load_si256(q + j + 1);
            e0 = dot(e0, w0, ab->q[0] + 4 * j);
            e1 = dot(e1, w0, ab->q[1] + 4 * j);
            e2 = dot(e2, w0, ab->q[2] + 4 * j);
            e3 = dot(e3, w0, ab->q[3] + 4 * j);
            o0 = dot(o0, w1, ab->q[0] + 4 * j + 4);
            o1 = dot(o1, w1, ab->q[1] + 4 * j + 4);
            o2 = dot(o2, w1, ab->q[2] + 4 * j + 4);
            o3 = dot(o3, w1, ab->q[3] + 4 * j + 4);
        }
        s0 = _mm256_add_epi32(e0, o0);
        s1 = _mm256_add_epi32(e1, o1);
        s2 = _mm256_add_epi32(e2, o2);
        s3 = _mm256_add_epi32(e3, o3);
        if (!K.unsigned_quants) {  // what the activations' + 128 added: 128 * sum(w) per row
            const __m256i corr = _mm256_load_si256(reinterpret_cast<const __m256i*>(pw + 288));
            s0 = _mm256_sub_epi32(s0, corr);
            s1 = _mm256_sub_epi32(s1, corr);
            s2 = _mm256_sub_epi32(s2, corr);
            s3 = _mm256_sub_epi32(s3, corr);
        }
#else
        if (K.unsigned_quants) {
            // maddubs steps summed in int16, widened every K.int16_steps (the bound in the header)
            const __m256i z = _mm256_setzero_si256();
            s0 = s1 = s2 = s3 = z;
            for (int j0 = 0; j0 < 8; j0 += K.int16_steps) {
                __m256i w = _mm256_load_si256(q + j0);
                __m256i h0 = _mm256_maddubs_epi16(w, bcast32(ab->q[0] + 4 * j0));
                __m256i h1 = _mm256_maddubs_epi16(w, bcast32(ab->q[1] + 4 * j0));
                __m256i h2 = _mm256_maddubs_epi16(w, bcast32(ab->q[2] + 4 * j0));
                __m256i h3 = _mm256_maddubs_epi16(w, bcast32(ab->q[3] + 4 * j0));
                for (int j = j0 + 1; j < j0 + K.int16_steps; ++j) {
                    w = _mm256_load_si256(q + j);
                    h0 = _mm256_add_epi16(h0, _mm256_maddubs_epi16(w, bcast32(ab->q[0] + 4 * j)));
                    h1 = _mm256_add_epi16(h1, _mm256_maddubs_epi16(w, bcast32(ab->q[1] + 4 * j)));
                    h2 = _mm256_add_epi16(h2, _mm256_maddubs_epi16(w, bcast32(ab->q[2] + 4 * j)));
                    h3 = _mm256_add_epi16(h3, _mm256_maddubs_epi16(w, bcast32(ab->q[3] + 4 * j)));
                    keep_step_order(h0, h1, h2, h3);
                }
                s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(h0, ones));
                s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(h1, ones));
                s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(h2, ones));
                s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(h3, ones));
            }
        } else {
            auto step = [&](const __m256i& aw, const __m256i& w, const int8_t* a) {
                return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(bcast32(a), w)), ones);
            };
            __m256i w = _mm256_load_si256(q), aw = _mm256_sign_epi8(w, w);
            s0 = step(aw, w, ab->q[0]);
            s1 = step(aw, w, ab->q[1]);
            s2 = step(aw, w, ab->q[2]);
            s3 = step(aw, w, ab->q[3]);
            for (int j = 1; j < 8; ++j) {
                w = _mm256_load_si256(q + j);
                aw = _mm256_sign_epi8(w, w);
                s0 = _mm256_add_epi32(s0, step(aw, w, ab->q[0] + 4 * j));
                s1 = _mm256_add_epi32(s1, step(aw, w, ab->q[1] + 4 * j));
                s2 = _mm256_add_epi32(s2, step(aw, w, ab->q[2] + 4 * j));
                s3 = _mm256_add_epi32(s3, step(aw, w, ab->q[3] + 4 * j));
                keep_step_order(s0, s1, s2, s3);
            }
        }
#endif
        if (K.minus_8_sum) {  // Q4_0's q - 8
            s0 = _mm256_sub_epi32(s0, _mm256_set1_epi32(ab->s8[0]));
            s1 = _mm256_sub_epi32(s1, _mm256_set1_epi32(ab->s8[1]));
            s2 = _mm256_sub_epi32(s2, _mm256_set1_epi32(ab->s8[2]));
            s3 = _mm256_sub_epi32(s3, _mm256_set1_epi32(ab->s8[3]));
        }
        const __m256 dw = _mm256_load_ps(reinterpret_cast<const float*>(pw + 256));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_mul_ps(dw, _mm256_set1_ps(ab->d[0])), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_mul_ps(dw, _mm256_set1_ps(ab->d[1])), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s2), _mm256_mul_ps(dw, _mm256_set1_ps(ab->d[2])), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s3), _mm256_mul_ps(dw, _mm256_set1_ps(ab->d[3])), acc3);
        if (K.offsets) {  // + the rows' offsets x the token's d * sum(a)
            const __m256 mw = _mm256_load_ps(reinterpret_cast<const float*>(pw + kOffsetsAt));
            acc0 = _mm256_fmadd_ps(mw, _mm256_set1_ps(ab->d[0] * float(ab->s8[0])), acc0);
            acc1 = _mm256_fmadd_ps(mw, _mm256_set1_ps(ab->d[1] * float(ab->s8[1])), acc1);
            acc2 = _mm256_fmadd_ps(mw, _mm256_set1_ps(ab->d[2] * float(ab->s8[2])), acc2);
            acc3 = _mm256_fmadd_ps(mw, _mm256_set1_ps(ab->d[3] * float(ab->s8[3])), acc3);
        }
    }
    _mm256_storeu_ps(res[0], acc0);
    _mm256_storeu_ps(res[1], acc1);
    _mm256_storeu_ps(res[2], acc2);
    _mm256_storeu_ps(res[3], acc3);
}

// kX8: W is interleaved Q4_0 / Q8_0 and [r0, r1) are whole groups of 8 rows. ABlock: the
// activations' type (the weight type's vec_dot type).
template <typename WBlock, bool kX8 = false, typename ABlock = block_q8_0>
void gemm(const void* W, size_t wrb, const void* A, size_t arb, int n_cols, int n_tokens, float* out, int os, int r0, int r1) {
    static_assert(kTile == 4, "tile() is written for 4 tokens");
    if (r0 >= r1 || n_tokens <= 0) return;
    const int nb = n_cols / 32;
    const char* Wc = static_cast<const char*>(W);
    uint8_t* pw = packed_buf();
    ActBlock* acts = act_buf(size_t(kTokBlock / kTile) * nb);
    // A row's sums are added to the output in pieces of sum_chunk blocks, as the other kernels of
    // interleaved Q4_0 and Q8_0 rows sum (x86/avx2_util.h), so that a batch here gives each token
    // their bits: within a piece each tile's sums carry over from one packed chunk to the next.
    const int sum_chunk = std::max(kChunk, x8_sum_chunk_blocks() / kChunk * kChunk);  // whole packed chunks
    alignas(32) float carry[kTokBlock / kTile][kTile][8];
    for (int t0 = 0; t0 < n_tokens; t0 += kTokBlock) {
        const int te = std::min(n_tokens, t0 + kTokBlock);
#if defined(HEARTH_ISA_AVX_VNNI)
        pack_acts<ABlock, !kTileKind<WBlock>.unsigned_quants>(static_cast<const char*>(A), arb, nb, t0, te, acts);
#else
        pack_acts<ABlock, false>(static_cast<const char*>(A), arb, nb, t0, te, acts);
#endif
        for (int r = r0; r < r1; r += 8) {
            const int nr = std::min(8, r1 - r);
            const WBlock* row[8];
            for (int i = 0; i < 8; ++i) row[i] = reinterpret_cast<const WBlock*>(Wc + size_t(r + std::min(i, nr - 1)) * wrb);
            for (int kb = 0; kb < nb; kb += kChunk) {
                const int kn = std::min(kChunk, nb - kb);
                // Interleaved weights: the chunk this loop packs next starts where this one ends
                // (a group's last record is followed by the next group's first), so its lines are
                // asked for while the tiles compute on this one (ChunkPrefetch); packing then
                // finds them in cache instead of waiting on DRAM.
                ChunkPrefetch next = ChunkPrefetch::over(nullptr, nullptr, 0, 1);
                if (kX8) {
                    const char* chunk = Wc + size_t(r) * wrb + size_t(kb) * 8 * sizeof(WBlock);
                    pack_weights_x8<WBlock>(reinterpret_cast<const uint8_t*>(chunk), kn, pw);
                    const size_t n_tiles = size_t(te - t0 + kTile - 1) / kTile;
                    next = ChunkPrefetch::over(chunk + size_t(kn) * 8 * sizeof(WBlock), nullptr,
                                               size_t(kChunk) * 8 * sizeof(WBlock) / 64, n_tiles * size_t(kn));
                } else {
                    pack_weights(row, kb, kn, pw);
                }
                const bool starts = kb % sum_chunk == 0, ends = kb + kn == nb || (kb + kn) % sum_chunk == 0;
                for (int t = t0; t < te; t += kTile) {
                    const int nt = std::min(kTile, te - t), g = (t - t0) / kTile;
                    alignas(32) float res[kTile][8];
                    tile<WBlock>(pw, acts + size_t(g) * nb + kb, kn, next, starts ? nullptr : carry[g], ends ? res : carry[g]);
                    if (ends) store_gemm_tile(out, size_t(os), r, nr, t, nt, res, kb < sum_chunk);
                }
            }
        }
    }
}

}  // namespace

void matmul_q4_0_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemm<block_q4_0>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_0x8_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm<block_q4_0, true>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q8_0x8_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm<block_q8_0, true>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_0_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemm<block_q5_0>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_iq4_nl_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm<block_iq4_nl>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_1_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemm<block_q4_1>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_1_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemm<block_q5_1>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_iq4_xs_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemm<block_iq4_xs, false, block_q8_K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q8_0_gemm_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemm<block_q8_0>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX2
