// Matmul of Q4_K and Q5_K rows interleaved by 8 (kernels/rows_x8.h) x Q8_K activations, AVX2 +
// FMA + F16C. Q5_K is Q4_K with a fifth bit per quant (0..31), from the record's qh (below).
//
// One token (generation), per group of 8 rows and super-block b (one 1152-byte record):
//  - Scales and mins: the record's three vectors of packed scale bytes hold one row per 32-bit
//    lane, so q4k_unpack_scales is a few and/shift/or ops for all 8 rows: byte j (0..3) of a
//    row's lane in sc_lo is its 6-bit scale of sub-block j, in sc_hi that of sub-block 4 + j;
//    mn_lo / mn_hi likewise hold the mins.
//  - Quants: chunk c (sub-blocks 2c and 2c + 1) is 8 steps of 32 bytes, each lane 4 quant bytes
//    of one row. Low nibbles of step k against 4 broadcast activation bytes q[64c + 4k ..],
//    high nibbles against q[64c + 32 + 4k ..], with _mm256_maddubs_epi16 (unsigned nibble x
//    signed activation). The 8 steps of a sub-block are summed in int16: a maddubs pair sum is
//    at most 2*15*128 = 3840 in magnitude (the quantizer's activations are within +-127; -128
//    is allowed too), 8 steps at most 30720 < 32767, so nothing saturates. Q5_K: bit 2c of the
//    qh vector of step k (one per k, shared by the chunks) is bit 4 of the low nibbles' quants,
//    bit 2c + 1 of the high ones'; a pair sum is then at most 2*31*128 = 7936, so its int16 sums
//    take 4 steps (31744) before they are scaled into int32.
//  - Sub-block scales in integers: _mm256_madd_epi16 of those int16 sums with each row's 6-bit
//    scale in both int16 halves of its lane (a _mm256_shuffle_epi8 of sc_lo / sc_hi), summed in
//    int32 over the super-block (<= 256*15*128*63 < 2^25).
//  - Mins: sum_j m_j * (bsums[2j] + bsums[2j+1]) per row, 4 madds of the mins, zero-extended to
//    int16 pairs, with the activation's sub-block sums paired to match (<= 256*128*63 < 2^21).
//  - Then acc += (d * d_a) * sum - (dmin * d_a) * min_sum, two FMAs, the 8 rows' d and dmin
//    being one 16-byte load each. Each lane is one row from start to end: no horizontal sums.
// Few tokens: up to kMaxPassTokens tokens per pass share each weight load, the scale unpacking
// and the prefetches; with more tokens than that, a group's chunk of kChunk super-blocks stays in
// L1 for all the passes.
// A row is summed in partial sums of kChunk super-blocks, each added to those before, for any
// token count: the AVX-512 few-token kernel (x86/gemv_q4_k_avx512.cpp) sums in the same pieces
// with the same float operations, so that one token on these rows (AMD Zen 4 and 5) and a batch
// on that kernel give the same bits (drafts, model/generate.h). Its float sum of a super-block's
// 8 scaled sub-block sums equals the integer sum here while that is below 2^24 in magnitude.
// Any token count works; the kernel table sends 32 or more to the GEMMs (it says why). Whole
// groups only: kernels/matmul.cpp sends the plain rows after the last whole group to the plain
// layout's kernels.
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX2)

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/rows_x8.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/scratch.h"
#include "kernels/prefetch.h"

namespace hearth {

namespace {

// A record's shape (kernels/rows_x8.h), and how many steps its int16 sums may take.
template <typename WBlock>
struct Record : KRecordX8<WBlock> {
    static constexpr int kStepsPerSum = KRecordX8<WBlock>::kFifthBit ? 4 : 8;  // (the bounds above)
};
constexpr int kMaxPassTokens = 4;                // tokens per pass: their accumulators stay in registers
constexpr int kChunk = kX8KSumChunkSuperBlocks;  // super-blocks per partial sum (avx2_util.h): 9-11 KB, stays in L1

// Per activation super-block: its scale and its sub-block sums s_j = bsums[2j] + bsums[2j+1]
// (|s_j| <= 32*128, an int16), paired as the mins are: (s0, s2), (s1, s3), (s4, s6), (s5, s7),
// the first of each pair in the low int16.
struct ActTerms {
    float d;
    int32_t sum_pairs[4];
};

ActTerms* act_terms(size_t n) {
    struct Tag;
    return thread_scratch<Tag, ActTerms>(n);
}

void fill_act_terms(const char* A, size_t arb, int nb, int n_tokens, ActTerms* at) {
    for (int t = 0; t < n_tokens; ++t) {
        const block_q8_K* a = reinterpret_cast<const block_q8_K*>(A + size_t(t) * arb);
        for (int b = 0; b < nb; ++b, ++at) {
            int32_t s[8];
            for (int j = 0; j < 8; ++j) s[j] = a[b].bsums[2 * j] + a[b].bsums[2 * j + 1];
            auto pair = [](int32_t lo, int32_t hi) { return int32_t(uint32_t(lo & 0xFFFF) | uint32_t(hi) << 16); };
            at->d = a[b].d;
            at->sum_pairs[0] = pair(s[0], s[2]);
            at->sum_pairs[1] = pair(s[1], s[3]);
            at->sum_pairs[2] = pair(s[4], s[6]);
            at->sum_pairs[3] = pair(s[5], s[7]);
        }
    }
}

// An empty asm that "changes" the int16 accumulators after each step (as keep_step_order in
// avx2_util.h): otherwise GCC computes all maddubs of a chunk first and sums them as a tree,
// with many more live registers than AVX2 has (spills in every chunk). "v" rather than "x":
// with AVX-512 in the build, any of its 32 registers, so GCC need not copy them into ymm0..15.
template <int NT>
inline void keep_order(__m256i (&lo)[NT], __m256i (&hi)[NT]) {
    for (int t = 0; t < NT; ++t) asm("" : "+v"(lo[t]), "+v"(hi[t]));
}

// out[t] lane i = dot(row i of the group at g, activation row a[t]), t < NT.
template <typename WBlock, int NT>
void dot_group(const uint8_t* g, const block_q8_K* const a[NT], const ActTerms* const at[NT], int nb, size_t pf, __m256 out[NT]) {
    using R = Record<WBlock>;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i low_byte = _mm256_set1_epi16(0x00FF);
    const __m256i pick[4] = {lane_bytes_to_int16(0, 0), lane_bytes_to_int16(1, 1), lane_bytes_to_int16(2, 2),
                             lane_bytes_to_int16(3, 3)};
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; ++b, g += R::kBytes) {
        prefetch_ahead<R::kQsOffset>(g, pf);
        const Q4kScalesX8 scales = q4k_unpack_scales_x8(g + R::kScalesOffset);
        const __m256i sc_lo = scales.sc_lo, sc_hi = scales.sc_hi, mn_lo = scales.mn_lo, mn_hi = scales.mn_hi;
        // Mins as int16 pairs (m0, m2), (m1, m3), (m4, m6), (m5, m7): the order of sum_pairs.
        const __m256i mn02 = _mm256_and_si256(mn_lo, low_byte), mn13 = _mm256_srli_epi16(mn_lo, 8);
        const __m256i mn46 = _mm256_and_si256(mn_hi, low_byte), mn57 = _mm256_srli_epi16(mn_hi, 8);
        __m256i isum[NT];
        for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
        const uint8_t* qw = g + R::kQsOffset;
        for (int c = 0; c < 4; ++c, qw += 256) {
            prefetch_ahead<256>(qw, pf);
            const __m256i sc = c < 2 ? sc_lo : sc_hi;  // sub-blocks 2c, 2c + 1: bytes 2c % 4, 2c % 4 + 1
            const __m256i s_lo = _mm256_shuffle_epi8(sc, pick[2 * c % 4]), s_hi = _mm256_shuffle_epi8(sc, pick[2 * c % 4 + 1]);
            __m256i lo_sum[NT], hi_sum[NT];
#pragma GCC unroll 8  // so that the accumulators of several tokens stay in registers
            for (int k = 0; k < 8; ++k) {
                const __m256i w = loadu(qw + 32 * k);
                __m256i lo = _mm256_and_si256(w, m4), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
                if constexpr (R::kFifthBit) {
                    const __m256i h = loadu(g + R::kQhOffset + 32 * k);
                    lo = _mm256_or_si256(lo, q5_k_bit4(h, 2 * c));
                    hi = _mm256_or_si256(hi, q5_k_bit4(h, 2 * c + 1));
                }
                for (int t = 0; t < NT; ++t) {
                    const int8_t* q = a[t][b].qs + 64 * c + 4 * k;
                    const __m256i pl = _mm256_maddubs_epi16(lo, bcast32(q));
                    const __m256i ph = _mm256_maddubs_epi16(hi, bcast32(q + 32));
                    const bool first = k % R::kStepsPerSum == 0;
                    lo_sum[t] = first ? pl : _mm256_add_epi16(lo_sum[t], pl);
                    hi_sum[t] = first ? ph : _mm256_add_epi16(hi_sum[t], ph);
                }
                keep_order(lo_sum, hi_sum);
                if ((k + 1) % R::kStepsPerSum == 0)
                    for (int t = 0; t < NT; ++t)
                        isum[t] = _mm256_add_epi32(
                            isum[t], _mm256_add_epi32(_mm256_madd_epi16(lo_sum[t], s_lo), _mm256_madd_epi16(hi_sum[t], s_hi)));
            }
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g)));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16)));
        for (int t = 0; t < NT; ++t) {
            const ActTerms& e = at[t][b];
            const __m256i msum = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(mn02, _mm256_set1_epi32(e.sum_pairs[0])),
                                                                   _mm256_madd_epi16(mn13, _mm256_set1_epi32(e.sum_pairs[1]))),
                                                  _mm256_add_epi32(_mm256_madd_epi16(mn46, _mm256_set1_epi32(e.sum_pairs[2])),
                                                                   _mm256_madd_epi16(mn57, _mm256_set1_epi32(e.sum_pairs[3]))));
            const __m256 da = _mm256_set1_ps(e.d);
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(isum[t]), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, da), _mm256_cvtepi32_ps(msum), acc[t]);
        }
    }
    for (int t = 0; t < NT; ++t) out[t] = acc[t];
}

// Tokens [t0, t0 + NT) x super-blocks [kb, kb + kn) of the group of rows r..r+7 at g: the
// partial dots written (kb == 0) or added to out.
template <typename WBlock, int NT>
void group_pass(const uint8_t* g, const char* A, size_t arb, const ActTerms* at, int nb, int kb, int kn, int t0, size_t pf,
                float* out, int os, int r) {
    const block_q8_K* a[NT];
    const ActTerms* e[NT];
    for (int t = 0; t < NT; ++t) {
        a[t] = reinterpret_cast<const block_q8_K*>(A + size_t(t0 + t) * arb) + kb;
        e[t] = at + size_t(t0 + t) * nb + kb;
    }
    __m256 res[NT];
    dot_group<WBlock, NT>(g + size_t(kb) * Record<WBlock>::kBytes, a, e, kn, pf, res);
    for (int t = 0; t < NT; ++t) {
        float* o = out + size_t(t0 + t) * os + r;
        _mm256_storeu_ps(o, kb == 0 ? res[t] : _mm256_add_ps(res[t], _mm256_loadu_ps(o)));
    }
}

// Whole groups of rows [r0, r1) (multiples of 8), each in chunks of kChunk super-blocks. Up to
// kMaxPassTokens tokens: one pass over each chunk. More: a chunk read from memory once and then
// from L1 by every pass of up to kMaxPassTokens tokens.
template <typename WBlock>
void gemv_groups(const uint8_t* W, size_t wrb, const char* A, size_t arb, int n_cols, int n_tokens, float* out, int os, int r0,
                 int r1) {
    static_assert(kMaxPassTokens == 4, "group_pass is instantiated for 1..4 tokens");
    const int nb = n_cols / QK_K;
    ActTerms* at = act_terms(size_t(nb) * n_tokens);
    fill_act_terms(A, arb, nb, n_tokens, at);
    const size_t pf = prefetch_distance(Record<WBlock>::kBytes);
    for (int r = r0; r < r1; r += 8) {
        const uint8_t* g = W + size_t(r) * wrb;
        for (int kb = 0; kb < nb; kb += kChunk) {
            const int kn = std::min(kChunk, nb - kb);
            for (int t0 = 0; t0 < n_tokens; t0 += kMaxPassTokens) {
                switch (std::min(kMaxPassTokens, n_tokens - t0)) {
                    case 1: group_pass<WBlock, 1>(g, A, arb, at, nb, kb, kn, t0, pf, out, os, r); break;
                    case 2: group_pass<WBlock, 2>(g, A, arb, at, nb, kb, kn, t0, pf, out, os, r); break;
                    case 3: group_pass<WBlock, 3>(g, A, arb, at, nb, kb, kn, t0, pf, out, os, r); break;
                    default: group_pass<WBlock, 4>(g, A, arb, at, nb, kb, kn, t0, pf, out, os, r); break;
                }
            }
        }
    }
}

}  // namespace

void matmul_q4_kx8_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    if (r0 >= r1 || n_tokens <= 0) return;
    gemv_groups<block_q4_K>(static_cast<const uint8_t*>(W), w_row_bytes, static_cast<const char*>(A), a_row_bytes, n_cols,
                            n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_kx8_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    if (r0 >= r1 || n_tokens <= 0) return;
    gemv_groups<block_q5_K>(static_cast<const uint8_t*>(W), w_row_bytes, static_cast<const char*>(A), a_row_bytes, n_cols,
                            n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX2
