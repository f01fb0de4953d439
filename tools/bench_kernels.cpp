// Micro-benchmark of the kernel table (kernels/table.h): every row this build and CPU can run, timed
// on the same weights, so that rows of one (type, layout) can be set against each other and the
// table's min_tokens thresholds checked. Run by hand (docs/benchmarks.md); make bench does not.
//
//   build/bench_kernels [rows=8192] [cols=8192] [threads=all] [types, e.g. q4_0,q8_0 (default q4_0,q8_0,q4_K,q6_K)]
//
// HEARTH_BENCH_ROWS=TEXT times only the rows whose name contains TEXT (e.g. "x8 avx512").
//
// Per weight type, a read-bandwidth baseline first, then per matmul row (both layouts):
//   1 token, all rows: GB/s of weight bytes, 1 thread and N threads (generation is memory-bound);
//   F tokens, all rows, 1 thread and N threads: GB/s of weight bytes, for each F of
//   HEARTH_BENCH_FEW_TOKENS (default 2,4,8,16: small batches, e.g. a server's conversations
//   decoded together, are memory-bound like one token while a kernel reads each weight once for
//   all of them; on N threads from a matrix larger than the LLC, whether a kernel's compute
//   and its reads from memory overlap);
//   8 and G tokens (G = HEARTH_BENCH_GEMM_TOKENS, default 64) on the first 1024 rows: GMAC/s,
//   1 thread, and G tokens on N threads (the prompt is compute-bound);
// and a '*' on the figures of the row pick_kernel takes at that token count. 1-thread figures are
// per CPU-second of the thread (time descheduled on a shared machine does not count), N-thread
// ones per wall second. Then each activation quantizer row, GB/s of fp32 input.
// The default matrix (8192x8192) is larger than typical LLCs for every type.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <strings.h>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/isa.h"
#include "kernels/quant_types.h"
#include "kernels/rows_x8.h"
#include "kernels/table.h"

using namespace hearth;

namespace {

// Single-thread measurements use the thread's CPU time; multi-thread ones wall time.
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
double best_time(const std::function<void()>& f, bool wall, double min_time = 0.2, int reps = 5) {
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

// [0, rows) split across nth threads in multiples of 16 rows (whole groups of interleaved rows),
// as matmul splits them.
void parallel_rows(int rows, int nth, const std::function<void(int, int)>& f) {
#pragma omp parallel num_threads(nth)
    {
        const int n = omp_get_num_threads(), per = ((rows + n - 1) / n + 15) / 16 * 16;
        const int r0 = std::min(rows, omp_get_thread_num() * per), r1 = std::min(rows, r0 + per);
        if (r0 < r1) f(r0, r1);
    }
}

volatile uint64_t g_sink;

double read_bandwidth(size_t bytes, int nth) {
    std::vector<uint64_t> buf(bytes / 8, 1);
    const size_t n = buf.size();
    const double t = best_time(
        [&] {
            uint64_t total = 0;
#pragma omp parallel for num_threads(nth) reduction(+ : total) schedule(static)
            for (size_t i = 0; i < n; i += 4) total += buf[i] + buf[i + 1] + buf[i + 2] + buf[i + 3];
            g_sink = total;
        },
        nth > 1);
    return double(bytes) / t / 1e9;
}

// A figure, starred when pick_kernel takes this row at n_tokens.
void cell(const KernelRow& row, int n_tokens, double value) {
    const bool picked = pick_kernel(KernelOp::matmul, row.type, row.layout, n_tokens) == &row;
    std::printf(" %8.2f%c", value, picked ? '*' : ' ');
}

void bench_type(uint32_t type, int rows, int cols, int nth, int gemm_tokens, const std::vector<int>& few) {
    const uint32_t at = type_vec_dot_type(type);
    const size_t wrb = type_row_bytes(type, cols), arb = type_row_bytes(at, cols);
    // A few distinct rows replicated (content does not change a kernel's speed).
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.f, 0.02f);
    const int distinct = 64;
    std::vector<uint8_t> w(wrb * size_t(rows)), w_x8;
    int max_tokens = gemm_tokens;
    for (int f : few) max_tokens = std::max(max_tokens, f);
    std::vector<float> x(size_t(cols) * max_tokens);
    for (int r = 0; r < distinct && r < rows; ++r) {
        for (int c = 0; c < cols; c++) x[size_t(c)] = nd(rng);
        if (type_traits(type)->quantize) {
            type_traits(type)->quantize(x.data(), w.data() + size_t(r) * wrb, cols);
            continue;
        }
        // A type hearth reads but does not write (q4_1, q5_0, ...): random bytes, and the first two
        // fp16 fields of each block (its scale, and Q4_1 / Q5_1's offset) ordinary numbers.
        uint8_t* row = w.data() + size_t(r) * wrb;
        for (size_t i = 0; i < wrb; i++) row[i] = uint8_t(rng());
        const uint16_t h = fp32_to_fp16(0.01f);
        for (size_t b = 0; b < wrb; b += type_block_bytes(type)) std::memcpy(row + b, &h, 2), std::memcpy(row + b + 2, &h, 2);
    }
    for (int r = distinct; r < rows; ++r) std::memcpy(w.data() + size_t(r) * wrb, w.data() + size_t(r % distinct) * wrb, wrb);
    if (type_traits(type)->x8_head_bytes > 0) {
        w_x8.resize(w.size());
        repack_rows_to_x8(type, w.data(), w_x8.data(), rows, cols);
    }
    // Activations as matmul hands them over: fp32 for the float types, else quantized.
    for (float& v : x) v = nd(rng) * 50.f;
    std::vector<uint8_t> a(arb * size_t(max_tokens));
    if (at == TYPE_F32)
        std::memcpy(a.data(), x.data(), a.size());
    else
        for (int t = 0; t < max_tokens; t++) type_traits(at)->quantize(&x[size_t(t) * cols], &a[size_t(t) * arb], cols);
    std::vector<float> out(size_t(rows) * max_tokens);

    const double wbytes = double(wrb) * rows;
    const int rg = std::min(rows, 1024) / 16 * 16;  // rows of the multi-token runs: G tokens x all rows would take long
    std::printf("\n%s  (%d x %d, %.1f MB of weights, %.3f bytes/weight); 1 token: GB/s, %d rows; 8, %d tokens: GMAC/s, %d rows\n",
                type_name(type), rows, cols, wbytes / 1e6, double(type_block_bytes(type)) / type_block_size(type), rows,
                gemm_tokens, rg);
    std::printf("  %-32s %9s %9s", "row", "1t 1thr", "1t Nthr");
    for (int f : few) std::printf(" %6dt 1 %6dt N", f, f);
    std::printf(" %9s %9s %9s\n", "8t 1thr", "Gt 1thr", "Gt Nthr");
    int n_rows = 0;
    const KernelRow* table = kernel_rows(&n_rows);
    for (int i = 0; i < n_rows; i++) {
        const KernelRow& row = table[i];
        if (row.op != KernelOp::matmul || row.type != type || !kernel_row_runs_here(row)) continue;
        if (const char* only = std::getenv("HEARTH_BENCH_ROWS"); only && kernel_row_name(row).find(only) == std::string::npos)
            continue;
        const bool x8 = row.layout == Layout::rows_x8;
        const uint8_t* W = x8 ? w_x8.data() : w.data();
        const int all = x8 ? rows / 8 * 8 : rows;  // interleaved kernels take whole groups
        auto mm = [&](int n_tokens, int r0, int r1) {
            row.matmul(W, wrb, a.data(), arb, cols, n_tokens, out.data(), rows, r0, r1);
        };
        auto gmacs = [&](int n_tokens, double t) { return double(rg) * cols * n_tokens / t / 1e9; };
        std::printf("  %-32s", kernel_row_name(row).c_str());
        // GB/s of weights, all rows x n_tokens, on 1 thread (CPU time) and on nth (wall time).
        auto gbs_1thr = [&](int n_tokens) { return double(wrb) * all / best_time([&] { mm(n_tokens, 0, all); }, false) / 1e9; };
        auto gbs_nthr = [&](int n_tokens) {
            return double(wrb) * all /
                   best_time([&] { parallel_rows(all, nth, [&](int r0, int r1) { mm(n_tokens, r0, r1); }); }, true) / 1e9;
        };
        cell(row, 1, gbs_1thr(1));
        cell(row, 1, gbs_nthr(1));
        for (int f : few) {
            cell(row, f, gbs_1thr(f));
            cell(row, f, gbs_nthr(f));
        }
        cell(row, 8, gmacs(8, best_time([&] { mm(8, 0, rg); }, false)));
        cell(row, gemm_tokens, gmacs(gemm_tokens, best_time([&] { mm(gemm_tokens, 0, rg); }, false)));
        cell(row, gemm_tokens,
             gmacs(gemm_tokens,
                   best_time([&] { parallel_rows(rg, nth, [&](int r0, int r1) { mm(gemm_tokens, r0, r1); }); }, true)));
        std::printf("\n");
    }
}

void bench_quantizers(int cols) {
    std::vector<float> x(static_cast<size_t>(cols));
    std::mt19937 rng(2);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (float& v : x) v = nd(rng);
    std::printf("\nactivation quantizers (%d elements, 1 thread): GB/s of fp32 input\n", cols);
    int n_rows = 0;
    const KernelRow* table = kernel_rows(&n_rows);
    for (int i = 0; i < n_rows; i++) {
        const KernelRow& row = table[i];
        if (row.op != KernelOp::quantize || !kernel_row_available(row) || cols % type_block_size(row.type) != 0) continue;
        std::vector<uint8_t> q(type_row_bytes(row.type, cols));
        const double t = best_time([&] { row.quantize(x.data(), q.data(), cols); }, false);
        std::printf("  %-32s %9.2f\n", kernel_row_name(row).c_str(), 4.0 * cols / t / 1e9);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const int rows = argc > 1 ? std::atoi(argv[1]) : 8192;
    const int cols = argc > 2 ? std::atoi(argv[2]) : 8192;
    const int nth = argc > 3 ? std::atoi(argv[3]) : omp_get_max_threads();
    const std::string types = argc > 4 ? argv[4] : "q4_0,q8_0,q4_K,q6_K";
    const char* env_gemm = std::getenv("HEARTH_BENCH_GEMM_TOKENS");
    const int gemm_tokens = env_gemm && std::atoi(env_gemm) > 0 ? std::atoi(env_gemm) : 64;
    const char* env_few = std::getenv("HEARTH_BENCH_FEW_TOKENS");
    std::vector<int> few;
    for (const char* p = env_few ? env_few : "2,4,8,16"; *p;) {
        char* end = nullptr;
        const long f = std::strtol(p, &end, 10);
        if (end == p) break;
        if (f > 0 && f <= 1024) few.push_back(int(f));
        p = *end == ',' ? end + 1 : end;
    }
    if (rows < 16 || cols <= 0 || cols % QK_K != 0 || nth < 1) {
        std::fprintf(stderr, "usage: %s [rows >= 16] [cols (multiple of 256)] [threads] [types]\n", argv[0]);
        return 1;
    }
    std::printf("hearth kernel table: %s, %d threads\n", HEARTH_ISA_NAME, nth);
    std::printf("read bandwidth (256 MB): 1 thread %.2f GB/s", read_bandwidth(size_t(256) << 20, 1));
    if (nth > 1) std::printf(", %d threads %.2f GB/s", nth, read_bandwidth(size_t(256) << 20, nth));
    std::printf("\n");
    size_t at = 0;
    while (at <= types.size()) {
        const size_t end = std::min(types.find(',', at), types.size());
        const std::string name = types.substr(at, end - at);
        at = end + 1;
        uint32_t type = 0;
        bool found = false;
        for (const TypeTraits& t : kTypeTraits)
            if (strcasecmp(name.c_str(), t.name) == 0) type = t.id, found = true;  // q6_k as q6_K
        if (!found || !pick_kernel(KernelOp::matmul, type, Layout::rows, 1)) {
            std::fprintf(stderr, "no matmul rows for type '%s'\n", name.c_str());
            return 1;
        }
        bench_type(type, rows, cols, nth, gemm_tokens, few);
    }
    bench_quantizers(cols);
    return 0;
}
