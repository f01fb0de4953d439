// Single-token (matrix x vector) AVX2 kernels for Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL in the plain
// layout: the kernel table's one-token rows (a batch of generated tokens runs them too, up to 4
// tokens a pass over the weights, each token summed as alone: gemv() below). run repacks Q4_0
// matrices to the interleaved layout at load and uses x86/rows_x8_avx2.cpp instead (1.4x the
// tokens/s); the Q4_0 kernel still serves the rows % 8 tail of a repacked matrix, a Q4_0 token
// embedding used as the output matrix, and callers that do not repack. Q4_1, Q5_0, Q5_1 and
// IQ4_NL (GGUF files) have no interleaved layout.
//
// Generation multiplies every weight matrix by one activation row, so these kernels decide the
// token rate. They work on 4 weight rows at once (each activation block is loaded / prepared
// once for the 4 rows), keep integer partial sums per block and apply the per-block scales with
// one float FMA per row and block pair, and gather the fp16 scales of 4 rows x 2 blocks into
// one _mm256_cvtph_ps. The int16/int32 partial sums of the 4 rows are reduced with hadd into
// one vector [r0 r1 r2 r3 | ...] (lanes by row and block) and scaled with one FMA per block pair.
// No heap allocation after the first call (thread_local scratch).
//
//  - Q4_0: two consecutive blocks share a register (block b in the low 128 bits, b+1 in the
//    high), so one and / shift gives the low and high nibbles of both; the activations are
//    rearranged once per call to match. Unsigned nibbles x signed q8 with maddubs; the -8 is
//    folded into an integer per-block term 8*sum(q8) subtracted from the int32 sums (exact).
//  - Q4_1 (d*q + m): Q4_0's pairs without the -8; the offsets m, gathered as the scales are, times
//    d8*sum(q8) of each block, one more FMA per block pair.
//  - Q5_0 (most weights of the Q4_K_M files of models whose rows are no multiple of 256, e.g.
//    Qwen2.5-0.5B): Q4_0's pairs with bit 4 of each quant from qh, the -16 as 16*sum(q8). Its
//    pair sums are twice Q4_0's, so the 4 rows are reduced one hadd in int16, then in int32.
//  - Q5_1 (d*q + m, q in 0..31: most weights of Qwen2.5-0.5B's Q5_K_M files): Q5_0's bit 4 and
//    reduction, Q4_1's offsets.
//  - IQ4_NL (d * kIQ4Values[q]): Q4_0's nibbles looked up in the grid with one shuffle, signed
//    values against the activations by the sign trick (maddubs(|v|, sign(a, v))), each row's pair
//    sums widened to int32 (they reach 2 * 127 * 127) and reduced in int32.
// Q8_0 keeps the tiled kernel of quant_avx2.cpp: a 4-row GEMV in this style measured 13%
// slower end to end (tg64, TinyLlama shape, 2 threads, A/B in one sitting). Q4_K / Q6_K
// keep theirs too, for now.
#include "kernels/prefetch.h"
#include "kernels/quant.h"
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX2)

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/x86/avx2_util.h"
#include "kernels/scratch.h"

namespace hearth {

namespace {

inline __m128i loadu128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

template <typename T>
T* scratch(size_t n) {
    struct Tag;
    return thread_scratch<Tag, T, 32>(n);
}

// Row pointers of the group starting at r (rows past r1 - 1 repeat the last row; their outputs
// are not stored).
template <typename Block>
inline int group_rows(const void* W, size_t wrb, int r, int r1, const Block* w[4]) {
    const int n = std::min(4, r1 - r);
    for (int i = 0; i < 4; ++i)
        w[i] = reinterpret_cast<const Block*>(static_cast<const char*>(W) + size_t(r + std::min(i, n - 1)) * wrb);
    return n;
}

inline void store_rows(float* out, int r, int n, __m128 s) {
    if (n == 4) {
        _mm_storeu_ps(out + r, s);
        return;
    }
    float t[4];
    _mm_storeu_ps(t, s);
    for (int i = 0; i < n; ++i) out[r + i] = t[i];
}

// ---- Q4_0, Q4_1, Q5_0, Q5_1 --------------------------------------------------------------------
// What a block type adds to Q4_0's pairs: bit 4 of each quant (qh), an offset m per block.
template <typename Block>
constexpr bool kHasBit4 = std::is_same<Block, block_q5_0>::value || std::is_same<Block, block_q5_1>::value;
template <typename Block>
constexpr bool kHasOffsetM = std::is_same<Block, block_q4_1>::value || std::is_same<Block, block_q5_1>::value;
// IQ4_NL: the nibbles index kIQ4Values, signed values (-127..113) in place of unsigned quants.
template <typename Block>
constexpr bool kGrid = std::is_same<Block, block_iq4_nl>::value;

// Activations of the block pair (2p, 2p+1), rearranged for the paired weight registers.
struct alignas(32) ActPair {
    int8_t lo[32];  // a[2p].qs[0..15],  a[2p+1].qs[0..15]
    int8_t hi[32];  // a[2p].qs[16..31], a[2p+1].qs[16..31]
    float d[8];     // d8(2p) x 4, d8(2p+1) x 4
    int32_t c[8];   // offset*sum(a[2p].qs) x 4, offset*sum(a[2p+1].qs) x 4 (offset: Q4_0 8, Q5_0 16, else 1)
};
static_assert(sizeof(ActPair) == 128, "ActPair");

template <int kOffset>
void prepare_pairs(const block_q8_0* a, int nb, ActPair* P) {
    for (int p = 0; 2 * p < nb; ++p) {
        const int b = 2 * p;
        const bool two = b + 1 < nb;
        const __m128i z = _mm_setzero_si128();
        const __m128i l0 = loadu128(a[b].qs), h0 = loadu128(a[b].qs + 16);
        const __m128i l1 = two ? loadu128(a[b + 1].qs) : z, h1 = two ? loadu128(a[b + 1].qs + 16) : z;
        _mm256_store_si256(reinterpret_cast<__m256i*>(P[p].lo), _mm256_set_m128i(l1, l0));
        _mm256_store_si256(reinterpret_cast<__m256i*>(P[p].hi), _mm256_set_m128i(h1, h0));
        const float d0 = _cvtsh_ss(a[b].d), d1 = two ? _cvtsh_ss(a[b + 1].d) : 0.f;
        const int32_t c0 = kOffset * sum_i8x32(a[b].qs), c1 = two ? kOffset * sum_i8x32(a[b + 1].qs) : 0;
        for (int k = 0; k < 4; ++k) {
            P[p].d[k] = d0;
            P[p].d[k + 4] = d1;
            P[p].c[k] = c0;
            P[p].c[k + 4] = c1;
        }
    }
}

// fp16 scales (or, with field = &Block::m, Q4_1's and Q5_1's offsets) of rows w[0..3] at blocks
// b and b1 as floats: [r0b r1b r2b r3b r0b1 r1b1 r2b1 r3b1] (kInterleave false) or [r0b r0b1 r1b
// r1b1 r2b r2b1 r3b r3b1] (kInterleave true).
template <bool kInterleave = false, typename Block>
inline __m256 scales_rows(const Block* const* w, int b, int b1, uint16_t Block::*field = &Block::d) {
    auto pos = [](int i, int k) { return kInterleave ? 2 * i + k : 4 * k + i; };
    __m128i v = _mm_cvtsi32_si128(w[0][b].*field);
    v = _mm_insert_epi16(v, w[1][b].*field, pos(1, 0));
    v = _mm_insert_epi16(v, w[2][b].*field, pos(2, 0));
    v = _mm_insert_epi16(v, w[3][b].*field, pos(3, 0));
    v = _mm_insert_epi16(v, w[0][b1].*field, pos(0, 1));
    v = _mm_insert_epi16(v, w[1][b1].*field, pos(1, 1));
    v = _mm_insert_epi16(v, w[2][b1].*field, pos(2, 1));
    v = _mm_insert_epi16(v, w[3][b1].*field, pos(3, 1));
    return _mm256_cvtph_ps(v);
}

// int16 pair sums of 4 rows (each lane |x| <= 2*15*127*2 = 7620) -> int32
// [r0 r1 r2 r3 | r0 r1 r2 r3] (sum over each 128-bit half). The int16 intermediate sums stay
// within 4*7620 < 32768.
inline __m256i reduce_rows4(__m256i s0, __m256i s1, __m256i s2, __m256i s3) {
    const __m256i h = _mm256_hadd_epi16(_mm256_hadd_epi16(s0, s1), _mm256_hadd_epi16(s2, s3));
    return _mm256_madd_epi16(h, _mm256_set1_epi16(1));
}

// int32 sums of 4 rows (IQ4_NL's, widened per row) -> [r0 r1 r2 r3 | r0 r1 r2 r3].
inline __m256i reduce_rows4_i32(__m256i s0, __m256i s1, __m256i s2, __m256i s3) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(s0, s1), _mm256_hadd_epi32(s2, s3));
}

// The int16 pair sums of 4 rows of Q5_0 or Q5_1 (each lane |x| <= 2*31*127*2 = 15748): one hadd
// in int16 (<= 31496), then in int32 -> [r0 r1 r2 r3 | r0 r1 r2 r3] as reduce_rows4.
inline __m256i reduce_rows4_wide(__m256i s0, __m256i s1, __m256i s2, __m256i s3) {
    const __m256i ones = _mm256_set1_epi16(1);
    return _mm256_hadd_epi32(_mm256_madd_epi16(_mm256_hadd_epi16(s0, s1), ones),
                             _mm256_madd_epi16(_mm256_hadd_epi16(s2, s3), ones));
}

// Bit 4 of the quants of Q5_0 or Q5_1 blocks x0 (low 128 bits) and x1 (high) as 0x10 bytes, in
// the paired registers' order: lo for elements 0..15 (bits 0..15 of qh), hi for 16..31.
template <typename Block>
inline void q5_pair_bit4(const Block& x0, const Block& x1, __m256i& lo, __m256i& hi) {
    uint32_t h0, h1;
    std::memcpy(&h0, x0.qh, 4);
    std::memcpy(&h1, x1.qh, 4);
    const __m256i h = _mm256_set1_epi64x(int64_t(uint64_t(h1) << 32 | h0));
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    const __m256i sel_lo = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0404040404040404, 0x0505050505050505);
    const __m256i sel_hi = _mm256_add_epi8(sel_lo, _mm256_set1_epi8(2));
    const __m256i b4 = _mm256_set1_epi8(0x10);
    lo = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(h, sel_lo), bit), bit), b4);
    hi = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(h, sel_hi), bit), bit), b4);
}

// Blocks b and b + 1 (kTwo; else b alone) of 4 rows against NT tokens (their activation pairs
// P[t]), added to acc[t] as [r0 r1 r2 r3 | r0 r1 r2 r3]. The weights are unpacked, and their
// scales gathered, once for the NT tokens; each token's operations are those of one token alone
// (a batch of generated tokens keeps each token's bits, kernels/table.h).
template <bool kTwo, typename Block, int NT>
inline void pair(const Block* const* w, const ActPair* const* P, int b, size_t pf, __m256* acc) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256 scales = scales_rows(w, b, kTwo ? b + 1 : b);
    __m256i lo[4], hi[4];
    for (int i = 0; i < 4; ++i) {
        prefetch_ahead<2 * sizeof(Block)>(&w[i][b], pf);
        const __m128i x0 = loadu128(w[i][b].qs);
        // odd tail: the high half repeats block b against zero activations (and zero scale)
        const __m256i x = _mm256_inserti128_si256(_mm256_castsi128_si256(x0), kTwo ? loadu128(w[i][b + 1].qs) : x0, 1);
        lo[i] = _mm256_and_si256(x, m4);
        hi[i] = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
        if constexpr (kHasBit4<Block>) {
            __m256i blo, bhi;
            q5_pair_bit4(w[i][b], w[i][kTwo ? b + 1 : b], blo, bhi);
            lo[i] = _mm256_or_si256(lo[i], blo);
            hi[i] = _mm256_or_si256(hi[i], bhi);
        }
        if constexpr (kGrid<Block>) {
            const __m256i grid = _mm256_broadcastsi128_si256(loadu128(kIQ4Values));
            lo[i] = _mm256_shuffle_epi8(grid, lo[i]);
            hi[i] = _mm256_shuffle_epi8(grid, hi[i]);
        }
    }
    __m256 mins;
    if constexpr (kHasOffsetM<Block>) mins = scales_rows(w, b, kTwo ? b + 1 : b, &Block::m);
    for (int t = 0; t < NT; ++t) {
        const __m256 S = _mm256_mul_ps(scales, _mm256_load_ps(P[t]->d));
        const __m256i alo = _mm256_load_si256(reinterpret_cast<const __m256i*>(P[t]->lo));
        const __m256i ahi = _mm256_load_si256(reinterpret_cast<const __m256i*>(P[t]->hi));
        __m256i s[4];
        for (int i = 0; i < 4; ++i) {
            if constexpr (kGrid<Block>) {
                // Signed values: maddubs(|v|, a with v's sign); a pair sum reaches 2 * 127 * 127 =
                // 32258, so each is widened to int32 before anything is added to it.
                const __m256i ones = _mm256_set1_epi16(1);
                s[i] = _mm256_add_epi32(
                    _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(lo[i]), _mm256_sign_epi8(alo, lo[i])), ones),
                    _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(hi[i]), _mm256_sign_epi8(ahi, hi[i])), ones));
            } else {
                s[i] = _mm256_add_epi16(_mm256_maddubs_epi16(lo[i], alo), _mm256_maddubs_epi16(hi[i], ahi));
            }
        }
        const __m256i sums = kGrid<Block>      ? reduce_rows4_i32(s[0], s[1], s[2], s[3])
                             : kHasBit4<Block> ? reduce_rows4_wide(s[0], s[1], s[2], s[3])
                                               : reduce_rows4(s[0], s[1], s[2], s[3]);
        const __m256i c = _mm256_load_si256(reinterpret_cast<const __m256i*>(P[t]->c));
        if constexpr (kHasOffsetM<Block>) {  // d*q + m: + m x d8 * sum(a) (c = sum(a))
            const __m256 dsum = _mm256_mul_ps(_mm256_load_ps(P[t]->d), _mm256_cvtepi32_ps(c));
            acc[t] = _mm256_fmadd_ps(mins, dsum, _mm256_fmadd_ps(S, _mm256_cvtepi32_ps(sums), acc[t]));
        } else {
            acc[t] = _mm256_fmadd_ps(S, _mm256_cvtepi32_ps(_mm256_sub_epi32(sums, c)), acc[t]);
        }
    }
}

// 4 rows against NT tokens, whose activation pairs start at P[t]: res[t] = [r0 r1 r2 r3].
template <typename Block, int NT>
void gemv_group(const Block* const* w, const ActPair* const* P, int nb, size_t pf, __m128* res) {
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const ActPair* Pp[NT];
    int p = 0;
    for (; 2 * p + 1 < nb; ++p) {
        for (int t = 0; t < NT; ++t) Pp[t] = P[t] + p;
        pair<true, Block, NT>(w, Pp, 2 * p, pf, acc);
    }
    if (2 * p < nb) {
        for (int t = 0; t < NT; ++t) Pp[t] = P[t] + p;
        pair<false, Block, NT>(w, Pp, 2 * p, pf, acc);
    }
    for (int t = 0; t < NT; ++t) res[t] = _mm_add_ps(_mm256_castps256_ps128(acc[t]), _mm256_extractf128_ps(acc[t], 1));
}

// Rows [c0, c1) (groups of 4 from c0) against tokens t0..t0 + NT - 1.
template <typename Block, int NT>
void gemv_rows(const void* W, size_t w_row_bytes, const ActPair* P, size_t np, int nb, size_t pf, int t0, float* out,
               int out_stride, int c0, int c1) {
    const ActPair* Pt[NT];
    for (int t = 0; t < NT; ++t) Pt[t] = P + np * size_t(t0 + t);
    for (int r = c0; r < c1; r += 4) {
        const Block* w[4];
        const int n = group_rows(W, w_row_bytes, r, c1, w);
        __m128 s[NT];
        gemv_group<Block, NT>(w, Pt, nb, pf, s);
        for (int t = 0; t < NT; ++t) store_rows(out + size_t(t0 + t) * out_stride, r, n, s[t]);
    }
}

// kOffset: what the unsigned quants are above the values they stand for (Q4_0 8, Q5_0 16; IQ4_NL
// 0, its values are signed); Q4_1 and Q5_1: 1, ActPair::c is sum(a) for their offsets m.
// Several tokens (a batch of generated tokens): up to 4 at a time over rows in chunks of
// ~kTokensChunkBytes, which stay in L2 from the first token to the last, so the weights are read
// from memory once and unpacked once per 4 tokens.
template <typename Block, int kOffset>
void gemv(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens, float* out,
          int out_stride, int r0, int r1) {
    if (r1 <= r0) return;
    const int nb = n_cols / 32;
    const size_t np = size_t(nb + 1) / 2;
    ActPair* P = scratch<ActPair>(np * size_t(n_tokens));
    for (int t = 0; t < n_tokens; t++)
        prepare_pairs<kOffset>(reinterpret_cast<const block_q8_0*>(static_cast<const char*>(A) + size_t(t) * a_row_bytes), nb,
                               P + np * t);
    const size_t pf = prefetch_distance(4 * w_row_bytes);
    constexpr size_t kTokensChunkBytes = 64 << 10;
    const int chunk = n_tokens <= 4 ? r1 - r0 : std::max(4, int(kTokensChunkBytes / w_row_bytes) / 4 * 4);
    for (int c0 = r0; c0 < r1; c0 += chunk) {
        const int c1 = std::min(r1, c0 + chunk);
        for (int t0 = 0; t0 < n_tokens; t0 += 4) {
            switch (std::min(4, n_tokens - t0)) {
                case 1: gemv_rows<Block, 1>(W, w_row_bytes, P, np, nb, pf, t0, out, out_stride, c0, c1); break;
                case 2: gemv_rows<Block, 2>(W, w_row_bytes, P, np, nb, pf, t0, out, out_stride, c0, c1); break;
                case 3: gemv_rows<Block, 3>(W, w_row_bytes, P, np, nb, pf, t0, out, out_stride, c0, c1); break;
                default: gemv_rows<Block, 4>(W, w_row_bytes, P, np, nb, pf, t0, out, out_stride, c0, c1); break;
            }
        }
    }
}

}  // namespace

void matmul_q4_0_gemv_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemv<block_q4_0, 8>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_1_gemv_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemv<block_q4_1, 1>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_0_gemv_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemv<block_q5_0, 16>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_1_gemv_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    gemv<block_q5_1, 1>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_iq4_nl_gemv_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemv<block_iq4_nl, 0>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX2
