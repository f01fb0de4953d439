// Tests for kernels/q4_kx8: the row-interleaved Q4_K layout (repack both ways, checked byte by
// byte against the layout kernels/q4_kx8.h documents) and, where built (AVX2), its matmul kernel
// against the scalar Q4_K kernel on the same weights in the plain layout.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../kernels/fp16.h"
#include "../kernels/q4_kx8.h"
#include "../kernels/quant.h"
#include "../kernels/rows_x8.h"
#include "kernel_test_data_k.h"

namespace {

using kernel_test::Bytes;

// rows x cols of Q4_K with every byte random: fp16 d and dmin random bit patterns (finite: an
// all-ones exponent loses its top bit), any scale and quant bytes.
Bytes random_q4_k_bytes(int rows, int cols, uint32_t seed) {
    std::mt19937 rng(seed);
    Bytes bytes(type_row_bytes(TYPE_Q4_K, cols) * size_t(rows));
    for (uint8_t& v : bytes) v = uint8_t(rng());
    block_q4_K* b = reinterpret_cast<block_q4_K*>(bytes.data());
    for (size_t i = 0; i < size_t(rows) * size_t(cols / QK_K); i++)
        for (uint16_t* h : {&b[i].d, &b[i].dmin})
            if ((*h & 0x7C00) == 0x7C00) *h &= 0xBFFF;
    return bytes;
}

}  // namespace

TEST_CASE("q4_Kx8 repack: each byte lands where the layout says, and repacking back restores the matrix") {
    for (int rows : {1, 7, 8, 9, 16, 23}) {
        for (int cols : {256, 512, 768}) {
            CAPTURE(rows);
            CAPTURE(cols);
            const Bytes plain = random_q4_k_bytes(rows, cols, uint32_t(rows * 1000 + cols));
            Bytes x8(plain.size(), 0xAA), back(plain.size(), 0x55);
            repack_rows_to_x8(TYPE_Q4_K, plain.data(), x8.data(), rows, cols);
            const int nb = cols / QK_K;
            const size_t rb = type_row_bytes(TYPE_Q4_K, cols);
            int misplaced = 0;
            for (int r = 0; r < rows; r++) {
                const int g = r / 8, i = r % 8;
                for (int b = 0; b < nb; b++) {
                    const uint8_t* blk = plain.data() + size_t(r) * rb + size_t(b) * 144;  // d, dmin, scales[12], qs[128]
                    if (g < rows / 8) {
                        // Record b of group g (kernels/q4_kx8.h), every byte on its own.
                        const uint8_t* rec = x8.data() + size_t(g) * 8 * rb + size_t(b) * 1152;
                        for (int m = 0; m < 2; m++) {
                            misplaced += rec[2 * i + m] != blk[m];         // d
                            misplaced += rec[16 + 2 * i + m] != blk[2 + m];  // dmin
                        }
                        for (int s = 0; s < 12; s++) misplaced += rec[32 + 32 * (s / 4) + 4 * i + s % 4] != blk[4 + s];
                        for (int j = 0; j < 128; j++) {
                            const int c = j / 32, k = (j % 32) / 4, m = j % 4;
                            misplaced += rec[128 + 256 * c + 32 * k + 4 * i + m] != blk[16 + j];
                        }
                    } else {
                        misplaced += std::memcmp(x8.data() + size_t(r) * rb + size_t(b) * 144, blk, 144) != 0;  // the tail stays plain
                    }
                }
            }
            CHECK(misplaced == 0);
            repack_x8_to_rows(TYPE_Q4_K, x8.data(), back.data(), rows, cols);
            CHECK(back == plain);
        }
    }
}

TEST_CASE("q4_Kx8 kernels: built exactly on AVX2") {
#if defined(HEARTH_QUANT_AVX2)
    CHECK((x8_type_for(TYPE_Q4_K) == TYPE_Q4_K_X8));
#else
    CHECK(!(x8_type_for(TYPE_Q4_K) == TYPE_Q4_K_X8));  // no TYPE_Q4_K_X8 kernels here: Q4_K stays plain
#endif
}

#if defined(HEARTH_QUANT_AVX2)
using kernel_test::magnitude_k;
using kernel_test::random_acts_k;
using kernel_test::random_weights_k;

// Tolerance: both kernels compute each super-block's integer sums exactly (the int16 / int32
// bounds are in kernels/q4_kx8_avx2.cpp) and differ only in float operations: a few roundings
// per super-block (int -> float above 2^24, d * d_a, the two FMAs or product and subtraction)
// and the order of the running sum, each at most 2^-24 of the magnitude of the terms. So the
// difference is within a small multiple of (nsb + 4) * 2^-24 * magnitude; 1e-6 * (nsb + 4) *
// magnitude (the bound tests/test_gemm_kernels.cpp uses for the Q4_K GEMM) leaves a margin of
// about 4. A relative bound on |ref| would not do: with rows of 0xFF bytes the d and dmin terms
// nearly cancel, and ref can be far smaller than the rounding of its terms.
TEST_CASE("q4_Kx8 matmul: equals the scalar Q4_K kernel on the plain layout") {
    // Rows: one group, a group and a tail, several groups with and without a tail, and a
    // generation-sized matrix (2999 rows: a tail of 7).
    for (int rows : {8, 13, 16, 37, 69, 2999}) {
        for (int cols : {256, 768, 2048, 2816}) {  // 2816: 11 super-blocks, more than one chunk of 8
            if (rows == 2999 && cols != 2048) continue;
            CAPTURE(rows);
            CAPTURE(cols);
            const int nsb = cols / QK_K;
            const Bytes plain = random_weights_k(TYPE_Q4_K, rows, cols, uint32_t(7 * rows + cols));
            Bytes x8(plain.size());
            repack_rows_to_x8(TYPE_Q4_K, plain.data(), x8.data(), rows, cols);
            const size_t rb = type_row_bytes(TYPE_Q4_K, cols), arb = type_row_bytes(TYPE_Q8_K, cols);
            // 1..4 tokens: one pass; 7..31: passes over chunks of the group; 32 and 70: the GEMM,
            // packing from the records (kernels/gemm_k_avx2.cpp).
            for (int n_tokens : {1, 2, 3, 7, 8, 9, 31, 32, 70}) {
                if (rows == 2999 && n_tokens > 9) continue;  // keep the scalar reference short
                CAPTURE(n_tokens);
                const Bytes a = random_acts_k(n_tokens, cols, uint32_t(100 + n_tokens + cols));
                const int os = rows + 5;
                const float sentinel = 12345.f;
                std::vector<float> ref(size_t(os) * n_tokens, sentinel), got(ref.size(), sentinel);
                matmul_q4_k_rows_scalar(plain.data(), rb, a.data(), arb, cols, n_tokens, ref.data(), os, 0, rows);
                matmul_q4_kx8_rows_avx2(x8.data(), rb, a.data(), arb, cols, n_tokens, got.data(), os, 0, rows);
                int bad = 0, touched = 0;
                for (int t = 0; t < n_tokens; t++)
                    for (int r = 0; r < os; r++) {
                        const float g = got[size_t(t) * os + r], e = ref[size_t(t) * os + r];
                        if (r >= rows) {
                            touched += g != sentinel;
                            continue;
                        }
                        const double mag = magnitude_k(TYPE_Q4_K, plain.data() + size_t(r) * rb, a.data() + size_t(t) * arb, nsb);
                        if (!(std::fabs(double(g) - double(e)) <= 1e-6 * (nsb + 4) * mag + 1e-30)) {
                            if (bad < 5) MESSAGE("t=" << t << " r=" << r << " x8=" << g << " ref=" << e);
                            ++bad;
                        }
                    }
                CHECK(bad == 0);
                CHECK(touched == 0);
            }
        }
    }
}

TEST_CASE("q4_Kx8 matmul: a range of whole groups writes those rows only") {
    const int rows = 37, cols = 2816, nsb = cols / QK_K;
    const Bytes plain = random_weights_k(TYPE_Q4_K, rows, cols, 5);
    Bytes x8(plain.size());
    repack_rows_to_x8(TYPE_Q4_K, plain.data(), x8.data(), rows, cols);
    const size_t rb = type_row_bytes(TYPE_Q4_K, cols), arb = type_row_bytes(TYPE_Q8_K, cols);
    for (int n_tokens : {1, 5, 40}) {  // one pass, two passes, the GEMM
        CAPTURE(n_tokens);
        const Bytes a = random_acts_k(n_tokens, cols, 11);
        std::vector<float> ref(size_t(n_tokens) * rows), got(ref.size(), -7.f);
        matmul_q4_k_rows_scalar(plain.data(), rb, a.data(), arb, cols, n_tokens, ref.data(), rows, 0, rows);
        // rows 8..23 (two groups), then 32..36 (the plain tail)
        matmul_q4_kx8_rows_avx2(x8.data(), rb, a.data(), arb, cols, n_tokens, got.data(), rows, 8, 24);
        matmul_q4_kx8_rows_avx2(x8.data(), rb, a.data(), arb, cols, n_tokens, got.data(), rows, 32, 37);
        int bad = 0;
        for (int t = 0; t < n_tokens; t++)
            for (int r = 0; r < rows; r++) {
                const float g = got[size_t(t) * rows + r], e = ref[size_t(t) * rows + r];
                const bool written = (r >= 8 && r < 24) || r >= 32;
                const double tol = 1e-6 * (nsb + 4) * magnitude_k(TYPE_Q4_K, plain.data() + size_t(r) * rb, a.data() + size_t(t) * arb, nsb);
                if (written ? !(std::fabs(double(g) - double(e)) <= tol + 1e-30) : g != -7.f) ++bad;
            }
        CHECK(bad == 0);
    }
}
#endif
