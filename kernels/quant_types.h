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
#pragma once
#include <cstddef>
#include <cstdint>

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
    // In memory only, never in a file: rows interleaved by 8 for the kernels (1000 + the
    // type's id; kernels/rows_x8.h, q4_kx8.h). The loader repacks matrices to them;
    // same bytes per row as the plain type.
    TYPE_Q4_0_X8 = 1002,
    TYPE_Q8_0_X8 = 1008,
    TYPE_Q4_K_X8 = 1012,
};

// How a matrix's rows lie in memory: one after another (GGUF's layout, and every vector), or
// interleaved by 8 (kernels/rows_x8.h, q4_kx8.h), the layout the matmul kernels of every ISA
// read for q4_0, q8_0 and q4_K. A tensor has a type and a layout; hearth files store both
// (docs/format.md), GGUF files only the first.
enum class Layout : uint8_t { rows, rows_x8 };

constexpr int QK8_0 = 32;
constexpr int QK4_0 = 32;
constexpr int QK_K  = 256;

struct block_q8_0 {
    uint16_t d;          // fp16 scale
    int8_t   qs[QK8_0];
};
static_assert(sizeof(block_q8_0) == 34, "block_q8_0 must be 34 bytes");

struct block_q4_0 {
    uint16_t d;              // fp16 scale
    uint8_t  qs[QK4_0 / 2];  // element j in low nibble of qs[j], element j+16 in high nibble
};
static_assert(sizeof(block_q4_0) == 18, "block_q4_0 must be 18 bytes");

struct block_q4_K {
    uint16_t d;            // fp16 super-block scale for the 6-bit scales
    uint16_t dmin;         // fp16 super-block scale for the 6-bit mins
    uint8_t  scales[12];   // 8 scales + 8 mins, 6 bits each
    uint8_t  qs[QK_K / 2]; // 4-bit quants
};
static_assert(sizeof(block_q4_K) == 144, "block_q4_K must be 144 bytes");

struct block_q6_K {
    uint8_t  ql[QK_K / 2];      // low 4 bits
    uint8_t  qh[QK_K / 4];      // high 2 bits
    int8_t   scales[QK_K / 16]; // 8-bit group scales
    uint16_t d;                 // fp16 super-block scale
};
static_assert(sizeof(block_q6_K) == 210, "block_q6_K must be 210 bytes");

struct block_q8_K {
    float   d;
    int8_t  qs[QK_K];
    int16_t bsums[QK_K / 16];
};
static_assert(sizeof(block_q8_K) == 292, "block_q8_K must be 292 bytes");

static_assert(offsetof(block_q4_K, scales) == 4 && offsetof(block_q4_K, qs) == 16, "q4_K layout");
static_assert(offsetof(block_q6_K, qh) == 128 && offsetof(block_q6_K, scales) == 192 &&
              offsetof(block_q6_K, d) == 208, "q6_K layout");
static_assert(offsetof(block_q8_K, qs) == 4 && offsetof(block_q8_K, bsums) == 260, "q8_K layout");

// One row of facts per type: ggml's name, block size and bytes, and what hearth does with it.
enum TypeUse : uint8_t {
    USE_NONE = 0,    // known to GGUF only: sized and named, never computed with
    USE_STORE = 1,   // a hearth file may hold it (f32, f16, bf16, q8_0, q4_0, q4_k, q6_k)
    USE_DEQUANT = 2, // quantize can read it (dequantized and re-quantized), run cannot
    USE_ACT = 3,     // activations only (q8_K)
    USE_INTERLEAVED = 4,  // rows interleaved by 8 (kernels/rows_x8.h): hearth files hold them, GGUF files do not
};
struct TypeTraits {
    uint32_t id;
    const char* name;    // ggml's ("q4_K", "f16", ...)
    int block_size;      // elements per block (1 for plain numbers)
    int block_bytes;
    TypeUse use;
    uint32_t plain;      // the stored type an interleaved type was repacked from; else id
};
inline constexpr TypeTraits kTypeTraits[] = {
    {0, "f32", 1, 4, USE_STORE, 0},           {1, "f16", 1, 2, USE_STORE, 1},
    {2, "q4_0", 32, 18, USE_STORE, 2},        {3, "q4_1", 32, 20, USE_DEQUANT, 3},
    {6, "q5_0", 32, 22, USE_DEQUANT, 6},      {7, "q5_1", 32, 24, USE_DEQUANT, 7},
    {8, "q8_0", 32, 34, USE_STORE, 8},        {9, "q8_1", 32, 36, USE_NONE, 9},
    {10, "q2_K", 256, 84, USE_DEQUANT, 10},   {11, "q3_K", 256, 110, USE_DEQUANT, 11},
    {12, "q4_K", 256, 144, USE_STORE, 12},    {13, "q5_K", 256, 176, USE_DEQUANT, 13},
    {14, "q6_K", 256, 210, USE_STORE, 14},    {15, "q8_K", 256, 292, USE_ACT, 15},
    {16, "iq2_xxs", 256, 66, USE_NONE, 16},   {17, "iq2_xs", 256, 74, USE_NONE, 17},
    {18, "iq3_xxs", 256, 98, USE_NONE, 18},   {19, "iq1_s", 256, 50, USE_NONE, 19},
    {20, "iq4_nl", 32, 18, USE_DEQUANT, 20},  {21, "iq3_s", 256, 110, USE_NONE, 21},
    {22, "iq2_s", 256, 82, USE_NONE, 22},     {23, "iq4_xs", 256, 136, USE_DEQUANT, 23},
    {24, "i8", 1, 1, USE_NONE, 24},           {25, "i16", 1, 2, USE_NONE, 25},
    {26, "i32", 1, 4, USE_NONE, 26},          {27, "i64", 1, 8, USE_NONE, 27},
    {28, "f64", 1, 8, USE_NONE, 28},          {29, "iq1_m", 256, 56, USE_NONE, 29},
    {30, "bf16", 1, 2, USE_STORE, 30},        {34, "tq1_0", 256, 54, USE_NONE, 34},
    {35, "tq2_0", 256, 66, USE_NONE, 35},     {39, "mxfp4", 32, 17, USE_NONE, 39},
    {1002, "q4_0x8", 32, 18, USE_INTERLEAVED, 2},  {1008, "q8_0x8", 32, 34, USE_INTERLEAVED, 8},
    {1012, "q4_Kx8", 256, 144, USE_INTERLEAVED, 12},
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

// Any type GGUF defines (a tensor of it can be sized), or one of hearth's in-memory types.
constexpr bool type_is_known(uint32_t t) { return type_index(t) >= 0; }

// Types a hearth checkpoint may store tensors in: those run computes with, plain or interleaved.
constexpr bool type_is_storage(uint32_t t) {
    return type_is_known(t) && (kTypeTraits[type_index(t)].use == USE_STORE || kTypeTraits[type_index(t)].use == USE_INTERLEAVED);
}

// Elements per block (1 for the plain number types; 0 for an unknown type).
constexpr int type_block_size(uint32_t t) { return type_is_known(t) ? kTypeTraits[type_index(t)].block_size : 0; }

// Bytes per block (0 for an unknown type).
constexpr size_t type_block_bytes(uint32_t t) { return type_is_known(t) ? size_t(kTypeTraits[type_index(t)].block_bytes) : 0; }

// Bytes of a row of n elements; n must be a multiple of type_block_size(t).
constexpr size_t type_row_bytes(uint32_t t, int64_t n) {
    return size_t(n / type_block_size(t)) * type_block_bytes(t);
}

// ggml's names ("q4_K", "f16", ...), "unknown" for an id no one knows.
constexpr const char* type_name(uint32_t t) { return type_is_known(t) ? kTypeTraits[type_index(t)].name : "unknown"; }

// The stored type an interleaved type was repacked from (TYPE_Q4_0 for TYPE_Q4_0_X8, ...);
// any other type unchanged.
constexpr uint32_t type_plain(uint32_t t) { return type_is_known(t) ? kTypeTraits[type_index(t)].plain : t; }

constexpr bool type_is_quantized(uint32_t t) {
    return t == TYPE_Q4_0 || t == TYPE_Q8_0 || t == TYPE_Q4_K ||
           t == TYPE_Q6_K || t == TYPE_Q8_K;
}

// Type the activations must be quantized to for the dot/matmul kernels of weight type t.
// Float weight types (F32/F16/BF16) take F32 activations.
constexpr uint32_t type_vec_dot_type(uint32_t t) {
    switch (t) {
        case TYPE_Q4_0:
        case TYPE_Q4_0_X8:
        case TYPE_Q8_0:
        case TYPE_Q8_0_X8: return TYPE_Q8_0;
        case TYPE_Q4_K:
        case TYPE_Q4_K_X8:
        case TYPE_Q6_K: return TYPE_Q8_K;
        default: return TYPE_F32;
    }
}
