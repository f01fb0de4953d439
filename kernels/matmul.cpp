#include "kernels/matmul.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/parallel.h"
#include "kernels/quant_types.h"
#include "kernels/rows_x8.h"
#include "kernels/table.h"

namespace hearth {

bool matmul_supports(uint32_t type, Layout layout) { return pick_kernel(KernelOp::matmul, type, layout, 1) != nullptr; }

void dequantize_matrix_row(uint32_t type, Layout layout, const void* w, int64_t rows, int cols, int64_t row, float* out) {
    if (layout == Layout::rows_x8)
        dequantize_x8_row(type, w, rows, cols, row, out);
    else
        dequantize_row(type, w, cols, row, out);
}

// Interleaved rows need their matrix's row count: dequantize_x8_row (kernels/rows_x8.h).
bool dequantize_supports(uint32_t type) { return type_is_known(type) && type_traits(type)->dequantize != nullptr; }

void dequantize_row(uint32_t type, const void* w, int cols, int64_t row, float* out) {
    type_traits(type)->dequantize(static_cast<const uint8_t*>(w) + size_t(row) * type_row_bytes(type, cols), out, cols);
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

// One matrix of a matmul_many call, resolved to its kernels: `mm` for the rows of its layout, and
// for interleaved rows `tail` for the plain rows after the last whole group.
struct Job {
    MatmulJob m;
    matmul_rows_fn mm, tail;
    size_t w_row_bytes, a_row_bytes;
    const uint8_t* act;  // this job's activations: x itself (fp32), or quantized once per activation type
};

// One activation type among the jobs: quantized by `quantize` (nullptr for fp32: x as it is)
// into `bytes` at `offset` of the buffer.
struct ActType {
    uint32_t type;
    quantize_row_fn quantize;
    size_t row_bytes, offset;
};

// A piece of work: rows [r0, r1) of job j.
struct Piece {
    int j, r0, r1;
};

// Rows [r0, r1) of one job, for all tokens. Interleaved rows: the whole groups to the job's kernel,
// the plain tail (r0 is a multiple of 8: thread shares and pieces are multiples of 16) to `tail`.
void run_rows(const Job& J, int cols, int n_tokens, int r0, int r1) {
    if (r0 >= r1) return;
    const int g1 = J.tail ? r0 + (r1 - r0) / 8 * 8 : r1;
    if (g1 > r0) J.mm(J.m.w, J.w_row_bytes, J.act, J.a_row_bytes, cols, n_tokens, J.m.out, J.m.rows, r0, g1);
    if (g1 < r1) J.tail(J.m.w, J.w_row_bytes, J.act, J.a_row_bytes, cols, n_tokens, J.m.out, J.m.rows, g1, r1);
}

// Weight bytes per piece of single-token work: small enough that a thread that was descheduled
// for a while leaves little for the other to wait on, large enough that the threads stream long
// runs. On the AMD EPYC machine, pieces of 96 KB left generation at ~60% of the 2-thread read
// bandwidth; 384 KB to 2 MB ran 20-25% faster (TinyLlama q4_0/q8_0/q4_k_m, Llama-2-7B q4_0;
// docs/benchmarks.md), 4 MB slower again (too few pieces to balance TinyLlama's matrices). Why
// was not measured (the VM has no hardware counters); a likely part is that a piece's
// prefetches, software and hardware, run past its end into rows the other thread reads.
constexpr size_t kPieceBytes = 512 << 10;
// The last pieces of a call are smaller, so that the threads finish it closer together: the one
// that takes the last large piece keeps the others waiting for up to its whole length. On the
// AMD EPYC, tokens alternated within one process, this made each token 0.7-1.4% faster
// (TinyLlama q4_0, q8_0, q4_k_m, Llama-2-7B q4_0; docs/benchmarks.md).
constexpr size_t kTailBytes = 1 << 20, kTailPieceBytes = 128 << 10;

}  // namespace

const KernelRow* matmul_kernel(uint32_t type, Layout layout, int n_tokens, bool token_bits) {
    if (!token_bits) return pick_kernel(KernelOp::matmul, type, layout, n_tokens);
    switch (batch_token_bits(type, layout)) {
        case BatchTokenBits::batch_rows:
            return pick_kernel(KernelOp::matmul, type, layout, std::min(n_tokens, kFewTokenRowsBelow - 1));
        case BatchTokenBits::one_token_row: break;
    }
    return pick_kernel(KernelOp::matmul, type, layout, 1);
}

// Single-token calls (generation) are memory-bound and short: the rows of all jobs are cut
// into pieces of ~kPieceBytes that the threads take on demand, so a thread that runs slower
// (a shared machine's vCPUs do not run evenly) does not hold the other at the final barrier.
// Multi-token calls are compute-bound and pay per call to pack their activations, so each
// thread takes one equal share of every job's rows, all in one parallel region. Small batches
// (2-16 tokens) on the few-token kernel are memory-bound like one token, but the pieces measured
// no different for them (TinyLlama q4_0 / q8_0, 2 threads, Sapphire Rapids Xeon at load 4-8,
// medians of 5 alternated runs, equal shares / pieces: q4_0 pp2 19.2 / 18.9 tok/s, pp4 44.0 /
// 41.9, pp8 76.2 / 76.1; q8_0 pp2 12.6 / 16.1, pp4 40.6 / 42.2, pp8 69.6 / 74.6), so they stay
// with one token.
void matmul_many(const MatmulJob* jobs, int n_jobs, int cols, const float* x, int n_tokens, bool token_bits) {
    static thread_local std::vector<Job> J;
    static thread_local std::vector<ActType> acts;
    static thread_local std::vector<Piece> pieces;
    static thread_local std::vector<uint8_t> act;
    J.assign(size_t(n_jobs), Job{});
    acts.clear();
    size_t act_bytes = 0;
    for (int j = 0; j < n_jobs; j++) {
        Job& b = J[size_t(j)];
        b.m = jobs[j];
        b.w_row_bytes = type_row_bytes(b.m.type, cols);
        b.mm = matmul_kernel(b.m.type, b.m.layout, n_tokens, token_bits)->matmul;
        if (b.m.layout == Layout::rows_x8) b.tail = matmul_kernel(b.m.type, Layout::rows, n_tokens, token_bits)->matmul;
        const uint32_t at = type_vec_dot_type(b.m.type);
        b.a_row_bytes = type_row_bytes(at, cols);
        if (std::none_of(acts.begin(), acts.end(), [&](const ActType& a) { return a.type == at; })) {
            const bool fp32 = at == TYPE_F32;
            acts.push_back(
                {at, fp32 ? nullptr : pick_kernel(KernelOp::quantize, at, Layout::rows, 1)->quantize, b.a_row_bytes, act_bytes});
            if (!fp32) act_bytes += b.a_row_bytes * size_t(n_tokens);
        }
    }
    if (act.size() < act_bytes) act.resize(act_bytes);
    for (Job& b : J)
        for (const ActType& a : acts)
            if (a.type == type_vec_dot_type(b.m.type))
                b.act = a.quantize ? act.data() + a.offset : reinterpret_cast<const uint8_t*>(x);
    // The activation types to quantize, packed for the loop below.
    static thread_local std::vector<ActType> quant;
    quant.clear();
    for (const ActType& a : acts)
        if (a.quantize) quant.push_back(a);
    const ActType* qa = quant.data();
    const int n_quant = int(quant.size());
    uint8_t* act_base = act.data();

    pieces.clear();
    if (n_tokens == 1) {
        // Pieces of kPieceBytes, then the call's last kTailBytes in pieces of kTailPieceBytes.
        size_t left = 0;
        for (int j = 0; j < n_jobs; j++) left += J[size_t(j)].w_row_bytes * size_t(jobs[j].rows);
        for (int j = 0; j < n_jobs; j++) {
            const size_t row_bytes = std::max<size_t>(J[size_t(j)].w_row_bytes, 1);
            for (int r = 0; r < jobs[j].rows;) {
                const size_t bytes = left > kTailBytes ? std::min(kPieceBytes, left - kTailBytes) : kTailPieceBytes;
                const int step = std::max(16, int(std::max<size_t>(1, bytes / row_bytes)) / 16 * 16);
                const int r1 = std::min(jobs[j].rows, r + step);
                pieces.push_back({j, r, r1});
                left -= std::min(left, row_bytes * size_t(r1 - r));
                r = r1;
            }
        }
    }
    // The buffers above are the calling thread's; the team reaches them through these.
    const Job* jb = J.data();
    const Piece* pc = pieces.data();
    const int n_pieces = int(pieces.size());

    // A kernel's thread_scratch may throw std::bad_alloc on any thread: carried out of the region.
    ParallelErrors errors;
#pragma omp parallel
    {
        // Quantize the activations once per activation type in use (rows split across threads).
#pragma omp for schedule(static)
        for (int i = 0; i < n_quant * n_tokens; i++)
            errors.run([&] {
                const ActType& q = qa[i / n_tokens];
                const int t = i % n_tokens;
                q.quantize(x + int64_t(t) * cols, act_base + q.offset + q.row_bytes * t, cols);
            });
        if (n_tokens == 1) {
#pragma omp for schedule(dynamic, 1)
            for (int p = 0; p < n_pieces; p++) errors.run([&] { run_rows(jb[pc[p].j], cols, n_tokens, pc[p].r0, pc[p].r1); });
        } else {
            for (int j = 0; j < n_jobs; j++) {
                int r0, r1;
                thread_rows(jobs[j].rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
                errors.run([&] { run_rows(jb[j], cols, n_tokens, r0, r1); });
            }
        }
    }
    errors.rethrow();
}

void matmul(float* out, uint32_t type, Layout layout, const void* w, int rows, int cols, const float* x, int n_tokens) {
    const MatmulJob job{out, type, layout, w, rows};
    matmul_many(&job, 1, cols, x, n_tokens);
}

}  // namespace hearth
