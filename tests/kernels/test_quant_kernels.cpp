// Tests for kernels/quant*: block formats, quantizer error bounds, SIMD kernels against their
// scalar twins, matmul_rows against vec_dot. Needs nothing but the kernels, so the same file
// builds for x86-64 and aarch64 (run under qemu).
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/ref/ref.h"
#include "kernels/table.h"

using namespace hearth;

namespace {

using Bytes = std::vector<uint8_t>;

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, sigma);
    std::vector<float> v(n);
    for (auto& x : v) x = nd(rng);
    return v;
}

// Activation-like data: gaussian with a few large outliers and per-block scale variation.
std::vector<float> activations(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
        float s = (i / 32) % 5 == 3 ? 0.01f : 1.f;
        v[i] = nd(rng) * s;
        if (ud(rng) < 0.01f) v[i] *= 20.f;
    }
    return v;
}

// Through the type table's reference conversions (kernels/quant_types.h).
Bytes quantize(TensorType t, const std::vector<float>& x) {
    Bytes q(type_row_bytes(t, int64_t(x.size())));
    REQUIRE(bool(type_traits(t)->quantize));
    type_traits(t)->quantize(x.data(), q.data(), int64_t(x.size()));
    return q;
}

std::vector<float> dequantize(TensorType t, const Bytes& q, size_t n) {
    std::vector<float> y(n);
    REQUIRE(bool(type_traits(t)->dequantize));
    type_traits(t)->dequantize(q.data(), y.data(), int64_t(n));
    return y;
}

double rms(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += double(a[i] - b[i]) * (a[i] - b[i]);
    return std::sqrt(s / double(a.size()));
}

// Random but valid weight blocks straight from random bytes (exercises full code ranges).
Bytes random_blocks(TensorType t, int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> ud(-0.05f, 0.05f);
    Bytes q(type_row_bytes(t, n));
    for (auto& b : q) b = uint8_t(byte(rng));
    const size_t bb = type_block_bytes(t);
    for (size_t off = 0; off < q.size(); off += bb) {
        uint8_t* p = q.data() + off;
        const uint16_t h1 = fp32_to_fp16(ud(rng)), h2 = fp32_to_fp16(std::fabs(ud(rng)));
        switch (t) {
            case TYPE_Q8_0:
            case TYPE_Q4_0: std::memcpy(p, &h1, 2); break;
            case TYPE_Q4_K:
                std::memcpy(p, &h1, 2);
                std::memcpy(p + 2, &h2, 2);
                break;
            case TYPE_Q6_K: std::memcpy(p + 208, &h1, 2); break;
            default: FAIL("bad type");
        }
    }
    return q;
}

// Upper bound of the magnitude of every partial sum a kernel may form:
// sum_i (|scale*q_i| + |offset terms|) * |a_i|, from the block fields.
double dot_magnitude(TensorType t, const Bytes& w, const std::vector<float>& a_deq, int n) {
    double mag = 0;
    if (t == TYPE_Q8_0) {
        const block_q8_0* b = reinterpret_cast<const block_q8_0*>(w.data());
        for (int i = 0; i < n; ++i) mag += std::fabs(double(fp16_to_fp32(b[i / 32].d)) * b[i / 32].qs[i % 32] * a_deq[i]);
    } else if (t == TYPE_Q4_0) {
        const block_q4_0* b = reinterpret_cast<const block_q4_0*>(w.data());
        for (int i = 0; i < n; ++i) {
            const int j = i % 32;
            const int q = j < 16 ? (b[i / 32].qs[j] & 15) : (b[i / 32].qs[j - 16] >> 4);
            mag += std::fabs(double(fp16_to_fp32(b[i / 32].d))) * (q + 8) * std::fabs(a_deq[i]);
        }
    } else if (t == TYPE_Q4_K) {
        const block_q4_K* b = reinterpret_cast<const block_q4_K*>(w.data());
        for (int i = 0; i < n; ++i) {
            const block_q4_K& x = b[i / 256];
            const int e = i % 256, j = e / 32, c = e / 64;
            uint8_t sc, m;
            q4k_get_scale_min(j, x.scales, &sc, &m);
            const int q = (e % 64) < 32 ? (x.qs[32 * c + e % 32] & 15) : (x.qs[32 * c + e % 32] >> 4);
            mag += (std::fabs(double(fp16_to_fp32(x.d)) * sc * q) + std::fabs(double(fp16_to_fp32(x.dmin)) * m)) *
                   std::fabs(a_deq[i]);
        }
    } else if (t == TYPE_Q6_K) {
        const block_q6_K* b = reinterpret_cast<const block_q6_K*>(w.data());
        for (int i = 0; i < n; ++i) {
            const block_q6_K& x = b[i / 256];
            const int e = i % 256;
            // |q - 32| + 32 <= 64 bounds both the unsigned product and the -32 correction
            mag += std::fabs(double(fp16_to_fp32(x.d)) * x.scales[e / 16]) * 64.0 * std::fabs(a_deq[i]);
        }
    }
    return mag;
}

// Float summation-order tolerance: each implementation's result is within
// (number of accumulated terms + a few roundings for scales, lane reduction) * u * magnitude of
// the exact value (u = 2^-24); two implementations are within twice that.
double sum_tol(int n_terms, double mag) { return 2.0 * (n_terms + 16) * std::ldexp(1.0, -24) * mag + 1e-30; }

using vec_dot_fn = float (*)(int n, const void* w, const void* a);

struct DotCase {
    TensorType w;
    TensorType a;
    vec_dot_fn scalar;
    matmul_rows_fn mm_scalar;
};

// This build's kernel for plain rows of type w at nt tokens, as matmul picks it (kernels/table.h).
matmul_rows_fn mm_best(TensorType w, int nt) { return pick_kernel(KernelOp::matmul, w, Layout::rows, nt)->matmul; }

// One row's dot product by this build's one-token kernel.
float best_dot(TensorType w, int n, const void* wr, const void* ar) {
    float out = 0;
    mm_best(w, 1)(wr, 0, ar, 0, n, 1, &out, 1, 0, 1);
    return out;
}

// This build's activation quantizer for type a.
quantize_row_fn quantize_best(TensorType a) { return pick_kernel(KernelOp::quantize, a, Layout::rows, 1)->quantize; }

std::vector<DotCase> dot_cases() {
    return {
        {TYPE_Q8_0, TYPE_Q8_0, vec_dot_q8_0_q8_0_scalar, matmul_q8_0_rows_scalar},
        {TYPE_Q4_0, TYPE_Q8_0, vec_dot_q4_0_q8_0_scalar, matmul_q4_0_rows_scalar},
        {TYPE_Q4_K, TYPE_Q8_K, vec_dot_q4_k_q8_k_scalar, matmul_q4_k_rows_scalar},
        {TYPE_Q6_K, TYPE_Q8_K, vec_dot_q6_k_q8_k_scalar, matmul_q6_k_rows_scalar},
    };
}

Bytes quantize_act(TensorType a, const std::vector<float>& x) {
    Bytes q(type_row_bytes(a, int64_t(x.size())));
    quantize_best(a)(x.data(), q.data(), int64_t(x.size()));
    return q;
}

}  // namespace

// =========================================================================================

TEST_CASE("build configuration") {
    MESSAGE("quant kernels: " << HEARTH_ISA_NAME);
#if defined(HEARTH_EXPECT_IMPL)
    CHECK(std::string(HEARTH_ISA_NAME) == std::string(HEARTH_EXPECT_IMPL));
#endif
}

TEST_CASE("type helpers and block layouts") {
    CHECK(sizeof(block_q8_0) == 34);
    CHECK(sizeof(block_q4_0) == 18);
    CHECK(sizeof(block_q4_K) == 144);
    CHECK(sizeof(block_q6_K) == 210);
    CHECK(sizeof(block_q8_K) == 292);
    CHECK(uint32_t(TYPE_F32) == 0);
    CHECK(uint32_t(TYPE_F16) == 1);
    CHECK(uint32_t(TYPE_Q4_0) == 2);
    CHECK(uint32_t(TYPE_Q8_0) == 8);
    CHECK(uint32_t(TYPE_Q4_K) == 12);
    CHECK(uint32_t(TYPE_Q6_K) == 14);
    CHECK(uint32_t(TYPE_Q8_K) == 15);
    CHECK(uint32_t(TYPE_BF16) == 30);
    CHECK(type_block_size(TYPE_Q4_0) == 32);
    CHECK(type_block_size(TYPE_Q6_K) == 256);
    CHECK(type_block_size(TYPE_F16) == 1);
    CHECK(type_block_bytes(TYPE_BF16) == 2);
    CHECK(type_row_bytes(TYPE_Q4_K, 4096) == 16 * 144);
    CHECK(type_row_bytes(TYPE_Q8_0, 4096) == 128 * 34);
    CHECK(type_row_bytes(TYPE_F32, 10) == 40);
    CHECK(std::string(type_name(TYPE_Q4_K)) == "q4_K");
    CHECK(std::string(type_name(TYPE_Q8_0)) == "q8_0");
    CHECK(type_vec_dot_type(TYPE_Q4_0) == TYPE_Q8_0);
    CHECK(type_vec_dot_type(TYPE_Q8_0) == TYPE_Q8_0);
    CHECK(type_vec_dot_type(TYPE_Q4_K) == TYPE_Q8_K);
    CHECK(type_vec_dot_type(TYPE_Q6_K) == TYPE_Q8_K);
    CHECK(type_is_storage(14));
    CHECK(type_is_known(16));
    CHECK(!type_is_storage(16));  // iq2_xxs: known to GGUF, not computed with
    CHECK(!type_is_known(4));
    for (TensorType t : {TYPE_Q8_0, TYPE_Q4_0, TYPE_Q4_K, TYPE_Q6_K}) {
        const TypeTraits* k = type_traits(t);
        REQUIRE(k != nullptr);
        CHECK(bool(k->quantize));
        CHECK(bool(k->dequantize));
        CHECK(matmul_supports(t, Layout::rows));
        CHECK(pick_kernel(KernelOp::quantize, k->act_type, Layout::rows, 1) != nullptr);
    }
    CHECK(!matmul_supports(TYPE_Q8_K, Layout::rows));  // activations only

    // Q4_K packed scales: round trip of all 6-bit values through ggml's packing.
    uint8_t s[12] = {0x3f | 0x40, 0x01 | 0x80, 0x22, 0x15 | 0xc0, 0x07, 0x30 | 0x40, 0x0a, 0x3e | 0x80, 0xa5, 0x5a, 0xf0, 0x0f};
    uint8_t sc, m;
    q4k_get_scale_min(0, s, &sc, &m);
    CHECK(sc == 0x3f);
    CHECK(m == 0x07);
    q4k_get_scale_min(4, s, &sc, &m);
    CHECK(sc == ((0xa5 & 0xF) | (1 << 4)));
    CHECK(m == ((0xa5 >> 4) | (0 << 4)));
    q4k_get_scale_min(5, s, &sc, &m);
    CHECK(sc == ((0x5a & 0xF) | (2 << 4)));
    CHECK(m == ((0x5a >> 4) | (1 << 4)));
}

TEST_CASE("Q8_0 quantize: |err| <= d/2, d = fp16(amax/127)") {
    auto x = activations(32 * 64, 1);
    for (int j = 0; j < 32; ++j) x[5 * 32 + j] = 0.f;                   // zero block
    for (int j = 0; j < 32; ++j) x[6 * 32 + j] = float(j - 16) * 0.5f;  // ties at .5 steps
    const Bytes q = quantize(TYPE_Q8_0, x);
    const auto y = dequantize(TYPE_Q8_0, q, x.size());
    const block_q8_0* b = reinterpret_cast<const block_q8_0*>(q.data());
    for (size_t blk = 0; blk < x.size() / 32; ++blk) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[blk * 32 + j]));
        const float d = fp16_to_fp32(b[blk].d);
        CHECK(std::fabs(d - amax / 127.f) <= amax / 127.f * 0x1p-11f);
        for (int j = 0; j < 32; ++j) {
            CHECK(b[blk].qs[j] != -128);
            const size_t i = blk * 32 + j;
            CHECK(std::fabs(y[i] - x[i]) <= d * (0.5f + 1e-4f) + 1e-6f * amax);
        }
    }
}

TEST_CASE("Q4_0 quantize: |err| <= |d|/2 (|d| for x/d in (7.5, 8]), d = fp16(max/-8)") {
    auto x = gaussian(32 * 64, 2);
    const Bytes q = quantize(TYPE_Q4_0, x);
    const auto y = dequantize(TYPE_Q4_0, q, x.size());
    const block_q4_0* b = reinterpret_cast<const block_q4_0*>(q.data());
    for (size_t blk = 0; blk < x.size() / 32; ++blk) {
        float amax = 0, max = 0;
        for (int j = 0; j < 32; ++j)
            if (std::fabs(x[blk * 32 + j]) > amax) {
                amax = std::fabs(x[blk * 32 + j]);
                max = x[blk * 32 + j];
            }
        const float d = fp16_to_fp32(b[blk].d);
        CHECK(std::fabs(d - max / -8.f) <= amax / 8.f * 0x1p-11f);
        for (int j = 0; j < 32; ++j) {
            const size_t i = blk * 32 + j;
            const float v = x[i] / d;  // in [-8, 8]; codes cover -8..7
            const float bound = std::fabs(d) * std::max(0.5f, v - 7.f);
            CHECK(std::fabs(y[i] - x[i]) <= bound * (1 + 1e-4f) + 1e-6f * amax);
        }
    }
}

TEST_CASE("Q8_K quantize: |err| <= d/2, d = amax/127 (12-bit mantissa), bsums") {
    auto x = activations(256 * 8, 3);
    for (int j = 0; j < 256; ++j) x[2 * 256 + j] = 0.f;
    const Bytes q = quantize(TYPE_Q8_K, x);
    const auto y = dequantize(TYPE_Q8_K, q, x.size());
    const block_q8_K* b = reinterpret_cast<const block_q8_K*>(q.data());
    for (size_t blk = 0; blk < x.size() / 256; ++blk) {
        float amax = 0;
        for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[blk * 256 + j]));
        CHECK(std::fabs(b[blk].d - amax / 127.f) <= amax / 127.f * 0x1p-12f);
        for (int g = 0; g < 16; ++g) {
            int s = 0;
            for (int l = 0; l < 16; ++l) s += b[blk].qs[16 * g + l];
            CHECK(b[blk].bsums[g] == s);
        }
        for (int j = 0; j < 256; ++j) {
            const size_t i = blk * 256 + j;
            CHECK(std::fabs(y[i] - x[i]) <= b[blk].d * (0.5f + 1e-4f) + 1e-6f * amax);
        }
    }
}

TEST_CASE("Q4_K / Q5_K / Q6_K quantize: every element coded to the nearest grid point of its sub-block") {
    const auto x = gaussian(256 * 32, 4);
    static_assert(offsetof(block_q5_K, d) == offsetof(block_q4_K, d) &&
                      offsetof(block_q5_K, dmin) == offsetof(block_q4_K, dmin) &&
                      offsetof(block_q5_K, scales) == offsetof(block_q4_K, scales),
                  "Q5_K starts as Q4_K");
    for (const std::pair<TensorType, int>& type_levels : {std::pair{TYPE_Q4_K, 16}, std::pair{TYPE_Q5_K, 32}}) {
        // (not a structured binding: clang's C++17 cannot capture one in CAPTURE's lambda)
        const TensorType type = type_levels.first;
        const int levels = type_levels.second;
        CAPTURE(type_name(type));
        const Bytes q = quantize(type, x);
        const auto y = dequantize(type, q, x.size());
        int bad = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const block_q4_K& blk = *reinterpret_cast<const block_q4_K*>(&q[i / 256 * type_block_bytes(type)]);
            uint8_t sc, m;
            q4k_get_scale_min(int(i % 256) / 32, blk.scales, &sc, &m);
            const double ds = double(fp16_to_fp32(blk.d)) * sc, dm = double(fp16_to_fp32(blk.dmin)) * m;
            double best = 1e30;
            for (int l = 0; l < levels; ++l) best = std::min(best, std::fabs(ds * l - dm - x[i]));
            if (std::fabs(double(y[i]) - x[i]) > best + 1e-5 * ((levels - 1) * ds + dm + std::fabs(x[i]))) ++bad;
        }
        CHECK(bad == 0);
    }
    {
        const Bytes q = quantize(TYPE_Q6_K, x);
        const auto y = dequantize(TYPE_Q6_K, q, x.size());
        const block_q6_K* b = reinterpret_cast<const block_q6_K*>(q.data());
        int bad = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const block_q6_K& blk = b[i / 256];
            const double ds = double(fp16_to_fp32(blk.d)) * blk.scales[(i % 256) / 16];
            double best = 1e30;
            for (int l = -32; l < 32; ++l) best = std::min(best, std::fabs(ds * l - x[i]));
            if (std::fabs(double(y[i]) - x[i]) > best + 1e-5 * (32 * std::fabs(ds) + std::fabs(x[i]))) ++bad;
        }
        CHECK(bad == 0);
    }
}

TEST_CASE("quantization quality on gaussian data: Q4_K clearly better than Q4_0, each bit more halves it") {
    const auto x = gaussian(256 * 256, 5);
    double e[6];
    const TensorType ts[6] = {TYPE_Q4_0, TYPE_Q4_K, TYPE_Q6_K, TYPE_Q8_0, TYPE_Q8_K, TYPE_Q5_K};
    for (int k = 0; k < 6; ++k) e[k] = rms(x, dequantize(ts[k], quantize(ts[k], x), x.size()));
    MESSAGE("rms error (sigma=1): q4_0 " << e[0] << "  q4_K " << e[1] << "  q5_K " << e[5] << "  q6_K " << e[2] << "  q8_0 "
                                         << e[3] << "  q8_K " << e[4]);
    CHECK(e[1] < 0.87 * e[0]);  // Q4_K (4.5 bpw) vs Q4_0 (4.5 bpw): measured ~0.835
    CHECK(e[5] < 0.6 * e[1]);   // Q5_K: one more bit, half the step
    CHECK(e[2] < 0.6 * e[5]);   // Q6_K: one more again
    CHECK(e[2] < 0.3 * e[1]);   // Q6_K: ~2 more bits
    CHECK(e[3] < e[2]);
    CHECK(e[0] < 0.12);  // uniform 4-bit grid over ~[-2.2, 2.2] sigma: step/sqrt(12) ~ 0.08
}

TEST_CASE("round trip: quantize(dequantize(q)) reproduces dequantize(q)") {
    const auto x = gaussian(256 * 64, 6);
    for (TensorType t : {TYPE_Q8_0, TYPE_Q4_0, TYPE_Q8_K}) {
        CAPTURE(std::string(type_name(t)));
        const Bytes q1 = quantize(t, x);
        const auto y1 = dequantize(t, q1, x.size());
        const Bytes q2 = quantize(t, y1);
        const auto y2 = dequantize(t, q2, x.size());
        CHECK(y1 == y2);
    }
    for (TensorType t : {TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K}) {
        // The scale search need not land exactly on the original grid; the requantized data must
        // stay much closer to y1 than y1 is to x, and must not drift on further round trips.
        CAPTURE(std::string(type_name(t)));
        const Bytes q1 = quantize(t, x);
        const auto y1 = dequantize(t, q1, x.size());
        const auto y2 = dequantize(t, quantize(t, y1), x.size());
        const auto y3 = dequantize(t, quantize(t, y2), x.size());
        const double e1 = rms(x, y1), e12 = rms(y1, y2), e23 = rms(y2, y3);
        MESSAGE(std::string(type_name(t)) << ": rms(x,y1) " << e1 << "  rms(y1,y2) " << e12 << "  rms(y2,y3) " << e23);
        CHECK(e12 < 0.25 * e1);
        CHECK(e23 <= e12 * 1.0001 + 1e-12);
    }
}

TEST_CASE("activation quantizers: SIMD bytes identical to scalar") {
    auto x = activations(256 * 16, 7);
    for (int j = 0; j < 256; ++j) x[3 * 256 + j] = 0.f;                         // zero block
    for (int j = 0; j < 256; ++j) x[4 * 256 + j] = float(j % 64 - 32) * 0.25f;  // many exact ties
    for (int j = 0; j < 256; ++j) x[5 * 256 + j] *= 1e-6f;                      // tiny (subnormal fp16 d)
    for (int j = 0; j < 256; ++j) x[6 * 256 + j] *= 1e3f;
    x[7 * 256 + 5] = 127.f;  // amax = 127 -> d = 1, x*id exact
    for (int j = 0; j < 256; ++j)
        if (j != 5) x[7 * 256 + j] = float(j % 9) - 4.5f;
    {
        Bytes a(type_row_bytes(TYPE_Q8_0, int64_t(x.size()))), b(a.size());
        quantize_row_q8_0_scalar(x.data(), a.data(), int64_t(x.size()));
        quantize_best(TYPE_Q8_0)(x.data(), b.data(), int64_t(x.size()));
        CHECK(a == b);
    }
    {
        Bytes a(type_row_bytes(TYPE_Q8_K, int64_t(x.size()))), b(a.size());
        quantize_row_q8_k_scalar(x.data(), a.data(), int64_t(x.size()));
        quantize_best(TYPE_Q8_K)(x.data(), b.data(), int64_t(x.size()));
        CHECK(a == b);
    }
}

TEST_CASE("vec_dot: scalar vs exact, best implementation vs scalar") {
    for (const DotCase& dc : dot_cases()) {
        const int bs = type_block_size(dc.w);
        const std::vector<int> nblocks = bs == 32 ? std::vector<int>{1, 2, 3, 7, 16, 33, 128} : std::vector<int>{1, 2, 3, 5, 16};
        for (int nbk : nblocks) {
            for (int src = 0; src < 2; ++src) {
                const int n = nbk * bs;
                CAPTURE(std::string(type_name(dc.w)));
                CAPTURE(n);
                CAPTURE(src);
                const Bytes w =
                    src == 0 ? quantize(dc.w, gaussian(size_t(n), 100 + nbk, 0.02f)) : random_blocks(dc.w, n, 200 + nbk);
                const auto xa = activations(size_t(n), 300 + nbk);
                const Bytes a = quantize_act(dc.a, xa);
                const auto wd = dequantize(dc.w, w, size_t(n));
                const auto ad = dequantize(dc.a, a, size_t(n));
                double exact = 0;
                for (int i = 0; i < n; ++i) exact += double(wd[i]) * ad[i];
                const double mag = dot_magnitude(dc.w, w, ad, n);
                const double tol = sum_tol(n / 32, mag);
                const float s = dc.scalar(n, w.data(), a.data());
                const float f = best_dot(dc.w, n, w.data(), a.data());
                CHECK(std::fabs(double(s) - exact) <= tol);
                CHECK(std::fabs(double(f) - double(s)) <= tol);
            }
        }
    }
}

TEST_CASE("matmul_rows equals per-row vec_dot (scalar and best), any rows / tokens") {
    struct Shape {
        int nblk, rows, r0, r1;
    };
    for (const DotCase& dc : dot_cases()) {
        const int bs = type_block_size(dc.w);
        // (single-token kernels work on groups of 4 rows and pairs of blocks: cover odd block
        // counts, exact multiples of 4 rows and groups starting at unaligned r0)
        std::vector<Shape> shapes = {{1, 1, 0, 1}, {2, 13, 0, 13}, {3, 13, 2, 11}, {1, 6, 1, 6}, {2, 4, 0, 4}, {5, 10, 1, 10}};
        if (bs == 32)
            shapes.push_back({128, 37, 0, 37});  // 4096 columns: several row chunks
        else
            shapes.push_back({16, 19, 3, 19});
        for (const Shape& sh : shapes) {
            const int n = sh.nblk * bs;
            const size_t wrb = type_row_bytes(dc.w, n), arb = type_row_bytes(dc.a, n);
            Bytes W(wrb * size_t(sh.rows));
            for (int r = 0; r < sh.rows; ++r) {
                const Bytes row =
                    (r % 3 == 2) ? random_blocks(dc.w, n, 500 + r) : quantize(dc.w, gaussian(size_t(n), 600 + r, 0.02f));
                std::memcpy(W.data() + size_t(r) * wrb, row.data(), wrb);
            }
            for (int nt : {1, 2, 3, 4, 7, 8, 9, 17}) {
                CAPTURE(std::string(type_name(dc.w)));
                CAPTURE(n);
                CAPTURE(sh.rows);
                CAPTURE(nt);
                Bytes A(arb * size_t(nt));
                std::vector<std::vector<float>> ad(static_cast<size_t>(nt));
                for (int t = 0; t < nt; ++t) {
                    const Bytes row = quantize_act(dc.a, activations(size_t(n), 700 + t));
                    std::memcpy(A.data() + size_t(t) * arb, row.data(), arb);
                    ad[size_t(t)] = dequantize(dc.a, row, size_t(n));
                }
                const int os = sh.rows + 3;
                const float sentinel = 12345.f;
                for (int impl = 0; impl < 2; ++impl) {
                    CAPTURE(impl);
                    std::vector<float> out(size_t(os) * nt, sentinel);
                    (impl == 0 ? dc.mm_scalar : mm_best(dc.w, nt))(W.data(), wrb, A.data(), arb, n, nt, out.data(), os, sh.r0,
                                                                   sh.r1);
                    int bad = 0, touched = 0;
                    for (int t = 0; t < nt; ++t)
                        for (int r = 0; r < os; ++r) {
                            const float o = out[size_t(t) * os + r];
                            if (r < sh.r0 || r >= sh.r1) {
                                if (o != sentinel) ++touched;
                                continue;
                            }
                            const void* wr = W.data() + size_t(r) * wrb;
                            const void* ar = A.data() + size_t(t) * arb;
                            const float ref = impl == 0 ? dc.scalar(n, wr, ar) : best_dot(dc.w, n, wr, ar);
                            const float refs = dc.scalar(n, wr, ar);
                            Bytes wrow(static_cast<const uint8_t*>(wr), static_cast<const uint8_t*>(wr) + wrb);
                            const double tol = sum_tol(n / 32, dot_magnitude(dc.w, wrow, ad[size_t(t)], n));
                            if (std::fabs(double(o) - ref) > tol || std::fabs(double(o) - refs) > tol) ++bad;
                            if (impl == 0 && o != refs) ++bad;  // scalar tiling keeps the exact summation order
                        }
                    CHECK(bad == 0);
                    CHECK(touched == 0);
                }
            }
        }
    }
}
