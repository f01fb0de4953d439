// Multi-token matmul for fp32, fp16 and bf16 weights x fp32 activations, the contract of matmul_rows_fn
// (kernels/quant.h) with rows one after another (the strides are n_cols elements; both are ignored).
// AVX2, two kernels (kernels/table.cpp says from how many tokens): the rows, one row at a time
// against up to kRowTokens tokens, each token's sum taken exactly as the row's dot product takes
// it for one token (kernels/dot_float.cpp: four chains of 8 lanes, summed in one order), so a
// batch of generated tokens gets each token's bits (kernels/table.h); and the tiles, 3 rows x up
// to 4 tokens per step from registers, one chain per row and token, for prompts. Either loads
// (and widens) each weight vector once for every token it holds. The scalar twin is the plain
// double loop.
#include <algorithm>

#include "kernels/dot_float.h"
#include "kernels/fp16.h"
#include "kernels/isa.h"
#include "kernels/prefetch.h"
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

namespace {
template <float (*dot)(const uint16_t*, const float*, int)>
void matmul_u16_rows_scalar(const void* W, const void* A, int cols, int n_tokens, float* out, int out_stride, int r0, int r1) {
    const uint16_t* w = static_cast<const uint16_t*>(W);
    const float* x = static_cast<const float*>(A);
    for (int r = r0; r < r1; r++)
        for (int t = 0; t < n_tokens; t++)
            out[int64_t(t) * out_stride + r] = dot(w + int64_t(r) * cols, x + int64_t(t) * cols, cols);
}
}  // namespace

void matmul_f16_rows_scalar(const void* W, size_t, const void* A, size_t, int cols, int n_tokens, float* out, int out_stride,
                            int r0, int r1) {
    matmul_u16_rows_scalar<dot_f16>(W, A, cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_bf16_rows_scalar(const void* W, size_t, const void* A, size_t, int cols, int n_tokens, float* out, int out_stride,
                             int r0, int r1) {
    matmul_u16_rows_scalar<dot_bf16>(W, A, cols, n_tokens, out, out_stride, r0, r1);
}

#if defined(HEARTH_ISA_AVX2)
namespace {

// Each weight format: its element type (fp16 and bf16 are both uint16_t), 8 elements and one as
// fp32, and its dot product of a row (single tokens, below).
struct F32 {
    using W = float;
    static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
    static float one(float v) { return v; }
    static float dot(const float* w, const float* x, int n) { return dot_f32_avx2(w, x, n); }
};
struct F16 {
    using W = uint16_t;
    static __m256 load8(const uint16_t* p) { return load8_f16(p); }
    static float one(uint16_t h) { return fp16_to_fp32(h); }
    static float dot(const uint16_t* w, const float* x, int n) { return dot_f16_avx2(w, x, n); }
};
struct BF16 {
    using W = uint16_t;
    static __m256 load8(const uint16_t* p) { return load8_bf16(p); }
    static float one(uint16_t h) { return bf16_to_fp32(h); }
    static float dot(const uint16_t* w, const float* x, int n) { return dot_bf16_avx2(w, x, n); }
};

// Rows r..r+2 against tokens t..t+NT-1 (NT <= 4): up to 12 accumulators, 3 weight vectors
// and 1 activation vector fill the 16 ymm registers, and each weight vector is loaded (and, for
// f16 and bf16, widened) once for all NT tokens.
template <int NT, typename F>
void tile_3xn(const typename F::W* w, int cols, const float* x, float* out, int out_stride, int r, int t) {
    static_assert(NT >= 1 && NT <= 4, "at most 4 tokens a tile");
    using W = typename F::W;
    const W* wr[3] = {w + int64_t(r) * cols, w + int64_t(r + 1) * cols, w + int64_t(r + 2) * cols};
    const float* xt[NT];
    for (int j = 0; j < NT; j++) xt[j] = x + int64_t(t + j) * cols;
    __m256 acc[3][NT];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < NT; j++) acc[i][j] = _mm256_setzero_ps();
    int c = 0;
    for (; c + 8 <= cols; c += 8) {
        const __m256 v0 = F::load8(wr[0] + c), v1 = F::load8(wr[1] + c), v2 = F::load8(wr[2] + c);
        for (int j = 0; j < NT; j++) {
            const __m256 xv = _mm256_loadu_ps(xt[j] + c);
            acc[0][j] = _mm256_fmadd_ps(v0, xv, acc[0][j]);
            acc[1][j] = _mm256_fmadd_ps(v1, xv, acc[1][j]);
            acc[2][j] = _mm256_fmadd_ps(v2, xv, acc[2][j]);
        }
    }
    float s[3][NT];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < NT; j++) s[i][j] = hsum_avx2(acc[i][j]);
    for (; c < cols; c++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < NT; j++) s[i][j] += F::one(wr[i][c]) * xt[j][c];
    for (int j = 0; j < NT; j++)
        for (int i = 0; i < 3; i++) out[int64_t(t + j) * out_stride + r + i] = s[i][j];
}

// Row r against tokens t..t+NT-1, each token's sum as F::dot takes it (dot_f32_avx2 /
// dot_u16_avx2): chains a0..a3 over steps of 32, then steps of 8 into a0, then hsum((a0 + a1) +
// (a2 + a3)), then the last elements one by one (multiplied, then added: the build does not
// contract). The weights are widened once for the NT tokens.
template <int NT, typename F>
void row_tokens(const typename F::W* w, int cols, const float* x, float* out, int out_stride, int r, int t) {
    const typename F::W* wr = w + int64_t(r) * cols;
    const float* xt[NT];
    for (int j = 0; j < NT; j++) xt[j] = x + int64_t(t + j) * cols;
    __m256 a[NT][4];
    for (int j = 0; j < NT; j++)
        for (int k = 0; k < 4; k++) a[j][k] = _mm256_setzero_ps();
    int c = 0;
    for (; c + 32 <= cols; c += 32) {
        // The next rows' lines are asked for as this one's are used: the row is in L1 for the
        // tokens, and the stream from memory does not pause for them (kernels/prefetch.h).
        prefetch_ahead<32 * sizeof(typename F::W)>(wr + c, kPrefetchBytes);
        const __m256 v[4] = {F::load8(wr + c), F::load8(wr + c + 8), F::load8(wr + c + 16), F::load8(wr + c + 24)};
        for (int j = 0; j < NT; j++)
            for (int k = 0; k < 4; k++) a[j][k] = _mm256_fmadd_ps(v[k], _mm256_loadu_ps(xt[j] + c + 8 * k), a[j][k]);
    }
    for (; c + 8 <= cols; c += 8) {
        const __m256 v = F::load8(wr + c);
        for (int j = 0; j < NT; j++) a[j][0] = _mm256_fmadd_ps(v, _mm256_loadu_ps(xt[j] + c), a[j][0]);
    }
    for (int j = 0; j < NT; j++) {
        float sum = hsum_avx2(_mm256_add_ps(_mm256_add_ps(a[j][0], a[j][1]), _mm256_add_ps(a[j][2], a[j][3])));
        for (int e = c; e < cols; e++) sum += F::one(wr[e]) * xt[j][e];
        out[int64_t(t + j) * out_stride + r] = sum;
    }
}

// Tokens per row_tokens call: their 4 chains each and the 4 weight vectors fit the registers (16
// ymm with AVX2, 32 with AVX-512's VL).
#if defined(HEARTH_ISA_AVX512)
constexpr int kRowTokens = 6;
#else
constexpr int kRowTokens = 3;
#endif

// Tokens in blocks whose activations stay in L2; within a block, each row in turn against its
// tokens kRowTokens at a time (the row then in L1). One token: the row's dot product.
template <typename F>
void matmul_rows(const typename F::W* w, int cols, const float* x, int n_tokens, float* out, int out_stride, int r0, int r1) {
    const int block = std::max(kRowTokens, std::min(64, int((256 << 10) / (int64_t(cols) * 4))));
    for (int tb = 0; tb < n_tokens; tb += block) {
        const int te = std::min(n_tokens, tb + block);
        for (int r = r0; r < r1; r++) {
            int t = tb;
            for (; t + kRowTokens <= te; t += kRowTokens) row_tokens<kRowTokens, F>(w, cols, x, out, out_stride, r, t);
            switch (te - t) {
#if defined(HEARTH_ISA_AVX512)
                case 5: row_tokens<5, F>(w, cols, x, out, out_stride, r, t); break;
                case 4: row_tokens<4, F>(w, cols, x, out, out_stride, r, t); break;
#endif
                case 3: row_tokens<3, F>(w, cols, x, out, out_stride, r, t); break;
                case 2: row_tokens<2, F>(w, cols, x, out, out_stride, r, t); break;
                case 1: row_tokens<1, F>(w, cols, x, out, out_stride, r, t); break;
                default: break;
            }
        }
    }
}

// Tokens go in blocks whose activations stay in L2 while every row of the thread's range
// passes over them; within a block, 3-row tiles of 4 tokens, then of the 2 or 3 left; a single
// token left, and the ragged rows, take plain dots. One token on a 3-row tile streams three rows
// at once, which read memory slower than one row at a time (tools/bench_kernels 16384 x 2048
// f16, 2 threads, AMD EPYC Zen 4: 27 GB/s against 38-57); 2 and 3 tokens gain from sharing each
// converted weight vector (2 tokens 24-28 against 20-23 GB/s, 3 tokens 20-22 against 17-18).
template <typename F>
void matmul_tiles(const typename F::W* w, int cols, const float* x, int n_tokens, float* out, int out_stride, int r0, int r1) {
    const int block = std::max(4, std::min(64, int((256 << 10) / (int64_t(cols) * 4)) / 4 * 4));
    for (int tb = 0; tb < n_tokens; tb += block) {
        const int te = std::min(n_tokens, tb + block);
        int r = r0;
        for (; r + 3 <= r1; r += 3) {
            int t = tb;
            for (; t + 4 <= te; t += 4) tile_3xn<4, F>(w, cols, x, out, out_stride, r, t);
            switch (te - t) {
                case 3: tile_3xn<3, F>(w, cols, x, out, out_stride, r, t); break;
                case 2: tile_3xn<2, F>(w, cols, x, out, out_stride, r, t); break;
                case 1:  // plain dots: one row streamed at a time reads memory faster (above)
                    for (int i = 0; i < 3; i++)
                        out[int64_t(t) * out_stride + r + i] = F::dot(w + int64_t(r + i) * cols, x + int64_t(t) * cols, cols);
                    break;
                default: break;
            }
        }
        for (; r < r1; r++)
            for (int t = tb; t < te; t++)
                out[int64_t(t) * out_stride + r] = F::dot(w + int64_t(r) * cols, x + int64_t(t) * cols, cols);
    }
}

// The table's rows: the raw pointers as F's weights and fp32 activations, to the rows' driver or
// the tiles'.
template <typename F, bool kTiles>
void matmul_float(const void* W, const void* A, int cols, int n_tokens, float* out, int out_stride, int r0, int r1) {
    const auto* w = static_cast<const typename F::W*>(W);
    const float* x = static_cast<const float*>(A);
    if (kTiles)
        matmul_tiles<F>(w, cols, x, n_tokens, out, out_stride, r0, r1);
    else
        matmul_rows<F>(w, cols, x, n_tokens, out, out_stride, r0, r1);
}

}  // namespace

void matmul_f32_rows_avx2(const void* W, size_t, const void* A, size_t, int n_cols, int n_tokens, float* out, int out_stride,
                          int r0, int r1) {
    matmul_float<F32, false>(W, A, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_f16_rows_avx2(const void* W, size_t, const void* A, size_t, int n_cols, int n_tokens, float* out, int out_stride,
                          int r0, int r1) {
    matmul_float<F16, false>(W, A, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_bf16_rows_avx2(const void* W, size_t, const void* A, size_t, int n_cols, int n_tokens, float* out, int out_stride,
                           int r0, int r1) {
    matmul_float<BF16, false>(W, A, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_f32_tiles_avx2(const void* W, size_t, const void* A, size_t, int n_cols, int n_tokens, float* out, int out_stride,
                           int r0, int r1) {
    matmul_float<F32, true>(W, A, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_f16_tiles_avx2(const void* W, size_t, const void* A, size_t, int n_cols, int n_tokens, float* out, int out_stride,
                           int r0, int r1) {
    matmul_float<F16, true>(W, A, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_bf16_tiles_avx2(const void* W, size_t, const void* A, size_t, int n_cols, int n_tokens, float* out, int out_stride,
                            int r0, int r1) {
    matmul_float<BF16, true>(W, A, n_cols, n_tokens, out, out_stride, r0, r1);
}
#endif

}  // namespace hearth
