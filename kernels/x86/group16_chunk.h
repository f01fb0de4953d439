// The quants of the types that Q6_K's GEMM panel holds (16 groups of 16 to a super-block, a scale
// per group), as the panel holds them: signed bytes, 32 elements at a time. The ymm GEMM
// (x86/gemm_k_avx2.cpp) and the zmm one (x86/gemm_avx512.cpp) pack them alike; each says its
// int32 bounds for these ranges. AVX2 code: include only under HEARTH_ISA_AVX2.
#pragma once
#include <immintrin.h>

#include "kernels/quant_types.h"
#include "kernels/x86/avx2_util.h"

namespace hearth {

// Quants 32c..32c+31 of a block minus 32, in element order (layout in quant_types.h).
inline __m256i q6k_chunk(const block_q6_K& b, int c) {
    const int h = c / 4, p = c % 4;
    const __m256i l = loadu(b.ql + 64 * h + 32 * (p & 1));
    const __m256i qh = loadu(b.qh + 32 * h);
    const __m256i lo = _mm256_and_si256(p < 2 ? l : _mm256_srli_epi16(l, 4), _mm256_set1_epi8(0x0F));
    // bits 2p, 2p+1 of qh to bits 4, 5
    const __m256i hb = p == 0   ? _mm256_slli_epi16(qh, 4)
                       : p == 1 ? _mm256_slli_epi16(qh, 2)
                       : p == 2 ? qh
                                : _mm256_srli_epi16(qh, 2);
    const __m256i q = _mm256_or_si256(lo, _mm256_and_si256(hb, _mm256_set1_epi8(0x30)));
    return _mm256_sub_epi8(q, _mm256_set1_epi8(32));
}

// Q6_K: q - 32 in -32..31; Q3_K: q - 4 in -4..3; Q2_K: its quants 0..3 (its mins are a term of
// their own, beside the panel).
inline __m256i group16_chunk(const block_q6_K& b, int c) { return q6k_chunk(b, c); }
inline __m256i group16_chunk(const block_q3_K& b, int c) { return _mm256_sub_epi8(q3k_chunk(b, c), _mm256_set1_epi8(4)); }
inline __m256i group16_chunk(const block_q2_K& b, int c) { return two_bit_chunk(b.qs, c); }

}  // namespace hearth
