#include "q4_0x8.h"

#include <cstring>

#include "quant.h"
#include "quant_types.h"

namespace {

constexpr size_t kRecordBytes = 8 * sizeof(block_q4_0);  // 144: block b of 8 rows
static_assert(kRecordBytes == 16 + 4 * 32, "one record: 8 scales + 4 chunks of 32 bytes");

// Byte offset, inside a record, of qs[j] of row i (j = 4k + m, m < 4) and of row i's scale.
inline size_t qs_offset(int i, int j) { return 16 + 32 * size_t(j / 4) + 4 * size_t(i) + size_t(j % 4); }
inline size_t d_offset(int i) { return 2 * size_t(i); }

// One group of 8 rows (nb blocks each) between the two layouts.
void group_to_x8(const uint8_t* src, uint8_t* dst, int64_t nb) {
    const block_q4_0* rows = reinterpret_cast<const block_q4_0*>(src);
    for (int64_t b = 0; b < nb; ++b) {
        uint8_t* rec = dst + size_t(b) * kRecordBytes;
        for (int i = 0; i < 8; ++i) {
            const block_q4_0& blk = rows[size_t(i) * nb + b];
            std::memcpy(rec + d_offset(i), &blk.d, 2);
            for (int j = 0; j < 16; ++j) rec[qs_offset(i, j)] = blk.qs[j];
        }
    }
}

void group_to_q4_0(const uint8_t* src, uint8_t* dst, int64_t nb) {
    block_q4_0* rows = reinterpret_cast<block_q4_0*>(dst);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* rec = src + size_t(b) * kRecordBytes;
        for (int i = 0; i < 8; ++i) {
            block_q4_0& blk = rows[size_t(i) * nb + b];
            std::memcpy(&blk.d, rec + d_offset(i), 2);
            for (int j = 0; j < 16; ++j) blk.qs[j] = rec[qs_offset(i, j)];
        }
    }
}

// Whole groups converted, the rows % 8 tail copied as it is.
template <void (*kConvert)(const uint8_t*, uint8_t*, int64_t)>
void convert(const void* src, void* dst, int64_t rows, int64_t cols) {
    const int64_t nb = cols / QK4_0, groups = rows / 8;
    const size_t group_bytes = size_t(nb) * kRecordBytes;
    const auto* s = static_cast<const uint8_t*>(src);
    auto* d = static_cast<uint8_t*>(dst);
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < groups; ++g) kConvert(s + size_t(g) * group_bytes, d + size_t(g) * group_bytes, nb);
    const size_t done = size_t(groups) * group_bytes;
    std::memcpy(d + done, s + done, size_t(rows % 8) * size_t(nb) * sizeof(block_q4_0));
}

}  // namespace

void repack_q4_0_to_x8(const void* src, void* dst, int64_t rows, int64_t cols) { convert<group_to_x8>(src, dst, rows, cols); }
void repack_x8_to_q4_0(const void* src, void* dst, int64_t rows, int64_t cols) { convert<group_to_q4_0>(src, dst, rows, cols); }

bool q4_0x8_kernels_built() {
#if defined(HEARTH_QUANT_AVX2)
    return true;
#else
    return false;
#endif
}
