// Matrix × activations for every weight type run supports, threaded with OpenMP.
#pragma once
#include <cstdint>

#include "kernels/quant_types.h"

namespace hearth {

// True when the kernel table (kernels/table.h) has a kernel for weights of this type in this layout.
bool matmul_supports(uint32_t type, Layout layout);

// out[t * rows + r] = dot(row r of W, x + t * cols) for t < n_tokens, r < rows.
// W is `rows` rows of `cols` elements of `type`, in `layout`, stored contiguously.
// Rows are split across the OpenMP threads in chunks of whole cache lines of `out`.
void matmul(float* out, uint32_t type, Layout layout, const void* w, int rows, int cols, const float* x, int n_tokens);

// One matrix of a matmul_many call: out[t * rows + r] = dot(row r of w, x + t * cols).
struct MatmulJob {
    float* out;
    uint32_t type;
    Layout layout;
    const void* w;
    int rows;
};

// Several matrices applied to the same activations (q, k, v; gate, up) in one parallel
// region: the activations are quantized once per activation type among the jobs' types
// (type_vec_dot_type; fp32 ones are used as they are), each job runs the kernel the table picks
// for its (type, layout, n_tokens), and the threads meet at one barrier at the end instead of
// one per matrix.
// token_bits: every token gets the bits it gets alone (a batch of generated tokens and drafts,
// model/forward.cpp), on the kernels the table names for the job's type (batch_token_bits,
// kernels/table.h).
void matmul_many(const MatmulJob* jobs, int n_jobs, int cols, const float* x, int n_tokens, bool token_bits = false);

// The kernel table's row matmul_many runs for weights of (type, layout) at n_tokens tokens
// (nullptr: none).
struct KernelRow;
const KernelRow* matmul_kernel(uint32_t type, Layout layout, int n_tokens, bool token_bits);

// True when dequantize_row() reads this type.
bool dequantize_supports(uint32_t type);

// Row `row` of W (rows in the plain layout) as fp32: the token embedding lookup, which the
// loader never repacks.
void dequantize_row(uint32_t type, const void* w, int cols, int64_t row, float* out);
// Row `row` of a rows x cols matrix in either layout, as fp32 (converting a stored matrix).
void dequantize_matrix_row(uint32_t type, Layout layout, const void* w, int64_t rows, int cols, int64_t row, float* out);

}  // namespace hearth
