// Matmul of Q4_0 / Q8_0 rows interleaved by 8 (kernels/rows_x8.h) x Q8_0
// activations, AVX2 + FMA + F16C.
//
// One token (generation), per group of 8 rows and block b: each 32-byte load of the record is one
// step of 4 elements of the 8 rows (one row per 32-bit lane), multiplied with _mm256_maddubs_epi16
// against the 4 activation bytes of that step broadcast to every lane. Each lane is one row from
// start to end: no horizontal sums. The 8 rows' scales (one 16-byte load) times the activation
// scale are applied with one FMA per block.
//  - Q4_0: low nibbles of chunk k are step k, high nibbles step 4+k; unsigned nibbles x signed
//    activations, summed in int16 (|pair sum| <= 2*15*128 = 3840, 8 of them <= 30720 < 32767),
//    widened once with madd; the -8 offset is subtracted as the integer 8*sum(q) of the block.
//  - Q8_0: sign trick, maddubs(|w|, sign(a, w)); pair sums reach 2*128*127 = 32512, so each step
//    is widened with madd before it is added.
// Few tokens: each record is loaded, and Q4_0's nibbles unpacked, once per block of up to 4
// tokens, whose sums stay in registers (any count works: further blocks over the group, then in
// L1). One token costs what it did when the loop ran per token. Whole groups only: kernels/matmul.cpp sends
// the plain rows after the last whole group to the plain layout's kernel.
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX2)

#include <immintrin.h>

#include <algorithm>

#include "kernels/x86/avx2_util.h"
#include "kernels/scratch.h"
#include "kernels/prefetch.h"

namespace hearth {

namespace {

// Per activation block: its scale and the Q4_0 offset term 8 * sum(q).
struct ActTerms {
    float d;
    int32_t c8;
};

ActTerms* act_terms(size_t n) {
    struct Tag;
    return thread_scratch<Tag, ActTerms>(n);
}

// Lane i of res[t]: dot(row i of the group at g, activation row a[t]) for NT tokens, for a group
// of Block records: each record is loaded (and Q4_0's nibbles unpacked) once for the NT tokens.
// Summed in partial sums of `chunk` blocks, each added to those before it, as the AVX-512
// few-token kernels sum (x8_sum_chunk_blocks): the same bits.
template <typename Block, int NT>
inline void dot_group(const uint8_t* g, const block_q8_0* const a[NT], const ActTerms* const at[NT], int nb, int chunk, size_t pf,
                      __m256 res[NT]) {
    constexpr size_t kRecordBytes = 8 * sizeof(Block);
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256 acc[NT], total[NT];
    for (int t = 0; t < NT; ++t) acc[t] = total[t] = _mm256_setzero_ps();
    int fold = chunk;  // the block at which the next partial sum begins
    for (int b = 0; b < nb; ++b, g += kRecordBytes) {
        if (b == fold) {
            for (int t = 0; t < NT; ++t) {
                total[t] = b == chunk ? acc[t] : _mm256_add_ps(acc[t], total[t]);
                acc[t] = _mm256_setzero_ps();
            }
            fold += chunk;
        }
        prefetch_ahead<(kRecordBytes + 63) / 64 * 64>(g, pf);
        __m256i s[NT];
        if (sizeof(Block) == sizeof(block_q4_0)) {
            __m256i lo[NT], hi[NT];
            for (int t = 0; t < NT; ++t) lo[t] = hi[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                const __m256i w = loadu(g + 16 + 32 * k);
                const __m256i wl = _mm256_and_si256(w, m4), wh = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
                for (int t = 0; t < NT; ++t) {
                    const int8_t* q = a[t][b].qs;
                    const __m256i pl = _mm256_maddubs_epi16(wl, bcast32(q + 4 * k));
                    const __m256i ph = _mm256_maddubs_epi16(wh, bcast32(q + 16 + 4 * k));
                    lo[t] = _mm256_add_epi16(lo[t], pl);
                    hi[t] = _mm256_add_epi16(hi[t], ph);
                }
            }
            for (int t = 0; t < NT; ++t)
                s[t] = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_add_epi16(lo[t], hi[t]), ones), _mm256_set1_epi32(at[t][b].c8));
        } else {
            for (int t = 0; t < NT; ++t) s[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) {
                const __m256i w = loadu(g + 16 + 32 * k), aw = _mm256_sign_epi8(w, w);
                for (int t = 0; t < NT; ++t) {
                    const __m256i p =
                        _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(bcast32(a[t][b].qs + 4 * k), w)), ones);
                    s[t] = _mm256_add_epi32(s[t], p);
                }
            }
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g)));
        for (int t = 0; t < NT; ++t)
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), _mm256_mul_ps(dw, _mm256_set1_ps(at[t][b].d)), acc[t]);
    }
    for (int t = 0; t < NT; ++t) res[t] = nb > chunk ? _mm256_add_ps(acc[t], total[t]) : acc[t];
}

// Tokens [t0, t0 + NT) x one group at g: out[t * os + i].
template <typename Block, int NT>
void group_tokens(const uint8_t* g, const char* A, size_t arb, const ActTerms* at_all, int nb, int chunk, int t0, size_t pf,
                  float* out, int os) {
    const block_q8_0* a[NT];
    const ActTerms* at[NT];
    for (int t = 0; t < NT; ++t) {
        a[t] = reinterpret_cast<const block_q8_0*>(A + size_t(t0 + t) * arb);
        at[t] = at_all + size_t(t0 + t) * nb;
    }
    __m256 res[NT];
    dot_group<Block, NT>(g, a, at, nb, chunk, pf, res);
    for (int t = 0; t < NT; ++t) _mm256_storeu_ps(out + size_t(t0 + t) * os, res[t]);
}

// Whole groups of rows [r0, r1) (multiples of 8), tokens kMaxTok at a time (the rest 1..3).
constexpr int kMaxTok = 4;

// kAhead: at least how many bytes ahead the weights are prefetched (kernels/prefetch.h).
template <typename Block, size_t kAhead = kPrefetchBytes>
void gemv_groups(const uint8_t* W, size_t wrb, const char* A, size_t arb, int n_cols, int n_tokens, float* out, int os, int r0,
                 int r1) {
    const int nb = n_cols / 32;
    ActTerms* at = act_terms(size_t(nb) * n_tokens);
    for (int t = 0; t < n_tokens; ++t) {
        const block_q8_0* a = reinterpret_cast<const block_q8_0*>(A + size_t(t) * arb);
        for (int b = 0; b < nb; ++b)
            at[size_t(t) * nb + b] = {_cvtsh_ss(a[b].d), sizeof(Block) == sizeof(block_q4_0) ? 8 * sum_i8x32(a[b].qs) : 0};
    }
    const size_t pf = prefetch_distance(8 * sizeof(Block), kAhead);
    const int chunk = x8_sum_chunk_blocks();
    for (int r = r0; r < r1; r += 8) {
        const uint8_t* g = W + size_t(r) * wrb;
        float* o = out + r;
        for (int t0 = 0; t0 < n_tokens; t0 += kMaxTok) {
            switch (std::min(kMaxTok, n_tokens - t0)) {
                case 1: group_tokens<Block, 1>(g, A, arb, at, nb, chunk, t0, pf, o, os); break;
                case 2: group_tokens<Block, 2>(g, A, arb, at, nb, chunk, t0, pf, o, os); break;
                case 3: group_tokens<Block, 3>(g, A, arb, at, nb, chunk, t0, pf, o, os); break;
                default: group_tokens<Block, 4>(g, A, arb, at, nb, chunk, t0, pf, o, os); break;
            }
        }
    }
}

}  // namespace

void matmul_q4_0x8_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemv_groups<block_q4_0>(static_cast<const uint8_t*>(W), w_row_bytes, static_cast<const char*>(A), a_row_bytes, n_cols,
                            n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_0x8_rows_prefetch8k_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                                        int n_tokens, float* out, int out_stride, int r0, int r1) {
    gemv_groups<block_q4_0, 8192>(static_cast<const uint8_t*>(W), w_row_bytes, static_cast<const char*>(A), a_row_bytes, n_cols,
                                  n_tokens, out, out_stride, r0, r1);
}

void matmul_q8_0x8_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    gemv_groups<block_q8_0>(static_cast<const uint8_t*>(W), w_row_bytes, static_cast<const char*>(A), a_row_bytes, n_cols,
                            n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX2
