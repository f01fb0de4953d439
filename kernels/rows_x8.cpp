#include "kernels/rows_x8.h"

#include <cstring>

#include "kernels/q4_kx8.h"
#include "kernels/quant_types.h"

namespace {

// Q4_0 / Q8_0: one group of 8 rows of Block (nb blocks each) between the two layouts.
template <typename Block>
void group_to_x8(const uint8_t* src, uint8_t* dst, int64_t nb) {
    static_assert(sizeof(Block) == 2 + sizeof(Block::qs) && sizeof(Block::qs) % 4 == 0, "an fp16 scale, then the quants");
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

// Q4_K (kernels/q4_kx8.h): records of 1152 bytes, super-block b of 8 rows.
constexpr size_t kQ4kRecordBytes = 8 * sizeof(block_q4_K);
constexpr size_t kDOffset = 0, kDminOffset = 16, kScalesOffset = 32, kQsOffset = 128;
static_assert(kQsOffset + 4 * 8 * 32 == kQ4kRecordBytes, "one record: d, dmin, 3 x 32 scale bytes, 1024 quant bytes");

// Byte offsets inside a Q4_K record (q4_kx8.h): scale byte s (0..11) of row i, and qs[j] of row i.
inline size_t scale_offset(int i, int s) { return kScalesOffset + 32 * size_t(s / 4) + 4 * size_t(i) + size_t(s % 4); }
inline size_t qs_offset(int i, int j) { return kQsOffset + 32 * size_t(j / 4) + 4 * size_t(i) + size_t(j % 4); }

// One group of 8 rows (nb super-blocks each) between the two layouts. The unit of the
// scatter is 4 bytes: every 4-byte piece of a row keeps its place in a 32-bit lane.
void q4_k_group_to_x8(const uint8_t* src, uint8_t* dst, int64_t nb) {
    const block_q4_K* rows = reinterpret_cast<const block_q4_K*>(src);
    for (int64_t b = 0; b < nb; ++b) {
        uint8_t* rec = dst + size_t(b) * kQ4kRecordBytes;
        for (int i = 0; i < 8; ++i) {
            const block_q4_K& blk = rows[size_t(i) * nb + b];
            std::memcpy(rec + kDOffset + 2 * i, &blk.d, 2);
            std::memcpy(rec + kDminOffset + 2 * i, &blk.dmin, 2);
            for (int s = 0; s < 12; s += 4) std::memcpy(rec + scale_offset(i, s), blk.scales + s, 4);
            for (int j = 0; j < QK_K / 2; j += 4) std::memcpy(rec + qs_offset(i, j), blk.qs + j, 4);
        }
    }
}

void q4_k_group_from_x8(const uint8_t* src, uint8_t* dst, int64_t nb) {
    block_q4_K* rows = reinterpret_cast<block_q4_K*>(dst);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* rec = src + size_t(b) * kQ4kRecordBytes;
        for (int i = 0; i < 8; ++i) {
            block_q4_K& blk = rows[size_t(i) * nb + b];
            std::memcpy(&blk.d, rec + kDOffset + 2 * i, 2);
            std::memcpy(&blk.dmin, rec + kDminOffset + 2 * i, 2);
            for (int s = 0; s < 12; s += 4) std::memcpy(blk.scales + s, rec + scale_offset(i, s), 4);
            for (int j = 0; j < QK_K / 2; j += 4) std::memcpy(blk.qs + j, rec + qs_offset(i, j), 4);
        }
    }
}

// Whole groups converted with kGroup (one group of 8 rows of nb blocks of Block), the rows % 8
// tail copied as it is.
template <typename Block, int kBlockElems, void (*kGroup)(const uint8_t*, uint8_t*, int64_t)>
void convert(const void* src, void* dst, int64_t rows, int64_t cols) {
    const int64_t nb = cols / kBlockElems, groups = rows / 8;
    const size_t group_bytes = size_t(nb) * 8 * sizeof(Block);
    const auto* s = static_cast<const uint8_t*>(src);
    auto* d = static_cast<uint8_t*>(dst);
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < groups; ++g) kGroup(s + size_t(g) * group_bytes, d + size_t(g) * group_bytes, nb);
    const size_t done = size_t(groups) * group_bytes;
    std::memcpy(d + done, s + done, size_t(rows % 8) * size_t(nb) * sizeof(Block));
}

}  // namespace

Layout kernel_layout(uint32_t type) { return x8_type_for(type) ? Layout::rows_x8 : Layout::rows; }

uint32_t x8_type_for(uint32_t type) {
    switch (type) {
        case TYPE_Q4_0: return TYPE_Q4_0_X8;
        case TYPE_Q8_0: return TYPE_Q8_0_X8;
        case TYPE_Q4_K: return TYPE_Q4_K_X8;
        default: return 0;
    }
}

matmul_rows_fn x8_matmul_kernel(uint32_t type) {
    switch (type) {
        case TYPE_Q4_0_X8: return HEARTH_QSEL(matmul_q4_0x8_rows);
        case TYPE_Q8_0_X8: return HEARTH_QSEL(matmul_q8_0x8_rows);
        case TYPE_Q4_K_X8: return HEARTH_QSEL(matmul_q4_kx8_rows);
        default: return nullptr;
    }
}

void repack_rows_to_x8(uint32_t type, const void* src, void* dst, int64_t rows, int64_t cols) {
    switch (type) {
        case TYPE_Q4_0: convert<block_q4_0, QK4_0, group_to_x8<block_q4_0>>(src, dst, rows, cols); break;
        case TYPE_Q8_0: convert<block_q8_0, QK8_0, group_to_x8<block_q8_0>>(src, dst, rows, cols); break;
        case TYPE_Q4_K: convert<block_q4_K, QK_K, q4_k_group_to_x8>(src, dst, rows, cols); break;
    }
}

void repack_x8_to_rows(uint32_t type, const void* src, void* dst, int64_t rows, int64_t cols) {
    switch (type) {
        case TYPE_Q4_0: convert<block_q4_0, QK4_0, group_from_x8<block_q4_0>>(src, dst, rows, cols); break;
        case TYPE_Q8_0: convert<block_q8_0, QK8_0, group_from_x8<block_q8_0>>(src, dst, rows, cols); break;
        case TYPE_Q4_K: convert<block_q4_K, QK_K, q4_k_group_from_x8>(src, dst, rows, cols); break;
    }
}

// A record is a group of one block per row.
void dequantize_x8_row(uint32_t type, const void* w, int64_t rows, int64_t cols, int64_t row, float* out) {
    const uint32_t plain = type_plain(type);  // the plain type, or (still accepted) the internal x8 id
    const QuantKernels* k = quant_kernels(plain);
    const size_t row_bytes = type_row_bytes(plain, cols), block = type_block_bytes(plain);
    const auto* base = static_cast<const uint8_t*>(w);
    if (row >= rows / 8 * 8) {  // the rows after the last whole group are plain
        k->dequantize(base + size_t(row) * row_bytes, out, cols);
        return;
    }
    // Block b of the row is one of the 8 a record of its group holds.
    const int64_t nb = cols / type_block_size(plain), group = row / 8, i = row % 8;
    const uint8_t* records = base + size_t(group) * 8 * row_bytes;
    uint8_t blocks[8 * sizeof(block_q4_K)];
    for (int64_t b = 0; b < nb; b++) {
        x8_record_to_blocks(plain, records + size_t(b) * 8 * block, blocks);
        k->dequantize(blocks + size_t(i) * block, out + b * type_block_size(plain), type_block_size(plain));
    }
}

void x8_record_to_blocks(uint32_t type, const void* rec, void* blocks) {
    const auto* s = static_cast<const uint8_t*>(rec);
    auto* d = static_cast<uint8_t*>(blocks);
    switch (type) {
        case TYPE_Q4_0: group_from_x8<block_q4_0>(s, d, 1); break;
        case TYPE_Q8_0: group_from_x8<block_q8_0>(s, d, 1); break;
        case TYPE_Q4_K: q4_k_group_from_x8(s, d, 1); break;
    }
}
