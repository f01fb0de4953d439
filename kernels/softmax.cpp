#include "kernels/softmax.h"

#include <cmath>

#if defined(HEARTH_ISA_AVX2)
#include "kernels/x86/avx2_util.h"
#include "kernels/x86/exp_avx2.h"
#elif defined(HEARTH_ISA_NEON)
#include <arm_neon.h>
#endif

namespace hearth {

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

#if defined(HEARTH_ISA_AVX2)
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

#if defined(HEARTH_ISA_NEON)
// exp_avx2's algorithm (kernels/x86/exp_avx2.h) on 4 lanes: the same range clamp, ln 2 split,
// Cephes polynomial and 2^k built in the exponent bits.
static inline float32x4_t exp_neon(float32x4_t x) {
    x = vmaxq_f32(vminq_f32(x, vdupq_n_f32(88.3762626647949f)), vdupq_n_f32(-87.3365447505531f));
    const float32x4_t k = vrndnq_f32(vmulq_n_f32(x, 1.44269504088896341f));
    float32x4_t r = vfmsq_f32(x, k, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, k, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(k), vdupq_n_s32(127)), 23);
    return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

void softmax_f32_neon(float* x, int n) {
    int i = 0;
    float32x4_t vmax = vdupq_n_f32(x[0]);
    for (; i + 4 <= n; i += 4) vmax = vmaxq_f32(vmax, vld1q_f32(x + i));
    float max = vmaxvq_f32(vmax);
    for (; i < n; i++) max = x[i] > max ? x[i] : max;

    float32x4_t vsum = vdupq_n_f32(0.0f);
    for (i = 0; i + 4 <= n; i += 4) {
        const float32x4_t e = exp_neon(vsubq_f32(vld1q_f32(x + i), vdupq_n_f32(max)));
        vst1q_f32(x + i, e);
        vsum = vaddq_f32(vsum, e);
    }
    float sum = vaddvq_f32(vsum);
    for (; i < n; i++) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
    for (; i < n; i++) x[i] *= inv;
}
#endif

}  // namespace hearth
