// Tests for kernels/q4_0x8: the row-interleaved Q4_0 layout (repack both ways, checked byte by
// byte against the layout docs/format.md gives) and, where built (AVX2), its matmul kernels
// against the scalar Q4_0 kernel on the same weights in the plain layout.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../kernels/fp16.h"
#include "../kernels/matmul.h"
#include "../kernels/q4_0x8.h"
#include "../kernels/quant.h"

namespace {

// rows x cols of Q4_0: random codes and random finite fp16 scales (every byte pattern of qs).
std::vector<uint8_t> random_q4_0(int rows, int cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
    std::vector<uint8_t> bytes(type_row_bytes(TYPE_Q4_0, cols) * rows);
    block_q4_0* b = reinterpret_cast<block_q4_0*>(bytes.data());
    for (size_t i = 0; i < size_t(rows) * (cols / 32); i++) {
        b[i].d = fp32_to_fp16(scale(rng));
        for (uint8_t& q : b[i].qs) q = uint8_t(rng());
    }
    return bytes;
}

}  // namespace

TEST_CASE("q4_0x8 repack: each byte lands where the layout says, and repacking back restores the matrix") {
    for (int rows : {1, 7, 8, 9, 16, 23, 64}) {
        for (int cols : {32, 96, 256}) {
            CAPTURE(rows);
            CAPTURE(cols);
            const std::vector<uint8_t> plain = random_q4_0(rows, cols, uint32_t(rows * 1000 + cols));
            std::vector<uint8_t> x8(plain.size(), 0xAA), back(plain.size(), 0x55);
            repack_q4_0_to_x8(plain.data(), x8.data(), rows, cols);
            const int nb = cols / 32;
            const size_t rb = type_row_bytes(TYPE_Q4_0, cols);
            const block_q4_0* src = reinterpret_cast<const block_q4_0*>(plain.data());
            int misplaced = 0;
            for (int r = 0; r < rows; r++) {
                const int g = r / 8, i = r % 8;
                for (int b = 0; b < nb; b++) {
                    const block_q4_0& blk = src[size_t(r) * nb + b];
                    if (g < rows / 8) {
                        // record b of group g: 8 scales, then chunk k holds qs[4k..4k+3] of row i at 4i
                        const uint8_t* rec = x8.data() + size_t(g) * 8 * rb + size_t(b) * 144;
                        misplaced += std::memcmp(rec + 2 * i, &blk.d, 2) != 0;
                        for (int k = 0; k < 4; k++) misplaced += std::memcmp(rec + 16 + 32 * k + 4 * i, blk.qs + 4 * k, 4) != 0;
                    } else {
                        misplaced += std::memcmp(x8.data() + size_t(r) * rb + size_t(b) * 18, &blk, 18) != 0;  // the tail stays plain
                    }
                }
            }
            CHECK(misplaced == 0);
            repack_x8_to_q4_0(x8.data(), back.data(), rows, cols);
            CHECK(back == plain);
        }
    }
}

TEST_CASE("q4_0x8 matmul: equals the scalar Q4_0 kernel on the plain layout") {
    if (!q4_0x8_kernels_built()) {
        // No TYPE_Q4_0_X8 kernels in this build (not AVX2): the loader keeps Q4_0 plain here.
        CHECK(!matmul_supports(TYPE_Q4_0_X8));
        return;
    }
    CHECK(matmul_supports(TYPE_Q4_0_X8));
    // Rows: one group, a group and a tail, several groups with and without a tail, and enough
    // rows for matmul_many to cut single-token work into several pieces (5005 rows of 1152 bytes).
    for (int rows : {8, 13, 16, 37, 69, 5005}) {
        for (int cols : {32, 288, 2048}) {
            if (rows == 5005 && cols != 2048) continue;
            CAPTURE(rows);
            CAPTURE(cols);
            const std::vector<uint8_t> plain = random_q4_0(rows, cols, uint32_t(7 * rows + cols));
            std::vector<uint8_t> x8(plain.size());
            repack_q4_0_to_x8(plain.data(), x8.data(), rows, cols);
            const size_t rb = type_row_bytes(TYPE_Q4_0, cols), arb = type_row_bytes(TYPE_Q8_0, cols);
            for (int n_tokens : {1, 2, 3, 4, 7, 70}) {
                if (rows == 5005 && n_tokens > 4) continue;
                CAPTURE(n_tokens);
                std::mt19937 rng{uint32_t(n_tokens)};
                std::normal_distribution<float> nd;
                std::vector<float> x(size_t(n_tokens) * cols);
                for (float& v : x) v = nd(rng);
                std::vector<uint8_t> a(arb * n_tokens);
                for (int t = 0; t < n_tokens; t++) quantize_row_q8_0_scalar(&x[size_t(t) * cols], a.data() + arb * t, cols);
                std::vector<float> ref(size_t(n_tokens) * rows), got(ref.size(), NAN);
                matmul_q4_0_rows_scalar(plain.data(), rb, a.data(), arb, cols, n_tokens, ref.data(), rows, 0, rows);
                const MatmulJob job{got.data(), TYPE_Q4_0_X8, x8.data(), rows};
                matmul_many(&job, 1, cols, x.data(), n_tokens);
                int bad = 0;
                for (size_t i = 0; i < ref.size(); i++)
                    if (!(std::fabs(got[i] - ref[i]) <= 1e-5f * (std::fabs(ref[i]) + 1.f))) ++bad;
                CHECK(bad == 0);
            }
        }
    }
}

#if defined(HEARTH_QUANT_AVX2)
TEST_CASE("q4_0x8 matmul: a range of whole groups writes those rows only") {
    const int rows = 37, cols = 64;
    const std::vector<uint8_t> plain = random_q4_0(rows, cols, 5);
    std::vector<uint8_t> x8(plain.size());
    repack_q4_0_to_x8(plain.data(), x8.data(), rows, cols);
    const size_t rb = type_row_bytes(TYPE_Q4_0, cols), arb = type_row_bytes(TYPE_Q8_0, cols);
    for (int n_tokens : {1, 5}) {
        CAPTURE(n_tokens);
        std::vector<float> x(size_t(n_tokens) * cols);
        for (size_t i = 0; i < x.size(); i++) x[i] = std::sin(0.37f * float(i));
        std::vector<uint8_t> a(arb * n_tokens);
        for (int t = 0; t < n_tokens; t++) quantize_row_q8_0_scalar(&x[size_t(t) * cols], a.data() + arb * t, cols);
        std::vector<float> ref(size_t(n_tokens) * rows), got(ref.size(), -7.f);
        matmul_q4_0_rows_scalar(plain.data(), rb, a.data(), arb, cols, n_tokens, ref.data(), rows, 0, rows);
        // rows 8..23 (two groups), then 32..36 (the plain tail)
        matmul_q4_0x8_rows_avx2(x8.data(), rb, a.data(), arb, cols, n_tokens, got.data(), rows, 8, 24);
        matmul_q4_0x8_rows_avx2(x8.data(), rb, a.data(), arb, cols, n_tokens, got.data(), rows, 32, 37);
        int bad = 0;
        for (int t = 0; t < n_tokens; t++)
            for (int r = 0; r < rows; r++) {
                const float g = got[size_t(t) * rows + r], e = ref[size_t(t) * rows + r];
                const bool written = (r >= 8 && r < 24) || r >= 32;
                if (written ? !(std::fabs(g - e) <= 1e-5f * (std::fabs(e) + 1.f)) : g != -7.f) ++bad;
            }
        CHECK(bad == 0);
    }
}
#endif
