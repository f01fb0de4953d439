// Scalar reference: quantizers, dequantizers, dot products and tiled matmul for
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS (weights) and Q8_0, Q8_K (activations).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "kernels/ref/ref.h"
#include "kernels/rows_x8.h"

namespace hearth {

namespace {

// Round half to even (default FP environment), like _mm256_round_ps / vcvtnq_s32_f32.
// The argument must already be clamped to a small range.
// Adding and subtracting 1.5 * 2^23 leaves v rounded to an integer by the FPU's own
// round-to-nearest-even: nearbyint's result without a libm call in hot loops. (Without
// -ffast-math the compiler may not fold v + m - m back to v.)
inline int round_even(float v) {
    const float magic = 12582912.0f;
    return int((v + magic) - magic);
}

inline float clampf(float v, float lo, float hi) { return std::min(hi, std::max(lo, v)); }

inline float f16(uint16_t h) { return fp16_to_fp32(h); }

}  // namespace

// Q8_K scale: amax/127 rounded to a 12-bit mantissa (fp32 exponent range kept), so d*q and
// 127*d are exact in fp32 and quantize(dequantize(q)) reproduces q exactly.
float q8k_scale(float amax) {
    uint32_t u = fp32_to_bits(amax / 127.f);
    u = (u + 0x800u) & ~0xFFFu;
    return fp32_from_bits(u);
}

namespace {

// ---------------------------------------------------------------------------------------
// Q4_K helpers
// ---------------------------------------------------------------------------------------

// Weighted least-squares fit of x[i] ~ scale*L[i] + mn with L in [0, nmax] and mn <= 0.
// Tries inverse scales (nmax + rmin + k*rdelta)/(max-min), k = 0..nstep, refitting scale and
// mn by least squares for each labelling, and keeps the lowest weighted squared error.
// Returns scale; *neg_min = -mn (>= 0). n <= 32.
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min, float rmin, float rdelta,
                    int nstep) {
    float xmin = x[0], xmax = x[0], sum_w = 0, sum_x = 0;
    for (int i = 0; i < n; ++i) {
        xmin = std::min(xmin, x[i]);
        xmax = std::max(xmax, x[i]);
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (xmin > 0) xmin = 0;
    if (!(xmax > xmin)) {  // constant non-positive sub-block: represented by the min alone
        for (int i = 0; i < n; ++i) L[i] = 0;
        *neg_min = -xmin;
        return 0.f;
    }
    float iscale = nmax / (xmax - xmin);
    float scale = 1 / iscale, mn = xmin;
    float best = 0;
    for (int i = 0; i < n; ++i) {
        const int l = round_even(clampf(iscale * (x[i] - xmin), 0.f, float(nmax)));
        L[i] = uint8_t(l);
        const float diff = scale * l + xmin - x[i];
        best += w[i] * diff * diff;
    }
    uint8_t Laux[32];
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (xmax - xmin);
        float sl = 0, sl2 = 0, sxl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = round_even(clampf(iscale * (x[i] - xmin), 0.f, float(nmax)));
            Laux[i] = uint8_t(l);
            sl += w[i] * l;
            sl2 += w[i] * l * l;
            sxl += w[i] * l * x[i];
        }
        const float D = sum_w * sl2 - sl * sl;
        if (D > 0) {
            float s = (sum_w * sxl - sum_x * sl) / D;
            float m = (sl2 * sum_x - sl * sxl) / D;
            if (m > 0) {
                m = 0;
                s = sxl / sl2;
            }
            float err = 0;
            for (int i = 0; i < n; ++i) {
                const float diff = s * Laux[i] + m - x[i];
                err += w[i] * diff * diff;
            }
            if (err < best) {
                best = err;
                std::memcpy(L, Laux, size_t(n));
                scale = s;
                mn = m;
            }
        }
    }
    *neg_min = -mn;
    return scale;
}

void pack_q4k_scales(const uint8_t* sc, const uint8_t* m, uint8_t* s) {
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            s[j] = sc[j];
            s[j + 4] = m[j];
        } else {
            s[j + 4] = uint8_t((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
            s[j - 4] |= uint8_t((sc[j] >> 4) << 6);
            s[j] |= uint8_t((m[j] >> 4) << 6);
        }
    }
}

// Labels and weighted error of a super-block for given fp16-rounded super scales.
float q4k_label(const float* x, const float* w, const uint8_t* sc, const uint8_t* m, float d, float dmin, int nmax, uint8_t* L) {
    float err = 0;
    for (int j = 0; j < 8; ++j) {
        const float ds = d * sc[j];
        const float dm = dmin * m[j];
        for (int i = 32 * j; i < 32 * j + 32; ++i) {
            int l = 0;
            if (ds != 0.f) l = round_even(clampf((x[i] + dm) / ds, 0.f, float(nmax)));
            L[i] = uint8_t(l);
            const float diff = ds * l - dm - x[i];
            err += w[i] * diff * diff;
        }
    }
    return err;
}

// ---------------------------------------------------------------------------------------
// Q6_K helpers
// ---------------------------------------------------------------------------------------

// Signed scale for x[i] ~ scale*l, l in [-nmax, nmax-1], maximizing the x^2-weighted fit
// (ggml's make_qx_quants with rmse_type 1). L gets l + nmax.
float fit_scale_signed(int n, int nmax, const float* x, uint8_t* L) {
    float amax = 0, max = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < 1e-15f) {
        for (int i = 0; i < n; ++i) L[i] = uint8_t(nmax);
        return 0.f;
    }
    const float lo = float(-nmax), hi = float(nmax - 1);
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = round_even(clampf(iscale * x[i], lo, hi));
        L[i] = uint8_t(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 > 0 ? sumlx / suml2 : 0.f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        float slx = 0, sl2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = round_even(clampf(iscale * x[i], lo, hi));
            const float w = x[i] * x[i];
            slx += w * x[i] * l;
            sl2 += w * l * l;
        }
        if (sl2 > 0 && slx * slx > best * sl2) {
            for (int i = 0; i < n; ++i) L[i] = uint8_t(round_even(clampf(iscale * x[i], lo, hi)) + nmax);
            scale = slx / sl2;
            best = scale * slx;
        }
    }
    return scale;
}

float q6k_label(const float* x, const int8_t* sc, float d, uint8_t* L) {
    float err = 0;
    for (int g = 0; g < 16; ++g) {
        const float ds = d * sc[g];
        for (int i = 16 * g; i < 16 * g + 16; ++i) {
            int l = 0;
            if (ds != 0.f) l = round_even(clampf(x[i] / ds, -32.f, 31.f));
            L[i] = uint8_t(l + 32);
            const float diff = ds * l - x[i];
            err += diff * diff;
        }
    }
    return err;
}

// Decoded weight blocks for the scalar matmul.
struct Q4KDecoded {
    uint8_t q[QK_K];
    uint8_t sc[8], m[8];
    float d, dmin;
};

// Q4_K, or Q5_K: Q4_K's scales and nibbles, and bit 4 of each quant from qh (bit j of qh[l]:
// element l of sub-block j, as ggml's dequantize_row_q5_K). Both take Q4_K's dot, on quants
// 0..15 or 0..31.
template <typename Block>
inline void q4k_decode(const Block& b, Q4KDecoded& o) {
    for (int j = 0; j < 8; ++j) q4k_get_scale_min(j, b.scales, &o.sc[j], &o.m[j]);
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
            o.q[64 * c + l] = b.qs[32 * c + l] & 0xF;
            o.q[64 * c + 32 + l] = b.qs[32 * c + l] >> 4;
            if constexpr (std::is_same<Block, block_q5_K>::value) {
                o.q[64 * c + l] |= uint8_t(((b.qh[l] >> (2 * c)) & 1) << 4);
                o.q[64 * c + 32 + l] |= uint8_t(((b.qh[l] >> (2 * c + 1)) & 1) << 4);
            }
        }
    o.d = f16(b.d);
    o.dmin = f16(b.dmin);
}

inline float q4k_dot_decoded(const Q4KDecoded& w, const block_q8_K& a) {
    int sumi = 0;
    for (int j = 0; j < 8; ++j) {
        int s = 0;
        for (int l = 0; l < 32; ++l) s += int(w.q[32 * j + l]) * a.qs[32 * j + l];
        sumi += w.sc[j] * s;
    }
    int summ = 0;
    for (int j = 0; j < 8; ++j) summ += w.m[j] * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
    return (w.d * a.d) * float(sumi) - (w.dmin * a.d) * float(summ);
}

// A super-block of 16 groups of 16 with a signed scale each (Q6_K, Q3_K; IQ4_XS, whose
// sub-blocks of 32 are two groups), as signed values.
struct Group16Decoded {
    int8_t q[QK_K];  // Q6_K: q - 32; Q3_K: -4..3; IQ4_XS: the grid values; Q2_K: 0..3
    int8_t sc[16];
    float d;
};

inline void q6k_decode(const block_q6_K& b, Group16Decoded& o) {
    for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = b.ql + 64 * h;
        const uint8_t* qh = b.qh + 32 * h;
        int8_t* q = o.q + 128 * h;
        for (int l = 0; l < 32; ++l) {
            q[l] = int8_t(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
            q[l + 32] = int8_t(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
            q[l + 64] = int8_t(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            q[l + 96] = int8_t(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
    std::memcpy(o.sc, b.scales, 16);
    o.d = f16(b.d);
}

inline void q3k_decode(const block_q3_K& b, Group16Decoded& o) {
    for (int e = 0; e < QK_K; ++e) {  // e = 32k + l, chunk k = 4h + s
        const int k = e / 32, h = k / 4, s = k % 4, l = e % 32;
        const int low = (b.qs[32 * h + l] >> (2 * s)) & 3;
        o.q[e] = int8_t(low - ((b.hmask[l] >> k) & 1 ? 0 : 4));
    }
    q3k_unpack_scales(b.scales, o.sc);
    o.d = f16(b.d);
}

// IQ4_XS: sub-block j (32 elements) is groups 2j and 2j + 1 with its scale.
inline void iq4xs_decode(const block_iq4_xs& b, Group16Decoded& o) {
    int8_t ls[8];
    iq4xs_unpack_scales(b.scales_l, b.scales_h, ls);
    for (int j = 0; j < 8; ++j) {
        for (int l = 0; l < 16; ++l) {
            o.q[32 * j + l] = kIQ4Values[b.qs[16 * j + l] & 0xF];
            o.q[32 * j + l + 16] = kIQ4Values[b.qs[16 * j + l] >> 4];
        }
        o.sc[2 * j] = o.sc[2 * j + 1] = ls[j];
    }
    o.d = f16(b.d);
}

inline float group16_dot_decoded(const Group16Decoded& w, const block_q8_K& a) {
    int sumi = 0;
    for (int g = 0; g < 16; ++g) {
        int s = 0;
        for (int l = 0; l < 16; ++l) s += int(w.q[16 * g + l]) * a.qs[16 * g + l];
        sumi += w.sc[g] * s;
    }
    return (w.d * a.d) * float(sumi);
}

// Q2_K: the groups' quants (0..3) and scales (0..15) as the others', and a min per group, which
// dmin scales; its term goes through the Q8_K bsums, as Q4_K's.
struct Q2KDecoded : Group16Decoded {
    uint8_t m[16];
    float dmin;
};

inline void q2k_decode(const block_q2_K& b, Q2KDecoded& o) {
    for (int e = 0; e < QK_K; ++e) {  // e = 32k + l, chunk k = 4h + s
        const int k = e / 32, h = k / 4, s = k % 4, l = e % 32;
        o.q[e] = int8_t((b.qs[32 * h + l] >> (2 * s)) & 3);
    }
    for (int g = 0; g < 16; ++g) {
        o.sc[g] = int8_t(b.scales[g] & 0xF);
        o.m[g] = uint8_t(b.scales[g] >> 4);
    }
    o.d = f16(b.d);
    o.dmin = f16(b.dmin);
}

inline float q2k_dot_decoded(const Q2KDecoded& w, const block_q8_K& a) {
    int summ = 0;
    for (int g = 0; g < 16; ++g) summ += w.m[g] * a.bsums[g];
    return group16_dot_decoded(w, a) - (w.dmin * a.d) * float(summ);
}

inline void q4_0_decode(const block_q4_0& b, int8_t* q) {
    for (int j = 0; j < 16; ++j) {
        q[j] = int8_t((b.qs[j] & 0xF) - 8);
        q[j + 16] = int8_t((b.qs[j] >> 4) - 8);
    }
}

inline int dot32(const int8_t* a, const int8_t* b) {
    int s = 0;
    for (int j = 0; j < 32; ++j) s += int(a[j]) * b[j];
    return s;
}

}  // namespace

// =========================================================================================
// Quantize
// =========================================================================================

void quantize_row_f32(const float* x, void* y, int64_t n) { std::memcpy(y, x, size_t(n) * sizeof(float)); }

void quantize_row_f16(const float* x, void* vy, int64_t n) {
    uint16_t* y = static_cast<uint16_t*>(vy);
    for (int64_t i = 0; i < n; i++) y[i] = fp32_to_fp16(x[i]);
}

void quantize_row_bf16(const float* x, void* vy, int64_t n) {
    uint16_t* y = static_cast<uint16_t*>(vy);
    for (int64_t i = 0; i < n; i++) y[i] = fp32_to_bf16(x[i]);
}

void quantize_row_q8_0_scalar(const float* x, void* vy, int64_t n) {
    block_q8_0* y = static_cast<block_q8_0*>(vy);
    const int64_t nb = n / QK8_0;
    for (int64_t i = 0; i < nb; ++i, x += QK8_0) {
        float amax = 0;
        for (int j = 0; j < QK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
        const uint16_t dh = fp32_to_fp16(amax / 127.f);
        const float d = f16(dh);
        const float id = d != 0.f ? 1.f / d : 0.f;
        y[i].d = dh;
        for (int j = 0; j < QK8_0; ++j) y[i].qs[j] = int8_t(round_even(clampf(x[j] * id, -127.f, 127.f)));
    }
}

void quantize_row_q8_k_scalar(const float* x, void* vy, int64_t n) {
    block_q8_K* y = static_cast<block_q8_K*>(vy);
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        float amax = 0;
        for (int j = 0; j < QK_K; ++j) amax = std::max(amax, std::fabs(x[j]));
        if (amax == 0.f) {
            std::memset(&y[i], 0, sizeof(block_q8_K));
            continue;
        }
        const float d = q8k_scale(amax);
        const float iscale = 1.f / d;
        y[i].d = d;
        for (int j = 0; j < QK_K; ++j) y[i].qs[j] = int8_t(round_even(clampf(x[j] * iscale, -127.f, 127.f)));
        for (int g = 0; g < QK_K / 16; ++g) {
            int s = 0;
            for (int l = 0; l < 16; ++l) s += y[i].qs[16 * g + l];
            y[i].bsums[g] = int16_t(s);
        }
    }
}

void quantize_row_q4_0(const float* x, void* vy, int64_t n) {
    block_q4_0* y = static_cast<block_q4_0*>(vy);
    const int64_t nb = n / QK4_0;
    for (int64_t i = 0; i < nb; ++i, x += QK4_0) {
        float amax = 0, max = 0;
        for (int j = 0; j < QK4_0; ++j) {
            if (std::fabs(x[j]) > amax) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        const uint16_t dh = fp32_to_fp16(max / -8.f);
        const float d = f16(dh);
        const float id = d != 0.f ? 1.f / d : 0.f;
        y[i].d = dh;
        for (int j = 0; j < 16; ++j) {
            const int q0 = round_even(clampf(x[j] * id, -8.f, 7.f)) + 8;
            const int q1 = round_even(clampf(x[j + 16] * id, -8.f, 7.f)) + 8;
            y[i].qs[j] = uint8_t(q0 | (q1 << 4));
        }
    }
}

namespace {
// One super-block of Q4_K (nmax 15) or Q5_K (nmax 31), which share the scales, the mins and how
// they are stored: the fitted super-block scales and each sub-block's 6-bit scale and min, and
// the quants L[256] in element order.
struct KQuantFit {
    uint16_t dh, mh;
    uint8_t sc[8], m[8];
    uint8_t L[QK_K];
};
void fit_k_super_block(const float* x, int nmax, KQuantFit& f) {
    uint8_t L2[QK_K];
    float w[QK_K];
    float scales[8], mins[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        const float* xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) w[32 * j + l] = av_x + std::fabs(xs[l]);
        scales[j] = fit_scale_min(32, nmax, xs, w + 32 * j, f.L + 32 * j, &mins[j], -1.f, 0.1f, 20);
        max_scale = std::max(max_scale, scales[j]);
        max_min = std::max(max_min, mins[j]);
    }
    uint16_t dh = fp32_to_fp16(max_scale / 63.f);
    uint16_t mh = fp32_to_fp16(max_min / 63.f);
    const float d0 = f16(dh), m0 = f16(mh);
    uint8_t* sc = f.sc;
    uint8_t* m = f.m;
    uint8_t* L = f.L;
    for (int j = 0; j < 8; ++j) {
        sc[j] = d0 > 0 ? uint8_t(round_even(clampf(scales[j] / d0, 0.f, 63.f))) : 0;
        m[j] = m0 > 0 ? uint8_t(round_even(clampf(mins[j] / m0, 0.f, 63.f))) : 0;
    }
    float err = q4k_label(x, w, sc, m, d0, m0, nmax, L);
    // Least-squares refit of (d, dmin) with the integer codes fixed, then relabel;
    // keep it only if the weighted error goes down.
    for (int iter = 0; iter < 2; ++iter) {
        double saa = 0, sab = 0, sbb = 0, sax = 0, sbx = 0;
        for (int j = 0; j < 8; ++j)
            for (int k = 32 * j; k < 32 * j + 32; ++k) {
                const double a = double(sc[j]) * L[k], b = -double(m[j]);
                saa += w[k] * a * a;
                sab += w[k] * a * b;
                sbb += w[k] * b * b;
                sax += w[k] * a * x[k];
                sbx += w[k] * b * x[k];
            }
        double dn, mn;
        const double det = saa * sbb - sab * sab;
        if (sbb > 0 && det > 1e-12 * saa * sbb) {
            dn = (sax * sbb - sbx * sab) / det;
            mn = (saa * sbx - sab * sax) / det;
        } else if (saa > 0) {
            dn = sax / saa;
            mn = f16(mh);
        } else {
            break;
        }
        const uint16_t dh2 = fp32_to_fp16(float(dn)), mh2 = fp32_to_fp16(float(mn));
        if (dh2 == dh && mh2 == mh) break;
        const float err2 = q4k_label(x, w, sc, m, f16(dh2), f16(mh2), nmax, L2);
        if (!(err2 < err)) break;
        err = err2;
        dh = dh2;
        mh = mh2;
        std::memcpy(L, L2, QK_K);
    }
    f.dh = dh;
    f.mh = mh;
}

// The fit's super-block scales and packed 6-bit sub-block scales and mins, into a Q4_K or Q5_K block.
template <typename Block>
void store_k_scales(const KQuantFit& f, Block& b) {
    b.d = f.dh;
    b.dmin = f.mh;
    std::memset(b.scales, 0, 12);
    pack_q4k_scales(f.sc, f.m, b.scales);
}

// Q5_K is Q4_K's fields with quants 0..31: bit 4 of element l of sub-block j in bit j of qh[l].
template <typename Block>
void quantize_row_q4_k_or_q5_k(const float* x, void* vy, int64_t n) {
    constexpr bool kFifthBit = std::is_same<Block, block_q5_K>::value;
    Block* y = static_cast<Block*>(vy);
    KQuantFit f;
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        fit_k_super_block(x, kFifthBit ? 31 : 15, f);
        store_k_scales(f, y[i]);
        if constexpr (kFifthBit) std::memset(y[i].qh, 0, sizeof y[i].qh);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) {
                const uint8_t lo = f.L[64 * c + l], hi = f.L[64 * c + 32 + l];
                y[i].qs[32 * c + l] = uint8_t((lo & 0xF) | (hi & 0xF) << 4);
                if constexpr (kFifthBit) y[i].qh[l] |= uint8_t((lo >> 4) << (2 * c) | (hi >> 4) << (2 * c + 1));
            }
    }
}
}  // namespace

void quantize_row_q4_k(const float* x, void* vy, int64_t n) { quantize_row_q4_k_or_q5_k<block_q4_K>(x, vy, n); }
void quantize_row_q5_k(const float* x, void* vy, int64_t n) { quantize_row_q4_k_or_q5_k<block_q5_K>(x, vy, n); }

void quantize_row_q6_k(const float* x, void* vy, int64_t n) {
    block_q6_K* y = static_cast<block_q6_K*>(vy);
    const int64_t nb = n / QK_K;
    uint8_t L[QK_K], L2[QK_K];
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        float scales[16];
        float max_scale = 0, max_abs = 0;
        for (int g = 0; g < 16; ++g) {
            scales[g] = fit_scale_signed(16, 32, x + 16 * g, L + 16 * g);
            if (std::fabs(scales[g]) > max_abs) {
                max_abs = std::fabs(scales[g]);
                max_scale = scales[g];
            }
        }
        uint16_t dh = fp32_to_fp16(max_scale / -128.f);
        float d = f16(dh);
        if (max_abs < 1e-15f || d == 0.f) {
            std::memset(&y[i], 0, sizeof(block_q6_K));
            continue;
        }
        int8_t sc[16];
        for (int g = 0; g < 16; ++g) sc[g] = int8_t(round_even(clampf(scales[g] / d, -128.f, 127.f)));
        float err = q6k_label(x, sc, d, L);
        for (int iter = 0; iter < 2; ++iter) {  // least-squares refit of d, keep if better
            double saa = 0, sax = 0;
            for (int k = 0; k < QK_K; ++k) {
                const double a = double(sc[k / 16]) * (int(L[k]) - 32);
                saa += a * a;
                sax += a * x[k];
            }
            if (!(saa > 0)) break;
            const uint16_t dh2 = fp32_to_fp16(float(sax / saa));
            if (dh2 == dh) break;
            const float err2 = q6k_label(x, sc, f16(dh2), L2);
            if (!(err2 < err)) break;
            err = err2;
            dh = dh2;
            std::memcpy(L, L2, sizeof(L));
        }
        y[i].d = dh;
        std::memcpy(y[i].scales, sc, 16);
        for (int h = 0; h < 2; ++h) {
            uint8_t* ql = y[i].ql + 64 * h;
            uint8_t* qh = y[i].qh + 32 * h;
            const uint8_t* Lh = L + 128 * h;
            for (int l = 0; l < 32; ++l) {
                ql[l] = uint8_t((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
                ql[l + 32] = uint8_t((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
                qh[l] = uint8_t((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
            }
        }
    }
}

// =========================================================================================
// Dequantize
// =========================================================================================

void dequantize_row_f32(const void* x, float* y, int64_t n) { std::memcpy(y, x, size_t(n) * sizeof(float)); }

void dequantize_row_f16(const void* vx, float* y, int64_t n) {
    const uint16_t* x = static_cast<const uint16_t*>(vx);
    for (int64_t i = 0; i < n; i++) y[i] = fp16_to_fp32(x[i]);
}

void dequantize_row_bf16(const void* vx, float* y, int64_t n) {
    const uint16_t* x = static_cast<const uint16_t*>(vx);
    for (int64_t i = 0; i < n; i++) y[i] = bf16_to_fp32(x[i]);
}

void dequantize_row_q8_0(const void* vx, float* y, int64_t n) {
    const block_q8_0* x = static_cast<const block_q8_0*>(vx);
    for (int64_t i = 0; i < n / QK8_0; ++i) {
        const float d = f16(x[i].d);
        for (int j = 0; j < QK8_0; ++j) *y++ = d * x[i].qs[j];
    }
}

void dequantize_row_q4_0(const void* vx, float* y, int64_t n) {
    const block_q4_0* x = static_cast<const block_q4_0*>(vx);
    for (int64_t i = 0; i < n / QK4_0; ++i, y += QK4_0) {
        const float d = f16(x[i].d);
        for (int j = 0; j < 16; ++j) {
            y[j] = d * ((x[i].qs[j] & 0xF) - 8);
            y[j + 16] = d * ((x[i].qs[j] >> 4) - 8);
        }
    }
}

void dequantize_row_q4_k(const void* vx, float* y, int64_t n) {
    const block_q4_K* x = static_cast<const block_q4_K*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = f16(x[i].d), dmin = f16(x[i].dmin);
        for (int c = 0; c < 4; ++c) {
            uint8_t sc, m;
            q4k_get_scale_min(2 * c, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = dmin * m;
            q4k_get_scale_min(2 * c + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = dmin * m;
            const uint8_t* q = x[i].qs + 32 * c;
            for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

void dequantize_row_q6_k(const void* vx, float* y, int64_t n) {
    const block_q6_K* x = static_cast<const block_q6_K*>(vx);
    Group16Decoded dec;
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        q6k_decode(x[i], dec);
        for (int k = 0; k < QK_K; ++k) y[k] = dec.d * dec.sc[k / 16] * dec.q[k];
    }
}

void dequantize_row_q8_k(const void* vx, float* y, int64_t n) {
    const block_q8_K* x = static_cast<const block_q8_K*>(vx);
    for (int64_t i = 0; i < n / QK_K; ++i)
        for (int j = 0; j < QK_K; ++j) *y++ = x[i].d * x[i].qs[j];
}

// =========================================================================================
// Dot products
// =========================================================================================

float vec_dot_q8_0_q8_0_scalar(int n, const void* vw, const void* va) {
    const block_q8_0* w = static_cast<const block_q8_0*>(vw);
    const block_q8_0* a = static_cast<const block_q8_0*>(va);
    float sum = 0;
    for (int b = 0; b < n / QK8_0; ++b) sum += float(dot32(w[b].qs, a[b].qs)) * (f16(w[b].d) * f16(a[b].d));
    return sum;
}

float vec_dot_q4_0_q8_0_scalar(int n, const void* vw, const void* va) {
    const block_q4_0* w = static_cast<const block_q4_0*>(vw);
    const block_q8_0* a = static_cast<const block_q8_0*>(va);
    float sum = 0;
    int8_t q[32];
    for (int b = 0; b < n / QK4_0; ++b) {
        q4_0_decode(w[b], q);
        sum += float(dot32(q, a[b].qs)) * (f16(w[b].d) * f16(a[b].d));
    }
    return sum;
}

float vec_dot_q4_k_q8_k_scalar(int n, const void* vw, const void* va) {
    const block_q4_K* w = static_cast<const block_q4_K*>(vw);
    const block_q8_K* a = static_cast<const block_q8_K*>(va);
    float sum = 0;
    Q4KDecoded dec;
    for (int b = 0; b < n / QK_K; ++b) {
        q4k_decode(w[b], dec);
        sum += q4k_dot_decoded(dec, a[b]);
    }
    return sum;
}

float vec_dot_q6_k_q8_k_scalar(int n, const void* vw, const void* va) {
    const block_q6_K* w = static_cast<const block_q6_K*>(vw);
    const block_q8_K* a = static_cast<const block_q8_K*>(va);
    float sum = 0;
    Group16Decoded dec;
    for (int b = 0; b < n / QK_K; ++b) {
        q6k_decode(w[b], dec);
        sum += group16_dot_decoded(dec, a[b]);
    }
    return sum;
}

// =========================================================================================
// Tiled matmul (scalar): each weight block is decoded once per tile of up to 8 tokens.
// Per token the float accumulation order is the same as in the scalar vec_dot. The kernels of
// the interleaved layout (kernels/rows_x8.h) gather each record into the 8 plain
// blocks it holds and then do exactly what the plain kernels do: same integer sums, same
// float operations in the same order, so they give the same bits.
// =========================================================================================

namespace {
constexpr int kTileTokens = 8;

// Rows [r0, r1) in units of kRows rows: fetch(r, b, tmp) gives block b of rows r .. r + kRows - 1
// as kRows consecutive blocks, where they lie or gathered into tmp.
template <typename K, int kRows, typename Fetch>
void matmul_scalar_generic(const void* A, size_t a_row_bytes, int n_cols, int n_tokens, float* out, int out_stride, int r0,
                           int r1, Fetch fetch) {
    const int nb = n_cols / K::kBlockElems;
    const char* Ac = static_cast<const char*>(A);
    typename K::Decoded dec;
    typename K::WBlock tmp[kRows];
    for (int t0 = 0; t0 < n_tokens; t0 += kTileTokens) {
        const int nt = std::min(kTileTokens, n_tokens - t0);
        const typename K::ABlock* arow[kTileTokens];
        for (int t = 0; t < nt; ++t) arow[t] = reinterpret_cast<const typename K::ABlock*>(Ac + size_t(t0 + t) * a_row_bytes);
        for (int r = r0; r < r1; r += kRows) {
            float acc[kRows][kTileTokens] = {};
            for (int b = 0; b < nb; ++b) {
                const typename K::WBlock* w = fetch(r, b, tmp);
                for (int i = 0; i < kRows; ++i) {
                    K::decode(w[i], dec);
                    for (int t = 0; t < nt; ++t) acc[i][t] += K::dot(dec, arow[t][b]);
                }
            }
            for (int i = 0; i < kRows; ++i)
                for (int t = 0; t < nt; ++t) out[size_t(t0 + t) * out_stride + r + i] = acc[i][t];
        }
    }
}

template <typename K>
void matmul_plain_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                         float* out, int out_stride, int r0, int r1) {
    const char* Wc = static_cast<const char*>(W);
    matmul_scalar_generic<K, 1>(A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1,
                                [&](int r, int b, typename K::WBlock*) {
                                    return reinterpret_cast<const typename K::WBlock*>(Wc + size_t(r) * w_row_bytes) + b;
                                });
}

// `plain_type`'s rows interleaved by 8: whole groups [r0, r1), from their records.
template <typename K>
void matmul_x8_scalar(uint32_t plain_type, const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols,
                      int n_tokens, float* out, int out_stride, int r0, int r1) {
    const char* Wc = static_cast<const char*>(W);
    const size_t record_bytes = 8 * sizeof(typename K::WBlock);
    matmul_scalar_generic<K, 8>(A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1,
                                [&](int r, int b, typename K::WBlock* tmp) {
                                    x8_record_to_blocks(plain_type, Wc + size_t(r) * w_row_bytes + size_t(b) * record_bytes, tmp);
                                    return static_cast<const typename K::WBlock*>(tmp);
                                });
}

struct Q8Decoded {
    const int8_t* q;
    float d;
};
struct Q4Decoded {
    int8_t q[32];
    float d;
};

// Each weight type's scalar kernel: its blocks, how one is decoded, its dot with an activation block.
struct KQ8_0 {
    using WBlock = block_q8_0;
    using ABlock = block_q8_0;
    using Decoded = Q8Decoded;
    static constexpr int kBlockElems = QK8_0;
    static void decode(const block_q8_0& b, Q8Decoded& o) {
        o.q = b.qs;
        o.d = f16(b.d);
    }
    static float dot(const Q8Decoded& w, const block_q8_0& a) { return float(dot32(w.q, a.qs)) * (w.d * f16(a.d)); }
};
struct KQ4_0 {
    using WBlock = block_q4_0;
    using ABlock = block_q8_0;
    using Decoded = Q4Decoded;
    static constexpr int kBlockElems = QK4_0;
    static void decode(const block_q4_0& b, Q4Decoded& o) {
        q4_0_decode(b, o.q);
        o.d = f16(b.d);
    }
    static float dot(const Q4Decoded& w, const block_q8_0& a) { return float(dot32(w.q, a.qs)) * (w.d * f16(a.d)); }
};
// Q4_1, Q5_0, Q5_1 and IQ4_NL: GGUF's other 32-element blocks, decoded to int8 (Q5_0: q - 16;
// IQ4_NL: the grid value; Q4_1 and Q5_1: the unsigned quant, whose offset m adds m * sum(a)).
struct Block32Decoded {
    int8_t q[32];
    float d, m;
};
inline void block32_decode(const block_q4_1& b, Block32Decoded& o) {
    for (int j = 0; j < 16; ++j) {
        o.q[j] = int8_t(b.qs[j] & 0xF);
        o.q[j + 16] = int8_t(b.qs[j] >> 4);
    }
    o.m = f16(b.m);
}
inline void block32_decode(const block_q5_0& b, Block32Decoded& o) {
    uint8_t q[32];
    q5_unpack(b.qh, b.qs, q);
    for (int j = 0; j < 32; ++j) o.q[j] = int8_t(q[j] - 16);
}
inline void block32_decode(const block_q5_1& b, Block32Decoded& o) {
    q5_unpack(b.qh, b.qs, reinterpret_cast<uint8_t*>(o.q));  // 0..31
    o.m = f16(b.m);
}
inline void block32_decode(const block_iq4_nl& b, Block32Decoded& o) {
    for (int j = 0; j < 16; ++j) {
        o.q[j] = kIQ4Values[b.qs[j] & 0xF];
        o.q[j + 16] = kIQ4Values[b.qs[j] >> 4];
    }
}
template <typename Block>
struct KBlock32 {
    static constexpr bool kOffset = std::is_same<Block, block_q4_1>::value || std::is_same<Block, block_q5_1>::value;
    using WBlock = Block;
    using ABlock = block_q8_0;
    using Decoded = Block32Decoded;
    static constexpr int kBlockElems = 32;
    static void decode(const Block& b, Block32Decoded& o) {
        block32_decode(b, o);
        o.d = f16(b.d);
    }
    static float dot(const Block32Decoded& w, const block_q8_0& a) {
        const float da = f16(a.d);
        float s = float(dot32(w.q, a.qs)) * (w.d * da);
        if constexpr (kOffset) {
            int sum = 0;
            for (int j = 0; j < 32; ++j) sum += a.qs[j];
            s += w.m * (da * float(sum));
        }
        return s;
    }
};
template <typename Block>
struct KQ4_K_or_Q5_K {
    using WBlock = Block;
    using ABlock = block_q8_K;
    using Decoded = Q4KDecoded;
    static constexpr int kBlockElems = QK_K;
    static void decode(const Block& b, Q4KDecoded& o) { q4k_decode(b, o); }
    static float dot(const Q4KDecoded& w, const block_q8_K& a) { return q4k_dot_decoded(w, a); }
};
template <typename Block>
struct KGroup16 {
    using WBlock = Block;
    using ABlock = block_q8_K;
    using Decoded = Group16Decoded;
    static constexpr int kBlockElems = QK_K;
    static void decode(const block_q6_K& b, Group16Decoded& o) { q6k_decode(b, o); }
    static void decode(const block_q3_K& b, Group16Decoded& o) { q3k_decode(b, o); }
    static void decode(const block_iq4_xs& b, Group16Decoded& o) { iq4xs_decode(b, o); }
    static float dot(const Group16Decoded& w, const block_q8_K& a) { return group16_dot_decoded(w, a); }
};
struct KQ2_K {
    using WBlock = block_q2_K;
    using ABlock = block_q8_K;
    using Decoded = Q2KDecoded;
    static constexpr int kBlockElems = QK_K;
    static void decode(const block_q2_K& b, Q2KDecoded& o) { q2k_decode(b, o); }
    static float dot(const Q2KDecoded& w, const block_q8_K& a) { return q2k_dot_decoded(w, a); }
};
using KQ6_K = KGroup16<block_q6_K>;
using KQ3_K = KGroup16<block_q3_K>;
using KIQ4_XS = KGroup16<block_iq4_xs>;
using KQ4_K = KQ4_K_or_Q5_K<block_q4_K>;
using KQ5_K = KQ4_K_or_Q5_K<block_q5_K>;
}  // namespace

void matmul_q8_0_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KQ8_0>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_0_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KQ4_0>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_1_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KBlock32<block_q4_1>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_0_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KBlock32<block_q5_0>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_1_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KBlock32<block_q5_1>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_iq4_nl_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                               float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KBlock32<block_iq4_nl>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q2_k_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KQ2_K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q3_k_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KQ3_K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_iq4_xs_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                               float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KIQ4_XS>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_k_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KQ4_K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_k_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KQ5_K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q6_k_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul_plain_scalar<KQ6_K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q8_0x8_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                               float* out, int out_stride, int r0, int r1) {
    matmul_x8_scalar<KQ8_0>(TYPE_Q8_0, W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_0x8_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                               float* out, int out_stride, int r0, int r1) {
    matmul_x8_scalar<KQ4_0>(TYPE_Q4_0, W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_kx8_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                               float* out, int out_stride, int r0, int r1) {
    matmul_x8_scalar<KQ4_K>(TYPE_Q4_K, W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_kx8_rows_scalar(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                               float* out, int out_stride, int r0, int r1) {
    matmul_x8_scalar<KQ5_K>(TYPE_Q5_K, W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth
