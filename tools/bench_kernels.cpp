// Micro-benchmark of the quantized kernels.
//
//   build/bench_kernels [rows=8192] [cols=8192] [threads=all] [types, e.g. q4_0,q8_0 (default all)]
//
// For each weight type: single-token GB/s of weight bytes (vec_dot per row, and matmul_rows with
// n_tokens=1), then matmul_rows with 8 tokens (rows*tokens dots per second and GMAC/s), single
// thread and OpenMP threads (rows split across threads, as the engine does). A read-bandwidth
// baseline is printed first, and a cache-resident run shows the compute ceiling.
// The default matrix (8192x8192) is larger than typical LLCs for every type.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <ctime>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/x86/gemm_avx2.h"
#include "kernels/quant.h"
#include "kernels/rows_x8.h"

namespace {

// Single-thread measurements use the thread's CPU time, so that time the thread spends
// descheduled on a shared machine is not counted; multi-thread ones use wall time.
bool g_cpu_time = true;

double now() {
#if defined(__linux__)
    if (g_cpu_time) {
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
    }
#endif
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best time of repeated runs, each repetition lasting at least min_time / reps.
double best_time(const std::function<void()>& f, double min_time = 0.2, int reps = 5, bool wall = false) {
    g_cpu_time = !wall;
    f();  // warm-up
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        int iters = 0;
        const double t0 = now();
        double t;
        do {
            f();
            ++iters;
            t = now() - t0;
        } while (t < min_time / reps);
        best = std::min(best, t / iters);
    }
    return best;
}

int n_threads_max() {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

// Split [0, rows) across nth threads in multiples of 4 rows.
template <typename F>
void parallel_rows(int rows, int nth, F f) {
#ifdef _OPENMP
#pragma omp parallel num_threads(nth)
    {
        const int ith = omp_get_thread_num(), n = omp_get_num_threads();
        const int per = ((rows + n - 1) / n + 3) / 4 * 4;
        const int r0 = std::min(rows, ith * per), r1 = std::min(rows, r0 + per);
        if (r0 < r1) f(r0, r1);
    }
#else
    (void)nth;
    f(0, rows);
#endif
}

volatile uint64_t g_sink;

double read_bandwidth(size_t bytes, int nth) {
    std::vector<uint64_t> buf(bytes / 8, 1);
    const size_t n = buf.size();
    const double t = best_time([&] {
        uint64_t total = 0;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nth) reduction(+ : total) schedule(static)
#endif
        for (size_t i = 0; i < n; i += 4) total += buf[i] + buf[i + 1] + buf[i + 2] + buf[i + 3];
        g_sink = total;
    }, 0.2, 5, nth > 1);
    (void)nth;
    return double(bytes) / t / 1e9;
}

struct TypeInfo {
    TensorType w;
    const QuantKernels* k;
    matmul_rows_fn mm_scalar;
};

void bench_type(const TypeInfo& ti, int rows, int cols, int nth) {
    const TensorType at = ti.k->act_type;
    const size_t wrb = type_row_bytes(ti.w, cols), arb = type_row_bytes(at, cols);
    // Quantize a few distinct rows and replicate them (content does not change kernel speed).
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.f, 0.02f);
    const int distinct = 64;
    std::vector<uint8_t> W(wrb * size_t(rows));
    std::vector<float> x(static_cast<size_t>(cols));
    for (int r = 0; r < distinct && r < rows; ++r) {
        for (auto& v : x) v = nd(rng);
        ti.k->quantize(x.data(), W.data() + size_t(r) * wrb, cols);
    }
    for (int r = distinct; r < rows; ++r) std::memcpy(W.data() + size_t(r) * wrb, W.data() + size_t(r % distinct) * wrb, wrb);
    const int nt = 8;
    std::vector<uint8_t> A(arb * nt);
    for (int t = 0; t < nt; ++t) {
        for (auto& v : x) v = nd(rng) * 50.f;
        ti.k->quantize_act(x.data(), A.data() + size_t(t) * arb, cols);
    }
    std::vector<float> out(size_t(rows) * nt);
    const double wbytes = double(wrb) * rows;
    const double macs1 = double(rows) * cols;

    std::printf("\n%s  (%d x %d, %.1f MB of weights, %.3f bytes/weight)\n", type_name(ti.w), rows, cols, wbytes / 1e6,
                double(type_block_bytes(ti.w)) / type_block_size(ti.w));
    std::printf("  %-40s %9s %9s %12s\n", "(1 thread: per CPU-second; N threads: wall)", "GB/s", "GMAC/s", "dots/s");
    auto report = [&](const char* name, double t, int tokens) {
        std::printf("  %-40s %9.2f %9.2f %12.3e\n", name, wbytes / t / 1e9, macs1 * tokens / t / 1e9,
                    double(rows) * tokens / t);
    };

    // 1 token
    report("vec_dot per row, 1 thread", best_time([&] {
               for (int r = 0; r < rows; ++r) out[size_t(r)] = ti.k->vec_dot(cols, W.data() + size_t(r) * wrb, A.data());
           }),
           1);
    report("matmul_rows 1 token, 1 thread",
           best_time([&] { ti.k->matmul_rows(W.data(), wrb, A.data(), arb, cols, 1, out.data(), rows, 0, rows); }), 1);
    char name[64];
    if (nth > 1) {
        std::snprintf(name, sizeof name, "matmul_rows 1 token, %d threads", nth);
        report(name, best_time([&] {
                   parallel_rows(rows, nth, [&](int r0, int r1) {
                       ti.k->matmul_rows(W.data(), wrb, A.data(), arb, cols, 1, out.data(), rows, r0, r1);
                   });
               }, 0.2, 5, true),
               1);
    }
    // 8 tokens
    report("matmul_rows 8 tokens, 1 thread",
           best_time([&] { ti.k->matmul_rows(W.data(), wrb, A.data(), arb, cols, nt, out.data(), rows, 0, rows); }), nt);
    if (nth > 1) {
        std::snprintf(name, sizeof name, "matmul_rows 8 tokens, %d threads", nth);
        report(name, best_time([&] {
                   parallel_rows(rows, nth, [&](int r0, int r1) {
                       ti.k->matmul_rows(W.data(), wrb, A.data(), arb, cols, nt, out.data(), rows, r0, r1);
                   });
               }, 0.2, 5, true),
               nt);
    }
    report("vec_dot per row x 8 tokens (untiled)", best_time([&] {
               for (int t = 0; t < nt; ++t)
                   for (int r = 0; r < rows; ++r)
                       out[size_t(t) * rows + r] = ti.k->vec_dot(cols, W.data() + size_t(r) * wrb, A.data() + size_t(t) * arb);
           }),
           nt);
#if defined(HEARTH_ISA_AVX2)
    // Row-interleaved GEMM (kernels/gemm_avx2.h), 8 and 64 tokens, against matmul_rows at 64.
    const matmul_rows_fn gemm = ti.w == TYPE_Q4_0   ? matmul_q4_0_gemm_avx2
                                : ti.w == TYPE_Q8_0 ? matmul_q8_0_gemm_avx2
                                : ti.w == TYPE_Q4_K ? matmul_q4_k_gemm_avx2
#if defined(HEARTH_ISA_AVX512)
                                : ti.w == TYPE_Q6_K ? matmul_q6_k_gemm_avx512  // what matmul_many runs here
#else
                                : ti.w == TYPE_Q6_K ? matmul_q6_k_gemm_avx2
#endif
                                                    : nullptr;
    if (gemm) {
        const int nt64 = 64;
        std::vector<uint8_t> A64(arb * nt64);
        for (int t = 0; t < nt64; ++t) std::memcpy(A64.data() + size_t(t) * arb, A.data() + size_t(t % nt) * arb, arb);
        std::vector<float> out64(size_t(rows) * nt64);
        const int rg = std::min(rows, 1024);  // 64 tokens x all rows would take long
        auto report_rg = [&](const char* nm, double t, int tokens) {
            std::printf("  %-40s %9s %9.2f %12.3e\n", nm, "", double(rg) * cols * tokens / t / 1e9, double(rg) * tokens / t);
        };
        report("gemm 8 tokens, 1 thread",
               best_time([&] { gemm(W.data(), wrb, A.data(), arb, cols, nt, out.data(), rows, 0, rows); }), nt);
        std::snprintf(name, sizeof name, "gemm 64 tokens, %d rows, 1 thread", rg);
        report_rg(name, best_time([&] { gemm(W.data(), wrb, A64.data(), arb, cols, nt64, out64.data(), rows, 0, rg); }), nt64);
        std::snprintf(name, sizeof name, "matmul_rows 64 tokens, %d rows, 1 thr", rg);
        report_rg(name, best_time([&] {
                      ti.k->matmul_rows(W.data(), wrb, A64.data(), arb, cols, nt64, out64.data(), rows, 0, rg);
                  }), nt64);
        if (nth > 1) {
            std::snprintf(name, sizeof name, "gemm 64 tokens, %d rows, %d threads", rg, nth);
            report_rg(name, best_time([&] {
                          parallel_rows(rg, nth, [&](int r0, int r1) {
                              gemm(W.data(), wrb, A64.data(), arb, cols, nt64, out64.data(), rows, r0, r1);
                          });
                      }, 0.2, 5, true), nt64);
        }
    }
#endif
    // Rows interleaved by 8 (kernels/rows_x8.h), as the loader repacks them: the kernels
    // generation uses for Q4_0, Q8_0 and Q4_K.
    if (const uint32_t x8 = x8_type_for(ti.w)) {
        std::vector<uint8_t> W8(W.size());
        repack_rows_to_x8(ti.w, W.data(), W8.data(), rows, cols);
        const matmul_rows_fn mm8 = x8_matmul_kernel(x8);
        report("x8 rows 1 token, 1 thread",
               best_time([&] { mm8(W8.data(), wrb, A.data(), arb, cols, 1, out.data(), rows, 0, rows); }), 1);
        if (nth > 1) {
            std::snprintf(name, sizeof name, "x8 rows 1 token, %d threads", nth);
            report(name, best_time([&] {
                       parallel_rows(rows, nth, [&](int r0, int r1) {
                           mm8(W8.data(), wrb, A.data(), arb, cols, 1, out.data(), rows, r0 / 8 * 8, r1 == rows ? r1 : r1 / 8 * 8);
                       });
                   }, 0.2, 5, true),
                   1);
        }
        // The prompt path (pp): 64 tokens (HEARTH_BENCH_GEMM_TOKENS) on the interleaved rows, through x8_matmul_kernel (which
        // hands them to this build's GEMM for the x8 type), 1 thread and all threads.
        {
            const char* env_nt = std::getenv("HEARTH_BENCH_GEMM_TOKENS");  // default 64
            const int nt64 = env_nt && std::atoi(env_nt) > 0 ? std::atoi(env_nt) : 64, rg = std::min(rows, 1024) / 16 * 16;
            std::vector<uint8_t> A64(arb * nt64);
            for (int t = 0; t < nt64; ++t) std::memcpy(A64.data() + size_t(t) * arb, A.data() + size_t(t % nt) * arb, arb);
            std::vector<float> out64(size_t(rows) * nt64);
            auto report_rg = [&](const char* nm, double t) {
                std::printf("  %-40s %9s %9.2f %12.3e\n", nm, "", double(rg) * cols * nt64 / t / 1e9, double(rg) * nt64 / t);
            };
            std::snprintf(name, sizeof name, "x8 gemm %d tokens, %d rows, 1 thread", nt64, rg);
            report_rg(name, best_time([&] { mm8(W8.data(), wrb, A64.data(), arb, cols, nt64, out64.data(), rows, 0, rg); }));
            if (nth > 1) {
                std::snprintf(name, sizeof name, "x8 gemm %d tokens, %d rows, %d thr", nt64, rg, nth);
                report_rg(name, best_time([&] {
                              parallel_rows(rg, nth, [&](int r0, int r1) {
                                  mm8(W8.data(), wrb, A64.data(), arb, cols, nt64, out64.data(), rows, r0 / 16 * 16,
                                      r1 == rg ? r1 : r1 / 16 * 16);
                              });
                          }, 0.2, 5, true));
            }
        }
        const int rs8 = std::min(rows, 128);
        const double t8c = best_time([&] { mm8(W8.data(), wrb, A.data(), arb, cols, 1, out.data(), rows, 0, rs8); });
        std::printf("  x8 rows cache-resident %d rows, 1 thread: 1 token %.2f GB/s\n", rs8, double(wrb) * rs8 / t8c / 1e9);
    }
    // Cache-resident (first 128 rows, ~L2 sized): compute ceiling of the kernels.
    const int rs = std::min(rows, 128);
    const double sbytes = double(wrb) * rs;
    const double t1 = best_time([&] { ti.k->matmul_rows(W.data(), wrb, A.data(), arb, cols, 1, out.data(), rows, 0, rs); });
    const double t8 = best_time([&] { ti.k->matmul_rows(W.data(), wrb, A.data(), arb, cols, nt, out.data(), rows, 0, rs); });
    const double ts = best_time([&] { ti.mm_scalar(W.data(), wrb, A.data(), arb, cols, nt, out.data(), rows, 0, rs); }, 0.1, 2);
    std::printf("  cache-resident %d rows (%.2f MB), 1 thread: 1 token %.2f GB/s; 8 tokens %.2f GMAC/s"
                " (scalar 8 tokens %.2f GMAC/s)\n",
                rs, sbytes / 1e6, sbytes / t1 / 1e9, double(rs) * cols * nt / t8 / 1e9,
                double(rs) * cols * nt / ts / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
    const int rows = argc > 1 ? std::atoi(argv[1]) : 8192;
    const int cols = argc > 2 ? std::atoi(argv[2]) : 8192;
    const int nth = argc > 3 ? std::atoi(argv[3]) : n_threads_max();
    if (rows <= 0 || cols <= 0 || cols % 256 != 0) {
        std::fprintf(stderr, "usage: %s [rows] [cols (multiple of 256)] [threads]\n", argv[0]);
        return 1;
    }
    std::printf("hearth quant kernels: %s, %d threads\n", HEARTH_ISA_NAME, nth);
    std::printf("read bandwidth (256 MB): 1 thread %.2f GB/s", read_bandwidth(size_t(256) << 20, 1));
    if (nth > 1) std::printf(", %d threads %.2f GB/s", nth, read_bandwidth(size_t(256) << 20, nth));
    std::printf("\n");
    const TypeInfo types[] = {
        {TYPE_Q4_0, quant_kernels(TYPE_Q4_0), matmul_q4_0_rows_scalar},
        {TYPE_Q8_0, quant_kernels(TYPE_Q8_0), matmul_q8_0_rows_scalar},
        {TYPE_Q4_K, quant_kernels(TYPE_Q4_K), matmul_q4_k_rows_scalar},
        {TYPE_Q6_K, quant_kernels(TYPE_Q6_K), matmul_q6_k_rows_scalar},
    };
    const char* only = argc > 4 ? argv[4] : nullptr;
    for (const TypeInfo& ti : types)
        if (!only || std::strstr(only, type_name(ti.w))) bench_type(ti, rows, cols, nth);
    return 0;
}
