// Tests for kernels/rows_x8: Q4_0 and Q8_0 rows interleaved by 8, repacked both ways and checked
// byte by byte against the layout docs/format.md gives. Their matmul kernels: test_x8_kernels.cpp.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "kernels/rows_x8.h"

using namespace hearth;

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
                            for (int k = 0; k < qs_bytes / 4; k++)
                                misplaced += std::memcmp(rec + 16 + 32 * k + 4 * i, blk + 2 + 4 * k, 4) != 0;
                        } else {
                            misplaced +=
                                std::memcmp(x8.data() + size_t(r) * rb + size_t(b) * block, blk, block) != 0;  // tail stays plain
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
