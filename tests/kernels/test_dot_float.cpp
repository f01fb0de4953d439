// The fp32/fp16/bf16 dot kernels against their scalar twins, and matmul against a plain
// double-precision loop.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/dot_float.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"
#include "kernels/ref/ref.h"
#include "kernels/table.h"
#include "kernels/softmax.h"
#include "kernels/quant_types.h"

using namespace hearth;

static std::vector<float> random_floats(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd;
    std::vector<float> v(n);
    for (float& x : v) x = nd(rng);
    return v;
}

// Summation order differs between versions; the bound is a few ulps of sum |w_i x_i|.
static double bound(const float* w, const float* x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += std::fabs(double(w[i]) * x[i]);
    return 1e-6 * s + 1e-30;
}

TEST_CASE("dot_f32, dot_f16 and dot_bf16: the SIMD versions equal the scalar twins") {
    for (int n : {1, 3, 7, 8, 15, 16, 31, 32, 33, 64, 100, 255, 4096, 4097, 11008}) {
        std::vector<float> w = random_floats(n, n), x = random_floats(n, n + 1);
        std::vector<uint16_t> h(n), b(n);
        std::vector<float> wh(n), wb(n);
        for (int i = 0; i < n; i++) wh[i] = fp16_to_fp32(h[i] = fp32_to_fp16(w[i]));
        for (int i = 0; i < n; i++) wb[i] = bf16_to_fp32(b[i] = fp32_to_bf16(w[i]));
        double exact = 0, exact_h = 0, exact_b = 0;
        for (int i = 0; i < n; i++)
            exact += double(w[i]) * x[i], exact_h += double(wh[i]) * x[i], exact_b += double(wb[i]) * x[i];
        INFO("n = " << n);
        CHECK(std::fabs(dot_f32_scalar(w.data(), x.data(), n) - exact) <= bound(w.data(), x.data(), n) * n);
        CHECK(std::fabs(dot_f16_scalar(h.data(), x.data(), n) - exact_h) <= bound(wh.data(), x.data(), n) * n);
        CHECK(std::fabs(dot_bf16_scalar(b.data(), x.data(), n) - exact_b) <= bound(wb.data(), x.data(), n) * n);
#if defined(HEARTH_ISA_AVX2)
        CHECK(std::fabs(dot_f32_avx2(w.data(), x.data(), n) - exact) <= bound(w.data(), x.data(), n) * 8);
        CHECK(std::fabs(dot_f16_avx2(h.data(), x.data(), n) - exact_h) <= bound(wh.data(), x.data(), n) * 8);
        CHECK(std::fabs(dot_bf16_avx2(b.data(), x.data(), n) - exact_b) <= bound(wb.data(), x.data(), n) * 8);
#endif
#if defined(HEARTH_ISA_NEON)
        CHECK(std::fabs(dot_f32_neon(w.data(), x.data(), n) - exact) <= bound(w.data(), x.data(), n) * 8);
        CHECK(std::fabs(dot_f16_neon(h.data(), x.data(), n) - exact_h) <= bound(wh.data(), x.data(), n) * 8);
        CHECK(std::fabs(dot_bf16_neon(b.data(), x.data(), n) - exact_b) <= bound(wb.data(), x.data(), n) * 8);
#endif
    }
}

// bf16: through matmul (the table's row), and its scalar twin called directly (on ARM the matmul).
TEST_CASE("matmul: f32, f16 and bf16 weights, 1 and several tokens, odd row counts, equal a double loop") {
    for (int rows : {1, 5, 16, 17, 100}) {
        for (int cols : {1, 9, 64, 172}) {
            for (int tokens : {1, 3, 7}) {
                std::vector<float> w = random_floats(rows * cols, rows * 7 + cols), x = random_floats(tokens * cols, 99);
                std::vector<uint16_t> h(w.size()), b(w.size());
                for (size_t i = 0; i < w.size(); i++) h[i] = fp32_to_fp16(w[i]), b[i] = fp32_to_bf16(w[i]);
                std::vector<float> out32(size_t(rows) * tokens, NAN), out16 = out32, outb = out32, outb_scalar = out32;
                matmul(out32.data(), TYPE_F32, Layout::rows, w.data(), rows, cols, x.data(), tokens);
                matmul(out16.data(), TYPE_F16, Layout::rows, h.data(), rows, cols, x.data(), tokens);
                matmul(outb.data(), TYPE_BF16, Layout::rows, b.data(), rows, cols, x.data(), tokens);
                matmul_bf16_rows_scalar(b.data(), 2 * size_t(cols), x.data(), sizeof(float) * size_t(cols), cols, tokens,
                                        outb_scalar.data(), rows, 0, rows);
                for (int t = 0; t < tokens; t++)
                    for (int r = 0; r < rows; r++) {
                        double e32 = 0, e16 = 0, eb = 0, mag = 0;
                        for (int c = 0; c < cols; c++) {
                            e32 += double(w[r * cols + c]) * x[t * cols + c];
                            e16 += double(fp16_to_fp32(h[r * cols + c])) * x[t * cols + c];
                            eb += double(bf16_to_fp32(b[r * cols + c])) * x[t * cols + c];
                            mag += std::fabs(double(w[r * cols + c]) * x[t * cols + c]);
                        }
                        INFO(rows << "x" << cols << ", " << tokens << " tokens, row " << r << " token " << t);
                        CHECK(std::fabs(out32[size_t(t) * rows + r] - e32) <= 1e-5 * mag + 1e-30);
                        CHECK(std::fabs(out16[size_t(t) * rows + r] - e16) <= 1e-5 * mag + 1e-30);
                        CHECK(std::fabs(outb[size_t(t) * rows + r] - eb) <= 1e-5 * mag + 1e-30);
                        CHECK(std::fabs(outb_scalar[size_t(t) * rows + r] - eb) <= 1e-5 * mag + 1e-30);
                    }
            }
        }
    }
}

TEST_CASE("f16_to_f32_row: the SIMD version converts every half value as the scalar one") {
    std::vector<uint16_t> all(65536 + 5);
    for (size_t i = 0; i < all.size(); i++) all[i] = uint16_t(i * 40503u);  // a permutation, plus a tail
    for (uint32_t h = 0; h < 65536; h++) all[h] = uint16_t(h);
    std::vector<float> a(all.size()), b(all.size());
    f16_to_f32_row_scalar(all.data(), a.data(), int(all.size()));
    f16_to_f32_row(all.data(), b.data(), int(all.size()));
    int differ = 0;
    for (size_t i = 0; i < all.size(); i++) differ += std::memcmp(&a[i], &b[i], 4) != 0;
    CHECK(differ == 0);
}

TEST_CASE("fp16 conversion: every half value round-trips, and rounding is to nearest even") {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = fp16_to_fp32(uint16_t(h));
        if (std::isnan(f)) continue;
        CHECK(fp32_to_fp16(f) == h);
    }
    CHECK(fp16_to_fp32(0x3c00) == 1.0f);
    CHECK(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24));         // smallest subnormal
    CHECK(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie goes to even
    CHECK(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
    CHECK(fp32_to_fp16(70000.0f) == 0x7c00);  // overflow is infinity
    CHECK(bf16_to_fp32(fp32_to_bf16(3.140625f)) == 3.140625f);
}

// The bf16 rows widen by shifting each value into an fp32's upper half: every bf16 value, alone in
// a row of zeros (at every position in turn: the vector lanes and the tail) times ones, comes out
// of the build's dot as bf16_to_fp32 gives it (NaNs aside).
TEST_CASE("dot_bf16: every bf16 value is widened as bf16_to_fp32 widens it") {
    const int n = 45;  // the 32-wide loop, then 8-wide (AVX2) or 4-wide (NEON) steps, then a scalar tail
    std::vector<uint16_t> w(n, 0);
    const std::vector<float> x(n, 1.0f);
    int differ = 0;
    for (uint32_t v = 0; v < 65536; v++) {
        const float want = bf16_to_fp32(uint16_t(v));
        if (std::isnan(want)) continue;
        w[v % n] = uint16_t(v);
        const float got = dot_bf16(w.data(), x.data(), n);
        w[v % n] = 0;
        differ += std::memcmp(&want, &got, 4) != 0 && !(want == 0.0f && got == 0.0f);  // -0 + 0 is +0
    }
    CHECK(differ == 0);
}

TEST_CASE("matmul_f32_rows / matmul_f16_rows / matmul_bf16_rows: the tiled version equals the scalar twin, on ragged tiles") {
    for (int rows : {1, 2, 3, 4, 7, 31}) {
        for (int cols : {1, 7, 8, 9, 64, 172}) {
            for (int tokens : {1, 2, 3, 4, 5, 6, 7, 8, 9, 67}) {
                std::vector<float> w = random_floats(rows * cols, rows + cols), x = random_floats(tokens * cols, tokens);
                std::vector<uint16_t> h(w.size()), hb(w.size());
                for (size_t i = 0; i < w.size(); i++) h[i] = fp32_to_fp16(w[i]), hb[i] = fp32_to_bf16(w[i]);
                // out_stride > rows and r0 > 0: only [r0, rows) x tokens may be written.
                const int stride = rows + 5, r0 = rows > 1 ? 1 : 0;
                std::vector<float> a32(size_t(stride) * tokens, -7.0f), b32 = a32, a16 = a32, b16 = a32, abf = a32, bbf = a32;
                const size_t xrb = sizeof(float) * size_t(cols);
                matmul_f32_rows_scalar(w.data(), xrb, x.data(), xrb, cols, tokens, a32.data(), stride, r0, rows);
                pick_kernel(KernelOp::matmul, TYPE_F32, Layout::rows, tokens)
                    ->matmul(w.data(), xrb, x.data(), xrb, cols, tokens, b32.data(), stride, r0, rows);
                matmul_f16_rows_scalar(h.data(), 2 * size_t(cols), x.data(), xrb, cols, tokens, a16.data(), stride, r0, rows);
                pick_kernel(KernelOp::matmul, TYPE_F16, Layout::rows, tokens)
                    ->matmul(h.data(), 2 * size_t(cols), x.data(), xrb, cols, tokens, b16.data(), stride, r0, rows);
                matmul_bf16_rows_scalar(hb.data(), 2 * size_t(cols), x.data(), xrb, cols, tokens, abf.data(), stride, r0, rows);
                pick_kernel(KernelOp::matmul, TYPE_BF16, Layout::rows, tokens)
                    ->matmul(hb.data(), 2 * size_t(cols), x.data(), xrb, cols, tokens, bbf.data(), stride, r0, rows);
                for (int t = 0; t < tokens; t++)
                    for (int r = 0; r < stride; r++) {
                        const size_t i = size_t(t) * stride + r;
                        INFO(rows << "x" << cols << ", " << tokens << " tokens, row " << r << " token " << t);
                        if (r < r0 || r >= rows) {
                            CHECK(b32[i] == -7.0f);
                            CHECK(b16[i] == -7.0f);
                            CHECK(bbf[i] == -7.0f);
                            continue;
                        }
                        double mag = 0;
                        for (int c = 0; c < cols; c++) mag += std::fabs(double(w[r * cols + c]) * x[t * cols + c]);
                        CHECK(std::fabs(a32[i] - b32[i]) <= 1e-6 * mag * 8 + 1e-30);
                        CHECK(std::fabs(a16[i] - b16[i]) <= 1e-6 * mag * 8 + 1e-30);
                        CHECK(std::fabs(abf[i] - bbf[i]) <= 1e-6 * mag * 8 + 1e-30);
                    }
            }
        }
    }
}

TEST_CASE("softmax_f32: the vectorised exp agrees with libm's to a few ulp, sums to 1") {
    for (int n : {1, 7, 8, 9, 64, 513}) {
        std::vector<float> x = random_floats(n, n);
        for (float& v : x) v *= 8.0f;  // spread: some exps underflow towards 0
        if (n > 3) x[2] = -200.0f;     // far below the max: exp is 0 in float
        std::vector<float> a = x, b = x;
        softmax_f32_scalar(a.data(), n);
        softmax_f32(b.data(), n);
        double total = 0;
        for (int i = 0; i < n; i++) {
            INFO("n " << n << ", i " << i << ": " << a[i] << " vs " << b[i]);
            CHECK(std::fabs(a[i] - b[i]) <= 4e-7 * a[i] + 1e-37);
            total += b[i];
        }
        CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
    }
}
