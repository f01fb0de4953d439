// Every row of the kernel table (kernels/table.h) held to its type's scalar reference: a new row is
// tested by being listed. Rows this build or CPU cannot run are named in the output, not passed.
//  - Matmul rows: against the exact (double) dots of what the bytes mean (the reference
//    dequantizers of kTypeTraits), and against the type's scalar matmul (kernels/ref/) on the
//    plain rows, within the float rounding the other kernel tests allow (kernel_test_data.h).
//    Token counts around the row's min_tokens; odd row counts and row ranges that start after the
//    first row (interleaved rows: whole groups, as the contract says, of matrices with and without
//    a plain tail); rows of one and several blocks; 1 and 2 threads, as matmul splits rows.
//  - Quantize rows: the bytes of the type's reference quantizer, and those bytes decode to within
//    half a step of the input.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/rows_x8.h"
#include "kernels/table.h"
#include "tests/kernels/kernel_test_data.h"

using namespace hearth;

namespace {

using kernel_test::Bytes;

std::string describe(const KernelRow& row) {
    return std::string(row.op == KernelOp::matmul ? "matmul " : "quantize ") + kernel_row_name(row);
}

// The table's scalar row for (op, type, layout): the reference implementation of kernels/ref/.
const KernelRow* scalar_row(KernelOp op, uint32_t type, Layout layout) {
    int n = 0;
    const KernelRow* rows = kernel_rows(&n);
    for (int i = 0; i < n; i++)
        if (rows[i].op == op && rows[i].type == type && rows[i].layout == layout && rows[i].isa == Isa::scalar) return &rows[i];
    return nullptr;
}

bool is_float_type(uint32_t type) { return type == TYPE_F32 || type == TYPE_F16 || type == TYPE_BF16; }

// One matmul problem: `rows` x `cols` weights of `type` (plain and, where the type has it,
// interleaved), `n_tokens` activation rows as the kernels take them, and what every kernel is held
// to, indexed [t * rows + r]: the exact dots of the dequantized bytes, the magnitudes of their
// terms, and the scalar matmul's output on the plain rows.
struct Problem {
    Bytes w_plain, w_x8, a;
    std::vector<double> exact, mag;
    std::vector<float> ref;
};

Problem make_problem(uint32_t type, int rows, int cols, int n_tokens) {
    Problem p;
    const uint32_t seed = uint32_t(type * 1000003u + rows * 7919u + cols * 31u + n_tokens);
    const size_t wrb = type_row_bytes(type, cols);
    std::vector<float> wf(size_t(rows) * cols), af(size_t(n_tokens) * cols);
    if (is_float_type(type)) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> nd(0.f, 1.f);
        for (float& v : wf) v = nd(rng);
        for (float& v : af) v = nd(rng);
        p.w_plain.resize(wrb * rows);
        for (int r = 0; r < rows; r++) type_traits(type)->quantize(&wf[size_t(r) * cols], &p.w_plain[r * wrb], cols);
        p.a.resize(af.size() * sizeof(float));
        std::memcpy(p.a.data(), af.data(), p.a.size());
    } else {
        p.w_plain = kernel_test::random_weights(type, rows, cols, seed);
        p.a = kernel_test::random_acts(type, n_tokens, cols, seed + 1);
        const uint32_t at = type_vec_dot_type(type);
        for (int t = 0; t < n_tokens; t++)
            type_traits(at)->dequantize(&p.a[t * type_row_bytes(at, cols)], &af[size_t(t) * cols], cols);
        p.mag = kernel_test::magnitudes(type, p.w_plain, p.a, rows, cols, n_tokens);
    }
    for (int r = 0; r < rows; r++) type_traits(type)->dequantize(&p.w_plain[r * wrb], &wf[size_t(r) * cols], cols);
    p.exact.resize(size_t(rows) * n_tokens);
    if (is_float_type(type)) p.mag.resize(p.exact.size());
    for (int t = 0; t < n_tokens; t++)
        for (int r = 0; r < rows; r++) {
            double dot = 0, mag = 0;
            for (int c = 0; c < cols; c++) {
                const double term = double(wf[size_t(r) * cols + c]) * af[size_t(t) * cols + c];
                dot += term;
                mag += std::fabs(term);
            }
            p.exact[size_t(t) * rows + r] = dot;
            if (is_float_type(type)) p.mag[size_t(t) * rows + r] = mag;
        }
    if (type_traits(type)->x8_head_bytes > 0) {
        p.w_x8.resize(p.w_plain.size());
        repack_rows_to_x8(type, p.w_plain.data(), p.w_x8.data(), rows, cols);
    }
    const KernelRow* ref = scalar_row(KernelOp::matmul, type, Layout::rows);
    REQUIRE(ref);
    p.ref.assign(p.exact.size(), 0.f);
    ref->matmul(p.w_plain.data(), wrb, p.a.data(), p.a.size() / size_t(n_tokens), cols, n_tokens, p.ref.data(), rows, 0, rows);
    return p;
}

// Problems are shared by the rows of a type (the scalar and SIMD rows meet the same data).
const Problem& problem(uint32_t type, int rows, int cols, int n_tokens) {
    static std::map<std::tuple<uint32_t, int, int, int>, Problem> cache;
    const auto key = std::make_tuple(type, rows, cols, n_tokens);
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.emplace(key, make_problem(type, rows, cols, n_tokens)).first;
    return it->second;
}

constexpr float kSentinel = 12345.f;

// The row's kernel over rows [r0, r1) of the problem's matrix, into an output of rows + 3 columns
// per token (kSentinel where nothing may be written); with 2 threads the range is cut in two as
// matmul cuts it (whole groups for interleaved rows), each half on its own thread.
std::vector<float> run_matmul(const KernelRow& row, const Problem& p, int rows, int cols, int n_tokens, int r0, int r1,
                              int threads) {
    const int os = rows + 3;
    std::vector<float> out(size_t(os) * n_tokens, kSentinel);
    const Bytes& w = row.layout == Layout::rows_x8 ? p.w_x8 : p.w_plain;
    const size_t wrb = type_row_bytes(row.type, cols), arb = p.a.size() / size_t(n_tokens);
    const int unit = row.layout == Layout::rows_x8 ? 8 : 1;
    const int mid = r0 + (r1 - r0) / unit / 2 * unit;
    const int cuts[3] = {r0, threads == 2 ? mid : r1, r1};
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int i = 0; i < threads; i++)
        if (cuts[i] < cuts[i + 1])
            row.matmul(w.data(), wrb, p.a.data(), arb, cols, n_tokens, out.data(), os, cuts[i], cuts[i + 1]);
    return out;
}

std::vector<int> token_counts(int min_tokens) {
    std::vector<int> n = {1, min_tokens - 1, min_tokens, min_tokens + 1, 2 * min_tokens + 3};
    n.erase(std::remove_if(n.begin(), n.end(), [](int v) { return v < 1; }), n.end());
    std::sort(n.begin(), n.end());
    n.erase(std::unique(n.begin(), n.end()), n.end());
    return n;
}

// Rows of one block, of a few, and past the 32-block (4-super-block) chunks of the SIMD kernels
// (and the 64-block chunks of x86/gemv_avx512.cpp where the L1 is below 48 KB, the 8-super-block
// ones of gemv_q4_k_avx512.cpp; test_x8_kernels.cpp calls those with more).
std::vector<int> block_counts(uint32_t type) {
    if (is_float_type(type)) return {7, 64, 173};
    return type_block_size(type) == QK_K ? std::vector<int>{1, 5, 9} : std::vector<int>{1, 3, 33, 70};
}

void check_matmul_row(const KernelRow& row, const std::vector<int>& tokens = {}) {
    const bool x8 = row.layout == Layout::rows_x8;
    struct Range {
        int r0, r1;
    };
    struct Shape {
        int rows;
        std::vector<Range> ranges;
    };
    // Plain: odd counts and counts that are not multiples of 8, whole and from a later row on.
    // Interleaved: 1, 2 and 5 whole groups, the last two matrices with a plain tail of 5 rows that
    // the kernel must leave alone; all groups, and from the second group on.
    const std::vector<Shape> shapes =
        x8 ? std::vector<Shape>{{8, {{0, 8}}}, {21, {{0, 16}, {8, 16}}}, {45, {{0, 40}, {8, 40}}}}
           : std::vector<Shape>{{1, {{0, 1}}}, {7, {{0, 7}, {2, 5}}}, {13, {{0, 13}, {3, 13}}}, {37, {{0, 37}, {5, 30}}}};
    for (int nb : block_counts(row.type)) {
        const int cols = nb * type_block_size(row.type);
        for (const Shape& s : shapes) {
            for (int n_tokens : tokens.empty() ? token_counts(row.min_tokens) : tokens) {
                // The biggest products only on the smaller rows: the aarch64 builds run under qemu.
                if (n_tokens > 20 && nb == block_counts(row.type).back() && s.rows > 13) continue;
                const Problem& p = problem(row.type, s.rows, cols, n_tokens);
                for (const Range& rg : s.ranges)
                    for (int threads : {1, 2}) {
                        CAPTURE(cols);
                        CAPTURE(s.rows);
                        CAPTURE(rg.r0);
                        CAPTURE(rg.r1);
                        CAPTURE(n_tokens);
                        CAPTURE(threads);
                        const std::vector<float> got = run_matmul(row, p, s.rows, cols, n_tokens, rg.r0, rg.r1, threads);
                        int bad = 0, touched = 0;
                        for (int t = 0; t < n_tokens; t++)
                            for (int r = 0; r < s.rows + 3; r++) {
                                const float v = got[size_t(t) * (s.rows + 3) + r];
                                if (r < rg.r0 || r >= rg.r1) {
                                    touched += std::memcmp(&v, &kSentinel, sizeof v) != 0;
                                    continue;
                                }
                                const size_t i = size_t(t) * s.rows + r;
                                // Float weights: test_dot_float.cpp's bounds (a double loop; the scalar
                                // twin). Quantized: the integer block sums are exact, the float
                                // operations differ (kernel_test::within_rounding).
                                const bool ok = is_float_type(row.type)
                                                    ? std::fabs(v - p.exact[i]) <= 1e-5 * p.mag[i] + 1e-30 &&
                                                          std::fabs(double(v) - p.ref[i]) <= 8e-6 * p.mag[i] + 1e-30
                                                    : kernel_test::within_rounding(v, float(p.exact[i]), p.mag[i], nb) &&
                                                          kernel_test::within_rounding(v, p.ref[i], p.mag[i], nb);
                                if (!ok) {
                                    if (bad < 3)
                                        MESSAGE("t=" << t << " r=" << r << " got=" << v << " exact=" << p.exact[i]
                                                     << " scalar=" << p.ref[i]);
                                    bad++;
                                }
                            }
                        CHECK(bad == 0);
                        CHECK(touched == 0);
                    }
            }
        }
    }
}

// The activation types are 8-bit symmetric grids (Q8_0: d = fp16(amax/127); Q8_K: amax/127 with a
// 12-bit mantissa): each element decodes to within half a step, d/2 <= (amax/127)/2 * (1 + 2^-10).
void check_quantize_row(const KernelRow& row) {
    const int block = type_block_size(row.type);
    const TypeTraits* ref = type_traits(row.type);
    REQUIRE(bool(ref->quantize));
    REQUIRE(bool(ref->dequantize));
    for (int nb : {1, 3, 33}) {
        const int cols = nb * block, n_rows = 5;
        std::mt19937 rng{uint32_t(cols)};
        std::normal_distribution<float> nd(0.f, 1.f);
        std::vector<float> x(size_t(n_rows) * cols);
        for (size_t i = 0; i < x.size(); i++) x[i] = nd(rng) * (i % 97 == 5 ? 30.f : 1.f);
        for (int i = 0; i < cols; i++) x[size_t(3) * cols + i] = 0.f;                   // an all-zero row
        for (int i = 0; i < cols; i++) x[size_t(4) * cols + i] = i % 2 ? 1e-3f : -7.f;  // the extreme twice per block
        const size_t rb = type_row_bytes(row.type, cols);
        for (int threads : {1, 2}) {
            CAPTURE(cols);
            CAPTURE(threads);
            Bytes want(rb * n_rows), got(rb * n_rows, 0xA5);
            for (int r = 0; r < n_rows; r++) ref->quantize(&x[size_t(r) * cols], &want[r * rb], cols);
#pragma omp parallel for num_threads(threads)
            for (int r = 0; r < n_rows; r++) row.quantize(&x[size_t(r) * cols], &got[r * rb], cols);
            CHECK(std::memcmp(want.data(), got.data(), want.size()) == 0);
            std::vector<float> back(static_cast<size_t>(cols));
            int far = 0;
            for (int r = 0; r < n_rows; r++) {
                ref->dequantize(&got[r * rb], back.data(), cols);
                for (int b = 0; b < cols / block; b++) {
                    float amax = 0;
                    for (int i = b * block; i < (b + 1) * block; i++) amax = std::max(amax, std::fabs(x[size_t(r) * cols + i]));
                    const double half_step = 0.5 * amax / 127 * (1 + std::ldexp(1.0, -10));
                    for (int i = b * block; i < (b + 1) * block; i++)
                        far += !(std::fabs(double(back[size_t(i)]) - x[size_t(r) * cols + i]) <= half_step);
                }
            }
            CHECK(far == 0);
        }
    }
}

}  // namespace

TEST_CASE(
    "kernel table: every (op, type, layout) has a scalar row from 1 token, and interleaved rows only for types with the layout") {
    int n = 0;
    const KernelRow* rows = kernel_rows(&n);
    REQUIRE(n > 0);
    for (int i = 0; i < n; i++) {
        CAPTURE(describe(rows[i]));
        const KernelRow* ref = scalar_row(rows[i].op, rows[i].type, rows[i].layout);
        REQUIRE(ref);
        CHECK(ref->min_tokens == 1);
        CHECK(kernel_row_available(*ref));  // the scalar rows are built everywhere
        CHECK(rows[i].min_tokens >= 1);
        if (rows[i].layout == Layout::rows_x8) CHECK(type_traits(rows[i].type)->x8_head_bytes > 0);
        if (rows[i].op == KernelOp::quantize) CHECK(rows[i].layout == Layout::rows);
    }
}

TEST_CASE("kernel table: every row this build and CPU run equals its type's scalar reference") {
    int n = 0;
    const KernelRow* rows = kernel_rows(&n);
    int tested = 0;
    for (int i = 0; i < n; i++) {
        const KernelRow& row = rows[i];
        if (!kernel_row_runs_here(row)) {
            const bool built = row.op == KernelOp::matmul ? row.matmul != nullptr : row.quantize != nullptr;
            // AMX rows also need the OS's permission for the tiles (and no HEARTH_NO_AMX=1).
            const std::string why =
                std::string(built ? "this CPU lacks " : "this build lacks ") + isa_name(row.isa) +
                (built && row.isa == Isa::amx ? ", or the OS refused the tiles, or HEARTH_NO_AMX is set" : "");
            MESSAGE("not tested: " << describe(row) << " (" << why << ")");
            continue;
        }
        CAPTURE(describe(row));
        if (row.op == KernelOp::matmul)
            check_matmul_row(row);
        else
            check_quantize_row(row);
        tested++;
    }
    MESSAGE(tested << " of " << n << " kernel table rows tested on this build (" << std::string(HEARTH_ISA_NAME) << ")");
    CHECK(tested > 0);
}

// The few-token kernels on plain Q6_K rows (x86/gemv_q6_k_avx512.cpp) handle up to 8 tokens per
// pass, as templates on the count: every count the picker sends them (1..15), and 16, each. The
// rows below 16 tokens other than the scalar one, each kernel once.
TEST_CASE("kernel table: the few-token Q6_K rows equal the scalar reference at 1..16 tokens") {
    int n = 0, tested = 0;
    const KernelRow* rows = kernel_rows(&n);
    std::vector<int> tokens;
    for (int t = 1; t <= 16; t++) tokens.push_back(t);
    std::vector<matmul_rows_fn> seen;
    for (int i = 0; i < n; i++) {
        const KernelRow& row = rows[i];
        if (row.op != KernelOp::matmul || row.type != TYPE_Q6_K || row.layout != Layout::rows || row.isa == Isa::scalar ||
            row.min_tokens >= 16 || !kernel_row_runs_here(row) || std::find(seen.begin(), seen.end(), row.matmul) != seen.end())
            continue;
        seen.push_back(row.matmul);
        CAPTURE(describe(row));
        check_matmul_row(row, tokens);
        tested++;
    }
    MESSAGE(tested << " Q6_K row kernels below 16 tokens tested at 1..16 tokens");
}

// Drafts are verified in one batch, and the server decodes its conversations in one: the ids must
// be those one token at a time gives (model/generate.h). So the rows below the x86 GEMMs of 16
// tokens and more (kFewTokenRowsBelow) must give each token of a batch the bits it gets alone,
// though one token and a batch may run on different kernels (AVX2: the rows, then from 4 tokens
// (Q5_K 8) a GEMM; AMD Zen 4 and 5: the AVX2 rows, then the AVX-512 few-token kernels; Zen 4's
// Q6_K: into L1, then into L2 in column chunks; AArch64 with i8mm: the NEON rows, then from 4
// tokens its GEMM). Each CPU's rows, as the picker would choose them there (of those this binary
// has) and wherever their code runs here; every quantized type a model may hold, by the way the
// table names for it (batch_token_bits): the rows picked for the batch (the interleaved types
// and plain Q6_K, K-quant models' output matrix), or the one-token row called with all the
// tokens (the other types, whose GEMMs from 2-8 tokens sum in another order); rows longer than a
// partial sum's chunk of columns; token counts of a draft's verification and of the server's
// steps. K-quants with activations as a model's are, for their bits agree while a super-block's
// sum stays below 2^24 (x86/q4_kx8_avx2.cpp), which all +-127 against random weights need not.
// (The float types' x86 rows have no variants by CPU: tests/kernels/test_matmul.cpp holds them.)
TEST_CASE("kernel table: a batch below the GEMMs gives each token the bits it gets alone") {
    struct Cpu {
        const char* name;
        bool (*has)(Isa);
    };
    const Cpu cpus[] = {
#if defined(HEARTH_ISA_NEON)
        {"AArch64", [](Isa i) { return i == Isa::scalar || i == Isa::neon; }},
        {"AArch64 with i8mm", [](Isa i) { return i == Isa::scalar || i == Isa::neon || i == Isa::i8mm; }},
#endif
#if defined(HEARTH_ISA_AVX2)
        {"x86 with AVX2, without AVX-512", [](Isa i) { return i == Isa::scalar || i == Isa::avx2; }},
        {"Intel with AVX-512",
         [](Isa i) {
             return i == Isa::scalar || i == Isa::avx2 || i == Isa::avx512 || i == Isa::avx512_not_zen ||
                    i == Isa::avx512_not_zen4;
         }},
        {"AMD Zen 4", [](Isa i) { return i == Isa::scalar || i == Isa::avx2 || i == Isa::avx512 || i == Isa::avx512_zen4; }},
        {"AMD Zen 5",
         [](Isa i) {
             return i == Isa::scalar || i == Isa::avx2 || i == Isa::avx2_zen5 || i == Isa::avx512 || i == Isa::avx512_not_zen4;
         }},
#endif
        {"without SIMD", [](Isa i) { return i == Isa::scalar; }},
    };
    std::vector<std::pair<uint32_t, Layout>> cases;
    for (uint32_t type : {TYPE_Q4_0, TYPE_Q4_1, TYPE_Q5_0, TYPE_Q5_1, TYPE_Q8_0, TYPE_Q2_K, TYPE_Q3_K, TYPE_Q4_K, TYPE_Q5_K,
                          TYPE_Q6_K, TYPE_IQ4_NL, TYPE_IQ4_XS})
        for (Layout layout : {Layout::rows, Layout::rows_x8})
            if (matmul_supports(type, layout)) cases.push_back({type, layout});
    constexpr int kRows = 24, kMaxTokens = kFewTokenRowsBelow + 7;
    int compared = 0;
    std::string skipped;
    for (const Cpu& cpu : cpus) {
        for (const auto& [type, layout] : cases) {
            const KernelRow* one = pick_kernel_for(KernelOp::matmul, type, layout, 1, cpu.has);
            if (!one || !kernel_row_runs_here(*one)) {
                skipped += std::string(skipped.empty() ? "" : ", ") + cpu.name + " " + type_name(type);
                continue;
            }
            for (int cols : {1024, 5632, 11008}) {
                const uint32_t seed = uint32_t(cols + type);
                Bytes w = kernel_test::random_weights(type, kRows, cols, seed);
                if (layout == Layout::rows_x8) {
                    Bytes x8(w.size());
                    repack_rows_to_x8(type, w.data(), x8.data(), kRows, cols);
                    w = x8;
                }
                const size_t wrb = type_row_bytes(type, cols), arb = type_row_bytes(type_vec_dot_type(type), cols);
                const Bytes a = type_vec_dot_type(type) == TYPE_Q8_K ? kernel_test::gaussian_acts_k(kMaxTokens, cols, seed)
                                                                     : kernel_test::random_acts(type, kMaxTokens, cols, seed);
                std::vector<float> alone(size_t(kMaxTokens) * kRows);
                for (int t = 0; t < kMaxTokens; t++)
                    one->matmul(w.data(), wrb, &a[t * arb], arb, cols, 1, &alone[size_t(t) * kRows], kRows, 0, kRows);
                // Up to the last count below the GEMMs, and past it with the rows picked there (a
                // batch of several sequences' few tokens each, model/forward.cpp).
                for (int n_tokens : {2, 3, 5, 8, kFewTokenRowsBelow - 1, kMaxTokens}) {
                    const BatchTokenBits way = batch_token_bits(type, layout);
                    const int pick = way == BatchTokenBits::batch_rows ? std::min(n_tokens, kFewTokenRowsBelow - 1) : 1;
                    const KernelRow* batch = pick_kernel_for(KernelOp::matmul, type, layout, pick, cpu.has);
                    REQUIRE(batch);
                    if (!kernel_row_runs_here(*batch)) {
                        if (skipped.find(describe(*batch)) == std::string::npos)
                            skipped += std::string(skipped.empty() ? "" : ", ") + describe(*batch);
                        continue;
                    }
                    std::vector<float> got(size_t(n_tokens) * kRows, NAN);
                    batch->matmul(w.data(), wrb, a.data(), arb, cols, n_tokens, got.data(), kRows, 0, kRows);
                    INFO(std::string(cpu.name) << ", " << cols << " columns, " << n_tokens << " tokens: " << describe(*batch)
                                               << " against " << describe(*one) << " token by token");
                    CHECK(std::memcmp(got.data(), alone.data(), got.size() * sizeof(float)) == 0);
                    compared++;
                }
            }
        }
    }
    MESSAGE("a batch's bits against one token's: "
            << compared << " comparisons" << std::string(skipped.empty() ? "" : "; not run here (their code needs another CPU): ")
            << skipped);
}

// The AVX2 rows on interleaved Q4_0 from 4 tokens (x86/few_q4_0x8_avx2.cpp in builds without
// VNNI, the GEMM with it): every count from 1 to 17 (the few-token kernel's passes of up to 4
// pairs, an odd count's repeated last token), and 70, past its first block of 64 tokens (the
// copied activations of a block stay in L2).
TEST_CASE("kernel table: the AVX2 interleaved Q4_0 rows from 4 tokens equal the scalar reference at 1..17 and 70 tokens") {
    int n = 0, tested = 0;
    const KernelRow* rows = kernel_rows(&n);
    std::vector<int> tokens;
    for (int t = 1; t <= 17; t++) tokens.push_back(t);
    tokens.push_back(70);
    for (int i = 0; i < n; i++) {
        const KernelRow& row = rows[i];
        if (row.op != KernelOp::matmul || row.type != TYPE_Q4_0 || row.layout != Layout::rows_x8 || row.isa != Isa::avx2 ||
            row.min_tokens != 4)
            continue;
        if (!kernel_row_available(row)) {
            MESSAGE("not tested: " << describe(row) << " (this build or CPU lacks it)");
            continue;
        }
        CAPTURE(describe(row));
        check_matmul_row(row, tokens);
        tested++;
    }
    MESSAGE(tested << " AVX2 interleaved Q4_0 rows from 4 tokens tested at 1..17 and 70 tokens");
}

// The AMX rows (x86/gemm_amx.cpp) are listed on every build; where they cannot run they are named
// as skipped above, and here once more, so that a host without AMX says so plainly.
TEST_CASE("kernel table: the AMX rows run where built, the CPU has AMX and the OS grants the tiles, or are said to be skipped") {
    int n = 0, amx = 0, available = 0;
    const KernelRow* rows = kernel_rows(&n);
    for (int i = 0; i < n; i++) {
        if (rows[i].isa != Isa::amx) continue;
        amx++;
        CHECK(rows[i].layout == Layout::rows_x8);
#if defined(HEARTH_ISA_AMX)
        CHECK(bool(rows[i].matmul));
#else
        CHECK(!rows[i].matmul);
#endif
        available += kernel_row_available(rows[i]);
    }
    CHECK(amx >= 2);
    CHECK((available == 0 || available == amx));  // one check decides for all of them
#if defined(HEARTH_ISA_AMX)
    const std::string why = "the CPU lacks AMX, or the OS refused the tiles, or HEARTH_NO_AMX is set";
#else
    const std::string why = "this build lacks AMX";
#endif
    if (available)
        MESSAGE("AMX rows: " << available << " of " << amx << " available and tested");
    else
        MESSAGE("AMX rows: " << amx << " skipped (" << why << ")");
}

TEST_CASE("kernel table: the rows for AMD Zen 4 and Zen 5 are available exactly where /proc/cpuinfo names those CPUs") {
    // What the table asks the CPU (CPUID), against what Linux reports in /proc/cpuinfo.
    std::ifstream in("/proc/cpuinfo");
    if (!in) {
        MESSAGE("not tested: no /proc/cpuinfo");
        return;
    }
    std::string vendor, family, flags, line;
    while (flags.empty() && std::getline(in, line)) {
        auto value = [&](const char* key) {
            if (line.rfind(key, 0) != 0) return std::string();
            const size_t colon = line.find(':');
            return colon == std::string::npos ? std::string() : line.substr(colon + 1);
        };
        if (vendor.empty()) vendor = value("vendor_id");
        if (family.empty()) family = value("cpu family");
        flags = value("flags");
    }
    if (flags.empty()) {
        MESSAGE("not tested: /proc/cpuinfo has no x86 flags line (not an x86 CPU)");
        return;
    }
    auto has_flag = [&](const char* name) { return (flags + " ").find(std::string(" ") + name + " ") != std::string::npos; };
    const bool avx512 = has_flag("avx512f") && has_flag("avx512bw") && has_flag("avx512vl") && has_flag("avx512_vnni");
    const bool avx2 = has_flag("avx2") && has_flag("fma");
    const bool amd = vendor.find("AuthenticAMD") != std::string::npos;
    const bool zen4 = amd && std::atoi(family.c_str()) == 25, zen5 = amd && std::atoi(family.c_str()) == 26;
    int n = 0, seen = 0;
    const KernelRow* rows = kernel_rows(&n);
    for (int i = 0; i < n; i++) {
        const Isa isa = rows[i].isa;
        if (isa == Isa::avx2_zen5 && rows[i].matmul) {  // AVX2 code, taken on Zen 5 only
            CAPTURE(describe(rows[i]));
            CHECK(kernel_row_available(rows[i]) == (avx2 && zen5));
            CHECK(kernel_row_runs_here(rows[i]) == avx2);
            seen++;
        }
        if ((isa != Isa::avx512_zen4 && isa != Isa::avx512_not_zen4 && isa != Isa::avx512_not_zen) || !rows[i].matmul)
            continue;  // built rows only
        CAPTURE(describe(rows[i]));
        // Zen 4: AMD family 25 with AVX-512; Zen 5: family 26
        const bool here = isa == Isa::avx512_zen4 ? zen4 : isa == Isa::avx512_not_zen4 ? !zen4 : !zen4 && !zen5;
        CHECK(kernel_row_available(rows[i]) == (avx512 && here));
        CHECK(kernel_row_runs_here(rows[i]) == avx512);
        seen++;
    }
    const std::string cpu =
        std::string(zen4   ? "AMD family 25 (Zen 3 or 4)"
                    : zen5 ? "AMD family 26 (Zen 5)"
                           : "not AMD family 25 or 26") +
        (avx512 ? ", with" : ", without") +
        " AVX-512 VNNI; built avx512-zen4, avx512-not-zen4, avx512-not-zen and avx2-zen5 rows checked: " + std::to_string(seen);
    MESSAGE("CPU: " << cpu);
}
