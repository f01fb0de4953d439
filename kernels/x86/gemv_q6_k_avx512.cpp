// Few-token matmul of Q6_K plain rows x Q8_K activations, AVX-512 (VNNI) on zmm: generation
// (1 token) and small batches (the server's conversations decoded together), memory-bound like one
// token. The output matrix of quantized models is Q6_K, and the AVX2 row kernel's cost grew ~3x
// from 1 to 8 tokens.
//
// One row at a time, each super-block decoded once per block of up to kMaxTok tokens, straight
// from the row (nothing packed, the activations read where they are):
//  - The 6-bit quants (0..63, unsigned) decode to 4 zmm in element order: for half h, the 64 ql
//    bytes give elements 128h + 0..63 (low nibbles) and 128h + 64..127 (high nibbles), each with
//    two bits of qh[32h .. 32h+31], read unshifted for the first 32 bytes and shifted by 2 for the
//    second 32 (x86 form of the layout in kernels/quant_types.h).
//  - Per token and zmm, vpmaddubsw (u8 quants x s8 activations: pairs, at most 2*63*128 in
//    magnitude, no saturation) then vpdpwssd with the 16-bit sub-block scales (each pair's scale:
//    its sub-block of 16 is 8 int16 lanes) adds into one int32 vector per token.
//  - The -32 offset: -32 * sum_g sc_g * bsums_g, one ymm vpdpwssd per token and block, is the
//    int32 vector's starting value (its upper 8 lanes 0).
//  - The integer sums are the scalar kernel's exactly; the float side (one convert and fma per
//    token and block, a horizontal sum per row and token) differs in rounding only.
//  - Tokens beyond kMaxTok run in further passes over the same row, then in L1.
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX512)

// GCC 12 warns, wrongly, that the _mm512_undefined_* operands inside its own AVX-512 intrinsics
// may be used uninitialized. (clang has no such warning, and would warn of the unknown name.)
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/prefetch.h"
#include "kernels/quant_types.h"

namespace hearth {

namespace {

constexpr int kMaxTok = 8;  // tokens per pass: 8 int32 sums + 8 float accumulators + the weights

inline __m512i loadu512(const void* p) { return _mm512_loadu_si512(p); }

// Row w (nb super-blocks) x the NT tokens a[0..NT) (each nb blocks): out[t * os].
template <int NT>
void row_tokens(const block_q6_K* w, const block_q8_K* const* a, int nb, float* out, size_t os) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    // The int16 lanes of zmm j (elements 64j .. 64j+63, pairs) take scale 4j + lane / 8.
    __m512i sidx[4];
    for (int j = 0; j < 4; ++j) {
        alignas(64) int16_t ix[32];
        for (int e = 0; e < 32; ++e) ix[e] = int16_t(4 * j + e / 8);
        sidx[j] = _mm512_load_si512(ix);
    }
    const size_t pf = prefetch_distance(sizeof(block_q6_K));
    __m512 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
    for (int b = 0; b < nb; ++b) {
        const block_q6_K& x = w[b];
        prefetch_ahead<sizeof(block_q6_K)>(&x, pf);
        const __m512i h = loadu512(x.qh);
        const __m512i h2 = _mm512_srli_epi16(h, 2);
        __m512i q[4];
        for (int half = 0; half < 2; ++half) {
            const __m512i l = loadu512(x.ql + 64 * half);
            // qh[32 half .. +31] as is (first 32 bytes) and >> 2 (last 32).
            const __m512i qh = half == 0 ? _mm512_shuffle_i64x2(h, h2, _MM_SHUFFLE(1, 0, 1, 0))
                                         : _mm512_shuffle_i64x2(h, h2, _MM_SHUFFLE(3, 2, 3, 2));
            q[2 * half] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_and_si512(_mm512_slli_epi16(qh, 4), m30));
            q[2 * half + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), _mm512_and_si512(qh, m30));
        }
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales)));
        const __m512i scz = _mm512_castsi256_si512(sc16);
        __m512i s[4];
        for (int j = 0; j < 4; ++j) s[j] = _mm512_permutexvar_epi16(sidx[j], scz);
        const __m256i neg32sc = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 5));
        const float dw = _cvtsh_ss(x.d);
        for (int t = 0; t < NT; ++t) {
            const block_q8_K& y = a[t][b];
            const __m256i off = _mm256_dpwssd_epi32(_mm256_setzero_si256(), neg32sc,
                                                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)));
            __m512i si = _mm512_zextsi256_si512(off);
            for (int j = 0; j < 4; ++j) si = _mm512_dpwssd_epi32(si, _mm512_maddubs_epi16(q[j], loadu512(y.qs + 64 * j)), s[j]);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(si), _mm512_set1_ps(dw * y.d), acc[t]);
        }
    }
    for (int t = 0; t < NT; ++t) out[size_t(t) * os] = _mm512_reduce_add_ps(acc[t]);
}

using RowFn = void (*)(const block_q6_K*, const block_q8_K* const*, int, float*, size_t);
constexpr RowFn kRow[kMaxTok] = {row_tokens<1>, row_tokens<2>, row_tokens<3>, row_tokens<4>,
                                 row_tokens<5>, row_tokens<6>, row_tokens<7>, row_tokens<8>};

}  // namespace

void matmul_q6_k_few_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                            float* out, int out_stride, int r0, int r1) {
    if (r0 >= r1 || n_tokens <= 0) return;
    const int nb = n_cols / QK_K;
    const char* Wc = static_cast<const char*>(W);
    const char* Ac = static_cast<const char*>(A);
    for (int r = r0; r < r1; ++r) {
        const block_q6_K* w = reinterpret_cast<const block_q6_K*>(Wc + size_t(r) * w_row_bytes);
        for (int t0 = 0; t0 < n_tokens; t0 += kMaxTok) {
            const int nt = std::min(kMaxTok, n_tokens - t0);
            const block_q8_K* a[kMaxTok];
            for (int t = 0; t < nt; ++t) a[t] = reinterpret_cast<const block_q8_K*>(Ac + size_t(t0 + t) * a_row_bytes);
            kRow[nt - 1](w, a, nb, out + size_t(t0) * size_t(out_stride) + r, size_t(out_stride));
        }
    }
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX512
