// Tests for kernels/q4_kx8: the row-interleaved Q4_K layout, repacked both ways and checked byte
// by byte against the layout kernels/rows_x8.h documents. Its matmul kernels: test_x8_kernels.cpp.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "kernels/rows_x8.h"
#include "tests/kernels/kernel_test_data.h"

using namespace hearth;

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
                        // Record b of group g (kernels/rows_x8.h), every byte on its own.
                        const uint8_t* rec = x8.data() + size_t(g) * 8 * rb + size_t(b) * 1152;
                        for (int m = 0; m < 2; m++) {
                            misplaced += rec[2 * i + m] != blk[m];           // d
                            misplaced += rec[16 + 2 * i + m] != blk[2 + m];  // dmin
                        }
                        for (int s = 0; s < 12; s++) misplaced += rec[32 + 32 * (s / 4) + 4 * i + s % 4] != blk[4 + s];
                        for (int j = 0; j < 128; j++) {
                            const int c = j / 32, k = (j % 32) / 4, m = j % 4;
                            misplaced += rec[128 + 256 * c + 32 * k + 4 * i + m] != blk[16 + j];
                        }
                    } else {
                        misplaced +=
                            std::memcmp(x8.data() + size_t(r) * rb + size_t(b) * 144, blk, 144) != 0;  // the tail stays plain
                    }
                }
            }
            CHECK(misplaced == 0);
            repack_x8_to_rows(TYPE_Q4_K, x8.data(), back.data(), rows, cols);
            CHECK(back == plain);
        }
    }
}
