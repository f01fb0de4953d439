// Small AVX2 helpers shared by the kernels. Include only under __AVX2__.
#pragma once
#include <immintrin.h>

// The sum of the 8 lanes.
inline float hsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
