// Tests for kernels/x86/gemm_avx2.cpp and gemm_k_avx2.cpp (Q4_0 / Q8_0 weights x Q8_0 activations, and Q4_K / Q6_K weights x
// Q8_K activations, row-interleaved GEMM) against the scalar matmul kernels on random data. On targets without AVX2 the GEMM is not
// built and only a trivial case runs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/ref/ref.h"
#include "kernels/x86/x86.h"
#include "kernels/quant.h"
#include "tests/kernels/kernel_test_data.h"

using namespace hearth;

#if defined(HEARTH_ISA_AVX2)

namespace {

using kernel_test::Bytes;
using kernel_test::magnitude_k;
using kernel_test::random_acts_k;
using kernel_test::random_weights_k;

// Random weight rows: random quant bytes (full code range) with random fp16 scales, or
// quantized gaussian data.
Bytes random_weights(TensorType t, int rows, int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> ud(-0.05f, 0.05f);
    std::normal_distribution<float> nd(0.f, 0.02f);
    const size_t rb = type_row_bytes(t, n), bb = type_block_bytes(t);
    Bytes w(rb * size_t(rows));
    std::vector<float> x(static_cast<size_t>(n));
    for (int r = 0; r < rows; ++r) {
        uint8_t* row = w.data() + size_t(r) * rb;
        if (r % 2 == 0) {
            for (size_t i = 0; i < rb; ++i) row[i] = uint8_t(byte(rng));
            for (size_t off = 0; off < rb; off += bb) {
                const uint16_t h = fp32_to_fp16(ud(rng));
                std::memcpy(row + off, &h, 2);
            }
        } else {
            for (auto& v : x) v = nd(rng);
            if (t == TYPE_Q4_0)
                quantize_row_q4_0(x.data(), row, n);
            else
                quantize_row_q8_0_scalar(x.data(), row, n);
        }
    }
    return w;
}

// Activations: quantized gaussian rows with outliers; every third row has extreme values in
// every block (quants at +-127, the int16 bounds of the kernels).
Bytes random_acts(int tokens, int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    const size_t rb = type_row_bytes(TYPE_Q8_0, n);
    Bytes a(rb * size_t(tokens));
    std::vector<float> x(static_cast<size_t>(n));
    for (int t = 0; t < tokens; ++t) {
        for (int i = 0; i < n; ++i) {
            x[size_t(i)] = nd(rng);
            if (ud(rng) < 0.01f) x[size_t(i)] *= 20.f;
            if (t % 3 == 2) x[size_t(i)] = (i % 7 == 3) ? -1.f : 1.f;
        }
        quantize_row_q8_0_scalar(x.data(), a.data() + size_t(t) * rb, n);
    }
    return a;
}

// sum over blocks of |d_w * d_a| * sum |q_w - offset| * |q_a|: bounds every partial sum.
double magnitude(TensorType t, const uint8_t* w, const uint8_t* a, int nb) {
    double m = 0;
    for (int b = 0; b < nb; ++b) {
        const block_q8_0& ab = reinterpret_cast<const block_q8_0*>(a)[b];
        double s = 0;
        if (t == TYPE_Q4_0) {
            const block_q4_0& wb = reinterpret_cast<const block_q4_0*>(w)[b];
            for (int j = 0; j < 16; ++j)
                s += std::abs((wb.qs[j] & 15) - 8) * std::abs(int(ab.qs[j])) +
                     std::abs((wb.qs[j] >> 4) - 8) * std::abs(int(ab.qs[j + 16]));
            m += std::fabs(double(fp16_to_fp32(wb.d)) * fp16_to_fp32(ab.d)) * s;
        } else {
            const block_q8_0& wb = reinterpret_cast<const block_q8_0*>(w)[b];
            for (int j = 0; j < 32; ++j) s += std::abs(int(wb.qs[j])) * std::abs(int(ab.qs[j]));
            m += std::fabs(double(fp16_to_fp32(wb.d)) * fp16_to_fp32(ab.d)) * s;
        }
    }
    return m;
}

struct GemmCase {
    TensorType w;
    matmul_rows_fn gemm, scalar;
};

// ---- K types: Q4_K / Q6_K weights x Q8_K activations ----

}  // namespace

TEST_CASE("GEMM (AVX2) equals the scalar matmul: tokens, rows, blocks, row ranges") {
    const GemmCase cases[] = {{TYPE_Q4_0, matmul_q4_0_gemm_avx2, matmul_q4_0_rows_scalar},
                              {TYPE_Q8_0, matmul_q8_0_gemm_avx2, matmul_q8_0_rows_scalar}};
    for (const GemmCase& gc : cases) {
        for (int nblk : {1, 3, 64, 70}) {
            const int n = nblk * 32;
            const size_t wrb = type_row_bytes(gc.w, n), arb = type_row_bytes(TYPE_Q8_0, n);
            for (int rows : {1, 7, 8, 9, 17, 33}) {
                const int r0 = rows == 1 ? 0 : 2, r1 = r0 + rows;  // rows [r0, r1) of r1 + 3 rows
                const int total_rows = r1 + 3;
                const Bytes W = random_weights(gc.w, total_rows, n, 1000 + nblk * 64 + rows);
                for (int nt : {1, 4, 5, 8, 9, 17, 64, 67}) {
                    if (nblk == 70 && nt > 9) continue;  // keep the run short
                    CAPTURE(std::string(type_name(gc.w)));
                    CAPTURE(nblk);
                    CAPTURE(rows);
                    CAPTURE(nt);
                    const Bytes A = random_acts(nt, n, 2000 + nt);
                    const int os = total_rows + 5;
                    const float sentinel = 12345.f;
                    std::vector<float> out(size_t(os) * nt + 7, sentinel), ref(size_t(os) * nt + 7, sentinel);
                    gc.gemm(W.data(), wrb, A.data(), arb, n, nt, out.data(), os, r0, r1);
                    gc.scalar(W.data(), wrb, A.data(), arb, n, nt, ref.data(), os, r0, r1);
                    int bad = 0, touched = 0;
                    for (size_t i = 0; i < out.size(); ++i) {
                        const int t = int(i / size_t(os)), r = int(i % size_t(os));
                        if (t >= nt || r < r0 || r >= r1) {
                            if (std::memcmp(&out[i], &sentinel, 4) != 0) ++touched;
                            continue;
                        }
                        // Integer block sums are exact; only the float summation order differs:
                        // bound by a few ulps of the magnitude of the terms per block.
                        const double mag = magnitude(gc.w, W.data() + size_t(r) * wrb, A.data() + size_t(t) * arb, nblk);
                        const double tol = 1e-6 * (nblk + 4) * mag + 1e-30;
                        if (!(std::fabs(double(out[i]) - double(ref[i])) <= tol)) {
                            if (bad < 5) MESSAGE("t=" << t << " r=" << r << " gemm=" << out[i] << " ref=" << ref[i]);
                            ++bad;
                        }
                    }
                    CHECK(bad == 0);
                    CHECK(touched == 0);
                }
            }
        }
    }
}

TEST_CASE("GEMM (AVX2): a wrong result is detected (sanity of the comparison)") {
    // One weight row, one block of all-ones nibbles (value 15-8 = 7), activation all 1s:
    // exact value 32 * 7 * d_w * d_a.
    block_q4_0 w;
    w.d = fp32_to_fp16(0.5f);
    std::memset(w.qs, 0xFF, sizeof w.qs);
    std::vector<block_q8_0> a(4);
    for (auto& b : a) {
        b.d = fp32_to_fp16(0.25f);
        std::memset(b.qs, 1, sizeof b.qs);
    }
    std::vector<float> out(4, 0.f);
    matmul_q4_0_gemm_avx2(&w, sizeof w, a.data(), sizeof(block_q8_0), 32, 4, out.data(), 1, 0, 1);
    for (float v : out) CHECK(v == 32 * 7 * 0.5f * 0.25f);
}

TEST_CASE(
    "GEMM (AVX2, and AVX-512 zmm for Q6_K's panel) for Q4_K / Q6_K / Q3_K / Q2_K equals the scalar matmul: tokens, rows, super-blocks, "
    "row ranges") {
    const GemmCase cases[] = {
        {TYPE_Q4_K, matmul_q4_k_gemm_avx2, matmul_q4_k_rows_scalar},
        {TYPE_Q6_K, matmul_q6_k_gemm_avx2, matmul_q6_k_rows_scalar},
        {TYPE_Q3_K, matmul_q3_k_gemm_avx2, matmul_q3_k_rows_scalar},  // Q6_K's panel
        {TYPE_Q2_K, matmul_q2_k_gemm_avx2, matmul_q2_k_rows_scalar},  // Q6_K's panel with the mins
#if defined(HEARTH_ISA_AVX512)
        // zmm tiles (kernels/x86/gemm_avx512.cpp): panels of 16 rows, tiles of 8
        // tokens, token blocks of 128, chunks of 4 super-blocks
        {TYPE_Q6_K, matmul_q6_k_gemm_avx512, matmul_q6_k_rows_scalar},
        {TYPE_Q3_K, matmul_q3_k_gemm_avx512, matmul_q3_k_rows_scalar},
        {TYPE_Q2_K, matmul_q2_k_gemm_avx512, matmul_q2_k_rows_scalar},
#endif
    };
    struct Range {
        int r0, r1;
    };
    for (const GemmCase& gc : cases) {
        for (int n : {256, 2048, 2816}) {  // 1, 8 (one packed chunk) and 11 super-blocks
            const int nsb = n / QK_K;
            const size_t wrb = type_row_bytes(gc.w, n), arb = type_row_bytes(TYPE_Q8_K, n);
            for (Range rg : {Range{3, 21}, Range{5, 6}, Range{0, 8}, Range{0, 33}}) {
                const int total_rows = rg.r1 + 3;
                const Bytes W = random_weights_k(gc.w, total_rows, n, 3000 + n + rg.r0 * 100 + rg.r1);
                for (int nt : {1, 3, 4, 5, 9, 17, 64, 70, 130}) {  // 70, 130: past the blocks of 64 (ymm), 128 (zmm) tokens
                    if (nt == 130 && n > 256) continue;            // keep the run short
                    CAPTURE(std::string(type_name(gc.w)));
                    CAPTURE(n);
                    CAPTURE(rg.r0);
                    CAPTURE(rg.r1);
                    CAPTURE(nt);
                    const Bytes A = random_acts_k(nt, n, 4000 + nt + n);
                    const int os = total_rows + 5;
                    const float sentinel = 12345.f;
                    std::vector<float> out(size_t(os) * nt + 7, sentinel), ref(size_t(os) * nt + 7, sentinel);
                    gc.gemm(W.data(), wrb, A.data(), arb, n, nt, out.data(), os, rg.r0, rg.r1);
                    gc.scalar(W.data(), wrb, A.data(), arb, n, nt, ref.data(), os, rg.r0, rg.r1);
                    int bad = 0, touched = 0;
                    for (size_t i = 0; i < out.size(); ++i) {
                        const int t = int(i / size_t(os)), r = int(i % size_t(os));
                        if (t >= nt || r < rg.r0 || r >= rg.r1) {
                            if (std::memcmp(&out[i], &sentinel, 4) != 0) ++touched;
                            continue;
                        }
                        // Integer super-block sums are exact; only the float operations differ.
                        const double mag = magnitude_k(gc.w, W.data() + size_t(r) * wrb, A.data() + size_t(t) * arb, nsb);
                        const double tol = 1e-6 * (nsb + 4) * mag + 1e-30;
                        if (!(std::fabs(double(out[i]) - double(ref[i])) <= tol)) {
                            if (bad < 5) MESSAGE("t=" << t << " r=" << r << " gemm=" << out[i] << " ref=" << ref[i]);
                            ++bad;
                        }
                    }
                    CHECK(bad == 0);
                    CHECK(touched == 0);
                }
            }
        }
    }
}

TEST_CASE("GEMM (AVX2) for Q4_K / Q6_K: exact values of constant blocks") {
    // Activations all 1 with d = 1 (bsums 16), 4 tokens.
    std::vector<block_q8_K> a(4);
    for (auto& b : a) {
        b.d = 1.f;
        std::memset(b.qs, 1, sizeof b.qs);
        for (auto& s : b.bsums) s = 16;
    }
    std::vector<float> out(4, 0.f);
    // Q4_K: q = 15, scales and mins 1, d = 0.5, dmin = 0.25: 256 * (0.5*15 - 0.25) = 1856.
    block_q4_K w4;
    w4.d = fp32_to_fp16(0.5f);
    w4.dmin = fp32_to_fp16(0.25f);
    const uint8_t scales[12] = {1, 1, 1, 1, 1, 1, 1, 1, 0x11, 0x11, 0x11, 0x11};
    std::memcpy(w4.scales, scales, 12);
    std::memset(w4.qs, 0xFF, sizeof w4.qs);
    matmul_q4_k_gemm_avx2(&w4, sizeof w4, a.data(), sizeof(block_q8_K), QK_K, 4, out.data(), 1, 0, 1);
    for (float v : out) CHECK(v == 1856.f);
    // Q6_K: q = 0 (value -32), scales -2, d = 0.5: 256 * 0.5 * -2 * -32 = 8192.
    block_q6_K w6;
    std::memset(&w6, 0, sizeof w6);
    std::memset(w6.scales, 0xFE, sizeof w6.scales);
    w6.d = fp32_to_fp16(0.5f);
    matmul_q6_k_gemm_avx2(&w6, sizeof w6, a.data(), sizeof(block_q8_K), QK_K, 4, out.data(), 1, 0, 1);
    for (float v : out) CHECK(v == 8192.f);
}

#else

TEST_CASE("GEMM kernels: not built on this target") { CHECK(true); }

#endif
