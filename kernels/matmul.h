// Matrix × activations for every weight type run supports, threaded with OpenMP.
#pragma once
#include <cstdint>

// True when matmul() has a kernel for weights of this type.
bool matmul_supports(uint32_t type);

// out[t * rows + r] = dot(row r of W, x + t * cols) for t < n_tokens, r < rows.
// W is `rows` rows of `cols` elements of `type`, stored contiguously.
// Rows are split across the OpenMP threads in chunks of whole cache lines of `out`.
void matmul(float* out, uint32_t type, const void* w, int rows, int cols, const float* x, int n_tokens);

// One matrix of a matmul_many call: out[t * rows + r] = dot(row r of w, x + t * cols).
struct MatmulJob {
    float* out;
    uint32_t type;
    const void* w;
    int rows;
};

// Several matrices applied to the same activations (q, k, v; gate, up) in one parallel
// region: the activations are quantized once per activation type, and the threads meet at
// one barrier at the end instead of one per matrix.
void matmul_many(const MatmulJob* jobs, int n_jobs, int cols, const float* x, int n_tokens);

// True when dequantize_row() reads this type.
bool dequantize_supports(uint32_t type);

// Row `row` of W as fp32 (the token embedding lookup). Not for the interleaved types
// (kernels/rows_x8.h): the loader never repacks the token embedding.
void dequantize_row(uint32_t type, const void* w, int cols, int64_t row, float* out);
