// The quantized matmul kernels' contract, and what the quantizers and kernels of every ISA share.
//
// Activations: matmul (kernels/matmul.h) quantizes each activation row once to the weight
// type's activation type (type_vec_dot_type: Q8_0 for the 32-element types, Q8_K for the K types)
// and then runs the kernel the table picks (kernels/table.h) against it. The SIMD activation
// quantizers produce bytes identical to the scalar references.
//
// Lengths (n, n_cols) must be multiples of the block size (32, or 256 for the K types).
// Rows and blocks need be 2-byte aligned only: the kernels read a block's fp16 fields through
// its struct. Every block of the types here is an even number of bytes, and files align
// tensors (hearth to 64, GGUF to 32), so every block in a file is.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/quant_types.h"

namespace hearth {

// ---------------------------------------------------------------------------------------
// The quantizers' rules (scalar references: kernels/ref/quant_ref.cpp, declared in quant_types.h)
// ---------------------------------------------------------------------------------------
// Q8_0: d = fp16(amax/127); q = round_half_even(x / d) (clamped to +-127).
// Q4_0: d = fp16(-max/8) where max is the element of largest magnitude (ggml's convention, the
//       extreme maps exactly to -8); q = clamp(round(x / d), -8, 7) + 8.
// Q4_K: per sub-block of 32, search of (scale, min) minimizing a weighted squared error
//       (ggml make_qkx2_quants idea), 6-bit scale/min codes, then a least-squares refit of the
//       two fp16 super-block scales.
// Q6_K: per group of 16, search of a signed scale (ggml make_qx_quants idea), 8-bit scale
//       codes, then a least-squares refit of the fp16 super-block scale.
// Q8_K: d = amax/127 rounded to a 12-bit mantissa (fp32); q = round_half_even(x / d) clamped to
//       +-127 (never -128: the IQ4_XS kernels' sign trick needs that); bsums.
// The quantizers use the *stored* (fp16-rounded) scales when choosing the integer codes, so
// every element is coded to the grid point nearest to it given the block's stored scales
// (except clamping at the range ends). Bytes can differ from ggml's quantizer output in the
// last bit of a code; the format and its meaning are identical.

float q8k_scale(float amax);  // the Q8_K d for a block with max |x| = amax (shared by all impls)

// Q4_K packed 6-bit scale/min of sub-block j (0..7), ggml's get_scale_min_k4.
inline void q4k_get_scale_min(int j, const uint8_t* s, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = uint8_t((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        *m = uint8_t((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

// The 32 5-bit quants of a Q5_0 / Q5_1 block, 0..31: low nibbles from qs, bit 4 from qh.
inline void q5_unpack(const uint8_t qh[4], const uint8_t qs[16], uint8_t q[32]) {
    const uint32_t h = uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
    for (int j = 0; j < 16; ++j) {
        q[j] = uint8_t((qs[j] & 0xF) | ((h >> j) & 1) << 4);
        q[j + 16] = uint8_t((qs[j] >> 4) | ((h >> (j + 16)) & 1) << 4);
    }
}

// Q3_K's 16 group scales as signed values -32..31 (kernels/quant_types.h: 4 low bits from the
// nibbles of s[0..7], 2 high bits from s[8..11]), four groups to a 32-bit word: groups 0-3 take
// the low nibbles of s[0..3], 4-7 those of s[4..7], 8-11 and 12-15 the high nibbles of the same;
// group g's high bits are bits 2(g/4) and 2(g/4)+1 of s[8 + g%4].
inline void q3k_unpack_scales(const uint8_t* s, int8_t out[16]) {
    uint32_t lo0, lo1, hi;
    std::memcpy(&lo0, s, 4);
    std::memcpy(&lo1, s + 4, 4);
    std::memcpy(&hi, s + 8, 4);
    const uint32_t w[4] = {(lo0 & 0x0f0f0f0f) | (hi & 0x03030303) << 4, (lo1 & 0x0f0f0f0f) | ((hi >> 2) & 0x03030303) << 4,
                           ((lo0 >> 4) & 0x0f0f0f0f) | ((hi >> 4) & 0x03030303) << 4,
                           ((lo1 >> 4) & 0x0f0f0f0f) | ((hi >> 6) & 0x03030303) << 4};
    uint8_t u[16];
    std::memcpy(u, w, 16);
    for (int g = 0; g < 16; ++g) out[g] = int8_t(u[g] - 32);
}

// IQ4_XS's sub-block scale j (0..7) as a signed value -32..31 (kernels/quant_types.h): 4 low bits
// from a nibble of scales_l, 2 high bits from scales_h.
inline int iq4xs_scale(const uint8_t scales_l[4], uint16_t scales_h, int j) {
    return (((scales_l[j / 2] >> (4 * (j % 2))) & 15) | ((scales_h >> (2 * j)) & 3) << 4) - 32;
}

// All 8 of them.
inline void iq4xs_unpack_scales(const uint8_t scales_l[4], uint16_t scales_h, int8_t out[8]) {
    for (int j = 0; j < 8; ++j) out[j] = int8_t(iq4xs_scale(scales_l, scales_h, j));
}

// All 8 scales (out[0..1]) and 8 mins (out[2..3]) of a Q4_K block's 12 packed bytes at once,
// one byte each, for the SIMD kernels.
inline void q4k_unpack_scales(const uint8_t* s, uint32_t out[4]) {
    uint32_t u0, u1, u2;
    std::memcpy(&u0, s, 4);
    std::memcpy(&u1, s + 4, 4);
    std::memcpy(&u2, s + 8, 4);
    out[0] = u0 & 0x3f3f3f3f;
    out[1] = (u2 & 0x0f0f0f0f) | (((u0 >> 6) & 0x03030303) << 4);
    out[2] = u1 & 0x3f3f3f3f;
    out[3] = ((u2 >> 4) & 0x0f0f0f0f) | (((u1 >> 6) & 0x03030303) << 4);
}

// ---------------------------------------------------------------------------------------
// Multi-token matmul over a range of weight rows (single-threaded; the caller splits rows):
//   out[t*out_stride + r] = dot(W row r, A row t)   for r in [r0, r1), t in [0, n_tokens)
// W row r starts at (const char*)W + r*w_row_bytes, A row t at (const char*)A + t*a_row_bytes;
// both rows hold n_cols elements. Only the out entries listed above are written. Every kernel
// computes this for any n_tokens >= 1; the kernel table says from how many tokens each is the
// one to use. F32/F16 weights take the fp32 activations themselves (A = x, a_row_bytes = 4 n_cols).
// Interleaved weights (Layout::rows_x8, kernels/rows_x8.h): [r0, r1) are whole groups of 8 rows
// (matmul sends the plain rows after the last whole group to the plain layout's kernel).
// ---------------------------------------------------------------------------------------
using matmul_rows_fn = void (*)(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                                float* out, int out_stride, int r0, int r1);

#define HEARTH_DECLARE_MATMUL(name)                                                                                       \
    void name(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens, float* out, \
              int out_stride, int r0, int r1);

}  // namespace hearth
