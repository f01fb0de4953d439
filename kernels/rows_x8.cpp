#include "rows_x8.h"

#include <cstring>

#include "quant_types.h"

namespace {

// One group of 8 rows of Block (nb blocks each) between the two layouts.
template <typename Block>
void group_to_x8(const uint8_t* src, uint8_t* dst, int64_t nb) {
    constexpr int kQs = int(sizeof(Block::qs));
    const Block* rows = reinterpret_cast<const Block*>(src);
    for (int64_t b = 0; b < nb; ++b) {
        uint8_t* rec = dst + size_t(b) * 8 * sizeof(Block);
        for (int i = 0; i < 8; ++i) {
            const Block& blk = rows[size_t(i) * nb + b];
            std::memcpy(rec + 2 * i, &blk.d, 2);
            for (int k = 0; k < kQs / 4; ++k) std::memcpy(rec + 16 + 32 * k + 4 * i, blk.qs + 4 * k, 4);
        }
    }
}

template <typename Block>
void group_from_x8(const uint8_t* src, uint8_t* dst, int64_t nb) {
    constexpr int kQs = int(sizeof(Block::qs));
    Block* rows = reinterpret_cast<Block*>(dst);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* rec = src + size_t(b) * 8 * sizeof(Block);
        for (int i = 0; i < 8; ++i) {
            Block& blk = rows[size_t(i) * nb + b];
            std::memcpy(&blk.d, rec + 2 * i, 2);
            for (int k = 0; k < kQs / 4; ++k) std::memcpy(blk.qs + 4 * k, rec + 16 + 32 * k + 4 * i, 4);
        }
    }
}

// Whole groups converted, the rows % 8 tail copied as it is.
template <typename Block, bool kToX8>
void convert(const void* src, void* dst, int64_t rows, int64_t cols) {
    static_assert(sizeof(Block) == 2 + sizeof(Block::qs) && sizeof(Block::qs) % 4 == 0, "an fp16 scale, then the quants");
    const int64_t nb = cols / 32, groups = rows / 8;
    const size_t group_bytes = size_t(nb) * 8 * sizeof(Block);
    const auto* s = static_cast<const uint8_t*>(src);
    auto* d = static_cast<uint8_t*>(dst);
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < groups; ++g) {
        if (kToX8)
            group_to_x8<Block>(s + size_t(g) * group_bytes, d + size_t(g) * group_bytes, nb);
        else
            group_from_x8<Block>(s + size_t(g) * group_bytes, d + size_t(g) * group_bytes, nb);
    }
    const size_t done = size_t(groups) * group_bytes;
    std::memcpy(d + done, s + done, size_t(rows % 8) * size_t(nb) * sizeof(Block));
}

}  // namespace

uint32_t x8_type_for(uint32_t type) {
#if defined(HEARTH_QUANT_AVX2)
    if (type == TYPE_Q4_0) return TYPE_Q4_0_X8;
    if (type == TYPE_Q8_0) return TYPE_Q8_0_X8;
#endif
    (void)type;
    return 0;
}

void repack_rows_to_x8(uint32_t type, const void* src, void* dst, int64_t rows, int64_t cols) {
    if (type == TYPE_Q4_0) convert<block_q4_0, true>(src, dst, rows, cols);
    if (type == TYPE_Q8_0) convert<block_q8_0, true>(src, dst, rows, cols);
}

void repack_x8_to_rows(uint32_t type, const void* src, void* dst, int64_t rows, int64_t cols) {
    if (type == TYPE_Q4_0) convert<block_q4_0, false>(src, dst, rows, cols);
    if (type == TYPE_Q8_0) convert<block_q8_0, false>(src, dst, rows, cols);
}
