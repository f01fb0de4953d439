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

// Element types of stored tensors. The numbers are ggml's (GGUF's), so a GGUF type id
// means the same thing here. A plain enum: type ids live in uint32_t fields of files.
enum TensorType : uint32_t {
    TYPE_F32 = 0,
    TYPE_F16 = 1,
    TYPE_Q4_0 = 2,
    TYPE_Q8_0 = 8,
    TYPE_Q4_K = 12,
    TYPE_Q6_K = 14,
    TYPE_Q8_K = 15,  // activations only, never stored
    TYPE_BF16 = 30,
    // In memory only, never in a file: rows interleaved by 8 for the AVX2 kernels (1000 + the
    // type's id; kernels/rows_x8.h, q4_kx8.h). The loader repacks matrices to them;
    // same bytes per row as the plain type.
    TYPE_Q4_0_X8 = 1002,
    TYPE_Q8_0_X8 = 1008,
    TYPE_Q4_K_X8 = 1012,
};

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

constexpr bool type_is_valid(uint32_t t) {
    return t == 0 || t == 1 || t == 2 || t == 8 || t == 12 || t == 14 || t == 15 || t == 30;
}

// Types a checkpoint may store tensors in (Q8_K exists only for activations).
constexpr bool type_is_storage(uint32_t t) { return type_is_valid(t) && t != TYPE_Q8_K; }

// Elements per block (1 for the plain float types).
constexpr int type_block_size(uint32_t t) {
    switch (t) {
        case TYPE_Q4_0:
        case TYPE_Q4_0_X8: return QK4_0;
        case TYPE_Q8_0:
        case TYPE_Q8_0_X8: return QK8_0;
        case TYPE_Q4_K:
        case TYPE_Q4_K_X8:
        case TYPE_Q6_K:
        case TYPE_Q8_K: return QK_K;
        default: return 1;
    }
}

// Bytes per block (0 for an unknown type).
constexpr size_t type_block_bytes(uint32_t t) {
    switch (t) {
        case TYPE_F32:  return 4;
        case TYPE_F16:  return 2;
        case TYPE_BF16: return 2;
        case TYPE_Q4_0:
        case TYPE_Q4_0_X8: return sizeof(block_q4_0);
        case TYPE_Q8_0:
        case TYPE_Q8_0_X8: return sizeof(block_q8_0);
        case TYPE_Q4_K:
        case TYPE_Q4_K_X8: return sizeof(block_q4_K);
        case TYPE_Q6_K: return sizeof(block_q6_K);
        case TYPE_Q8_K: return sizeof(block_q8_K);
    }
    return 0;
}

// Bytes of a row of n elements; n must be a multiple of type_block_size(t).
constexpr size_t type_row_bytes(uint32_t t, int64_t n) {
    return size_t(n / type_block_size(t)) * type_block_bytes(t);
}

// ggml's names ("q4_K", "f16", ...).
constexpr const char* type_name(uint32_t t) {
    switch (t) {
        case TYPE_F32:  return "f32";
        case TYPE_F16:  return "f16";
        case TYPE_BF16: return "bf16";
        case TYPE_Q4_0: return "q4_0";
        case TYPE_Q4_0_X8: return "q4_0x8";
        case TYPE_Q8_0_X8: return "q8_0x8";
        case TYPE_Q4_K_X8: return "q4_Kx8";
        case TYPE_Q8_0: return "q8_0";
        case TYPE_Q4_K: return "q4_K";
        case TYPE_Q6_K: return "q6_K";
        case TYPE_Q8_K: return "q8_K";
    }
    return "unknown";
}

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
