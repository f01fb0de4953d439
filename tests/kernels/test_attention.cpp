// The attention kernels (kernels/attention.h): the scalar twins against the formulas in
// double, each SIMD version against its scalar twin, for f32, f16 and q8_0 caches; and the
// cache row writers against the scalar conversions. Built for x86 and aarch64 (qemu).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/fp16.h"
#include "kernels/quant.h"

using namespace hearth;

namespace {

std::vector<float> normal(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd;
    std::vector<float> v(n);
    for (float& x : v) x = nd(rng);
    return v;
}

// A cache of n rows, each `heads` heads of hd values of type t (the kernels read one head of
// it), and the same values dequantized: fp32 [row][heads * hd].
struct Cache {
    uint32_t type;
    size_t row_bytes;
    std::vector<uint8_t> bytes;
    std::vector<float> values;
};

Cache make_cache(uint32_t t, int n, int heads, int hd, uint32_t seed) {
    const int width = heads * hd;
    Cache c{t, type_row_bytes(t, width), {}, {}};
    c.bytes.resize(c.row_bytes * n + 1);  // +1: nothing reads past the last row
    c.values.resize(size_t(n) * width);
    std::vector<float> x = normal(size_t(n) * width, seed);
    for (int p = 0; p < n; p++) {
        const float* xp = &x[size_t(p) * width];
        uint8_t* row = &c.bytes[c.row_bytes * p];
        float* val = &c.values[size_t(p) * width];
        if (t == TYPE_F32) {
            std::memcpy(row, xp, sizeof(float) * width);
            std::memcpy(val, xp, sizeof(float) * width);
        } else if (t == TYPE_F16) {
            for (int i = 0; i < width; i++) {
                const uint16_t h = fp32_to_fp16(xp[i]);
                std::memcpy(row + 2 * i, &h, 2);
                val[i] = fp16_to_fp32(h);
            }
        } else {
            quantize_row_q8_0_scalar(xp, row, width);
            dequantize_row_q8_0(row, val, width);
        }
    }
    return c;
}

// One kv head's keys at positions [0, n) as the cache holds them (kv_cache_store_key: tiles or
// rows, in whole tiles; positions past n left as 0xFF bytes, NaN in every type, which no score
// may read), and their values as the cache types give them back: fp32 [position][hd].
struct Keys {
    std::vector<uint8_t> bytes;
    std::vector<float> values;
};

Keys make_keys(uint32_t t, int n, int hd, uint32_t seed) {
    const size_t positions = size_t(n + kAttnKeyTile - 1) / kAttnKeyTile * kAttnKeyTile;
    Keys k{std::vector<uint8_t>(type_row_bytes(t, hd) * positions, 0xFF), normal(size_t(n) * hd, seed)};
    std::vector<uint8_t> row(type_row_bytes(t, hd));
    for (int p = 0; p < n; p++) {
        float* x = &k.values[size_t(p) * hd];
        kv_cache_store_key(t, x, k.bytes.data(), p, hd);
        if (t == TYPE_F16) {
            for (int d = 0; d < hd; d++) x[d] = fp16_to_fp32(fp32_to_fp16(x[d]));
        } else if (t == TYPE_Q8_0) {
            quantize_row_q8_0_scalar(x, row.data(), hd);
            dequantize_row_q8_0(row.data(), x, hd);
        }
    }
    return k;
}

struct Kernels {
    std::string name;
    attn_scores_fn scores;
    attn_values_fn values;
};

// Every version built in for type t, the scalar twin first.
std::vector<Kernels> versions(uint32_t t) {
    std::vector<Kernels> v;
#define HEARTH_VERSIONS(type, T)                                                                  \
    if (t == T) {                                                                                 \
        v.push_back({#type "_scalar", attn_scores_##type##_scalar, attn_values_##type##_scalar}); \
        HEARTH_SIMD_VERSIONS(type)                                                                \
    }
#if defined(HEARTH_ISA_AVX512)
#define HEARTH_SIMD_VERSIONS(type)                                                      \
    v.push_back({#type "_avx2", attn_scores_##type##_avx2, attn_values_##type##_avx2}); \
    v.push_back({#type "_avx512", attn_scores_##type##_avx512, attn_values_##type##_avx512});
#elif defined(HEARTH_ISA_AVX2)
#define HEARTH_SIMD_VERSIONS(type) v.push_back({#type "_avx2", attn_scores_##type##_avx2, attn_values_##type##_avx2});
#elif defined(HEARTH_ISA_NEON)
#define HEARTH_SIMD_VERSIONS(type) v.push_back({#type "_neon", attn_scores_##type##_neon, attn_values_##type##_neon});
#else
#define HEARTH_SIMD_VERSIONS(type)
#endif
    HEARTH_VERSIONS(f32, TYPE_F32)
    HEARTH_VERSIONS(f16, TYPE_F16)
    HEARTH_VERSIONS(q8_0, TYPE_Q8_0)
#undef HEARTH_SIMD_VERSIONS
#undef HEARTH_VERSIONS
    return v;
}

// A sum of n fp32 terms, each a rounded product, accumulated in any order (with or without
// FMA) is within (n + 1) u * sum |terms| of the exact sum, u = 2^-24; twice that for margin.
double sum_bound(int n, double sum_abs) { return (n + 1) * std::ldexp(1.0, -23) * sum_abs + 1e-30; }

const uint32_t kTypes[] = {TYPE_F32, TYPE_F16, TYPE_Q8_0};

// Wrong elements of one output, counted rather than checked one by one (millions of them).
struct Failures {
    int count = 0, row = -1, col = -1;  // and where the first one is
    void add(bool wrong, int r, int c) {
        if (wrong && count++ == 0) row = r, col = c;
    }
};

}  // namespace

TEST_CASE("attention scores: every version equals the formula, for query groups and key blocks of every shape") {
    const int kFirstKeys[3] = {0, 7, 16};
    for (uint32_t t : kTypes) {
        for (int hd : {4, 8, 12, 16, 32, 64, 128, 256}) {
            if (t == TYPE_Q8_0 && hd % QK8_0 != 0) continue;  // the cache refuses such heads
            for (int n_q : {1, 2, 5, 6, 7, 8, 13}) {
                for (int n_k : {1, 3, 16, 17, 70, 300})
                    for (int k0 : kFirstKeys) {  // the first position read (a sliding window's)
                        // Long runs of keys take one first position each, in turn with the query
                        // rows: they cost most of the test's time (under qemu, half a minute).
                        if (n_k > 17 && k0 != kFirstKeys[n_q % 3]) continue;
                        const Keys c = make_keys(t, k0 + n_k, hd, uint32_t(hd * 1000 + n_k + k0));
                        const std::vector<float> q = normal(size_t(n_q) * hd, uint32_t(n_q * 7 + hd));
                        const int s_stride = n_k + 5;
                        std::vector<float> scratch(attn_scratch_floats(hd), NAN);
                        std::vector<double> exact(size_t(n_q) * n_k), mag(size_t(n_q) * n_k);  // the formula, in double
                        for (int r = 0; r < n_q; r++)
                            for (int p = 0; p < n_k; p++)
                                for (int d = 0; d < hd; d++) {
                                    const double term = double(q[size_t(r) * hd + d]) * c.values[size_t(k0 + p) * hd + d];
                                    exact[size_t(r) * n_k + p] += term, mag[size_t(r) * n_k + p] += std::fabs(term);
                                }
                        std::vector<float> ref;
                        for (const Kernels& kern : versions(t)) {
                            std::vector<float> s(size_t(n_q) * s_stride, -7.0f);
                            kern.scores(q.data(), n_q, hd, c.bytes.data(), k0, n_k, s.data(), s_stride, scratch.data());
                            if (ref.empty()) ref = s;  // the scalar twin's, for the SIMD versions
                            Failures f;
                            for (int r = 0; r < n_q; r++)
                                for (int p = 0; p < s_stride; p++) {
                                    const float got = s[size_t(r) * s_stride + p];
                                    if (p >= n_k) {
                                        f.add(got != -7.0f, r, p);  // nothing written past the keys
                                        continue;
                                    }
                                    const double e = exact[size_t(r) * n_k + p], bound = sum_bound(hd, mag[size_t(r) * n_k + p]);
                                    f.add(!(std::fabs(got - e) <= bound), r, p);
                                    f.add(!(std::fabs(got - ref[size_t(r) * s_stride + p]) <= 2 * bound), r, p);
                                }
                            INFO(kern.name << ": head_dim " << hd << ", " << n_q << " query rows, " << n_k << " keys from " << k0
                                           << "; first wrong: row " << f.row << ", position " << f.col);
                            CHECK(f.count == 0);
                        }
                    }
            }
        }
    }
}

TEST_CASE("attention values: every version equals the weighted sum, for query groups and value blocks of every shape") {
    for (uint32_t t : kTypes) {
        for (int hd : {4, 8, 12, 16, 32, 40, 64, 128, 256}) {
            if (t == TYPE_Q8_0 && hd % QK8_0 != 0) continue;
            for (int n_q : {1, 3, 6, 7, 8, 9, 13}) {
                for (int n_v : {1, 5, 16, 33, 70, 300}) {
                    const int heads = 2, head = 1;
                    const Cache c = make_cache(t, n_v, heads, hd, uint32_t(hd * 100 + n_v));
                    const int w_stride = n_v + 3, out_stride = hd + 2;
                    const std::vector<float> w = normal(size_t(n_q) * w_stride, uint32_t(n_q + n_v));
                    const uint8_t* v = c.bytes.data() + type_row_bytes(t, hd) * head;
                    std::vector<float> scratch(attn_scratch_floats(hd), NAN);
                    std::vector<double> exact(size_t(n_q) * hd), mag(size_t(n_q) * hd);
                    for (int r = 0; r < n_q; r++)
                        for (int p = 0; p < n_v; p++)
                            for (int i = 0; i < hd; i++) {
                                const double term =
                                    double(w[size_t(r) * w_stride + p]) * c.values[size_t(p) * heads * hd + head * hd + i];
                                exact[size_t(r) * hd + i] += term, mag[size_t(r) * hd + i] += std::fabs(term);
                            }
                    std::vector<float> ref;
                    for (const Kernels& kern : versions(t)) {
                        std::vector<float> out(size_t(n_q) * out_stride, -7.0f);
                        kern.values(w.data(), w_stride, n_q, v, c.row_bytes, n_v, hd, out.data(), out_stride, scratch.data());
                        if (ref.empty()) ref = out;
                        Failures f;
                        for (int r = 0; r < n_q; r++)
                            for (int i = 0; i < out_stride; i++) {
                                const float got = out[size_t(r) * out_stride + i];
                                if (i >= hd) {
                                    f.add(got != -7.0f, r, i);
                                    continue;
                                }
                                const double e = exact[size_t(r) * hd + i], bound = sum_bound(n_v, mag[size_t(r) * hd + i]);
                                f.add(!(std::fabs(got - e) <= bound), r, i);
                                f.add(!(std::fabs(got - ref[size_t(r) * out_stride + i]) <= 2 * bound), r, i);
                            }
                        INFO(kern.name << ": head_dim " << hd << ", " << n_q << " query rows, " << n_v
                                       << " values; first wrong: row " << f.row << ", dim " << f.col);
                        CHECK(f.count == 0);
                    }
                }
            }
        }
    }
}

TEST_CASE("attention kernels: the chosen ones are built for the three cache types only") {
    for (uint32_t t : kTypes) {
        REQUIRE(attn_kernels(t) != nullptr);
        CHECK(kv_cache_type_ok(t));
    }
    for (uint32_t t : {TYPE_Q4_0, TYPE_BF16, TYPE_Q4_K}) {
        CHECK(attn_kernels(t) == nullptr);
        CHECK(!kv_cache_type_ok(t));
    }
}

TEST_CASE("kv_cache_store_key: f32 and f16 keys in tiles of 16 positions, [dim][position], q8_0 keys in rows") {
    const int hd = 64, n = 40;
    const std::vector<float> x = normal(size_t(n) * hd, 5);
    for (uint32_t t : kTypes) {
        CHECK(kv_keys_tiled(t) == (t != TYPE_Q8_0));
        std::vector<uint8_t> keys(type_row_bytes(t, hd) * 48, 0xFF), row(type_row_bytes(t, hd));
        for (int p = 0; p < n; p++) kv_cache_store_key(t, &x[size_t(p) * hd], keys.data(), p, hd);
        Failures f;
        for (int p = 0; p < n; p++) {
            const float* xp = &x[size_t(p) * hd];
            if (t == TYPE_Q8_0) {  // row p as kv_cache_store_row writes it
                kv_cache_store_row(t, xp, row.data(), hd);
                f.add(std::memcmp(row.data(), &keys[row.size() * p], row.size()) != 0, p, 0);
                continue;
            }
            for (int d = 0; d < hd; d++) {
                const size_t e = (size_t(p / 16) * hd + d) * 16 + p % 16;  // element of the tiles
                if (t == TYPE_F32) {
                    float got;
                    std::memcpy(&got, &keys[4 * e], 4);
                    f.add(got != xp[d], p, d);
                } else {
                    uint16_t got;
                    std::memcpy(&got, &keys[2 * e], 2);
                    f.add(got != fp32_to_fp16(xp[d]), p, d);
                }
            }
        }
        INFO("type " << t << ": first wrong: position " << f.row << ", dim " << f.col);
        CHECK(f.count == 0);
    }
}

TEST_CASE("kv_cache_store_row writes what the scalar conversions write") {
    for (int n : {32, 64, 96, 256, 4096}) {
        std::vector<float> x = normal(n, uint32_t(n));
        x[0] = 70000.0f, x[1] = -1e-7f, x[2] = INFINITY;  // f16 overflow, subnormal, infinity
        std::vector<uint8_t> got(4 * n), want(4 * n);
        kv_cache_store_row(TYPE_F32, x.data(), got.data(), n);
        CHECK(std::memcmp(got.data(), x.data(), 4 * n) == 0);

        kv_cache_store_row(TYPE_F16, x.data(), got.data(), n);
        f32_to_f16_row_scalar(x.data(), reinterpret_cast<uint16_t*>(want.data()), n);
        CHECK(std::memcmp(got.data(), want.data(), 2 * n) == 0);
        for (int i = 0; i < n; i++) CHECK(reinterpret_cast<const uint16_t*>(want.data())[i] == fp32_to_fp16(x[i]));

        x[2] = 3.0f;  // q8_0 of a block with infinity is nan for everyone; not a cache's concern
        kv_cache_store_row(TYPE_Q8_0, x.data(), got.data(), n);
        quantize_row_q8_0_scalar(x.data(), want.data(), n);
        CHECK(std::memcmp(got.data(), want.data(), type_row_bytes(TYPE_Q8_0, n)) == 0);
    }
}
