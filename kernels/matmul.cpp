#include "matmul.h"

#include <omp.h>
#include <vector>

#include "dot_float.h"
#include "matmul_float.h"
#include "fp16.h"
#include "gemm_avx2.h"
#include "quant.h"
#include "quant_types.h"

bool matmul_supports(uint32_t type) {
    return type == TYPE_F32 || type == TYPE_F16 || (type != TYPE_Q8_K && quant_kernels(type) != nullptr);
}

void dequantize_row(uint32_t type, const void* w, int cols, int64_t row, float* out) {
    switch (type) {
        case TYPE_F32: {
            const float* p = static_cast<const float*>(w) + row * cols;
            for (int i = 0; i < cols; i++) out[i] = p[i];
            break;
        }
        case TYPE_F16: f16_to_f32_row(static_cast<const uint16_t*>(w) + row * cols, out, cols); break;
        case TYPE_BF16: {
            const uint16_t* p = static_cast<const uint16_t*>(w) + row * cols;
            for (int i = 0; i < cols; i++) out[i] = bf16_to_fp32(p[i]);
            break;
        }
        default: {
            const QuantKernels* k = quant_kernels(type);
            const size_t row_bytes = type_row_bytes(type, cols);
            k->dequantize(static_cast<const uint8_t*>(w) + row * row_bytes, out, cols);
            break;
        }
    }
}

// The share of rows [r0, r1) of thread ith out of nth. Chunks are whole multiples of 16
// rows, so that no two threads write into the same 64-byte line of `out`.
static void thread_rows(int rows, int ith, int nth, int* r0, int* r1) {
    int chunk = (rows + nth - 1) / nth;
    chunk = (chunk + 15) / 16 * 16;
    *r0 = std::min(rows, ith * chunk);
    *r1 = std::min(rows, *r0 + chunk);
}

// Quantized weights: the activations are quantized once (to Q8_0 or Q8_K blocks, as the
// kernels want), shared by all threads, then each thread runs the tiled kernel on its rows.
static void matmul_quantized(float* out, uint32_t type, const void* w, int rows, int cols, const float* x, int n_tokens) {
    const QuantKernels* k = quant_kernels(type);
    const size_t a_row_bytes = type_row_bytes(k->act_type, cols), w_row_bytes = type_row_bytes(type, cols);
    static thread_local std::vector<uint8_t> act;
    if (act.size() < a_row_bytes * n_tokens) act.resize(a_row_bytes * n_tokens);
    uint8_t* a = act.data();
    matmul_rows_fn mm = k->matmul_rows;
#if defined(HEARTH_GEMM_AVX2)
    // Prompt-sized batches: the row-interleaved GEMM (kernels/gemm_avx2.h).
    if (n_tokens >= kGemmMinTokens) {
        if (type == TYPE_Q4_0) mm = matmul_q4_0_gemm_avx2;
        else if (type == TYPE_Q8_0) mm = matmul_q8_0_gemm_avx2;
    }
#endif
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int t = 0; t < n_tokens; t++) k->quantize_act(x + int64_t(t) * cols, a + a_row_bytes * t, cols);
        int r0, r1;
        thread_rows(rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
        if (r0 < r1) mm(w, w_row_bytes, a, a_row_bytes, cols, n_tokens, out, rows, r0, r1);
    }
}

void matmul(float* out, uint32_t type, const void* w, int rows, int cols, const float* x, int n_tokens) {
    if (type != TYPE_F32 && type != TYPE_F16) {
        matmul_quantized(out, type, w, rows, cols, x, n_tokens);
        return;
    }
#pragma omp parallel
    {
        int r0, r1;
        thread_rows(rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
        switch (type) {
            case TYPE_F32: matmul_f32_rows(static_cast<const float*>(w), cols, x, n_tokens, out, rows, r0, r1); break;
            case TYPE_F16: matmul_f16_rows(static_cast<const uint16_t*>(w), cols, x, n_tokens, out, rows, r0, r1); break;
        }
    }
}
