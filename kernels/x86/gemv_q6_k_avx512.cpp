// Few-token matmul of Q6_K plain rows x Q8_K activations, AVX-512 (VNNI) on zmm: generation
// (1 token) and small batches (the server's conversations decoded together). The output matrix of
// quantized models is Q6_K, and the AVX2 row kernel's cost grew ~3x from 1 to 8 tokens.
//
// One row at a time, each super-block decoded once per block of up to kMaxTok tokens, straight
// from the row (the weights are not repacked; only the activations are rearranged, once per call):
//  - The 6-bit quants (0..63, unsigned) decode to 4 zmm in element order: for half h, the 64 ql
//    bytes give elements 128h + 0..63 (low nibbles) and 128h + 64..127 (high nibbles), each with
//    two bits of qh[32h .. 32h+31], read unshifted for the first 32 bytes and shifted by 2 for the
//    second 32 (x86 form of the layout in kernels/quant_types.h).
//  - The four vectors are transposed by 32-bit lanes within each 128-bit chunk, so that lane l of
//    all four holds 16 elements of one sub-block; the activations are rearranged to match once per
//    call (struct Act). Per token, four vpdpbusd (u8 quants x s8 activations, no saturation) sum
//    each lane's whole sub-block into one int32 vector, whose starting value is the -32 offset
//    (-32 * the sub-block's bsum). An earlier form (vpmaddubsw + vpdpwssd with the scales per
//    vector, natural order) took two multiply uops per 64 products, and ran 8 tokens at 7.2 GB/s
//    of weights instead of ~10 (bench_kernels, 1 thread).
//  - The scales apply in float, once per token and block: sc * d is exact in float, then x the
//    token's d. The integer sub-block sums are the scalar kernel's exactly; the float side differs
//    in rounding only.
//  - Tokens beyond kMaxTok run in further passes over the same row, then in L1.
//  - The row is prefetched ~kPrefetchBytes ahead, into L1; or, for AMD Zen 4 from 2 tokens, into
//    L2 (matmul_q6_k_few_l2_avx512; kernels/table.cpp says why). Wide rows of several tokens are
//    read in column chunks whose activations stay in L1 (few_tokens below).
//  - A row's sum is the same float operations in the same order however it is read (one token or
//    a batch, whole rows or chunks): a batch gives each token the bits it gets alone, which
//    drafts need (model/generate.h).
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX512)

#include "kernels/x86/avx512_gcc_warnings.h"
// The same false warning, as -Wuninitialized, from _mm512_reduce_add_ps.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/platform.h"
#include "kernels/prefetch.h"
#include "kernels/quant_types.h"
#include "kernels/scratch.h"
#include "kernels/x86/few_tokens_avx512.h"

namespace hearth {

namespace {

inline __m512i loadu512(const void* p) { return _mm512_loadu_si512(p); }

constexpr int kMaxTok = 8;  // tokens per pass: 8 int32 sums + 8 float accumulators + the weights

// A token's Q8_K block, rearranged for the lane order of the decoded weights (see row_tokens):
// the byte 4l + k of vector j is element 64 (l % 4) + 16 (l / 4) + 4j + k; lane l's sub-block is
// 4 (l % 4) + l / 4, whose -32 * bsum starts the lane's int32 sum.
struct alignas(64) Act {
    int8_t q[QK_K];
    int32_t off[16];
    float d;
};

inline int lane_subblock(int l) { return 4 * (l % 4) + l / 4; }

void pack_act(const block_q8_K& a, Act& o) {
    for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 16; ++l)
            for (int k = 0; k < 4; ++k) o.q[64 * j + 4 * l + k] = a.qs[64 * (l % 4) + 16 * (l / 4) + 4 * j + k];
    for (int l = 0; l < 16; ++l) o.off[l] = -32 * a.bsums[lane_subblock(l)];
    o.d = a.d;
}

// Super-blocks [0, nb) of row w x the NT tokens whose packed blocks start at a[t]. The tokens'
// float accumulators start at zero (first) or from carry[t], and end summed into out[t * os]
// (last) or stored to carry[t], so that a row read in pieces sums as a whole row does. The
// super-block b + k of the row at pf is prefetched while b is read (pf: k super-blocks on, or the
// chunk read after this one).
// The decoded quants in element order N0..N3 (64 each) are transposed by 32-bit lanes within each
// 128-bit chunk, so that lane l of all four vectors holds 16 elements of one sub-block: vpdpbusd
// (4 products a lane, no saturation) then sums a whole sub-block per lane over the four, and the
// scales apply once per token and block, in float (scale * d exact in float; then x the token's d).
template <PrefetchTo kTo, int NT>
void row_tokens(const block_q6_K* w, const Act* const* a, int nb, const block_q6_K* pf, float* out, size_t os, float* carry,
                bool first, bool last) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    alignas(16) int8_t perm[16];
    for (int l = 0; l < 16; ++l) perm[l] = int8_t(lane_subblock(l));
    const __m128i sperm = _mm_load_si128(reinterpret_cast<const __m128i*>(perm));
    __m512 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(carry + 16 * t);
    for (int b = 0; b < nb; ++b) {
        const block_q6_K& x = w[b];
        prefetch_ahead<sizeof(block_q6_K), kTo>(pf + b, 0);
        const __m512i h = loadu512(x.qh);
        const __m512i h2 = _mm512_srli_epi16(h, 2);
        __m512i n[4];
        for (int half = 0; half < 2; ++half) {
            const __m512i l = loadu512(x.ql + 64 * half);
            // qh[32 half .. +31] as is (first 32 bytes) and >> 2 (last 32).
            const __m512i qh = half == 0 ? _mm512_shuffle_i64x2(h, h2, _MM_SHUFFLE(1, 0, 1, 0))
                                         : _mm512_shuffle_i64x2(h, h2, _MM_SHUFFLE(3, 2, 3, 2));
            n[2 * half] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_and_si512(_mm512_slli_epi16(qh, 4), m30));
            n[2 * half + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), _mm512_and_si512(qh, m30));
        }
        const __m512i t0 = _mm512_unpacklo_epi32(n[0], n[1]), t1 = _mm512_unpackhi_epi32(n[0], n[1]);
        const __m512i t2 = _mm512_unpacklo_epi32(n[2], n[3]), t3 = _mm512_unpackhi_epi32(n[2], n[3]);
        const __m512i q[4] = {_mm512_unpacklo_epi64(t0, t2), _mm512_unpackhi_epi64(t0, t2), _mm512_unpacklo_epi64(t1, t3),
                              _mm512_unpackhi_epi64(t1, t3)};
        const __m128i sc8 = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales)), sperm);
        const __m512 scd = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc8)), _mm512_set1_ps(_cvtsh_ss(x.d)));
        for (int t = 0; t < NT; ++t) {
            const Act& y = a[t][b];
            __m512i si = _mm512_load_si512(y.off);
            for (int j = 0; j < 4; ++j) si = _mm512_dpbusd_epi32(si, q[j], _mm512_load_si512(y.q + 64 * j));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(si), _mm512_mul_ps(scd, _mm512_set1_ps(y.d)), acc[t]);
        }
    }
    for (int t = 0; t < NT; ++t) {
        if (last)
            out[size_t(t) * os] = _mm512_reduce_add_ps(acc[t]);
        else
            _mm512_storeu_ps(carry + 16 * t, acc[t]);
    }
}

using RowFn = void (*)(const block_q6_K*, const Act* const*, int, const block_q6_K*, float*, size_t, float*, bool, bool);
template <PrefetchTo kTo>
constexpr RowFn kRow[kMaxTok] = {row_tokens<kTo, 1>, row_tokens<kTo, 2>, row_tokens<kTo, 3>, row_tokens<kTo, 4>,
                                 row_tokens<kTo, 5>, row_tokens<kTo, 6>, row_tokens<kTo, 7>, row_tokens<kTo, 8>};

template <PrefetchTo kTo>
void few_tokens(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens, float* out,
                int out_stride, int r0, int r1) {
    if (r0 >= r1 || n_tokens <= 0) return;
    const int nb = n_cols / QK_K;
    const char* Wc = static_cast<const char*>(W);
    const char* Ac = static_cast<const char*>(A);
    Act* acts = reinterpret_cast<Act*>(few_tokens_act_buf(size_t(n_tokens) * size_t(nb) * sizeof(Act)));
    for (int t = 0; t < n_tokens; ++t) {
        const block_q8_K* ar = reinterpret_cast<const block_q8_K*>(Ac + size_t(t) * a_row_bytes);
        for (int b = 0; b < nb; ++b) pack_act(ar[b], acts[size_t(t) * size_t(nb) + size_t(b)]);
    }
    // Columns in chunks whose activations (every token's, sizeof(Act) a super-block) take at most
    // 3/4 of L1, so that they stay there for all the rows of a block of kRowBlock. Prefetching into
    // L2 (Zen 4) always: 8 tokens x 4096 columns (48 KB) on a 32 KB L1 ran at 63 GMAC/s from cache,
    // in chunks at 85; from memory (32768 x 5632, 2 threads) 6 tokens at 19.4 GB/s instead of 12.1,
    // 8 at 15.0 instead of 10.0. Into L1, only where a whole row's activations overfill L1: on a
    // Zen 5 (48 KB) bench_kernels 16384 x C, 2 threads, GB/s of weights, whole rows / chunks: C =
    // 5632, 6 tokens 17.8, 18.5 / 27.1, 27.8; 8: 11.7, 12.2 / 31.3, 32.2; C = 11008, 3 tokens
    // 29.8, 29.7 / 39.4, 38.0; 8: 11.8, 11.8 / 30.2, 29.8; C = 4096, 8 tokens 17.8, 16.7 / 26.7,
    // 27.9; but at 5 tokens of 5632 (42 KB, within L1) 37.9, 37.0 / 33.0, 35.0, and on Zen 4 at 4
    // tokens (34 KB on 32) 19.7 / 15.8. A block's rows carry their accumulators from chunk to chunk
    // (kRowBlock x n_tokens vectors, 30 KB at most), so that they sum as whole rows do.
    constexpr int kRowBlock = 32;
    const size_t l1 = l1_data_cache_bytes() ? l1_data_cache_bytes() : size_t(32) << 10,  // (32 KB where unknown)
        row_acts = size_t(n_tokens) * sizeof(Act);
    const int chunk = kTo == PrefetchTo::l2 || size_t(nb) * row_acts > l1 ? std::max(1, int(l1 * 3 / 4 / row_acts)) : nb;
    const auto row_at = [&](int r, int kb) { return reinterpret_cast<const block_q6_K*>(Wc + size_t(r) * w_row_bytes) + kb; };
    const auto row_pass = [&](int r, int kb, int kn, const block_q6_K* pf, float* carry, bool first, bool last) {
        for (int t0 = 0; t0 < n_tokens; t0 += kMaxTok) {
            const int nt = std::min(kMaxTok, n_tokens - t0);
            const Act* a[kMaxTok];
            for (int t = 0; t < nt; ++t) a[t] = acts + size_t(t0 + t) * size_t(nb) + size_t(kb);
            kRow<kTo>[nt - 1](row_at(r, kb), a, kn, pf, out + size_t(t0) * size_t(out_stride) + r, size_t(out_stride),
                              carry ? carry + 16 * t0 : nullptr, first, last);
        }
    };
    if (chunk >= nb) {  // whole rows, prefetched ~kPrefetchBytes further along (into the next rows)
        const size_t ahead = prefetch_distance(sizeof(block_q6_K)) / sizeof(block_q6_K);
        for (int r = r0; r < r1; ++r) row_pass(r, 0, nb, row_at(r, 0) + ahead, nullptr, true, true);
        return;
    }
    struct Tag;
    float* carry = thread_scratch<Tag, float>(size_t(kRowBlock) * size_t(n_tokens) * 16);
    for (int rb = r0; rb < r1; rb += kRowBlock) {
        const int re = std::min(r1, rb + kRowBlock);
        for (int kb = 0; kb < nb; kb += chunk) {
            const int kn = std::min(chunk, nb - kb);
            // Prefetched ~kPrefetchBytes ahead, rows ahead in the same chunk of columns; past the
            // block's last row, its first rows' next chunk (after the last chunk, the next block's).
            const size_t piece = size_t(kn) * sizeof(block_q6_K);
            const int rows_ahead = int((kPrefetchBytes + piece - 1) / piece);
            for (int r = rb; r < re; ++r) {
                const int p = r + rows_ahead;
                const block_q6_K* pf = p < re ? row_at(p, kb) : kb + kn < nb ? row_at(rb + p - re, kb + kn) : row_at(p, 0);
                row_pass(r, kb, kn, pf, carry + size_t(r - rb) * size_t(n_tokens) * 16, kb == 0, kb + kn >= nb);
            }
        }
    }
}

}  // namespace

void matmul_q6_k_few_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                            float* out, int out_stride, int r0, int r1) {
    few_tokens<PrefetchTo::l1>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q6_k_few_l2_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                               float* out, int out_stride, int r0, int r1) {
    few_tokens<PrefetchTo::l2>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX512
