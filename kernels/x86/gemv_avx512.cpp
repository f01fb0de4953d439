// Few-token matmul of Q4_0 / Q8_0 rows interleaved by 8 (kernels/rows_x8.h) x Q8_0 activations,
// AVX-512 VNNI on zmm: generation (1 token) and small batches (the server's conversations decoded
// together, short prompts), which are memory-bound like one token.
//
// A pass reads two groups of 8 rows (16 rows) record by record, each record exactly once per block
// of up to kMaxTok tokens, straight from the interleaved layout (no packing): the 32-byte chunk k
// of both groups' record b is joined into one zmm (row i of the first group in lanes 0..7, of the
// second in 8..15; 4 bytes of one row per 32-bit lane), its nibbles unpacked once, and then one
// vpdpbusd per token adds the 64 products of that step into the token's 16 int32 row sums, against
// the token's 4 activation bytes of the step taken by an embedded {1to16} broadcast from memory.
// No lane ever mixes rows: no horizontal sums, and 16 outputs per token are stored at once.
//  - As in x86/gemm_avx512.cpp, the weights are dpbusd's unsigned operand and the activations, as
//    they are (signed), the broadcast one: Q4_0 nibbles 0..15, with the -8 as the per-(token,
//    block) term -8 * sum(a); Q8_0 w ^ 0x80 (= w + 128), with -128 * sum(a). The term, computed
//    once per call and activation block, is the int32 sum's starting value. A block's sum is at
//    most 32 * 255 * 128 < 2^21 in magnitude (dpbusd does not saturate). The integer sums are the
//    scalar kernels' exactly; only the float operations (one convert and two multiplies per block
//    and token) differ.
//  - Tokens beyond kMaxTok run in further blocks of tokens over the same 16 rows' chunk of
//    columns, whose records are then in L1/L2; the blocks are templates on their token count (1..kMaxTok), so all sums live
//    in registers (8 tokens: 8 int32 sums + 8 float accumulators + the weight vectors).
//  - Weights are prefetched one record per block ahead of use in both streams, a distance of
//    ~kPrefetchBytes per stream; near the end of a pair of groups the requests move on to the next
//    pair's records, so that each pair's start is in flight before it is reached. Into L1, or
//    into L2 for AMD Zen 4 (the _l2 functions; kernels/table.cpp says why).
//  - An odd group at the end of the row range is paired with itself, and only its 8 rows stored.
// Whole groups only: kernels/matmul.cpp sends the plain rows after the last whole group to the
// plain layout's kernel.
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX512)

#include "kernels/x86/avx512_gcc_warnings.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/platform.h"
#include "kernels/prefetch.h"
#include "kernels/quant_types.h"
#include "kernels/x86/avx512_util.h"
#include "kernels/x86/few_tokens_avx512.h"
#include "kernels/x86/avx2_util.h"

namespace hearth {

namespace {

#ifndef HEARTH_FEW_MAX_TOKENS  // tuning override for tools/bench_kernels builds
#define HEARTH_FEW_MAX_TOKENS 8
#endif
constexpr int kMaxTok = HEARTH_FEW_MAX_TOKENS;  // tokens per register block
static_assert(kMaxTok >= 1 && kMaxTok <= 8, "8 tokens fill the 32 zmm registers");

// The activations of a block of NT tokens, per weight block: each token's 32 quants, its scale,
// and the negated offset term (Q4_0: -8 * sum(q), Q8_0: -128 * sum(q)).
template <int NT>
struct Acts {
    int8_t q[NT][32];
    float d[NT];
    int32_t neg_term[NT];
};

inline __m256i loadu256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m512i join(const uint8_t* a, const uint8_t* b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(loadu256(a)), loadu256(b), 1);
}

// Tokens [t0, t0 + NT) of A, nb blocks each, into out[b] (kTerm: the offset, 8 or 128).
template <int NT, int kTerm>
void pack_acts(const char* A, size_t arb, int nb, int t0, Acts<NT>* out) {
    for (int i = 0; i < NT; ++i) {
        const block_q8_0* a = reinterpret_cast<const block_q8_0*>(A + size_t(t0 + i) * arb);
        for (int b = 0; b < nb; ++b) {
            std::memcpy(out[b].q[i], a[b].qs, 32);
            out[b].d[i] = _cvtsh_ss(a[b].d);
            out[b].neg_term[i] = -kTerm * sum_i8x32(a[b].qs);
        }
    }
}

// The 16 rows of the groups at ga and gb (nb records each) x NT tokens: out[t * os + i] for the
// rows i set in keep. (na, nbp): the next pair's groups, prefetched near the end (or null).
template <typename WBlock, PrefetchTo kTo, int NT>
void pair_tokens(const uint8_t* ga, const uint8_t* gb, const uint8_t* na, const uint8_t* nbp, int nb, const Acts<NT>* act,
                 float* out, size_t os, __mmask16 keep, bool add) {
    constexpr bool kQ4 = sizeof(WBlock) == sizeof(block_q4_0);
    constexpr size_t kRec = 8 * sizeof(WBlock);
    constexpr size_t kRecLines = (kRec + 63) / 64 * 64;
    constexpr int kAhead = int((kPrefetchBytes + kRec - 1) / kRec);  // records ahead, per stream
    // Few tokens: two independent int32 chains per token (lo/hi nibbles, even/odd steps), so that one
    // token's dpbusd latency does not serialize a block; with more tokens the tokens are the chains.
    constexpr bool kSplit = NT <= 4;
    const __m512i m4 = _mm512_set1_epi8(0x0F), bias = _mm512_set1_epi8(char(0x80));
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
        __m512i s[NT], s2[NT];
        for (int t = 0; t < NT; ++t) {
            s[t] = _mm512_set1_epi32(act->neg_term[t]);
            if (kSplit) s2[t] = _mm512_setzero_si512();
        }
        if (kQ4) {
            for (int k = 0; k < 4; ++k) {
                const __m512i w = join(ga + 16 + 32 * k, gb + 16 + 32 * k);
                const __m512i lo = _mm512_and_si512(w, m4), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
                for (int t = 0; t < NT; ++t) {
                    s[t] = dpbusd_bcast<kSplit>(s[t], lo, act->q[t] + 4 * k);
                    if (kSplit)
                        s2[t] = dpbusd_bcast<kSplit>(s2[t], hi, act->q[t] + 16 + 4 * k);
                    else
                        s[t] = dpbusd_bcast<kSplit>(s[t], hi, act->q[t] + 16 + 4 * k);
                }
            }
        } else {
            for (int k = 0; k < 8; ++k) {
                const __m512i w = _mm512_xor_si512(join(ga + 16 + 32 * k, gb + 16 + 32 * k), bias);
                for (int t = 0; t < NT; ++t) {
                    if (kSplit && (k & 1))
                        s2[t] = dpbusd_bcast<kSplit>(s2[t], w, act->q[t] + 4 * k);
                    else
                        s[t] = dpbusd_bcast<kSplit>(s[t], w, act->q[t] + 4 * k);
                }
            }
        }
        const __m512 dw =
            _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ga))),
                                                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)), 1));
        for (int t = 0; t < NT; ++t) {
            const __m512i st = kSplit ? _mm512_add_epi32(s[t], s2[t]) : s[t];
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(st), _mm512_mul_ps(dw, _mm512_set1_ps(act->d[t])), acc[t]);
        }
    }
    for (int t = 0; t < NT; ++t) {
        float* o = out + size_t(t) * os;
        _mm512_mask_storeu_ps(o, keep, add ? _mm512_add_ps(acc[t], _mm512_maskz_loadu_ps(keep, o)) : acc[t]);
    }
}

template <typename WBlock, int NT>
void pack_tokens(const char* A, size_t arb, int nb, int t0, uint8_t* buf) {
    pack_acts<NT, sizeof(WBlock) == sizeof(block_q4_0) ? 8 : 128>(A, arb, nb, t0, reinterpret_cast<Acts<NT>*>(buf));
}

template <typename WBlock, PrefetchTo kTo, int NT>
void run_tokens(const uint8_t* ga, const uint8_t* gb, const uint8_t* na, const uint8_t* nbp, int nb, const uint8_t* buf,
                float* out, size_t os, __mmask16 keep, bool add) {
    pair_tokens<WBlock, kTo, NT>(ga, gb, na, nbp, nb, reinterpret_cast<const Acts<NT>*>(buf), out, os, keep, add);
}

// The instantiations for 1..kMaxTok tokens, indexed by the token count - 1.
template <typename WBlock, PrefetchTo kTo, int... I>
struct TokenKernels {
    using Pack = void (*)(const char*, size_t, int, int, uint8_t*);
    using Run = void (*)(const uint8_t*, const uint8_t*, const uint8_t*, const uint8_t*, int, const uint8_t*, float*, size_t,
                         __mmask16, bool);
    static constexpr Pack pack[sizeof...(I)] = {pack_tokens<WBlock, I + 1>...};
    static constexpr Run run[sizeof...(I)] = {run_tokens<WBlock, kTo, I + 1>...};
};
template <typename WBlock, PrefetchTo kTo, int... I>
constexpr typename TokenKernels<WBlock, kTo, I...>::Pack TokenKernels<WBlock, kTo, I...>::pack[];
template <typename WBlock, PrefetchTo kTo, int... I>
constexpr typename TokenKernels<WBlock, kTo, I...>::Run TokenKernels<WBlock, kTo, I...>::run[];

template <typename WBlock, PrefetchTo kTo, int... I>
TokenKernels<WBlock, kTo, I...> token_kernels(std::integer_sequence<int, I...>);
template <typename WBlock, PrefetchTo kTo>
using Kernels = decltype(token_kernels<WBlock, kTo>(std::make_integer_sequence<int, kMaxTok>()));

// Whole groups of rows, any number of tokens (the driver, few_tokens_avx512.h), in chunks of
// x8_sum_chunk_blocks() columns (x86/avx2_util.h says why that many).
template <typename WBlock, PrefetchTo kTo>
void few_tokens(const void* W, size_t wrb, const void* A, size_t arb, int n_cols, int n_tokens, float* out, int os, int r0,
                int r1) {
    static_assert(sizeof(Acts<kMaxTok>) == kMaxTok * sizeof(Acts<1>), "Acts<NT> is NT times Acts<1>");
    // 40 bytes per token and block
    few_tokens_x8<Kernels<WBlock, kTo>, kMaxTok, 8 * sizeof(WBlock), sizeof(Acts<1>)>(W, wrb, A, arb, n_cols / QK8_0, n_tokens,
                                                                                      out, os, r0, r1, x8_sum_chunk_blocks());
}

}  // namespace

void matmul_q4_0x8_few_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                              float* out, int out_stride, int r0, int r1) {
    few_tokens<block_q4_0, PrefetchTo::l1>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q8_0x8_few_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                              float* out, int out_stride, int r0, int r1) {
    few_tokens<block_q8_0, PrefetchTo::l1>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_0x8_few_l2_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                                 float* out, int out_stride, int r0, int r1) {
    few_tokens<block_q4_0, PrefetchTo::l2>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q8_0x8_few_l2_avx512(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                                 float* out, int out_stride, int r0, int r1) {
    few_tokens<block_q8_0, PrefetchTo::l2>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX512
