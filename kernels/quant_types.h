// Quantized block formats, byte-identical to ggml / GGUF.
//
// A GGUF tensor of one of these types is a plain array of these blocks (row-major,
// each row = n_cols / block_size blocks), so it can be used straight from the file.
//
// Value semantics (element i of a block):
//   Q8_0 : x = d * qs[i]
//   Q4_0 : x = d * (nib(i) - 8), nib(i) = qs[i] & 15 for i < 16, qs[i-16] >> 4 for i >= 16
//   Q4_K : 8 sub-blocks of 32; sub-block j has 6-bit scale sc_j and 6-bit min m_j
//          (packed in scales[12], see q4k_get_scale_min); x = d*sc_j*q - dmin*m_j, q in 0..15.
//          qs holds 4 chunks of 64 elements: chunk c = qs[32c .. 32c+31], low nibbles are
//          elements 64c+0..31 (sub-block 2c), high nibbles elements 64c+32..63 (sub-block 2c+1).
//   Q6_K : 16 groups of 16 with int8 scale sc_g; x = d*sc_g*(q - 32), q in 0..63 (6 bits:
//          low 4 in ql, high 2 in qh). For half h (128 elements), l in 0..31:
//            q[128h+l]    = ql[64h+l]    & 15 | ((qh[32h+l] >> 0) & 3) << 4
//            q[128h+l+32] = ql[64h+l+32] & 15 | ((qh[32h+l] >> 2) & 3) << 4
//            q[128h+l+64] = ql[64h+l]    >> 4 | ((qh[32h+l] >> 4) & 3) << 4
//            q[128h+l+96] = ql[64h+l+32] >> 4 | ((qh[32h+l] >> 6) & 3) << 4
//   Q8_K : x = d * qs[i] (d is fp32), bsums[g] = sum of qs[16g .. 16g+15]. Activations only.
// GGUF's other types. run computes with Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K, IQ4_NL and IQ4_XS
// as they are (quantize writes Q5_K only). Their dequantizers (kernels/ref/dequant_gguf.cpp)
// widen fp16 fields to fp32 first, and each product/sum below is one fp32 operation in the order
// written, as gguf-py computes it:
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

namespace hearth {

// Element types. The numbers are ggml's (GGUF's), so a GGUF type id means the same thing
// here. A plain enum: type ids live in uint32_t fields of files. kTypeTraits below has a row
// for every type GGUF knows, so that any GGUF tensor can be sized and named; the TYPE_ names
// are the types hearth computes with.
enum TensorType : uint32_t {
    TYPE_F32 = 0,
    TYPE_F16 = 1,
    TYPE_Q4_0 = 2,
    TYPE_Q4_1 = 3,
    TYPE_Q5_0 = 6,
    TYPE_Q5_1 = 7,
    TYPE_Q8_0 = 8,
    TYPE_Q2_K = 10,
    TYPE_Q3_K = 11,
    TYPE_Q4_K = 12,
    TYPE_Q5_K = 13,
    TYPE_Q6_K = 14,
    TYPE_Q8_K = 15,  // activations only, never stored
    TYPE_IQ4_NL = 20,
    TYPE_IQ4_XS = 23,
    TYPE_BF16 = 30,
};

// How a matrix's rows lie in memory: one after another (GGUF's layout, and every vector), or
// interleaved by 8 (kernels/rows_x8.h, q4_kx8.h), the layout the matmul kernels of every ISA
// read for q4_0, q8_0 and q4_K. A tensor has a type and a layout; hearth files store both
// (docs/format.md), GGUF files only the first.
enum class Layout : uint8_t { rows, rows_x8 };

constexpr int QK8_0 = 32;
constexpr int QK4_0 = 32;
constexpr int QK_K = 256;

struct block_q8_0 {
    uint16_t d;  // fp16 scale
    int8_t qs[QK8_0];
};
static_assert(sizeof(block_q8_0) == 34, "block_q8_0 must be 34 bytes");

struct block_q4_0 {
    uint16_t d;             // fp16 scale
    uint8_t qs[QK4_0 / 2];  // element j in low nibble of qs[j], element j+16 in high nibble
};
static_assert(sizeof(block_q4_0) == 18, "block_q4_0 must be 18 bytes");

struct block_q4_K {
    uint16_t d;            // fp16 super-block scale for the 6-bit scales
    uint16_t dmin;         // fp16 super-block scale for the 6-bit mins
    uint8_t scales[12];    // 8 scales + 8 mins, 6 bits each
    uint8_t qs[QK_K / 2];  // 4-bit quants
};
static_assert(sizeof(block_q4_K) == 144, "block_q4_K must be 144 bytes");

struct block_q6_K {
    uint8_t ql[QK_K / 2];      // low 4 bits
    uint8_t qh[QK_K / 4];      // high 2 bits
    int8_t scales[QK_K / 16];  // 8-bit group scales
    uint16_t d;                // fp16 super-block scale
};
static_assert(sizeof(block_q6_K) == 210, "block_q6_K must be 210 bytes");

struct block_q8_K {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
};
static_assert(sizeof(block_q8_K) == 292, "block_q8_K must be 292 bytes");

static_assert(offsetof(block_q4_K, scales) == 4 && offsetof(block_q4_K, qs) == 16, "q4_K layout");
static_assert(offsetof(block_q6_K, qh) == 128 && offsetof(block_q6_K, scales) == 192 && offsetof(block_q6_K, d) == 208,
              "q6_K layout");
static_assert(offsetof(block_q8_K, qs) == 4 && offsetof(block_q8_K, bsums) == 260, "q8_K layout");

constexpr int QK4_1 = 32;
constexpr int QK5_0 = 32;
constexpr int QK5_1 = 32;
constexpr int QK4_NL = 32;

// The IQ4_NL / IQ4_XS grid: the 16 values a 4-bit code stands for (before the scale).
inline constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

struct block_q4_1 {
    uint16_t d;             // fp16 scale
    uint16_t m;             // fp16 offset (the block's minimum)
    uint8_t qs[QK4_1 / 2];  // 4-bit quants: element j low nibble of qs[j], j+16 high nibble
};

struct block_q5_0 {
    uint16_t d;             // fp16 scale
    uint8_t qh[4];          // bit 4 of each of the 32 quants, element j = bit j (little-endian)
    uint8_t qs[QK5_0 / 2];  // low 4 bits, nibble order as Q4_1
};

struct block_q5_1 {
    uint16_t d;             // fp16 scale
    uint16_t m;             // fp16 offset
    uint8_t qh[4];          // bit 4 of the quants, as Q5_0
    uint8_t qs[QK5_1 / 2];  // low 4 bits, as Q5_0
};

struct block_q2_K {
    uint8_t scales[QK_K / 16];  // per group of 16: scale in the low nibble, min in the high
    uint8_t qs[QK_K / 4];       // 2-bit quants
    uint16_t d;                 // fp16 super-block scale for the scales
    uint16_t dmin;              // fp16 super-block scale for the mins
};

struct block_q3_K {
    uint8_t hmask[QK_K / 8];  // bit 2 of the quants
    uint8_t qs[QK_K / 4];     // bits 0..1 of the quants
    uint8_t scales[12];       // 16 scales, 6 bits each
    uint16_t d;               // fp16 super-block scale
};

struct block_q5_K {
    uint16_t d;            // fp16 super-block scale for the scales
    uint16_t dmin;         // fp16 super-block scale for the mins
    uint8_t scales[12];    // 8 scales + 8 mins, 6 bits each, packed as Q4_K's
    uint8_t qh[QK_K / 8];  // bit 4 of the quants
    uint8_t qs[QK_K / 2];  // bits 0..3 of the quants, as Q4_K's
};

struct block_iq4_nl {
    uint16_t d;              // fp16 scale
    uint8_t qs[QK4_NL / 2];  // 4-bit grid indices, nibble order as Q4_1
};

struct block_iq4_xs {
    uint16_t d;                   // fp16 super-block scale
    uint16_t scales_h;            // bits 4..5 of the 8 sub-block scales, 2 bits each
    uint8_t scales_l[QK_K / 64];  // bits 0..3 of the 8 sub-block scales, a nibble each
    uint8_t qs[QK_K / 2];         // 4-bit grid indices
};

// Reference (scalar) conversions between fp32 rows and each type, n elements (a multiple of the
// type's block size). The quantizers' rules are in kernels/quant.h; the SIMD activation
// quantizers of kernels/table.cpp write the same bytes as the references.
using quantize_row_fn = void (*)(const float* x, void* y, int64_t n);
using dequantize_row_fn = void (*)(const void* x, float* y, int64_t n);
void quantize_row_f32(const float* x, void* y, int64_t n);
void quantize_row_f16(const float* x, void* y, int64_t n);
void quantize_row_bf16(const float* x, void* y, int64_t n);
void quantize_row_q8_0_scalar(const float* x, void* y, int64_t n);
void quantize_row_q8_k_scalar(const float* x, void* y, int64_t n);
void quantize_row_q4_0(const float* x, void* y, int64_t n);
void quantize_row_q4_k(const float* x, void* y, int64_t n);
void quantize_row_q5_k(const float* x, void* y, int64_t n);
void quantize_row_q6_k(const float* x, void* y, int64_t n);
void dequantize_row_f32(const void* x, float* y, int64_t n);
void dequantize_row_f16(const void* x, float* y, int64_t n);
void dequantize_row_bf16(const void* x, float* y, int64_t n);
void dequantize_row_q8_0(const void* x, float* y, int64_t n);
void dequantize_row_q4_0(const void* x, float* y, int64_t n);
void dequantize_row_q4_k(const void* x, float* y, int64_t n);
void dequantize_row_q6_k(const void* x, float* y, int64_t n);
void dequantize_row_q8_k(const void* x, float* y, int64_t n);
void dequantize_row_q4_1(const void* x, float* y, int64_t n);  // kernels/ref/dequant_gguf.cpp
void dequantize_row_q5_0(const void* x, float* y, int64_t n);
void dequantize_row_q5_1(const void* x, float* y, int64_t n);
void dequantize_row_q2_k(const void* x, float* y, int64_t n);
void dequantize_row_q3_k(const void* x, float* y, int64_t n);
void dequantize_row_q5_k(const void* x, float* y, int64_t n);
void dequantize_row_iq4_nl(const void* x, float* y, int64_t n);
void dequantize_row_iq4_xs(const void* x, float* y, int64_t n);

// One row of facts per type: ggml's name, block size and bytes, what hearth does with it, the
// type its dot products take the activations in, its reference conversions, and the bytes at the
// start of a block that the interleaved layout gathers two at a time (kernels/rows_x8.h; 0: the
// type has no interleaved layout). Which kernels compute with a type, in which layout and on
// which ISA, is the kernel table's (kernels/table.cpp).
enum TypeUse : uint8_t {
    USE_NONE = 0,   // known to GGUF only: sized and named, never computed with
    USE_STORE = 1,  // run computes with it, and a hearth file may hold it
    USE_ACT = 2,    // activations only (q8_K)
};
struct TypeTraits {
    uint32_t id;
    const char* name;  // ggml's ("q4_K", "f16", ...)
    int block_size;    // elements per block (1 for plain numbers)
    int block_bytes;
    TypeUse use;
    uint32_t act_type;             // the activations' type in its dot products (weights of USE_STORE types)
    quantize_row_fn quantize;      // reference, nullptr where hearth never writes the type
    dequantize_row_fn dequantize;  // reference, nullptr where hearth cannot read the type
    int x8_head_bytes;
};
inline constexpr TypeTraits kTypeTraits[] = {
    {0, "f32", 1, 4, USE_STORE, 0, quantize_row_f32, dequantize_row_f32, 0},
    {1, "f16", 1, 2, USE_STORE, 0, quantize_row_f16, dequantize_row_f16, 0},
    {2, "q4_0", 32, 18, USE_STORE, 8, quantize_row_q4_0, dequantize_row_q4_0, 2},
    {3, "q4_1", 32, 20, USE_STORE, 8, nullptr, dequantize_row_q4_1, 0},
    {6, "q5_0", 32, 22, USE_STORE, 8, nullptr, dequantize_row_q5_0, 0},
    {7, "q5_1", 32, 24, USE_STORE, 8, nullptr, dequantize_row_q5_1, 0},
    {8, "q8_0", 32, 34, USE_STORE, 8, quantize_row_q8_0_scalar, dequantize_row_q8_0, 2},
    {9, "q8_1", 32, 36, USE_NONE, 0, nullptr, nullptr, 0},
    {10, "q2_K", 256, 84, USE_STORE, 15, nullptr, dequantize_row_q2_k, 0},
    {11, "q3_K", 256, 110, USE_STORE, 15, nullptr, dequantize_row_q3_k, 0},
    {12, "q4_K", 256, 144, USE_STORE, 15, quantize_row_q4_k, dequantize_row_q4_k, 4},
    {13, "q5_K", 256, 176, USE_STORE, 15, quantize_row_q5_k, dequantize_row_q5_k, 4},
    {14, "q6_K", 256, 210, USE_STORE, 15, quantize_row_q6_k, dequantize_row_q6_k, 0},
    {15, "q8_K", 256, 292, USE_ACT, 0, quantize_row_q8_k_scalar, dequantize_row_q8_k, 0},
    {16, "iq2_xxs", 256, 66, USE_NONE, 0, nullptr, nullptr, 0},
    {17, "iq2_xs", 256, 74, USE_NONE, 0, nullptr, nullptr, 0},
    {18, "iq3_xxs", 256, 98, USE_NONE, 0, nullptr, nullptr, 0},
    {19, "iq1_s", 256, 50, USE_NONE, 0, nullptr, nullptr, 0},
    {20, "iq4_nl", 32, 18, USE_STORE, 8, nullptr, dequantize_row_iq4_nl, 0},
    {21, "iq3_s", 256, 110, USE_NONE, 0, nullptr, nullptr, 0},
    {22, "iq2_s", 256, 82, USE_NONE, 0, nullptr, nullptr, 0},
    {23, "iq4_xs", 256, 136, USE_STORE, 15, nullptr, dequantize_row_iq4_xs, 0},
    {24, "i8", 1, 1, USE_NONE, 0, nullptr, nullptr, 0},
    {25, "i16", 1, 2, USE_NONE, 0, nullptr, nullptr, 0},
    {26, "i32", 1, 4, USE_NONE, 0, nullptr, nullptr, 0},
    {27, "i64", 1, 8, USE_NONE, 0, nullptr, nullptr, 0},
    {28, "f64", 1, 8, USE_NONE, 0, nullptr, nullptr, 0},
    {29, "iq1_m", 256, 56, USE_NONE, 0, nullptr, nullptr, 0},
    {30, "bf16", 1, 2, USE_STORE, 0, quantize_row_bf16, dequantize_row_bf16, 0},
    {34, "tq1_0", 256, 54, USE_NONE, 0, nullptr, nullptr, 0},
    {35, "tq2_0", 256, 66, USE_NONE, 0, nullptr, nullptr, 0},
    {39, "mxfp4", 32, 17, USE_NONE, 0, nullptr, nullptr, 0},
};

// The index of type t's row in kTypeTraits, or -1 for an id no one knows. (An index, not a
// pointer: GCC does not fold pointer comparisons into constants under -fsanitize=undefined.)
constexpr int type_index(uint32_t t) {
    for (int i = 0; i < int(sizeof kTypeTraits / sizeof kTypeTraits[0]); i++)
        if (kTypeTraits[i].id == t) return i;
    return -1;
}

// The row of type t, or nullptr for an id no one knows.
constexpr const TypeTraits* type_traits(uint32_t t) { return type_index(t) >= 0 ? &kTypeTraits[type_index(t)] : nullptr; }

// Any type GGUF defines (a tensor of it can be sized).
constexpr bool type_is_known(uint32_t t) { return type_index(t) >= 0; }

// Types a hearth checkpoint may store tensors in: those run computes with.
constexpr bool type_is_storage(uint32_t t) { return type_is_known(t) && kTypeTraits[type_index(t)].use == USE_STORE; }

// Elements per block (1 for the plain number types; 0 for an unknown type).
constexpr int type_block_size(uint32_t t) { return type_is_known(t) ? kTypeTraits[type_index(t)].block_size : 0; }

// Bytes per block (0 for an unknown type).
constexpr size_t type_block_bytes(uint32_t t) { return type_is_known(t) ? size_t(kTypeTraits[type_index(t)].block_bytes) : 0; }

// Bytes of a row of n elements; n must be a multiple of type_block_size(t).
constexpr size_t type_row_bytes(uint32_t t, int64_t n) { return size_t(n / type_block_size(t)) * type_block_bytes(t); }

// ggml's names ("q4_K", "f16", ...), "unknown" for an id no one knows.
constexpr const char* type_name(uint32_t t) { return type_is_known(t) ? kTypeTraits[type_index(t)].name : "unknown"; }

// The block types run computes with or quantizes activations to.
constexpr bool type_is_quantized(uint32_t t) {
    return type_is_known(t) && kTypeTraits[type_index(t)].block_size > 1 &&
           (kTypeTraits[type_index(t)].use == USE_STORE || kTypeTraits[type_index(t)].use == USE_ACT);
}

// Type the activations must be quantized to for the matmul kernels of weight type t
// (F32 for the float weight types, F32/F16/BF16).
constexpr uint32_t type_vec_dot_type(uint32_t t) { return type_is_known(t) ? kTypeTraits[type_index(t)].act_type : TYPE_F32; }

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

}  // namespace hearth
