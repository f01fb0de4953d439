#include "softmax.h"

#include <cmath>

#if defined(__AVX2__) && defined(__FMA__)
#include "avx2_util.h"
#include "exp_avx2.h"
#endif

// The maximum is subtracted first so that no exp overflows.
void softmax_f32_scalar(float* x, int n) {
    float max = x[0];
    for (int i = 1; i < n; i++) max = x[i] > max ? x[i] : max;
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (int i = 0; i < n; i++) x[i] *= inv;
}

#if defined(__AVX2__) && defined(__FMA__)
void softmax_f32_avx2(float* x, int n) {
    int i = 0;
    __m256 vmax = _mm256_set1_ps(x[0]);
    for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
    float tmp[8];
    _mm256_storeu_ps(tmp, vmax);
    float max = tmp[0];
    for (float v : tmp) max = v > max ? v : max;
    for (; i < n; i++) max = x[i] > max ? x[i] : max;

    const __m256 m = _mm256_set1_ps(max);
    __m256 vsum = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(x + i, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    float sum = hsum_avx2(vsum);
    for (; i < n; i++) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    const __m256 vinv = _mm256_set1_ps(inv);
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
    for (; i < n; i++) x[i] *= inv;
}
#endif
