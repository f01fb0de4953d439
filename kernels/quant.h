// Quantization, dequantization and quantized dot-product / matmul kernels.
//
// Naming: <op>_<weight type>_<activation type>[_scalar|_avx2|_neon]. The name without a
// suffix dispatches at compile time to the best implementation built in.
//
// Activations: the caller quantizes each activation row once (quantize_row_q8_0 for Q4_0/Q8_0
// weights, quantize_row_q8_k for Q4_K/Q6_K weights, see type_vec_dot_type) and then runs the
// dot / matmul kernels against it. The SIMD activation quantizers produce bytes identical to
// the scalar ones, so quantize_row_q8_0 == quantize_row_q8_0_scalar bit for bit.
//
// Lengths (n, n_cols) must be multiples of the block size (32 for Q4_0/Q8_0, 256 for K types).
// Rows and blocks need be 2-byte aligned only: the kernels read a block's fp16 fields through
// its struct. Every block of the types here is an even number of bytes, and files align
// tensors (hearth to 64, GGUF to 32), so every block in a file is.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/isa.h"
#include "kernels/quant_types.h"

// ---------------------------------------------------------------------------------------
// Quantize / dequantize (scalar reference, kernels/quant_ref.cpp)
// ---------------------------------------------------------------------------------------
// Q8_0: d = fp16(amax/127); q = round_half_even(x / d) (clamped to +-127).
// Q4_0: d = fp16(-max/8) where max is the element of largest magnitude (ggml's convention, the
//       extreme maps exactly to -8); q = clamp(round(x / d), -8, 7) + 8.
// Q4_K: per sub-block of 32, search of (scale, min) minimizing a weighted squared error
//       (ggml make_qkx2_quants idea), 6-bit scale/min codes, then a least-squares refit of the
//       two fp16 super-block scales.
// Q6_K: per group of 16, search of a signed scale (ggml make_qx_quants idea), 8-bit scale
//       codes, then a least-squares refit of the fp16 super-block scale.
// Q8_K: d = amax/127 rounded to a 12-bit mantissa (fp32); q = round_half_even(x / d); bsums.
// The quantizers use the *stored* (fp16-rounded) scales when choosing the integer codes, so
// every element is coded to the grid point nearest to it given the block's stored scales
// (except clamping at the range ends). Bytes can differ from ggml's quantizer output in the
// last bit of a code; the format and its meaning are identical.
void quantize_row_q8_0_scalar(const float* x, void* y, int64_t n);
void quantize_row_q8_k_scalar(const float* x, void* y, int64_t n);
void quantize_row_q4_0(const float* x, void* y, int64_t n);
void quantize_row_q4_k(const float* x, void* y, int64_t n);
void quantize_row_q6_k(const float* x, void* y, int64_t n);

float q8k_scale(float amax);  // the Q8_K d for a block with max |x| = amax (shared by all impls)

void dequantize_row_q8_0(const void* x, float* y, int64_t n);
void dequantize_row_q4_0(const void* x, float* y, int64_t n);
void dequantize_row_q4_k(const void* x, float* y, int64_t n);
void dequantize_row_q6_k(const void* x, float* y, int64_t n);
void dequantize_row_q8_k(const void* x, float* y, int64_t n);

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
// Dot product of one weight row with one quantized activation row (n elements).
// ---------------------------------------------------------------------------------------
float vec_dot_q8_0_q8_0_scalar(int n, const void* w, const void* a);
float vec_dot_q4_0_q8_0_scalar(int n, const void* w, const void* a);
float vec_dot_q4_k_q8_k_scalar(int n, const void* w, const void* a);
float vec_dot_q6_k_q8_k_scalar(int n, const void* w, const void* a);

// ---------------------------------------------------------------------------------------
// Multi-token matmul over a range of weight rows (single-threaded; the caller splits rows):
//   out[t*out_stride + r] = dot(W row r, A row t)   for r in [r0, r1), t in [0, n_tokens)
// W row r starts at (const char*)W + r*w_row_bytes, A row t at (const char*)A + t*a_row_bytes;
// both rows hold n_cols elements. Only the out entries listed above are written.
// The kernels decode each weight block once per tile of up to 8 tokens.
// ---------------------------------------------------------------------------------------
using matmul_rows_fn = void (*)(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes,
                                int n_cols, int n_tokens, float* out, int out_stride, int r0, int r1);

#define HEARTH_DECLARE_MATMUL(name)                                                            \
    void name(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, \
              int n_tokens, float* out, int out_stride, int r0, int r1);

HEARTH_DECLARE_MATMUL(matmul_q8_0_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q4_0_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q4_k_rows_scalar)
HEARTH_DECLARE_MATMUL(matmul_q6_k_rows_scalar)

#if defined(HEARTH_ISA_AVX2)
void quantize_row_q8_0_avx2(const float* x, void* y, int64_t n);
void quantize_row_q8_k_avx2(const float* x, void* y, int64_t n);
float vec_dot_q8_0_q8_0_avx2(int n, const void* w, const void* a);
float vec_dot_q4_0_q8_0_avx2(int n, const void* w, const void* a);
float vec_dot_q4_k_q8_k_avx2(int n, const void* w, const void* a);
float vec_dot_q6_k_q8_k_avx2(int n, const void* w, const void* a);
HEARTH_DECLARE_MATMUL(matmul_q8_0_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q4_0_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q4_k_rows_avx2)
HEARTH_DECLARE_MATMUL(matmul_q6_k_rows_avx2)
// Single-token kernel (kernels/gemv_avx2.cpp), used by matmul_q4_0_rows_avx2 when n_tokens == 1:
//   out[r] = dot(W row r, A)   for r in [r0, r1); A is one activation row.
#define HEARTH_DECLARE_GEMV(name) \
    void name(const void* W, size_t w_row_bytes, const void* A, int n_cols, float* out, int r0, int r1);
HEARTH_DECLARE_GEMV(gemv_q4_0_rows_avx2)
#undef HEARTH_DECLARE_GEMV
#define HEARTH_QSEL(name) name##_avx2
#elif defined(HEARTH_ISA_NEON)
void quantize_row_q8_0_neon(const float* x, void* y, int64_t n);
void quantize_row_q8_k_neon(const float* x, void* y, int64_t n);
float vec_dot_q8_0_q8_0_neon(int n, const void* w, const void* a);
float vec_dot_q4_0_q8_0_neon(int n, const void* w, const void* a);
float vec_dot_q4_k_q8_k_neon(int n, const void* w, const void* a);
float vec_dot_q6_k_q8_k_neon(int n, const void* w, const void* a);
HEARTH_DECLARE_MATMUL(matmul_q8_0_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q4_0_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q4_k_rows_neon)
HEARTH_DECLARE_MATMUL(matmul_q6_k_rows_neon)
#define HEARTH_QSEL(name) name##_neon
#else
#define HEARTH_QSEL(name) name##_scalar
#endif

// Best available implementation (compile-time dispatch).
inline void quantize_row_q8_0(const float* x, void* y, int64_t n) { HEARTH_QSEL(quantize_row_q8_0)(x, y, n); }
inline void quantize_row_q8_k(const float* x, void* y, int64_t n) { HEARTH_QSEL(quantize_row_q8_k)(x, y, n); }
inline float vec_dot_q8_0_q8_0(int n, const void* w, const void* a) { return HEARTH_QSEL(vec_dot_q8_0_q8_0)(n, w, a); }
inline float vec_dot_q4_0_q8_0(int n, const void* w, const void* a) { return HEARTH_QSEL(vec_dot_q4_0_q8_0)(n, w, a); }
inline float vec_dot_q4_k_q8_k(int n, const void* w, const void* a) { return HEARTH_QSEL(vec_dot_q4_k_q8_k)(n, w, a); }
inline float vec_dot_q6_k_q8_k(int n, const void* w, const void* a) { return HEARTH_QSEL(vec_dot_q6_k_q8_k)(n, w, a); }

#define HEARTH_DEFINE_MATMUL_DISPATCH(t)                                                          \
    inline void matmul_##t##_rows(const void* W, size_t w_row_bytes, const void* A,               \
                                  size_t a_row_bytes, int n_cols, int n_tokens, float* out,       \
                                  int out_stride, int r0, int r1) {                               \
        HEARTH_QSEL(matmul_##t##_rows)(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out,     \
                                       out_stride, r0, r1);                                       \
    }
HEARTH_DEFINE_MATMUL_DISPATCH(q8_0)
HEARTH_DEFINE_MATMUL_DISPATCH(q4_0)
HEARTH_DEFINE_MATMUL_DISPATCH(q4_k)
HEARTH_DEFINE_MATMUL_DISPATCH(q6_k)
#undef HEARTH_DEFINE_MATMUL_DISPATCH

// ---------------------------------------------------------------------------------------
// Per-type kernel table, for code that handles the weight type at run time.
// ---------------------------------------------------------------------------------------
using quantize_row_fn = void (*)(const float* x, void* y, int64_t n);
using dequantize_row_fn = void (*)(const void* x, float* y, int64_t n);
using vec_dot_fn = float (*)(int n, const void* w, const void* a);

struct QuantKernels {
    TensorType type;                // weight type
    TensorType act_type;            // activation type the dot/matmul kernels expect
    quantize_row_fn quantize;       // float -> type (scalar reference quantizer)
    dequantize_row_fn dequantize;   // type -> float
    quantize_row_fn quantize_act;   // float -> act_type (fastest available)
    vec_dot_fn vec_dot;             // fastest available
    matmul_rows_fn matmul_rows;     // fastest available
};

// Kernels for weight type t (Q4_0, Q8_0, Q4_K, Q6_K); nullptr for other types.
const QuantKernels* quant_kernels(uint32_t t);
