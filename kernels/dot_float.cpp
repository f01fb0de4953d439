#include "kernels/dot_float.h"
#include "kernels/fp16.h"

#if defined(HEARTH_ISA_AVX2)
#include "kernels/x86/avx2_util.h"
#endif
#if defined(HEARTH_ISA_NEON)
#include <arm_neon.h>
#endif

namespace hearth {

float dot_f32_scalar(const float* w, const float* x, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; i++) sum += w[i] * x[i];
    return sum;
}

float dot_f16_scalar(const uint16_t* w, const float* x, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; i++) sum += fp16_to_fp32(w[i]) * x[i];
    return sum;
}

float dot_bf16_scalar(const uint16_t* w, const float* x, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; i++) sum += bf16_to_fp32(w[i]) * x[i];
    return sum;
}

void f16_to_f32_row_scalar(const uint16_t* h, float* out, int n) {
    for (int i = 0; i < n; i++) out[i] = fp16_to_fp32(h[i]);
}

void f32_to_f16_row_scalar(const float* x, uint16_t* out, int n) {
    for (int i = 0; i < n; i++) out[i] = fp32_to_fp16(x[i]);
}

#if defined(HEARTH_ISA_AVX2)
void f16_to_f32_row_avx2(const uint16_t* h, float* out, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(h + i))));
    for (; i < n; i++) out[i] = fp16_to_fp32(h[i]);
}

void f32_to_f16_row_avx2(const float* x, uint16_t* out, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i*)(out + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) out[i] = fp32_to_fp16(x[i]);
}

// Four independent accumulators: one FMA chain would stall on its 4-cycle latency.
float dot_f32_avx2(const float* w, const float* x, int n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
    float sum = hsum_avx2(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) sum += w[i] * x[i];
    return sum;
}

// fp16 and bf16 rows: the same loop, each with its widening of 8 values (x86/avx2_util.h).
namespace {
template <__m256 (*load8)(const uint16_t*), float (*to_f32)(uint16_t)>
float dot_u16_avx2(const uint16_t* w, const float* x, int n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load8(w + i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(load8(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(load8(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(load8(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load8(w + i), _mm256_loadu_ps(x + i), a0);
    float sum = hsum_avx2(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) sum += to_f32(w[i]) * x[i];
    return sum;
}
}  // namespace

float dot_f16_avx2(const uint16_t* w, const float* x, int n) { return dot_u16_avx2<load8_f16, fp16_to_fp32>(w, x, n); }
float dot_bf16_avx2(const uint16_t* w, const float* x, int n) { return dot_u16_avx2<load8_bf16, bf16_to_fp32>(w, x, n); }
#endif

#if defined(HEARTH_ISA_NEON)
void f16_to_f32_row_neon(const uint16_t* h, float* out, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h + i))));
    for (; i < n; i++) out[i] = fp16_to_fp32(h[i]);
}

// fcvtn rounds as the FPCR says: to nearest even unless a program changed it.
void f32_to_f16_row_neon(const float* x, uint16_t* out, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1_u16(out + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
    for (; i < n; i++) out[i] = fp32_to_fp16(x[i]);
}

float dot_f32_neon(const float* w, const float* x, int n) {
    float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vfmaq_f32(a0, vld1q_f32(w + i), vld1q_f32(x + i));
        a1 = vfmaq_f32(a1, vld1q_f32(w + i + 4), vld1q_f32(x + i + 4));
        a2 = vfmaq_f32(a2, vld1q_f32(w + i + 8), vld1q_f32(x + i + 8));
        a3 = vfmaq_f32(a3, vld1q_f32(w + i + 12), vld1q_f32(x + i + 12));
    }
    for (; i + 4 <= n; i += 4) a0 = vfmaq_f32(a0, vld1q_f32(w + i), vld1q_f32(x + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++) sum += w[i] * x[i];
    return sum;
}

// fp16 and bf16 rows: the same loop, each with its widening to fp32. fcvtl widens fp16 in base
// ARMv8 (no fp16 arithmetic extension needed); a bf16 is the upper half of an fp32, so shll by 16
// widens it exactly (no BF16 extension needed).
namespace {
struct NeonF16 {
    static float32x4_t lo(uint16x8_t v) { return vcvt_f32_f16(vget_low_f16(vreinterpretq_f16_u16(v))); }
    static float32x4_t hi(uint16x8_t v) { return vcvt_high_f32_f16(vreinterpretq_f16_u16(v)); }
    static float32x4_t four(uint16x4_t v) { return vcvt_f32_f16(vreinterpret_f16_u16(v)); }
    static float one(uint16_t h) { return fp16_to_fp32(h); }
};
struct NeonBF16 {
    static float32x4_t lo(uint16x8_t v) { return vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(v), 16)); }
    static float32x4_t hi(uint16x8_t v) { return vreinterpretq_f32_u32(vshll_high_n_u16(v, 16)); }
    static float32x4_t four(uint16x4_t v) { return vreinterpretq_f32_u32(vshll_n_u16(v, 16)); }
    static float one(uint16_t h) { return bf16_to_fp32(h); }
};
template <typename F>
float dot_u16_neon(const uint16_t* w, const float* x, int n) {
    float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        const uint16x8_t h0 = vld1q_u16(w + i), h1 = vld1q_u16(w + i + 8);
        a0 = vfmaq_f32(a0, F::lo(h0), vld1q_f32(x + i));
        a1 = vfmaq_f32(a1, F::hi(h0), vld1q_f32(x + i + 4));
        a2 = vfmaq_f32(a2, F::lo(h1), vld1q_f32(x + i + 8));
        a3 = vfmaq_f32(a3, F::hi(h1), vld1q_f32(x + i + 12));
    }
    for (; i + 4 <= n; i += 4) a0 = vfmaq_f32(a0, F::four(vld1_u16(w + i)), vld1q_f32(x + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++) sum += F::one(w[i]) * x[i];
    return sum;
}
}  // namespace

float dot_f16_neon(const uint16_t* w, const float* x, int n) { return dot_u16_neon<NeonF16>(w, x, n); }
float dot_bf16_neon(const uint16_t* w, const float* x, int n) { return dot_u16_neon<NeonBF16>(w, x, n); }
#endif

}  // namespace hearth
