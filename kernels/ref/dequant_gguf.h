// GGUF block formats hearth reads but does not compute with: quantize dequantizes them to fp32
// (scalar code, kernels/dequant_gguf.cpp) and re-quantizes to a stored type. The structs are
// byte-identical to ggml's; the ids, names and sizes are the rows of kTypeTraits.
//
// Value semantics (element i of a block; fp16 fields are widened to fp32 first, and each
// product/sum below is one fp32 operation in the order written, as gguf-py computes it):
//   Q4_1  : x = d*q + m, q in 0..15; q(i) = qs[i] & 15 for i < 16, qs[i-16] >> 4 for i >= 16.
//   Q5_0  : x = d*(q - 16), q in 0..31; low 4 bits as Q4_1's q(i), bit 4 = bit i of qh
//           (qh read as a little-endian uint32).
//   Q5_1  : x = d*q + m, q in 0..31, bits as Q5_0.
//   Q2_K  : 16 groups of 16; group g has a 4-bit scale sc = scales[g] & 15 and a 4-bit min
//           mn = scales[g] >> 4; x = (d*sc)*q - dmin*mn, q in 0..3.
//           Element 128h + 32s + l (h 0..1, s 0..3, l 0..31): q = (qs[32h+l] >> 2s) & 3.
//   Q3_K  : 16 groups of 16 with signed 6-bit scales sc_g - 32; x = (d*(sc_g - 32))*q,
//           q in -4..3. Element 32b + l (b 0..7, l 0..31, b = 4h + s):
//             q = ((qs[32h+l] >> 2s) & 3) - (bit b of hmask[l] ? 0 : 4)
//           (a set high bit means no offset). The 16 scales are packed in scales[12]:
//             sc_g = low | hi << 4, low = g < 8 ? scales[g] & 15 : scales[g-8] >> 4,
//                    hi = (scales[8 + g%4] >> 2*(g/4)) & 3.
//   Q5_K  : as Q4_K (8 sub-blocks of 32, 6-bit scale sc_j and min m_j packed in scales[12] the
//           same way, q4k_get_scale_min), x = (d*sc_j)*q - dmin*m_j with q in 0..31: the low
//           4 bits as Q4_K's nibbles (chunk c = qs[32c..32c+31], low nibbles sub-block 2c,
//           high nibbles sub-block 2c+1), bit 4 of element 32j + l = bit j of qh[l].
//   IQ4_NL: x = d*kIQ4Values[q], q as Q4_1's q(i): a non-linear 4-bit grid.
//   IQ4_XS: 8 sub-blocks of 32 with signed 6-bit scales ls_j - 32,
//           ls_j = ((scales_l[j/2] >> 4*(j%2)) & 15) | ((scales_h >> 2j) & 3) << 4;
//           x = (d*(ls_j - 32))*kIQ4Values[q]; in sub-block j, q(l) = qs[16j+l] & 15 for l < 16,
//           qs[16j+l-16] >> 4 for l >= 16.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/quant.h"

constexpr int QK4_1 = 32;
constexpr int QK5_0 = 32;
constexpr int QK5_1 = 32;
constexpr int QK4_NL = 32;

// The IQ4_NL / IQ4_XS grid: the 16 values a 4-bit code stands for (before the scale).
inline constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

struct block_q4_1 {
    uint16_t d;              // fp16 scale
    uint16_t m;              // fp16 offset (the block's minimum)
    uint8_t  qs[QK4_1 / 2];  // 4-bit quants: element j low nibble of qs[j], j+16 high nibble
};

struct block_q5_0 {
    uint16_t d;              // fp16 scale
    uint8_t  qh[4];          // bit 4 of each of the 32 quants, element j = bit j (little-endian)
    uint8_t  qs[QK5_0 / 2];  // low 4 bits, nibble order as Q4_1
};

struct block_q5_1 {
    uint16_t d;              // fp16 scale
    uint16_t m;              // fp16 offset
    uint8_t  qh[4];          // bit 4 of the quants, as Q5_0
    uint8_t  qs[QK5_1 / 2];  // low 4 bits, as Q5_0
};

struct block_q2_K {
    uint8_t  scales[QK_K / 16];  // per group of 16: scale in the low nibble, min in the high
    uint8_t  qs[QK_K / 4];       // 2-bit quants
    uint16_t d;                  // fp16 super-block scale for the scales
    uint16_t dmin;               // fp16 super-block scale for the mins
};

struct block_q3_K {
    uint8_t  hmask[QK_K / 8];  // bit 2 of the quants
    uint8_t  qs[QK_K / 4];     // bits 0..1 of the quants
    uint8_t  scales[12];       // 16 scales, 6 bits each
    uint16_t d;                // fp16 super-block scale
};

struct block_q5_K {
    uint16_t d;             // fp16 super-block scale for the scales
    uint16_t dmin;          // fp16 super-block scale for the mins
    uint8_t  scales[12];    // 8 scales + 8 mins, 6 bits each, packed as Q4_K's
    uint8_t  qh[QK_K / 8];  // bit 4 of the quants
    uint8_t  qs[QK_K / 2];  // bits 0..3 of the quants, as Q4_K's
};

struct block_iq4_nl {
    uint16_t d;               // fp16 scale
    uint8_t  qs[QK4_NL / 2];  // 4-bit grid indices, nibble order as Q4_1
};

struct block_iq4_xs {
    uint16_t d;                  // fp16 super-block scale
    uint16_t scales_h;           // bits 4..5 of the 8 sub-block scales, 2 bits each
    uint8_t  scales_l[QK_K / 64];// bits 0..3 of the 8 sub-block scales, a nibble each
    uint8_t  qs[QK_K / 2];       // 4-bit grid indices
};

// The sizes must be GGUF's, as kTypeTraits records them.
static_assert(sizeof(block_q4_1) == type_block_bytes(TYPE_Q4_1), "block_q4_1 must be 20 bytes");
static_assert(sizeof(block_q5_0) == type_block_bytes(TYPE_Q5_0), "block_q5_0 must be 22 bytes");
static_assert(sizeof(block_q5_1) == type_block_bytes(TYPE_Q5_1), "block_q5_1 must be 24 bytes");
static_assert(sizeof(block_q2_K) == type_block_bytes(TYPE_Q2_K), "block_q2_K must be 84 bytes");
static_assert(sizeof(block_q3_K) == type_block_bytes(TYPE_Q3_K), "block_q3_K must be 110 bytes");
static_assert(sizeof(block_q5_K) == type_block_bytes(TYPE_Q5_K), "block_q5_K must be 176 bytes");
static_assert(sizeof(block_iq4_nl) == type_block_bytes(TYPE_IQ4_NL), "block_iq4_nl must be 18 bytes");
static_assert(sizeof(block_iq4_xs) == type_block_bytes(TYPE_IQ4_XS), "block_iq4_xs must be 136 bytes");
static_assert(offsetof(block_q5_0, qs) == 6 && offsetof(block_q5_1, qs) == 8, "q5_0/q5_1 layout");
static_assert(offsetof(block_q2_K, d) == 80 && offsetof(block_q3_K, d) == 108, "q2_K/q3_K layout");
static_assert(offsetof(block_q5_K, qh) == 16 && offsetof(block_q5_K, qs) == 48, "q5_K layout");
static_assert(offsetof(block_iq4_xs, scales_l) == 4 && offsetof(block_iq4_xs, qs) == 8, "iq4_xs layout");

// Dequantize n elements (a multiple of the type's block size) from x to y.
void dequantize_row_q4_1(const void* x, float* y, int64_t n);
void dequantize_row_q5_0(const void* x, float* y, int64_t n);
void dequantize_row_q5_1(const void* x, float* y, int64_t n);
void dequantize_row_q2_k(const void* x, float* y, int64_t n);
void dequantize_row_q3_k(const void* x, float* y, int64_t n);
void dequantize_row_q5_k(const void* x, float* y, int64_t n);
void dequantize_row_iq4_nl(const void* x, float* y, int64_t n);
void dequantize_row_iq4_xs(const void* x, float* y, int64_t n);

// The dequantizer of a GGUF-only type above (Q4_1 ... IQ4_XS), nullptr for any other type
// (the stored types have theirs in quant_kernels()).
dequantize_row_fn gguf_dequantizer(uint32_t type);
