#include "kernels/swiglu.h"

#include <cmath>

#if defined(HEARTH_ISA_AVX2)
#include "kernels/x86/exp_avx2.h"
#endif

namespace hearth {

void swiglu_f32_scalar(float* g, const float* u, size_t n) {
    for (size_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

#if defined(HEARTH_ISA_AVX2)
void swiglu_f32_avx2(float* g, const float* u, size_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        // exp_avx2 clamps its argument, so e^-x stays finite and x / (1 + e^-x) -> 0 for x -> -inf
        const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), x));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
    }
    swiglu_f32_scalar(g + i, u + i, n - i);
}
#endif

}  // namespace hearth
