#include "kernels/rows_x8.h"

#include <cstring>

#include "kernels/table.h"

namespace hearth {

namespace {

// The shape of a type's records (kernels/rows_x8.h): its block bytes, and the bytes of the fp16
// fields at the block's start, gathered 2 at a time; the rest is gathered 4 at a time.
struct RecordShape {
    size_t block, head;
};

// The largest block with an interleaved layout (Q5_K's): the buffers below hold 8 of them.
constexpr size_t kMaxX8Block = sizeof(block_q5_K);

// Every type with an interleaved layout fits the buffers below and splits into 4-byte units after
// its head.
constexpr bool records_fit() {
    for (const TypeTraits& t : kTypeTraits)
        if (t.x8_head_bytes > 0 && (t.block_bytes > int(kMaxX8Block) || (t.block_bytes - t.x8_head_bytes) % 4 != 0)) return false;
    return true;
}
static_assert(records_fit(), "a type's records (kernels/rows_x8.h)");

RecordShape record_shape(uint32_t type) { return {type_block_bytes(type), size_t(type_traits(type)->x8_head_bytes)}; }

// One record at rec to its 8 blocks at blocks (row i's at blocks + i * block bytes), and back.
void record_to_blocks(RecordShape s, const uint8_t* rec, uint8_t* blocks) {
    for (int i = 0; i < 8; ++i) {
        uint8_t* blk = blocks + size_t(i) * s.block;
        for (size_t f = 0; f < s.head; f += 2) std::memcpy(blk + f, rec + 8 * f + 2 * size_t(i), 2);
        for (size_t u = s.head; u < s.block; u += 4) std::memcpy(blk + u, rec + 8 * u + 4 * size_t(i), 4);
    }
}

void blocks_to_record(RecordShape s, const uint8_t* blocks, uint8_t* rec) {
    for (int i = 0; i < 8; ++i) {
        const uint8_t* blk = blocks + size_t(i) * s.block;
        for (size_t f = 0; f < s.head; f += 2) std::memcpy(rec + 8 * f + 2 * size_t(i), blk + f, 2);
        for (size_t u = s.head; u < s.block; u += 4) std::memcpy(rec + 8 * u + 4 * size_t(i), blk + u, 4);
    }
}

// Whole groups of 8 rows (nb blocks each) converted a record at a time, the rows % 8 tail copied
// as it is.
template <bool kToX8>
void convert(uint32_t type, const void* src, void* dst, int64_t rows, int64_t cols) {
    const RecordShape s = record_shape(type);
    const int64_t nb = cols / type_block_size(type), groups = rows / 8;
    const size_t row_bytes = size_t(nb) * s.block, group_bytes = 8 * row_bytes;
    const auto* sp = static_cast<const uint8_t*>(src);
    auto* dp = static_cast<uint8_t*>(dst);
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < groups; ++g) {
        uint8_t blocks[8 * kMaxX8Block];
        const uint8_t* gs = sp + size_t(g) * group_bytes;
        uint8_t* gd = dp + size_t(g) * group_bytes;
        for (int64_t b = 0; b < nb; ++b) {
            const size_t rec = size_t(b) * 8 * s.block;
            if (kToX8) {
                for (int i = 0; i < 8; ++i)
                    std::memcpy(blocks + size_t(i) * s.block, gs + size_t(i) * row_bytes + size_t(b) * s.block, s.block);
                blocks_to_record(s, blocks, gd + rec);
            } else {
                record_to_blocks(s, gs + rec, blocks);
                for (int i = 0; i < 8; ++i)
                    std::memcpy(gd + size_t(i) * row_bytes + size_t(b) * s.block, blocks + size_t(i) * s.block, s.block);
            }
        }
    }
    const size_t done = size_t(groups) * group_bytes;
    std::memcpy(dp + done, sp + done, size_t(rows % 8) * row_bytes);
}

}  // namespace

Layout kernel_layout(uint32_t type) {
    int n = 0;
    const KernelRow* rows = kernel_rows(&n);
    for (int i = 0; i < n; i++)
        if (rows[i].op == KernelOp::matmul && rows[i].type == type && rows[i].layout == Layout::rows_x8) return Layout::rows_x8;
    return Layout::rows;
}

void repack_rows_to_x8(uint32_t type, const void* src, void* dst, int64_t rows, int64_t cols) {
    convert<true>(type, src, dst, rows, cols);
}

void repack_x8_to_rows(uint32_t type, const void* src, void* dst, int64_t rows, int64_t cols) {
    convert<false>(type, src, dst, rows, cols);
}

// A record is a group of one block per row.
void dequantize_x8_row(uint32_t type, const void* w, int64_t rows, int64_t cols, int64_t row, float* out) {
    const dequantize_row_fn dequantize = type_traits(type)->dequantize;
    const int block_size = type_block_size(type);
    const size_t row_bytes = type_row_bytes(type, cols), block = type_block_bytes(type);
    const auto* base = static_cast<const uint8_t*>(w);
    if (row >= rows / 8 * 8) {  // the rows after the last whole group are plain
        dequantize(base + size_t(row) * row_bytes, out, cols);
        return;
    }
    // Block b of the row is one of the 8 a record of its group holds.
    const int64_t nb = cols / block_size, group = row / 8, i = row % 8;
    const uint8_t* records = base + size_t(group) * 8 * row_bytes;
    uint8_t blocks[8 * kMaxX8Block];
    for (int64_t b = 0; b < nb; b++) {
        x8_record_to_blocks(type, records + size_t(b) * 8 * block, blocks);
        dequantize(blocks + size_t(i) * block, out + b * block_size, block_size);
    }
}

void x8_record_to_blocks(uint32_t type, const void* rec, void* blocks) {
    record_to_blocks(record_shape(type), static_cast<const uint8_t*>(rec), static_cast<uint8_t*>(blocks));
}

}  // namespace hearth
