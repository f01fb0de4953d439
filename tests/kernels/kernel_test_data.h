// Test data for the quantized matmul kernels, shared by the tests of tests/kernels/: weight and
// activation rows that reach the extremes the kernels' integer bounds are written for, the
// magnitude of a dot's terms that scales the float rounding tolerance, and that tolerance.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/quant.h"

using namespace hearth;

namespace kernel_test {

using Bytes = std::vector<uint8_t>;

// Weight rows by r % 4: random bytes in every field (finite random fp16 scales), quantized
// gaussian data (Q2_K, Q3_K and IQ4_XS, which hearth does not quantize: random bytes again), all
// bytes 0xFF (largest quants, Q4_K and Q5_K scales and mins 63, Q2_K 15, Q6_K scales -1), all quant
// bytes 0 with the extreme scales (Q4_K and Q5_K 63, Q2_K 15, Q6_K -128; Q6_K quants at -32).
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
        if (r % 4 == 1 && type_traits(t)->quantize) {
            for (auto& v : x) v = nd(rng);
            type_traits(t)->quantize(x.data(), row, n);
            continue;
        }
        for (size_t i = 0; i < rb; ++i) row[i] = r % 4 < 2 ? uint8_t(byte(rng)) : r % 4 == 2 ? 0xFF : 0;
        for (int b = 0; b < n / QK_K; ++b) {
            const uint16_t d = fp32_to_fp16(ud(rng)), dmin = fp32_to_fp16(ud(rng));
            if (t == TYPE_Q4_K) {
                block_q4_K& k = reinterpret_cast<block_q4_K*>(row)[b];
                k.d = d;
                k.dmin = dmin;
                if (r % 4 == 3) std::memset(k.scales, 0xFF, sizeof k.scales);
            } else if (t == TYPE_Q5_K) {
                block_q5_K& k = reinterpret_cast<block_q5_K*>(row)[b];
                k.d = d;
                k.dmin = dmin;
                if (r % 4 == 3) std::memset(k.scales, 0xFF, sizeof k.scales);
            } else if (t == TYPE_Q2_K) {  // 0xFF: scales and mins 15, quants 3; 0: quants 0 (the mins' term alone)
                block_q2_K& k = reinterpret_cast<block_q2_K*>(row)[b];
                k.d = d;
                k.dmin = dmin;
                if (r % 4 == 3) std::memset(k.scales, 0xFF, sizeof k.scales);
            } else if (t == TYPE_Q3_K) {  // its bytes are its extremes: 0xFF scale 31, quant 3; 0 scale -32, quant -4
                reinterpret_cast<block_q3_K*>(row)[b].d = d;
            } else if (t == TYPE_IQ4_XS) {  // 0xFF: scales 31, grid value 113; 0: scales -32, grid value -127
                reinterpret_cast<block_iq4_xs*>(row)[b].d = d;
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
// lowest = -127: no -128 (the quantizer never writes it; the IQ4_XS kernels' sign trick needs that).
inline Bytes random_acts_k(int tokens, int n, uint32_t seed, int lowest = -128) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    std::uniform_int_distribution<int> byte(lowest, 127);
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
            for (int i = 0; i < QK_K; ++i) k.qs[i] = int8_t(kind == 2 ? byte(rng) : lowest);
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
        if (t == TYPE_Q4_K || t == TYPE_Q5_K) {
            // Q5_K: Q4_K's fields, and qh, the quants' bit 4 (bit j of qh[l] for element l of sub-block j)
            const bool q5 = t == TYPE_Q5_K;
            const block_q4_K* w4 = reinterpret_cast<const block_q4_K*>(w) + b;
            const block_q5_K* w5 = reinterpret_cast<const block_q5_K*>(w) + b;
            const uint8_t* scales = q5 ? w5->scales : w4->scales;
            const uint8_t* qs = q5 ? w5->qs : w4->qs;
            double s = 0, smin = 0;
            for (int j = 0; j < 8; ++j) {
                uint8_t sc, mn;
                q4k_get_scale_min(j, scales, &sc, &mn);
                for (int l = 0; l < 32; ++l) {
                    const int e = 32 * j + l, c = e / 64, lo = (e % 64) < 32;
                    const int q = (lo ? qs[32 * c + l] & 15 : qs[32 * c + l] >> 4) | (q5 ? ((w5->qh[l] >> j) & 1) << 4 : 0);
                    s += double(sc) * q * std::abs(int(ab.qs[e]));
                    smin += double(mn) * std::abs(int(ab.qs[e]));
                }
            }
            const uint16_t d = q5 ? w5->d : w4->d, dmin = q5 ? w5->dmin : w4->dmin;
            m += std::fabs(double(fp16_to_fp32(d)) * ab.d) * s + std::fabs(double(fp16_to_fp32(dmin)) * ab.d) * smin;
        } else if (t == TYPE_Q2_K) {
            // d*sc*q and dmin*m apart, as the kernels sum them (group g: sc, m the nibbles of
            // scales[g]; element 128h + 32s + l: q = (qs[32h + l] >> 2s) & 3)
            const block_q2_K& wb = reinterpret_cast<const block_q2_K*>(w)[b];
            double s = 0, smin = 0;
            for (int e = 0; e < QK_K; ++e) {
                const int h = e / 128, sh = (e / 32) % 4, l = e % 32;
                const int q = (wb.qs[32 * h + l] >> (2 * sh)) & 3;
                s += double(wb.scales[e / 16] & 15) * q * std::abs(int(ab.qs[e]));
                smin += double(wb.scales[e / 16] >> 4) * std::abs(int(ab.qs[e]));
            }
            m += std::fabs(double(fp16_to_fp32(wb.d)) * ab.d) * s + std::fabs(double(fp16_to_fp32(wb.dmin)) * ab.d) * smin;
        } else {
            // dequantized with d = 1: sc_g * (q - 32) per element (Q3_K: sc_g * q; IQ4_XS: scale times grid value)
            const size_t bb = type_block_bytes(t), d_at = t == TYPE_Q3_K     ? offsetof(block_q3_K, d)
                                                          : t == TYPE_IQ4_XS ? offsetof(block_iq4_xs, d)
                                                                             : offsetof(block_q6_K, d);
            uint8_t wb[sizeof(block_q6_K)];
            std::memcpy(wb, w + b * bb, bb);
            uint16_t dh;
            std::memcpy(&dh, wb + d_at, 2);
            const float d = fp16_to_fp32(dh);
            dh = fp32_to_fp16(1.f);
            std::memcpy(wb + d_at, &dh, 2);
            float x[QK_K];
            type_traits(t)->dequantize(wb, x, QK_K);
            double s = 0;
            for (int e = 0; e < QK_K; ++e) s += std::fabs(double(x[e])) * std::abs(int(ab.qs[e]));
            m += std::fabs(double(d) * ab.d) * s;
        }
    }
    return m;
}

// Any fp16 bit pattern but inf and NaN (an all-ones exponent loses its top bit): subnormals,
// negative and large scales too.
inline uint16_t random_fp16(std::mt19937& rng) {
    uint16_t h = uint16_t(rng());
    if ((h & 0x7C00) == 0x7C00) h &= 0xBFFF;
    return h;
}

// rows x cols of Q4_0, Q8_0, Q4_K, Q5_K or Q2_K, by r % 4: every byte random, fp16 scales random
// finite bit patterns; quantized gaussian data; and two rows of extreme quants with ordinary scales:
// Q4_0 all nibbles 15 then all 0 (+7, -8), Q8_0 all -128 then all +127, Q4_K, Q5_K and Q2_K those
// of random_weights_k. Q6_K, Q3_K and IQ4_XS: random_weights_k. Q4_1, Q5_0, Q5_1, IQ4_NL: below.
inline Bytes random_weights(uint32_t type, int rows, int cols, uint32_t seed) {
    std::mt19937 rng(seed);
    const size_t rb = type_row_bytes(type, cols), block = type_block_bytes(type);
    if (type == TYPE_Q6_K || type == TYPE_Q3_K || type == TYPE_IQ4_XS)
        return random_weights_k(TensorType(type), rows, cols, seed);
    if (type == TYPE_Q4_K || type == TYPE_Q5_K || type == TYPE_Q2_K) {
        Bytes w = random_weights_k(TensorType(type), rows, cols, seed);
        // d, then dmin: the first 4 bytes of Q4_K and Q5_K, the last of Q2_K
        const size_t d_at = type == TYPE_Q2_K ? offsetof(block_q2_K, d) : offsetof(block_q4_K, d);
        for (int r = 0; r < rows; r += 4)
            for (size_t at = size_t(r) * rb; at < size_t(r + 1) * rb; at += block) {
                const uint16_t d_dmin[2] = {random_fp16(rng), random_fp16(rng)};
                std::memcpy(&w[at + d_at], d_dmin, 4);
            }
        return w;
    }
    Bytes w(rb * size_t(rows));
    std::normal_distribution<float> nd(0.f, 0.02f);
    std::uniform_real_distribution<float> ud(-0.05f, 0.05f);
    std::vector<float> x(static_cast<size_t>(cols));
    if (type != TYPE_Q4_0 && type != TYPE_Q8_0) {
        // Q4_1, Q5_0, Q5_1, IQ4_NL (hearth has no quantizer for them): d (and Q4_1 / Q5_1's m) the
        // first fp16 fields, random bit patterns in rows r % 4 == 0, ordinary values otherwise;
        // the other bytes random (r % 4 < 2), all 0xFF (every quant at its largest, the grid's
        // last value) or all 0 (its smallest).
        const bool has_m = type == TYPE_Q4_1 || type == TYPE_Q5_1;
        for (int r = 0; r < rows; r++)
            for (size_t at = size_t(r) * rb; at < size_t(r + 1) * rb; at += block) {
                for (size_t i = 0; i < block; i++) w[at + i] = r % 4 < 2 ? uint8_t(rng()) : r % 4 == 2 ? 0xFF : 0x00;
                for (int f = 0; f < (has_m ? 2 : 1); f++) {
                    const uint16_t h = r % 4 == 0 ? random_fp16(rng) : fp32_to_fp16(ud(rng));
                    std::memcpy(&w[at + 2 * size_t(f)], &h, 2);
                }
            }
        return w;
    }
    for (int r = 0; r < rows; r++) {
        uint8_t* row = &w[size_t(r) * rb];
        if (r % 4 == 1) {
            for (float& v : x) v = nd(rng);
            if (type == TYPE_Q4_0)
                quantize_row_q4_0(x.data(), row, cols);
            else
                quantize_row_q8_0_scalar(x.data(), row, cols);
            continue;
        }
        const uint8_t extreme = type == TYPE_Q4_0 ? (r % 4 == 2 ? 0xFF : 0x00) : (r % 4 == 2 ? 0x80 : 0x7F);
        for (size_t at = 0; at < rb; at += block) {
            const uint16_t d = r % 4 == 0 ? random_fp16(rng) : fp32_to_fp16(ud(rng));
            std::memcpy(row + at, &d, 2);
            for (size_t i = 2; i < block; i++) row[at + i] = r % 4 == 0 ? uint8_t(rng()) : extreme;
        }
    }
    return w;
}

// Q8_K activations as a model's are: the quantizer's bytes of gaussian data, 1% of it x20.
inline Bytes gaussian_acts_k(int n_tokens, int cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    const size_t arb = type_row_bytes(TYPE_Q8_K, cols);
    Bytes a(arb * size_t(n_tokens));
    std::vector<float> x(static_cast<size_t>(cols));
    for (int t = 0; t < n_tokens; t++) {
        for (float& v : x) v = nd(rng) * (ud(rng) < 0.01f ? 20.f : 1.f);
        quantize_row_q8_k_scalar(x.data(), &a[size_t(t) * arb], cols);
    }
    return a;
}

// Activation rows for the kernels of weight type `type`. Q8_K: random_acts_k (-128 included but
// for IQ4_XS).
// Q8_0, by t % 5: quantized gaussian data with outliers (twice), random quants with a random
// scale, all +127, all -127. Not -128: the quantizer never writes it, and the AVX2 Q8_0 kernels'
// sign trick (_mm256_sign_epi8) cannot negate it.
inline Bytes random_acts(uint32_t type, int n_tokens, int cols, uint32_t seed) {
    if (type_vec_dot_type(type) == TYPE_Q8_K) return random_acts_k(n_tokens, cols, seed, type == TYPE_IQ4_XS ? -127 : -128);
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    const size_t arb = type_row_bytes(TYPE_Q8_0, cols);
    Bytes a(arb * size_t(n_tokens));
    std::vector<float> x(static_cast<size_t>(cols));
    for (int t = 0; t < n_tokens; t++) {
        uint8_t* row = &a[size_t(t) * arb];
        const int kind = t % 5;
        if (kind <= 1) {
            for (float& v : x) v = nd(rng) * (ud(rng) < 0.01f ? 20.f : 1.f);
            quantize_row_q8_0_scalar(x.data(), row, cols);
            continue;
        }
        for (int b = 0; b < cols / QK8_0; b++) {
            block_q8_0& k = reinterpret_cast<block_q8_0*>(row)[b];
            k.d = fp32_to_fp16(0.001f + 0.01f * ud(rng));
            for (int8_t& q : k.qs) q = int8_t(kind == 2 ? int(rng() % 255) - 127 : kind == 3 ? 127 : -127);
        }
    }
    return a;
}

// mag[t * rows + r]: the sum of |w * a| over the dot of weight row r and activation row t, which
// bounds every partial sum, so it scales the float rounding.
inline std::vector<double> magnitudes(uint32_t type, const Bytes& w, const Bytes& a, int rows, int cols, int n_tokens) {
    const size_t wrb = type_row_bytes(type, cols), arb = type_row_bytes(type_vec_dot_type(type), cols);
    std::vector<double> mag(size_t(rows) * size_t(n_tokens));
    if (type_vec_dot_type(type) == TYPE_Q8_K) {
        for (int t = 0; t < n_tokens; t++)
            for (int r = 0; r < rows; r++)
                mag[size_t(t) * rows + r] = magnitude_k(TensorType(type), &w[r * wrb], &a[t * arb], cols / QK_K);
        return mag;
    }
    // 32-element blocks x Q8_0. Q4_1 and Q5_1 (d*q + m): the terms d*q*a and m*a apart, as the
    // kernels sum them (|d*q + m| may be far smaller than both). Each weight is dequantized from
    // a copy of its block with m = 0 (and, for the m term, d = 0, m = 1 times |m|).
    const bool has_m = type == TYPE_Q4_1 || type == TYPE_Q5_1;
    const size_t block = type_block_bytes(type);
    std::vector<float> wf(size_t(rows) * cols), mf(size_t(rows) * cols, 0.f), af(size_t(n_tokens) * cols);
    std::vector<uint8_t> tmp(block);
    for (int r = 0; r < rows; r++)
        for (int b = 0; b < cols / 32; b++) {
            const uint8_t* src = &w[r * wrb + size_t(b) * block];
            float* dst = &wf[size_t(r) * cols + size_t(b) * 32];
            std::memcpy(tmp.data(), src, block);
            if (has_m) std::memset(&tmp[2], 0, 2);
            type_traits(type)->dequantize(tmp.data(), dst, 32);
            if (has_m) {
                uint16_t m;
                std::memcpy(&m, src + 2, 2);
                for (int i = 0; i < 32; i++) mf[size_t(r) * cols + size_t(b) * 32 + size_t(i)] = std::fabs(fp16_to_fp32(m));
            }
        }
    for (int t = 0; t < n_tokens; t++) dequantize_row_q8_0(&a[t * arb], &af[size_t(t) * cols], cols);
    for (int t = 0; t < n_tokens; t++)
        for (int r = 0; r < rows; r++) {
            double m = 0;
            for (int i = 0; i < cols; i++)
                m += (std::fabs(double(wf[size_t(r) * cols + i])) + mf[size_t(r) * cols + i]) *
                     std::fabs(af[size_t(t) * cols + i]);
            mag[size_t(t) * rows + r] = m;
        }
    return mag;
}

// Both kernels compute each block's integer sums exactly and differ in a few roundings per block
// (int -> float, scale products, FMA or not) and the order of the running sum, each at most
// 2^-24 of the magnitude of the terms: within a small multiple of (nb + 4) * 2^-24 * magnitude.
// 1e-6 * (nb + 4) leaves a margin of about 4 (the bound of tests/kernels/test_gemm_kernels.cpp). A bound
// relative to the result would not do: with extreme rows the terms nearly cancel.
inline bool within_rounding(float got, float want, double mag, int nb) {
    return std::fabs(double(got) - double(want)) <= 1e-6 * (nb + 4) * mag + 1e-30;
}

}  // namespace kernel_test
