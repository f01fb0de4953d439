// Few-token matmul of Q4_K and Q5_K rows interleaved by 8 (kernels/rows_x8.h) x Q8_K activations,
// AVX-512 VNNI on zmm: generation (1 token) and small batches (the server's conversations decoded
// together), which are memory-bound like one token. The design of x86/gemv_avx512.cpp (Q4_0,
// Q8_0) for Q4_K's super-blocks (Q5_K: the same with a fifth bit, below):
//  - A pass reads two groups of 8 rows (16 rows) record by record, each 1152-byte record exactly
//    once per block of up to kMaxTok tokens, straight from the interleaved layout (nothing
//    repacked): the 32-byte step k of chunk c of both groups' record b is joined into one zmm (row
//    i of the first group in lanes 0..7, of the second in 8..15; 4 quant bytes of one row per
//    32-bit lane), its nibbles unpacked once, and one vpdpbusd per token and nibble half adds the
//    step's products into the token's int32 sums of that sub-block (low nibbles: sub-block 2c,
//    activation bytes 64c + 4k ..; high nibbles: 2c + 1, 64c + 32 + 4k ..), the token's 4
//    activation bytes taken by an embedded {1to16} broadcast from memory. No lane ever mixes
//    rows: no horizontal sums, and 16 outputs per token are stored at once.
//  - Sub-block scales: the record's packed 6-bit scales hold one row per 32-bit lane, so all 16
//    rows' scales and mins are unpacked once per record by a few and/shift/or ops (as
//    q4k_unpack_scales_x8 in avx2_util.h does for 8), each sub-block's scale then a float per
//    lane. A token's sub-block sum (32 products, |sum| <= 32 * 15 * 128 = 61440: too wide for the
//    int16 of vpmaddwd) is converted and multiplied by it in one FMA into the token's float sum
//    of the super-block. Each product is exact (< 2^22; Q5_K's < 2^23) and the sum of 8 nearly
//    so. The integer alternative (vpmulld, 2 uops, and an add, per sub-block and token) ran 4-7%
//    slower at 8 and 16 tokens (bench_kernels, 1 thread; one quiet pair of runs, the machine
//    shared).
//  - Mins: sum_j m_j * (bsums[2j] + bsums[2j+1]) per row, four vpdpwssd of the rows' mins as
//    int16 pairs against the token's sub-block sums paired to match, again broadcast from memory
//    (|sum| <= 256 * 128 * 63 < 2^21).
//  - Then acc += (d * d_a) * sum - (dmin * d_a) * min_sum, the 16 rows' d and dmin one load
//    each. The sub-block sums are the scalar kernels' exactly; only the float operations differ.
//  - Registers: up to kOnePassTok tokens, one pass over a chunk's 8 steps keeps both halves'
//    sums (2 per token); more tokens (up to 8: 8 sub-block sums, 8 super-block sums, 8
//    accumulators) take the low nibbles, then the high nibbles in a second pass over the same
//    256 bytes (now in L1), so that everything stays in the 32 zmm registers. (Q5_K from 5
//    tokens: with the qh vectors, a few of them and of the super-block sums go to the stack.)
//  - Tokens beyond kMaxTok run in further blocks of tokens over the same 16 rows' chunk of
//    columns (kChunk super-blocks), whose records are then in L1/L2.
//  - Weights are prefetched one record per super-block ahead of use in both streams, a distance
//    of ~kPrefetchBytes per stream; near the end of a pair's chunk the requests move on to the
//    next pair's records, so that each pair's start is in flight before it is reached. Into L1,
//    or into L2 for AMD Zen 4 (the _l2 function; kernels/table.cpp says why).
//  - An odd group at the end of the row range is paired with itself, and only its 8 rows stored.
//  - Q5_K (kQ5): 1408-byte records, Q4_K's with the 8 rows' qh before the quants. The qh vector of
//    step k (joined as the quants are) serves step k of every chunk: bit 2c of a byte is bit 4 of
//    the quant of chunk c's low nibble, bit 2c + 1 of its high nibble's, moved there and or'ed
//    into the unpacked nibbles (a shift and a vpternlogd each) before the vpdpbusd. Quants are
//    0..31: a sub-block sum |sum| <= 32 * 31 * 128 = 126976, in int32 and exact as a float; the
//    scales, mins, d and dmin are Q4_K's. From cache (1024 x 4096, 8 tokens, 1 thread, Zen 4)
//    it runs ~160 GMAC/s, Q4_K ~165.
// Whole groups only: kernels/matmul.cpp sends the plain rows after the last whole group to the
// plain layout's kernel.
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX512)

#include "kernels/x86/avx512_gcc_warnings.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/prefetch.h"
#include "kernels/quant_types.h"
#include "kernels/rows_x8.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/avx512_util.h"
#include "kernels/x86/few_tokens_avx512.h"

namespace hearth {

namespace {

constexpr int kMaxTok = 8;      // tokens per register block
constexpr int kOnePassTok = 4;  // up to this many tokens per block, one pass over each chunk

// A record (one group's super-block, kernels/rows_x8.h): Q4_K's, or Q5_K's (kQ5), which is Q4_K's
// with the 8 rows' qh (256 bytes) between the scales and the quants.
template <bool kQ5>
using Record = KRecordX8<std::conditional_t<kQ5, block_q5_K, block_q4_K>>;

// The activations of a block of NT tokens, per super-block: each token's 256 quants, its scale,
// and its sub-block sums s_j = bsums[2j] + bsums[2j+1] (|s_j| <= 32 * 128, an int16), paired as
// the mins are: (s0, s2), (s1, s3), (s4, s6), (s5, s7), the first of each pair in the low int16.
// Copied once per call (a few hundred bytes per token and super-block, against 2304 of weights
// per pair of groups), so that every broadcast of a block's tokens is one base register plus a
// constant displacement, as in gemv_avx512.cpp.
template <int NT>
struct Acts {
    int8_t q[NT][QK_K];
    float d[NT];
    int32_t sum_pairs[NT][4];
};

inline __m512i join(const uint8_t* a, const uint8_t* b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}
inline __m512 join_ph(const uint8_t* a, const uint8_t* b) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
                                                   _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1));
}

// Q5_K: the quants' nibbles (0..15 per byte) with bit `bit` of each qh byte as their bit 4 (as
// q5_k_bit4 of avx2_util.h). `bit` is a compile-time constant wherever this is inlined (see
// repeat), so both shifts take immediates.
inline __m512i fifth_bit(__m512i nibbles, __m512i qh, int bit, __m512i m16) {
    const __m512i v = bit <= 4 ? _mm512_slli_epi16(qh, unsigned(4 - bit)) : _mm512_srli_epi16(qh, unsigned(bit - 4));
    return _mm512_ternarylogic_epi32(nibbles, v, m16, 0xF8);  // nibbles | (v & m16)
}

// f(i) for i = 0 .. kN - 1, for Q5_K (kConst) with i a std::integral_constant, so that the shifts
// of fifth_bit by i are immediates. On Zen 4 (bench_kernels q5_K, 8 tokens, 1024 x 4096 from cache,
// 1 thread, four alternated runs) this ran 157-160 GMAC/s; the loops, shifting by a variable count
// (vpsllw zmm, xmm), 134-137; a vptestmb and a masked vpaddb per nibble instead of the shift and
// vpternlogd, 141-144. Q4_K (no shifts by i) keeps its loops.
template <class F, int... I>
inline void repeat_const(F& f, std::integer_sequence<int, I...>) {
    (f(std::integral_constant<int, I>()), ...);
}
template <bool kConst, int kN, class F>
inline void repeat(F&& f) {
    if constexpr (kConst)
        repeat_const(f, std::make_integer_sequence<int, kN>());
    else
        for (int i = 0; i < kN; ++i) f(i);
}

// Tokens [t0, t0 + NT) of A, nb super-blocks each, into out[b].
template <int NT>
void pack_acts(const char* A, size_t arb, int nb, int t0, Acts<NT>* out) {
    auto pair = [](int32_t lo, int32_t hi) { return int32_t(uint32_t(lo & 0xFFFF) | uint32_t(hi) << 16); };
    for (int i = 0; i < NT; ++i) {
        const block_q8_K* a = reinterpret_cast<const block_q8_K*>(A + size_t(t0 + i) * arb);
        for (int b = 0; b < nb; ++b) {
            std::memcpy(out[b].q[i], a[b].qs, QK_K);
            out[b].d[i] = a[b].d;
            int32_t s[8];
            for (int j = 0; j < 8; ++j) s[j] = a[b].bsums[2 * j] + a[b].bsums[2 * j + 1];
            out[b].sum_pairs[i][0] = pair(s[0], s[2]);
            out[b].sum_pairs[i][1] = pair(s[1], s[3]);
            out[b].sum_pairs[i][2] = pair(s[4], s[6]);
            out[b].sum_pairs[i][3] = pair(s[5], s[7]);
        }
    }
}

// The 16 rows of the groups at ga and gb (nb records each) x NT tokens: out[t * os + i] for the
// rows i set in keep. (na, nbp): the next pair's groups, prefetched near the end (or null).
template <PrefetchTo kTo, bool kQ5, int NT>
void pair_tokens(const uint8_t* ga, const uint8_t* gb, const uint8_t* na, const uint8_t* nbp, int nb, const Acts<NT>* act,
                 float* out, size_t os, __mmask16 keep, bool add) {
    using R = Record<kQ5>;
    constexpr size_t kRec = R::kBytes;
    constexpr size_t kRecLines = (kRec + 63) / 64 * 64;
    constexpr int kAhead = int((kPrefetchBytes + kRec - 1) / kRec);  // records ahead, per stream
    constexpr bool kOnePass = NT <= kOnePassTok;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m6 = _mm512_set1_epi8(0x3F), m30 = _mm512_set1_epi8(0x30);
    const __m512i byte0 = _mm512_set1_epi32(0xFF), low_byte = _mm512_set1_epi16(0x00FF);
    const __m512i m16 = _mm512_set1_epi8(0x10);  // Q5_K: bit 4, the fifth bit of a quant
    __m512 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
    for (int b = 0; b < nb; ++b, ga += kRec, gb += kRec, ++act) {
        if (b + kAhead < nb) {
            prefetch_ahead<kRecLines, kTo>(ga, kAhead * kRec);
            prefetch_ahead<kRecLines, kTo>(gb, kAhead * kRec);
        } else if (na) {
            const size_t o = size_t(b + kAhead - nb) * kRec;
            prefetch_ahead<kRecLines, kTo>(na, o);
            prefetch_ahead<kRecLines, kTo>(nbp, o);
        }
        // The 16 rows' scales and mins (byte j of a lane: sub-block j of sc_lo / mn_lo, 4 + j of
        // sc_hi / mn_hi); each sub-block's scale as a float per lane, read by the chunk loop.
        const __m512i u0 = join(ga + R::kScalesOffset, gb + R::kScalesOffset),
                      u1 = join(ga + R::kScalesOffset + 32, gb + R::kScalesOffset + 32),
                      u2 = join(ga + R::kScalesOffset + 64, gb + R::kScalesOffset + 64);
        const __m512i sc_lo = _mm512_and_si512(u0, m6),
                      sc_hi = _mm512_or_si512(_mm512_and_si512(u2, m4), _mm512_and_si512(_mm512_srli_epi16(u0, 2), m30));
        const __m512i mn_lo = _mm512_and_si512(u1, m6), mn_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(u2, 4), m4),
                                                                                _mm512_and_si512(_mm512_srli_epi16(u1, 2), m30));
        __m512 scale[8];
        for (int j = 0; j < 4; ++j) {
            scale[j] = _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(sc_lo, 8 * j), byte0));
            scale[4 + j] = _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(sc_hi, 8 * j), byte0));
        }
        __m512 fsum[NT];
        for (int t = 0; t < NT; ++t) fsum[t] = _mm512_setzero_ps();
        const uint8_t *ha = ga + R::kQhOffset, *hb = gb + R::kQhOffset;  // Q5_K: step k's qh at 32k, for every chunk
        // Chunk c; Q5_K: bit 2c of a qh byte is bit 4 of its low nibble's quant, bit 2c + 1 of its high's.
        repeat<kQ5, 4>([&](const auto c) {
            const uint8_t *qa = ga + R::kQsOffset + 256 * c, *qb = gb + R::kQsOffset + 256 * c;
            const int8_t* q = act->q[0] + 64 * c;
            if (kOnePass) {
                __m512i lo[NT], hi[NT];
                for (int t = 0; t < NT; ++t) lo[t] = hi[t] = _mm512_setzero_si512();
                for (int k = 0; k < 8; ++k) {
                    const __m512i w = join(qa + 32 * k, qb + 32 * k);
                    __m512i wl = _mm512_and_si512(w, m4), wh = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
                    if constexpr (kQ5) {
                        const __m512i h = join(ha + 32 * k, hb + 32 * k);
                        wl = fifth_bit(wl, h, 2 * c, m16);
                        wh = fifth_bit(wh, h, 2 * c + 1, m16);
                    }
                    for (int t = 0; t < NT; ++t) {
                        lo[t] = dpbusd_bcast(lo[t], wl, q + QK_K * t + 4 * k);
                        hi[t] = dpbusd_bcast(hi[t], wh, q + QK_K * t + 32 + 4 * k);
                    }
                }
                for (int t = 0; t < NT; ++t) {
                    fsum[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo[t]), scale[2 * c], fsum[t]);
                    fsum[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi[t]), scale[2 * c + 1], fsum[t]);
                }
            } else {
                repeat<kQ5, 2>([&](const auto h) {
                    __m512i s[NT];
                    for (int t = 0; t < NT; ++t) s[t] = _mm512_setzero_si512();
                    for (int k = 0; k < 8; ++k) {
                        const __m512i w = join(qa + 32 * k, qb + 32 * k);
                        __m512i wn = _mm512_and_si512(h ? _mm512_srli_epi16(w, 4) : w, m4);
                        if constexpr (kQ5) wn = fifth_bit(wn, join(ha + 32 * k, hb + 32 * k), 2 * c + h, m16);
                        for (int t = 0; t < NT; ++t) s[t] = dpbusd_bcast(s[t], wn, q + QK_K * t + 32 * h + 4 * k);
                    }
                    for (int t = 0; t < NT; ++t) fsum[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[t]), scale[2 * c + h], fsum[t]);
                });
            }
        });
        // Mins as int16 pairs (m0, m2), (m1, m3), (m4, m6), (m5, m7): the order of sum_pairs.
        const __m512i mn02 = _mm512_and_si512(mn_lo, low_byte), mn13 = _mm512_srli_epi16(mn_lo, 8);
        const __m512i mn46 = _mm512_and_si512(mn_hi, low_byte), mn57 = _mm512_srli_epi16(mn_hi, 8);
        const __m512 d = join_ph(ga, gb), dmin = join_ph(ga + 16, gb + 16);
        for (int t = 0; t < NT; ++t) {
            __m512i msum = dpwssd_bcast(_mm512_setzero_si512(), mn02, &act->sum_pairs[t][0]);
            msum = dpwssd_bcast(msum, mn13, &act->sum_pairs[t][1]);
            msum = dpwssd_bcast(msum, mn46, &act->sum_pairs[t][2]);
            msum = dpwssd_bcast(msum, mn57, &act->sum_pairs[t][3]);
            const __m512 da = _mm512_set1_ps(act->d[t]);
            acc[t] = _mm512_fmadd_ps(fsum[t], _mm512_mul_ps(d, da), acc[t]);
            acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dmin, da), acc[t]);
        }
    }
    for (int t = 0; t < NT; ++t) {
        float* o = out + size_t(t) * os;
        _mm512_mask_storeu_ps(o, keep, add ? _mm512_add_ps(acc[t], _mm512_maskz_loadu_ps(keep, o)) : acc[t]);
    }
}

template <int NT>
void pack_tokens(const char* A, size_t arb, int nb, int t0, uint8_t* buf) {
    pack_acts<NT>(A, arb, nb, t0, reinterpret_cast<Acts<NT>*>(buf));
}

template <PrefetchTo kTo, bool kQ5, int NT>
void run_tokens(const uint8_t* ga, const uint8_t* gb, const uint8_t* na, const uint8_t* nbp, int nb, const uint8_t* buf,
                float* out, size_t os, __mmask16 keep, bool add) {
    pair_tokens<kTo, kQ5, NT>(ga, gb, na, nbp, nb, reinterpret_cast<const Acts<NT>*>(buf), out, os, keep, add);
}

// The instantiations for 1..kMaxTok tokens, indexed by the token count - 1.
template <PrefetchTo kTo, bool kQ5, int... I>
struct TokenKernels {
    using Pack = void (*)(const char*, size_t, int, int, uint8_t*);
    using Run = void (*)(const uint8_t*, const uint8_t*, const uint8_t*, const uint8_t*, int, const uint8_t*, float*, size_t,
                         __mmask16, bool);
    static constexpr Pack pack[sizeof...(I)] = {pack_tokens<I + 1>...};
    static constexpr Run run[sizeof...(I)] = {run_tokens<kTo, kQ5, I + 1>...};
};
template <PrefetchTo kTo, bool kQ5, int... I>
constexpr typename TokenKernels<kTo, kQ5, I...>::Pack TokenKernels<kTo, kQ5, I...>::pack[];
template <PrefetchTo kTo, bool kQ5, int... I>
constexpr typename TokenKernels<kTo, kQ5, I...>::Run TokenKernels<kTo, kQ5, I...>::run[];

template <PrefetchTo kTo, bool kQ5, int... I>
TokenKernels<kTo, kQ5, I...> token_kernels(std::integer_sequence<int, I...>);
template <PrefetchTo kTo, bool kQ5>
using Kernels = decltype(token_kernels<kTo, kQ5>(std::make_integer_sequence<int, kMaxTok>()));

// Whole groups of rows, any number of tokens (the driver, few_tokens_avx512.h), in chunks of
// kChunk super-blocks (avx2_util.h, whose AVX2 rows sum in the same pieces). A chunk's activations
// of a block of 8 tokens (8 x 276 bytes per super-block: 17.7 KB) stay in L1 for all the pairs,
// and a pair's chunk of weights (18 KB) for all the token blocks. Q5_K's (22.5 KB) with them
// overfill a 32 KB L1, but chunks of 4 or 6 were no faster at 16 and 24 tokens (bench_kernels
// 32768 x 4096, Zen 4, three alternated runs).
constexpr int kChunk = kX8KSumChunkSuperBlocks;

template <PrefetchTo kTo, bool kQ5>
void few_tokens(const void* W, size_t wrb, const void* A, size_t arb, int n_cols, int n_tokens, float* out, int os, int r0,
                int r1) {
    static_assert(sizeof(Acts<kMaxTok>) == kMaxTok * sizeof(Acts<1>), "Acts<NT> is NT times Acts<1>");
    // 276 bytes per token and super-block
    few_tokens_x8<Kernels<kTo, kQ5>, kMaxTok, Record<kQ5>::kBytes, sizeof(Acts<1>)>(W, wrb, A, arb, n_cols / QK_K, n_tokens, out,
                                                                                    os, r0, r1, kChunk);
}

}  // namespace

void matmul_q4_kx8_few_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                              float* out, int out_stride, int r0, int r1) {
    few_tokens<PrefetchTo::l1, false>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_kx8_few_l2_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                                 float* out, int out_stride, int r0, int r1) {
    few_tokens<PrefetchTo::l2, false>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_kx8_few_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                              float* out, int out_stride, int r0, int r1) {
    few_tokens<PrefetchTo::l1, true>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_kx8_few_l2_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                                 float* out, int out_stride, int r0, int r1) {
    few_tokens<PrefetchTo::l2, true>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX512
