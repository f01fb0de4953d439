#include "kernels/matmul.h"

#include <omp.h>
#include <vector>

#include "kernels/ref/dequant_gguf.h"
#include "kernels/dot_float.h"
#include "kernels/matmul_float.h"
#include "kernels/fp16.h"
#include "kernels/x86/gemm_avx2.h"
#include "kernels/quant.h"
#include "kernels/quant_types.h"
#include "kernels/rows_x8.h"

bool matmul_supports(uint32_t type, Layout layout) {
    if (layout == Layout::rows_x8) return x8_type_for(type) != 0 && x8_matmul_kernel(x8_type_for(type)) != nullptr;
    if (type == TYPE_F32 || type == TYPE_F16) return true;
    return type != TYPE_Q8_K && type_plain(type) == type && quant_kernels(type) != nullptr;
}

void dequantize_matrix_row(uint32_t type, Layout layout, const void* w, int64_t rows, int cols, int64_t row, float* out) {
    if (layout == Layout::rows_x8) dequantize_x8_row(type, w, rows, cols, row, out);
    else dequantize_row(type, w, cols, row, out);
}

bool dequantize_supports(uint32_t type) {
    // Interleaved rows need their matrix's row count: dequantize_x8_row (kernels/rows_x8.h).
    return type == TYPE_F32 || type == TYPE_F16 || type == TYPE_BF16 || (type != TYPE_Q8_K && quant_kernels(type) != nullptr) ||
           gguf_dequantizer(type) != nullptr;
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
            const dequantize_row_fn f = k ? k->dequantize : gguf_dequantizer(type);
            const size_t row_bytes = type_row_bytes(type, cols);
            f(static_cast<const uint8_t*>(w) + row * row_bytes, out, cols);
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

namespace {

// One matrix of a matmul_many call, resolved to its kernel.
struct Job {
    MatmulJob m;
    const QuantKernels* k;  // null for f32 / f16
    matmul_rows_fn mm;
    size_t w_row_bytes, a_row_bytes;
    uint8_t* act;  // this job's quantized activations (shared with jobs of its activation type)
};

// A piece of work: rows [r0, r1) of job j.
struct Piece {
    int j, r0, r1;
};

// Rows [r0, r1) of one job, for all tokens.
void run_rows(const Job& J, int cols, const float* x, int n_tokens, int r0, int r1) {
    if (r0 >= r1) return;
    switch (J.m.type) {
        case TYPE_F32:
            matmul_f32_rows(static_cast<const float*>(J.m.w), cols, x, n_tokens, J.m.out, J.m.rows, r0, r1);
            break;
        case TYPE_F16:
            matmul_f16_rows(static_cast<const uint16_t*>(J.m.w), cols, x, n_tokens, J.m.out, J.m.rows, r0, r1);
            break;
        default:
            J.mm(J.m.w, J.w_row_bytes, J.act, J.a_row_bytes, cols, n_tokens, J.m.out, J.m.rows, r0, r1);
            break;
    }
}

// Weight bytes per piece of single-token work: small enough that a thread that was descheduled
// for a while leaves little for the other to wait on, large enough that the threads stream long
// runs. On the AMD EPYC machine, pieces of 96 KB left generation at ~60% of the 2-thread read
// bandwidth; 384 KB to 2 MB ran 20-25% faster (TinyLlama q4_0/q8_0/q4_k_m, Llama-2-7B q4_0;
// docs/benchmarks.md), 4 MB slower again (too few pieces to balance TinyLlama's matrices). Why
// was not measured (the VM has no hardware counters); a likely part is that a piece's
// prefetches, software and hardware, run past its end into rows the other thread reads.
constexpr size_t kPieceBytes = 512 << 10;

}  // namespace

// Single-token calls (generation) are memory-bound and short: the rows of all jobs are cut
// into pieces of ~kPieceBytes that the threads take on demand, so a thread that runs slower
// (a shared machine's vCPUs do not run evenly) does not hold the other at the final barrier.
// Multi-token calls are compute-bound and pay per call to pack their activations, so each
// thread takes one equal share of every job's rows, all in one parallel region.
void matmul_many(const MatmulJob* jobs, int n_jobs, int cols, const float* x, int n_tokens) {
    static thread_local std::vector<Job> J;
    static thread_local std::vector<Piece> pieces;
    static thread_local std::vector<uint8_t> act;
    J.assign(size_t(n_jobs), Job{});
    // Quantized activations, once per activation type among the jobs: quant_by[1] is the
    // first job wanting Q8_K, quant_by[0] the first wanting Q8_0.
    size_t act_bytes[2] = {0, 0};
    const Job* quant_by[2] = {nullptr, nullptr};
    for (int j = 0; j < n_jobs; j++) {
        Job& b = J[size_t(j)];
        b.m = jobs[j];
        b.w_row_bytes = type_row_bytes(b.m.type, cols);
        if (b.m.type == TYPE_F32 || b.m.type == TYPE_F16) continue;
        // Interleaved rows: the plain type's activations, their own kernel (any token count).
        b.k = quant_kernels(b.m.type);
        b.mm = b.m.layout == Layout::rows_x8 ? x8_matmul_kernel(x8_type_for(b.m.type)) : b.k->matmul_rows;
#if defined(HEARTH_ISA_AVX2)
        // Prompt-sized batches: the row-interleaved GEMM (kernels/gemm_avx2.h).
        const int min_tokens = b.m.layout == Layout::rows ? gemm_min_tokens(b.m.type) : 0;
        if (min_tokens > 0 && n_tokens >= min_tokens) {
            switch (b.m.type) {
                case TYPE_Q4_0: b.mm = matmul_q4_0_gemm_avx2; break;
                case TYPE_Q8_0: b.mm = matmul_q8_0_gemm_avx2; break;
                case TYPE_Q4_K: b.mm = matmul_q4_k_gemm_avx2; break;
#if defined(HEARTH_ISA_AVX512)
                case TYPE_Q6_K: b.mm = matmul_q6_k_gemm_avx512; break;  // zmm tiles (gemm_min_tokens: 16)
#else
                case TYPE_Q6_K: b.mm = matmul_q6_k_gemm_avx2; break;
#endif
            }
        }
#endif
        b.a_row_bytes = type_row_bytes(b.k->act_type, cols);
        const int which = b.k->act_type == TYPE_Q8_K;
        act_bytes[which] = b.a_row_bytes * size_t(n_tokens);
        if (!quant_by[which]) quant_by[which] = &b;
    }
    if (act.size() < act_bytes[0] + act_bytes[1]) act.resize(act_bytes[0] + act_bytes[1]);
    for (Job& b : J)
        if (b.k) b.act = act.data() + (b.k->act_type == TYPE_Q8_K ? act_bytes[0] : 0);
    // The jobs that quantize, packed for the loop below.
    const Job* quant[2];
    int n_quant = 0;
    for (const Job* q : quant_by)
        if (q) quant[n_quant++] = q;

    pieces.clear();
    if (n_tokens == 1) {
        for (int j = 0; j < n_jobs; j++) {
            int step = int(std::max<size_t>(1, kPieceBytes / std::max<size_t>(J[size_t(j)].w_row_bytes, 1)));
            step = std::max(16, step / 16 * 16);
            for (int r = 0; r < jobs[j].rows; r += step) pieces.push_back({j, r, std::min(jobs[j].rows, r + step)});
        }
    }
    // The buffers above are the calling thread's; the team reaches them through these.
    const Job* jb = J.data();
    const Piece* pc = pieces.data();
    const int n_pieces = int(pieces.size());

#pragma omp parallel
    {
        // Quantize the activations once per activation type in use (rows split across threads).
#pragma omp for schedule(static)
        for (int i = 0; i < n_quant * n_tokens; i++) {
            const Job& q = *quant[i / n_tokens];
            const int t = i % n_tokens;
            q.k->quantize_act(x + int64_t(t) * cols, q.act + q.a_row_bytes * t, cols);
        }
        if (n_tokens == 1) {
#pragma omp for schedule(dynamic, 1)
            for (int p = 0; p < n_pieces; p++) run_rows(jb[pc[p].j], cols, x, n_tokens, pc[p].r0, pc[p].r1);
        } else {
            for (int j = 0; j < n_jobs; j++) {
                int r0, r1;
                thread_rows(jobs[j].rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
                run_rows(jb[j], cols, x, n_tokens, r0, r1);
            }
        }
    }
}

void matmul(float* out, uint32_t type, Layout layout, const void* w, int rows, int cols, const float* x, int n_tokens) {
    const MatmulJob job{out, type, layout, w, rows};
    matmul_many(&job, 1, cols, x, n_tokens);
}
