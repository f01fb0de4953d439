// Multi-token matmul for fp32 and fp16 weights x fp32 activations, the contract of matmul_rows_fn
// (kernels/quant.h) with rows one after another (the strides are n_cols elements; both are ignored).
// The AVX2 version computes 3 rows x 4 tokens per step from registers, so each weight vector is
// loaded once for four tokens; the scalar twin is the plain double loop.
#include <algorithm>

#include "kernels/dot_float.h"
#include "kernels/fp16.h"
#include "kernels/isa.h"
#include "kernels/ref/ref.h"
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX2)
#include "kernels/x86/avx2_util.h"
#endif

namespace hearth {

// The scalar twins use the best dot product of the build (NEON on aarch64): on ARM they
// are the matmul, and the AVX2 tiles are tested against them on x86.
void matmul_f32_rows_scalar(const void* W, size_t, const void* A, size_t, int cols, int n_tokens, float* out, int out_stride,
                            int r0, int r1) {
    const float* w = static_cast<const float*>(W);
    const float* x = static_cast<const float*>(A);
    for (int r = r0; r < r1; r++)
        for (int t = 0; t < n_tokens; t++)
            out[int64_t(t) * out_stride + r] = dot_f32(w + int64_t(r) * cols, x + int64_t(t) * cols, cols);
}

void matmul_f16_rows_scalar(const void* W, size_t, const void* A, size_t, int cols, int n_tokens, float* out, int out_stride,
                            int r0, int r1) {
    const uint16_t* w = static_cast<const uint16_t*>(W);
    const float* x = static_cast<const float*>(A);
    for (int r = r0; r < r1; r++)
        for (int t = 0; t < n_tokens; t++)
            out[int64_t(t) * out_stride + r] = dot_f16(w + int64_t(r) * cols, x + int64_t(t) * cols, cols);
}

#if defined(HEARTH_ISA_AVX2)
namespace {

inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline float to_float(float v) { return v; }
inline float to_float(uint16_t h) { return fp16_to_fp32(h); }

// Rows r..r+2 against tokens t..t+3: 12 accumulators, 3 weight vectors and 1 activation
// vector fill the 16 ymm registers.
template <typename W>
void tile_3x4(const W* w, int cols, const float* x, float* out, int out_stride, int r, int t) {
    const W* w0 = w + int64_t(r) * cols;
    const W* w1 = w0 + cols;
    const W* w2 = w1 + cols;
    const float* x0 = x + int64_t(t) * cols;
    const float* x1 = x0 + cols;
    const float* x2 = x1 + cols;
    const float* x3 = x2 + cols;
    __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
    __m256 a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    __m256 a20 = a00, a21 = a00, a22 = a00, a23 = a00;
    int c = 0;
    for (; c + 8 <= cols; c += 8) {
        const __m256 v0 = load8(w0 + c), v1 = load8(w1 + c), v2 = load8(w2 + c);
        __m256 xv = _mm256_loadu_ps(x0 + c);
        a00 = _mm256_fmadd_ps(v0, xv, a00), a10 = _mm256_fmadd_ps(v1, xv, a10), a20 = _mm256_fmadd_ps(v2, xv, a20);
        xv = _mm256_loadu_ps(x1 + c);
        a01 = _mm256_fmadd_ps(v0, xv, a01), a11 = _mm256_fmadd_ps(v1, xv, a11), a21 = _mm256_fmadd_ps(v2, xv, a21);
        xv = _mm256_loadu_ps(x2 + c);
        a02 = _mm256_fmadd_ps(v0, xv, a02), a12 = _mm256_fmadd_ps(v1, xv, a12), a22 = _mm256_fmadd_ps(v2, xv, a22);
        xv = _mm256_loadu_ps(x3 + c);
        a03 = _mm256_fmadd_ps(v0, xv, a03), a13 = _mm256_fmadd_ps(v1, xv, a13), a23 = _mm256_fmadd_ps(v2, xv, a23);
    }
    float s[3][4] = {{hsum_avx2(a00), hsum_avx2(a01), hsum_avx2(a02), hsum_avx2(a03)},
                     {hsum_avx2(a10), hsum_avx2(a11), hsum_avx2(a12), hsum_avx2(a13)},
                     {hsum_avx2(a20), hsum_avx2(a21), hsum_avx2(a22), hsum_avx2(a23)}};
    const W* wr[3] = {w0, w1, w2};
    const float* xt[4] = {x0, x1, x2, x3};
    for (; c < cols; c++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) s[i][j] += to_float(wr[i][c]) * xt[j][c];
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 3; i++) out[int64_t(t + j) * out_stride + r + i] = s[i][j];
}

inline float dot(const float* w, const float* x, int n) { return dot_f32_avx2(w, x, n); }
inline float dot(const uint16_t* w, const float* x, int n) { return dot_f16_avx2(w, x, n); }

// Tokens go in blocks whose activations stay in L2 while every row of the thread's range
// passes over them; within a block, 3×4 tiles, and plain dots for the ragged edges.
template <typename W>
void matmul_rows(const W* w, int cols, const float* x, int n_tokens, float* out, int out_stride, int r0, int r1) {
    const int block = std::max(4, std::min(64, int((256 << 10) / (int64_t(cols) * 4)) / 4 * 4));
    for (int tb = 0; tb < n_tokens; tb += block) {
        const int te = std::min(n_tokens, tb + block);
        int r = r0;
        for (; r + 3 <= r1; r += 3) {
            int t = tb;
            for (; t + 4 <= te; t += 4) tile_3x4(w, cols, x, out, out_stride, r, t);
            for (; t < te; t++)
                for (int i = 0; i < 3; i++)
                    out[int64_t(t) * out_stride + r + i] = dot(w + int64_t(r + i) * cols, x + int64_t(t) * cols, cols);
        }
        for (; r < r1; r++)
            for (int t = tb; t < te; t++)
                out[int64_t(t) * out_stride + r] = dot(w + int64_t(r) * cols, x + int64_t(t) * cols, cols);
    }
}

}  // namespace

void matmul_f32_rows_avx2(const void* W, size_t, const void* A, size_t, int n_cols, int n_tokens, float* out, int out_stride,
                          int r0, int r1) {
    matmul_rows(static_cast<const float*>(W), n_cols, static_cast<const float*>(A), n_tokens, out, out_stride, r0, r1);
}

void matmul_f16_rows_avx2(const void* W, size_t, const void* A, size_t, int n_cols, int n_tokens, float* out, int out_stride,
                          int r0, int r1) {
    matmul_rows(static_cast<const uint16_t*>(W), n_cols, static_cast<const float*>(A), n_tokens, out, out_stride, r0, r1);
}
#endif

}  // namespace hearth
