// Scalar dequantizers for the GGUF types hearth only reads (kernels/quant_types.h has the
// layouts). They run once per tensor in quantize, so they are written for clarity, not speed.
// Each value is computed with the same fp32 operations in the same order as gguf-py's numpy
// dequantizers (scale products first, then times the quant, then the offset), and the build
// has -ffp-contract=off, so the results are bitwise those of gguf-py (tests/kernels/test_dequant_gguf.cpp).
#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "kernels/quant_types.h"

namespace hearth {

namespace {

inline float f16(uint16_t h) { return fp16_to_fp32(h); }

}  // namespace

void dequantize_row_q4_1(const void* vx, float* y, int64_t n) {
    const block_q4_1* x = static_cast<const block_q4_1*>(vx);
    for (int64_t i = 0; i < n / QK4_1; ++i, y += QK4_1) {
        const float d = f16(x[i].d), m = f16(x[i].m);
        for (int j = 0; j < 16; ++j) {
            y[j] = d * float(x[i].qs[j] & 0xF) + m;
            y[j + 16] = d * float(x[i].qs[j] >> 4) + m;
        }
    }
}

void dequantize_row_q5_0(const void* vx, float* y, int64_t n) {
    const block_q5_0* x = static_cast<const block_q5_0*>(vx);
    uint8_t q[32];
    for (int64_t i = 0; i < n / QK5_0; ++i, y += QK5_0) {
        const float d = f16(x[i].d);
        q5_unpack(x[i].qh, x[i].qs, q);
        for (int j = 0; j < 32; ++j) y[j] = d * float(q[j] - 16);
    }
}

void dequantize_row_q5_1(const void* vx, float* y, int64_t n) {
    const block_q5_1* x = static_cast<const block_q5_1*>(vx);
    uint8_t q[32];
    for (int64_t i = 0; i < n / QK5_1; ++i, y += QK5_1) {
        const float d = f16(x[i].d), m = f16(x[i].m);
        q5_unpack(x[i].qh, x[i].qs, q);
        for (int j = 0; j < 32; ++j) y[j] = d * float(q[j]) + m;
    }
}

void dequantize_row_q2_k(const void* vx, float* y, int64_t n) {
    const block_q2_K* x = static_cast<const block_q2_K*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        const float d = f16(x[i].d), dmin = f16(x[i].dmin);
        for (int e = 0; e < QK_K; ++e) {  // e = 128h + 32s + l
            const int h = e / 128, s = (e / 32) % 4, l = e % 32;
            const uint8_t sc = x[i].scales[e / 16];
            const float dl = d * float(sc & 0xF), ml = dmin * float(sc >> 4);
            y[e] = dl * float((x[i].qs[32 * h + l] >> (2 * s)) & 3) - ml;
        }
    }
}

void dequantize_row_q3_k(const void* vx, float* y, int64_t n) {
    const block_q3_K* x = static_cast<const block_q3_K*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        const float d = f16(x[i].d);
        int8_t sc[16];
        q3k_unpack_scales(x[i].scales, sc);
        float dl[16];
        for (int g = 0; g < 16; ++g) dl[g] = d * float(sc[g]);
        for (int e = 0; e < QK_K; ++e) {  // e = 32b + l, b = 4h + s
            const int b = e / 32, h = b / 4, s = b % 4, l = e % 32;
            const int low = (x[i].qs[32 * h + l] >> (2 * s)) & 3;
            const int q = low - ((x[i].hmask[l] >> b) & 1 ? 0 : 4);
            y[e] = dl[e / 16] * float(q);
        }
    }
}

void dequantize_row_q5_k(const void* vx, float* y, int64_t n) {
    const block_q5_K* x = static_cast<const block_q5_K*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        const float d = f16(x[i].d), dmin = f16(x[i].dmin);
        for (int j = 0; j < 8; ++j) {  // sub-block j: nibbles of chunk j/2, bit j of qh
            uint8_t sc, m;
            q4k_get_scale_min(j, x[i].scales, &sc, &m);
            const float dl = d * float(sc), ml = dmin * float(m);
            const uint8_t* qs = x[i].qs + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            for (int l = 0; l < 32; ++l) {
                const int q = ((qs[l] >> shift) & 0xF) | ((x[i].qh[l] >> j) & 1) << 4;
                y[32 * j + l] = dl * float(q) - ml;
            }
        }
    }
}

void dequantize_row_iq4_nl(const void* vx, float* y, int64_t n) {
    const block_iq4_nl* x = static_cast<const block_iq4_nl*>(vx);
    for (int64_t i = 0; i < n / QK4_NL; ++i, y += QK4_NL) {
        const float d = f16(x[i].d);
        for (int j = 0; j < 16; ++j) {
            y[j] = d * float(kIQ4Values[x[i].qs[j] & 0xF]);
            y[j + 16] = d * float(kIQ4Values[x[i].qs[j] >> 4]);
        }
    }
}

void dequantize_row_iq4_xs(const void* vx, float* y, int64_t n) {
    const block_iq4_xs* x = static_cast<const block_iq4_xs*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        const float d = f16(x[i].d);
        int8_t ls[8];
        iq4xs_unpack_scales(x[i].scales_l, x[i].scales_h, ls);
        for (int j = 0; j < 8; ++j) {
            const float dl = d * float(ls[j]);
            const uint8_t* qs = x[i].qs + 16 * j;
            float* yj = y + 32 * j;
            for (int l = 0; l < 16; ++l) {
                yj[l] = dl * float(kIQ4Values[qs[l] & 0xF]);
                yj[l + 16] = dl * float(kIQ4Values[qs[l] >> 4]);
            }
        }
    }
}

}  // namespace hearth
