// Test data for the kernels of the K types (Q4_K / Q6_K weights x Q8_K activations), shared by
// tests/test_gemm_kernels.cpp and tests/test_q4_kx8.cpp: weight and activation rows that reach
// the extremes the kernels' integer bounds are written for, and the magnitude of a dot's terms
// that scales the float rounding tolerance.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/quant.h"

namespace kernel_test {

using Bytes = std::vector<uint8_t>;

// Weight rows by r % 4: random bytes in every field (finite random fp16 scales), quantized
// gaussian data, all bytes 0xFF (largest quants, Q4_K scales and mins 63, Q6_K scales -1), all
// quant bytes 0 with the extreme scales (Q4_K 63, Q6_K -128; Q6_K quants at -32).
inline Bytes random_weights_k(TensorType t, int rows, int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> ud(-0.05f, 0.05f);
    std::normal_distribution<float> nd(0.f, 0.02f);
    const size_t rb = type_row_bytes(t, n);
    Bytes w(rb * size_t(rows));
    std::vector<float> x(static_cast<size_t>(n));
    for (int r = 0; r < rows; ++r) {
        uint8_t* row = w.data() + size_t(r) * rb;
        if (r % 4 == 1) {
            for (auto& v : x) v = nd(rng);
            if (t == TYPE_Q4_K) quantize_row_q4_k(x.data(), row, n);
            else quantize_row_q6_k(x.data(), row, n);
            continue;
        }
        for (size_t i = 0; i < rb; ++i) row[i] = r % 4 == 0 ? uint8_t(byte(rng)) : r % 4 == 2 ? 0xFF : 0;
        for (int b = 0; b < n / QK_K; ++b) {
            const uint16_t d = fp32_to_fp16(ud(rng)), dmin = fp32_to_fp16(ud(rng));
            if (t == TYPE_Q4_K) {
                block_q4_K& k = reinterpret_cast<block_q4_K*>(row)[b];
                k.d = d;
                k.dmin = dmin;
                if (r % 4 == 3) std::memset(k.scales, 0xFF, sizeof k.scales);
            } else {
                block_q6_K& k = reinterpret_cast<block_q6_K*>(row)[b];
                k.d = d;
                if (r % 4 == 3) std::memset(k.scales, 0x80, sizeof k.scales);
            }
        }
    }
    return w;
}

// Q8_K activation rows by t % 5 (coprime with the kernels' tiles of 4 tokens): quantized
// gaussian data with outliers (twice), random quant bytes (-128 included) with a random scale,
// all quants +127 (quantized ones), all quants -128. bsums always match the quants.
inline Bytes random_acts_k(int tokens, int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    std::uniform_int_distribution<int> byte(-128, 127);
    const size_t rb = type_row_bytes(TYPE_Q8_K, n);
    Bytes a(rb * size_t(tokens));
    std::vector<float> x(static_cast<size_t>(n));
    for (int t = 0; t < tokens; ++t) {
        uint8_t* row = a.data() + size_t(t) * rb;
        const int kind = t % 5;
        if (kind <= 1 || kind == 3) {
            for (int i = 0; i < n; ++i) {
                x[size_t(i)] = kind == 3 ? 1.f : nd(rng);
                if (kind <= 1 && ud(rng) < 0.01f) x[size_t(i)] *= 20.f;
            }
            quantize_row_q8_k_scalar(x.data(), row, n);
            continue;
        }
        for (int b = 0; b < n / QK_K; ++b) {
            block_q8_K& k = reinterpret_cast<block_q8_K*>(row)[b];
            k.d = 0.001f + 0.01f * ud(rng);
            for (int i = 0; i < QK_K; ++i) k.qs[i] = int8_t(kind == 2 ? byte(rng) : -128);
            for (int g = 0; g < QK_K / 16; ++g) {
                int sum = 0;
                for (int i = 0; i < 16; ++i) sum += k.qs[16 * g + i];
                k.bsums[g] = int16_t(sum);
            }
        }
    }
    return a;
}

// Sum over super-blocks of the magnitudes of the terms (scale products x integer sums of |w*a|):
// bounds every partial sum, so it scales the float rounding tolerance.
inline double magnitude_k(TensorType t, const uint8_t* w, const uint8_t* a, int nsb) {
    double m = 0;
    for (int b = 0; b < nsb; ++b) {
        const block_q8_K& ab = reinterpret_cast<const block_q8_K*>(a)[b];
        if (t == TYPE_Q4_K) {
            const block_q4_K& wb = reinterpret_cast<const block_q4_K*>(w)[b];
            double s = 0, smin = 0;
            for (int j = 0; j < 8; ++j) {
                uint8_t sc, mn;
                q4k_get_scale_min(j, wb.scales, &sc, &mn);
                for (int l = 0; l < 32; ++l) {
                    const int e = 32 * j + l, c = e / 64, lo = (e % 64) < 32;
                    const int q = lo ? wb.qs[32 * c + l] & 15 : wb.qs[32 * c + l] >> 4;
                    s += double(sc) * q * std::abs(int(ab.qs[e]));
                    smin += double(mn) * std::abs(int(ab.qs[e]));
                }
            }
            m += std::fabs(double(fp16_to_fp32(wb.d)) * ab.d) * s + std::fabs(double(fp16_to_fp32(wb.dmin)) * ab.d) * smin;
        } else {
            // dequantized with d = 1: sc_g * (q - 32) per element
            block_q6_K wb = reinterpret_cast<const block_q6_K*>(w)[b];
            const float d = fp16_to_fp32(wb.d);
            wb.d = fp32_to_fp16(1.f);
            float x[QK_K];
            dequantize_row_q6_k(&wb, x, QK_K);
            double s = 0;
            for (int e = 0; e < QK_K; ++e) s += std::fabs(double(x[e])) * std::abs(int(ab.qs[e]));
            m += std::fabs(double(d) * ab.d) * s;
        }
    }
    return m;
}

}  // namespace kernel_test
