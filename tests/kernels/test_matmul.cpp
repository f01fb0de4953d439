// Tests for kernels/matmul: matmul_many (several matrices of mixed types on one input, the
// threaded dispatch the forward pass uses) against exact double-precision dots of the
// dequantized weights and activations.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/rows_x8.h"
#include "tests/kernels/kernel_test_data.h"

using namespace hearth;

namespace {

std::vector<float> normal(size_t n, uint32_t seed, float sigma) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, sigma);
    std::vector<float> v(n);
    for (auto& x : v) x = nd(rng);
    return v;
}

// A weight matrix stored as `type`, and the same weights as floats (what the bytes mean).
struct Matrix {
    uint32_t type;
    int rows;
    std::vector<uint8_t> bytes;
    std::vector<float> values;
};

Matrix make_matrix(uint32_t type, int rows, int cols, uint32_t seed) {
    Matrix m{type, rows, {}, std::vector<float>(size_t(rows) * cols)};
    const std::vector<float> w = normal(size_t(rows) * cols, seed, 0.05f);
    if (type == TYPE_F16) {
        m.bytes.resize(size_t(rows) * cols * 2);
        uint16_t* h = reinterpret_cast<uint16_t*>(m.bytes.data());
        for (size_t i = 0; i < w.size(); i++) h[i] = fp32_to_fp16(w[i]);
    } else {
        const TypeTraits* k = type_traits(type);
        const size_t rb = type_row_bytes(TensorType(type), cols);
        m.bytes.resize(rb * rows);
        for (int r = 0; r < rows; r++) k->quantize(&w[size_t(r) * cols], m.bytes.data() + rb * r, cols);
    }
    for (int r = 0; r < rows; r++) dequantize_row(type, m.bytes.data(), cols, r, &m.values[size_t(r) * cols]);
    return m;
}

// x as the kernels see it: quantized to the activation type of `type` and back (the float types: x).
std::vector<float> seen_activations(uint32_t type, const std::vector<float>& x, int cols) {
    if (type == TYPE_F16 || type == TYPE_BF16 || type == TYPE_F32) return x;
    const TypeTraits* act = type_traits(type_vec_dot_type(type));
    std::vector<uint8_t> q(type_row_bytes(act->id, cols));
    std::vector<float> out(x.size());
    for (size_t t = 0; t * cols < x.size(); t++) {
        act->quantize(&x[t * cols], q.data(), cols);
        act->dequantize(q.data(), &out[t * cols], cols);
    }
    return out;
}

}  // namespace

TEST_CASE("matmul_many: mixed types on one input equal exact dots of what the bytes mean") {
    const int cols = 512;
    // Row counts: single rows, non-multiples of 16, and enough rows for several pieces: 2.2 MB of
    // Q8_0 makes large pieces and then the smaller last ones (kernels/matmul.cpp). Pieces are how
    // single-token calls are split, so that last matrix is only in those (it is slow to check).
    const std::vector<std::pair<uint32_t, int>> spec = {{TYPE_Q4_K, 37}, {TYPE_Q6_K, 50},   {TYPE_Q8_0, 21}, {TYPE_F16, 19},
                                                        {TYPE_BF16, 23}, {TYPE_Q4_0, 1000}, {TYPE_Q4_0, 1},  {TYPE_Q8_0, 4001}};
    std::vector<Matrix> mats;
    for (size_t j = 0; j < spec.size(); j++) mats.push_back(make_matrix(spec[j].first, spec[j].second, cols, 10 + j));
    for (int n_tokens : {1, 3, 5, 70}) {
        CAPTURE(n_tokens);
        const std::vector<float> x = normal(size_t(n_tokens) * cols, 99 + n_tokens, 1.f);
        const size_t n_mats = n_tokens == 1 ? mats.size() : mats.size() - 1;
        std::vector<std::vector<float>> outs(n_mats);
        std::vector<MatmulJob> jobs;
        for (size_t j = 0; j < n_mats; j++) {
            outs[j].assign(size_t(n_tokens) * mats[j].rows, NAN);
            jobs.push_back({outs[j].data(), mats[j].type, Layout::rows, mats[j].bytes.data(), mats[j].rows});
        }
        matmul_many(jobs.data(), int(jobs.size()), cols, x.data(), n_tokens);
        for (size_t j = 0; j < n_mats; j++) {
            CAPTURE(j);
            const std::vector<float> a = seen_activations(mats[j].type, x, cols);
            int bad = 0;
            for (int t = 0; t < n_tokens; t++)
                for (int r = 0; r < mats[j].rows; r++) {
                    double ref = 0, mag = 0;
                    for (int c = 0; c < cols; c++) {
                        const double p = double(mats[j].values[size_t(r) * cols + c]) * a[size_t(t) * cols + c];
                        ref += p;
                        mag += std::fabs(p);
                    }
                    const double got = outs[j][size_t(t) * mats[j].rows + r];
                    // float accumulation over 512 terms, scales applied per block: well within 1e-5
                    if (!(std::fabs(got - ref) <= 1e-5 * mag + 1e-7)) ++bad;
                }
            CHECK(bad == 0);
        }
    }
}

// The batch of generated tokens and drafts (model/forward.cpp) must give each token the bits it
// gets alone, for every type and layout a model may hold (kernels/table.h, batch_token_bits). On
// this CPU's kernels; tests/kernels/test_kernel_table.cpp holds the quantized types on every CPU
// class. 43 rows: an interleaved matrix's plain tail of 3 rows, and with 5632 columns more than
// one of the 64 KB chunks the plain one-token rows take several tokens over (x86/gemv_avx2.cpp,
// quant_avx2.cpp) in a thread's share; 1024 and 5632 columns, each a
// whole number of the float rows' steps of 32, and for the float types 1069, which ends in a step
// of 8 and 5 elements one by one; 23 tokens: more than the rows below the GEMMs are picked for.
TEST_CASE("matmul_many with token_bits: a batch gives each token the bits it gets alone, every type and layout") {
    const uint32_t types[] = {TYPE_F32,  TYPE_F16,  TYPE_BF16, TYPE_Q4_0, TYPE_Q4_1, TYPE_Q5_0,   TYPE_Q5_1,  TYPE_Q8_0,
                              TYPE_Q2_K, TYPE_Q3_K, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K, TYPE_IQ4_NL, TYPE_IQ4_XS};
    const int rows = 43;
    int compared = 0;
    for (const int cols : {1024, 5632, 1069}) {
        for (const uint32_t type : types) {
            const bool is_float = type == TYPE_F32 || type == TYPE_F16 || type == TYPE_BF16;
            if (cols % 32 != 0 && !is_float) continue;  // 1069 = 33 * 32 + 8 + 5
            kernel_test::Bytes w;
            if (is_float) {
                const std::vector<float> f = normal(size_t(rows) * cols, cols + type, 0.05f);
                w.resize(type_row_bytes(type, cols) * rows);
                for (size_t i = 0; i < f.size(); i++) {
                    if (type == TYPE_F32) {
                        std::memcpy(&w[4 * i], &f[i], 4);
                    } else {
                        uint32_t bits;
                        std::memcpy(&bits, &f[i], 4);
                        const uint16_t h = type == TYPE_F16 ? fp32_to_fp16(f[i]) : uint16_t(bits >> 16);
                        std::memcpy(&w[2 * i], &h, 2);
                    }
                }
            } else {
                w = kernel_test::random_weights(type, rows, cols, uint32_t(cols + type));
            }
            for (const Layout layout : {Layout::rows, Layout::rows_x8}) {
                if (!matmul_supports(type, layout)) continue;
                kernel_test::Bytes wl = w;
                if (layout == Layout::rows_x8) repack_rows_to_x8(type, w.data(), wl.data(), rows, cols);
                for (const int n_tokens : {2, 5, 8, 15, 23}) {
                    const std::string what = std::string(type_name(type)) + (layout == Layout::rows_x8 ? " x8" : "");
                    INFO(what << ", " << cols << " columns, " << n_tokens << " tokens");
                    const std::vector<float> x = normal(size_t(n_tokens) * cols, uint32_t(7 * n_tokens + type), 1.f);
                    std::vector<float> alone(size_t(n_tokens) * rows, NAN), batch(size_t(n_tokens) * rows, NAN);
                    for (int t = 0; t < n_tokens; t++) {
                        const MatmulJob job{&alone[size_t(t) * rows], type, layout, wl.data(), rows};
                        matmul_many(&job, 1, cols, &x[size_t(t) * cols], 1);
                    }
                    const MatmulJob job{batch.data(), type, layout, wl.data(), rows};
                    matmul_many(&job, 1, cols, x.data(), n_tokens, /*token_bits=*/true);
                    CHECK(std::memcmp(batch.data(), alone.data(), batch.size() * sizeof(float)) == 0);
                    compared++;
                }
            }
        }
    }
    MESSAGE(compared << " batches compared with their tokens alone");
}
