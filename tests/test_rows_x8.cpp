// Tests for kernels/rows_x8: Q4_0 and Q8_0 rows interleaved by 8 (repack both ways, checked byte
// by byte against the layout docs/format.md gives) and, where built (AVX2), their matmul kernels
// against the scalar kernels on the same weights in the plain layout.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../kernels/fp16.h"
#include "../kernels/matmul.h"
#include "../kernels/quant.h"
#include "../kernels/rows_x8.h"

namespace {

// rows x cols of Q4_0 or Q8_0: random finite fp16 scales and random quant bytes (every byte
// pattern, -128 included for Q8_0).
std::vector<uint8_t> random_matrix(uint32_t type, int rows, int cols, uint32_t seed) {
    std::mt19937 rng{seed};
    std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
    const size_t block = type_block_bytes(type);
    std::vector<uint8_t> bytes(type_row_bytes(type, cols) * rows);
    for (size_t at = 0; at < bytes.size(); at += block) {
        const uint16_t d = fp32_to_fp16(scale(rng));
        std::memcpy(&bytes[at], &d, 2);
        for (size_t i = 2; i < block; i++) bytes[at + i] = uint8_t(rng());
    }
    return bytes;
}

// The scalar kernel the interleaved one must equal.
matmul_rows_fn scalar_kernel(uint32_t type) { return type == TYPE_Q4_0 ? matmul_q4_0_rows_scalar : matmul_q8_0_rows_scalar; }

// mag[t * rows + r] = sum over the row of |w * a|: the scale of the float rounding in a dot whose
// terms cancel (random full-range quants give small sums of large terms).
std::vector<double> term_magnitudes(uint32_t type, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a, int rows,
                                    int cols, int n_tokens) {
    const size_t rb = type_row_bytes(type, cols), arb = type_row_bytes(TYPE_Q8_0, cols);
    std::vector<float> wf(size_t(rows) * cols), af(size_t(n_tokens) * cols);
    for (int r = 0; r < rows; r++)
        (type == TYPE_Q4_0 ? dequantize_row_q4_0 : dequantize_row_q8_0)(w.data() + rb * r, &wf[size_t(r) * cols], cols);
    for (int t = 0; t < n_tokens; t++) dequantize_row_q8_0(a.data() + arb * t, &af[size_t(t) * cols], cols);
    std::vector<double> mag(size_t(rows) * n_tokens, 0.0);
    for (int t = 0; t < n_tokens; t++)
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) mag[size_t(t) * rows + r] += std::fabs(double(wf[size_t(r) * cols + c]) * af[size_t(t) * cols + c]);
    return mag;
}

}  // namespace

TEST_CASE("rows_x8 repack: each byte lands where the layout says, and repacking back restores the matrix") {
    for (uint32_t type : {TYPE_Q4_0, TYPE_Q8_0}) {
        const int qs_bytes = int(type_block_bytes(type)) - 2;
        for (int rows : {1, 7, 8, 9, 16, 23, 64}) {
            for (int cols : {32, 96, 256}) {
                CAPTURE(type);
                CAPTURE(rows);
                CAPTURE(cols);
                const std::vector<uint8_t> plain = random_matrix(type, rows, cols, uint32_t(rows * 1000 + cols + type));
                std::vector<uint8_t> x8(plain.size(), 0xAA), back(plain.size(), 0x55);
                repack_rows_to_x8(type, plain.data(), x8.data(), rows, cols);
                const int nb = cols / 32;
                const size_t rb = type_row_bytes(type, cols), block = type_block_bytes(type);
                int misplaced = 0;
                for (int r = 0; r < rows; r++) {
                    const int g = r / 8, i = r % 8;
                    for (int b = 0; b < nb; b++) {
                        const uint8_t* blk = plain.data() + size_t(r) * rb + size_t(b) * block;  // d, then qs
                        if (g < rows / 8) {
                            // record b of group g: 8 scales, then chunk k holds qs[4k..4k+3] of row i at 4i
                            const uint8_t* rec = x8.data() + size_t(g) * 8 * rb + size_t(b) * 8 * block;
                            misplaced += std::memcmp(rec + 2 * i, blk, 2) != 0;
                            for (int k = 0; k < qs_bytes / 4; k++) misplaced += std::memcmp(rec + 16 + 32 * k + 4 * i, blk + 2 + 4 * k, 4) != 0;
                        } else {
                            misplaced += std::memcmp(x8.data() + size_t(r) * rb + size_t(b) * block, blk, block) != 0;  // tail stays plain
                        }
                    }
                }
                CHECK(misplaced == 0);
                repack_x8_to_rows(type, x8.data(), back.data(), rows, cols);
                CHECK(back == plain);
            }
        }
    }
}

TEST_CASE("rows_x8 matmul: equals the scalar kernels on the plain layout") {
    for (uint32_t type : {TYPE_Q4_0, TYPE_Q8_0}) {
        CAPTURE(type);
        const uint32_t x8 = x8_type_for(type);
        if (x8 == 0) {
            // No interleaved kernels in this build (not AVX2): the loader keeps the plain layout.
            CHECK(!matmul_supports(type == TYPE_Q4_0 ? TYPE_Q4_0_X8 : TYPE_Q8_0_X8));
            continue;
        }
        CHECK(matmul_supports(x8));
        // Rows: one group, a group and a tail, several groups with and without a tail, and enough
        // rows for matmul_many to cut single-token work into several pieces.
        for (int rows : {8, 13, 16, 37, 69, 3005}) {
            for (int cols : {32, 288, 2048}) {
                if (rows == 3005 && cols != 2048) continue;
                CAPTURE(rows);
                CAPTURE(cols);
                const std::vector<uint8_t> plain = random_matrix(type, rows, cols, uint32_t(7 * rows + cols));
                std::vector<uint8_t> packed(plain.size());
                repack_rows_to_x8(type, plain.data(), packed.data(), rows, cols);
                const size_t rb = type_row_bytes(type, cols), arb = type_row_bytes(TYPE_Q8_0, cols);
                for (int n_tokens : {1, 2, 3, 4, 7, 70}) {
                    if (rows == 3005 && n_tokens > 4) continue;
                    CAPTURE(n_tokens);
                    std::mt19937 rng{uint32_t(n_tokens)};
                    std::normal_distribution<float> nd;
                    std::vector<float> x(size_t(n_tokens) * cols);
                    for (float& v : x) v = nd(rng);
                    std::vector<uint8_t> a(arb * n_tokens);
                    for (int t = 0; t < n_tokens; t++) quantize_row_q8_0_scalar(&x[size_t(t) * cols], a.data() + arb * t, cols);
                    std::vector<float> ref(size_t(n_tokens) * rows), got(ref.size(), NAN);
                    scalar_kernel(type)(plain.data(), rb, a.data(), arb, cols, n_tokens, ref.data(), rows, 0, rows);
                    const MatmulJob job{got.data(), x8, packed.data(), rows};
                    matmul_many(&job, 1, cols, x.data(), n_tokens);
                    // Same integer sums per block in both; the float sums over blocks differ in order.
                    const std::vector<double> mag = term_magnitudes(type, plain, a, rows, cols, n_tokens);
                    int bad = 0;
                    for (size_t i = 0; i < ref.size(); i++)
                        if (!(std::fabs(got[i] - ref[i]) <= 2e-6 * mag[i] + 1e-7)) ++bad;
                    CHECK(bad == 0);
                }
            }
        }
    }
}

#if defined(HEARTH_QUANT_AVX2)
TEST_CASE("rows_x8 matmul: a range of whole groups writes those rows only") {
    const int rows = 37, cols = 64;
    for (uint32_t type : {TYPE_Q4_0, TYPE_Q8_0}) {
        CAPTURE(type);
        const std::vector<uint8_t> plain = random_matrix(type, rows, cols, 5);
        std::vector<uint8_t> packed(plain.size());
        repack_rows_to_x8(type, plain.data(), packed.data(), rows, cols);
        const matmul_rows_fn kernel = type == TYPE_Q4_0 ? matmul_q4_0x8_rows_avx2 : matmul_q8_0x8_rows_avx2;
        const size_t rb = type_row_bytes(type, cols), arb = type_row_bytes(TYPE_Q8_0, cols);
        for (int n_tokens : {1, 5}) {
            CAPTURE(n_tokens);
            std::vector<float> x(size_t(n_tokens) * cols);
            for (size_t i = 0; i < x.size(); i++) x[i] = std::sin(0.37f * float(i));
            std::vector<uint8_t> a(arb * n_tokens);
            for (int t = 0; t < n_tokens; t++) quantize_row_q8_0_scalar(&x[size_t(t) * cols], a.data() + arb * t, cols);
            std::vector<float> ref(size_t(n_tokens) * rows), got(ref.size(), -7.f);
            scalar_kernel(type)(plain.data(), rb, a.data(), arb, cols, n_tokens, ref.data(), rows, 0, rows);
            // rows 8..23 (two groups), then 32..36 (the plain tail)
            kernel(packed.data(), rb, a.data(), arb, cols, n_tokens, got.data(), rows, 8, 24);
            kernel(packed.data(), rb, a.data(), arb, cols, n_tokens, got.data(), rows, 32, 37);
            const std::vector<double> mag = term_magnitudes(type, plain, a, rows, cols, n_tokens);
            int bad = 0;
            for (int t = 0; t < n_tokens; t++)
                for (int r = 0; r < rows; r++) {
                    const size_t i = size_t(t) * rows + r;
                    const bool written = (r >= 8 && r < 24) || r >= 32;
                    if (written ? !(std::fabs(got[i] - ref[i]) <= 2e-6 * mag[i] + 1e-7) : got[i] != -7.f) ++bad;
                }
            CHECK(bad == 0);
        }
    }
}
#endif
