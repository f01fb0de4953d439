// The Q8_0 activation quantizer on zmm: the bytes of quantize_row_q8_0_scalar, sixteen blocks at
// a time. The AVX2 version reduces each block's absolute maximum to a scalar and then divides
// twice per block (the scale, its inverse) in a serial chain; at 8 sequences that was ~1.8% of a
// decode step (docs/benchmarks.md, "A Q8_0 quantizer on zmm"). Here the 16 blocks' maxima are
// reduced into one vector by a tree of shuffles and maxes, so that the scales, their rounding to
// fp16 and their inverses are two vector divisions for all 16. Then each block's 32 values are
// multiplied, clamped to [-127, 127], rounded to nearest even and saturated to bytes, as the
// scalar reference does.
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX512)

#include "kernels/x86/avx512_gcc_warnings.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/quant_types.h"

namespace hearth {

namespace {

// Lane L of the result: the maximum of the 16 lanes of m[(L % 4) * 4 + L / 4]. Each level halves
// the lanes per vector and pairs the vectors: 256-bit halves, then 128-bit quarters, then pairs
// of floats, then floats; the last two levels work within 128-bit lanes, which leaves the 4 x 4
// transpose in the order of the lanes.
__m512 max_of_16(const __m512* m) {
    __m512 r1[8], r2[4], r3[2];
    for (int k = 0; k < 8; ++k)
        r1[k] =
            _mm512_max_ps(_mm512_shuffle_f32x4(m[2 * k], m[2 * k + 1], 0x44), _mm512_shuffle_f32x4(m[2 * k], m[2 * k + 1], 0xEE));
    for (int k = 0; k < 4; ++k)
        r2[k] = _mm512_max_ps(_mm512_shuffle_f32x4(r1[2 * k], r1[2 * k + 1], 0x88),
                              _mm512_shuffle_f32x4(r1[2 * k], r1[2 * k + 1], 0xDD));
    for (int k = 0; k < 2; ++k)
        r3[k] =
            _mm512_max_ps(_mm512_shuffle_ps(r2[2 * k], r2[2 * k + 1], 0x44), _mm512_shuffle_ps(r2[2 * k], r2[2 * k + 1], 0xEE));
    return _mm512_max_ps(_mm512_shuffle_ps(r3[0], r3[1], 0x88), _mm512_shuffle_ps(r3[0], r3[1], 0xDD));
}

}  // namespace

void quantize_row_q8_0_avx512(const float* x, void* vy, int64_t n) {
    block_q8_0* y = static_cast<block_q8_0*>(vy);
    const int64_t nb = n / QK8_0;
    const __m512 sign = _mm512_set1_ps(-0.0f), lo = _mm512_set1_ps(-127.f), hi = _mm512_set1_ps(127.f);
    for (int64_t i0 = 0; i0 < nb; i0 += 16) {
        const int nk = int(std::min<int64_t>(16, nb - i0));  // blocks in this group (the rest: zeros, not stored)
        __m512 m[16];
        for (int j = 0; j < 16; ++j) {
            const int b = (j % 4) * 4 + j / 4;  // block b goes in as m[j], so max_of_16 leaves it in lane b
            const float* xb = x + (i0 + b) * QK8_0;
            m[j] = b < nk ? _mm512_max_ps(_mm512_andnot_ps(sign, _mm512_loadu_ps(xb)),
                                          _mm512_andnot_ps(sign, _mm512_loadu_ps(xb + 16)))
                          : _mm512_setzero_ps();
        }
        // The scalar reference: dh = fp16(amax / 127), d = fp32(dh), id = d != 0 ? 1 / d : 0.
        const __m256i dh =
            _mm512_cvtps_ph(_mm512_div_ps(max_of_16(m), _mm512_set1_ps(127.f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m512 d = _mm512_cvtph_ps(dh);
        const __m512 id = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_UQ), _mm512_set1_ps(1.f), d);
        alignas(64) uint16_t dhs[16];
        alignas(64) float ids[16];
        _mm256_store_si256(reinterpret_cast<__m256i*>(dhs), dh);
        _mm512_store_ps(ids, id);
        for (int b = 0; b < nk; ++b) {
            const float* xb = x + (i0 + b) * QK8_0;
            const __m512 s = _mm512_set1_ps(ids[b]);
            y[i0 + b].d = dhs[b];
            for (int h = 0; h < 2; ++h) {
                const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(xb + 16 * h), s), lo), hi);
                const __m512i q = _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i0 + b].qs + 16 * h), _mm512_cvtsepi32_epi8(q));
            }
        }
    }
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX512
