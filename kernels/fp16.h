// IEEE half and bfloat16 <-> float conversion, portable scalar code.
// Weights are stored in these formats; activations are always fp32.
#pragma once
#include <cstdint>
#include <cstring>

namespace hearth {

inline float fp32_from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline uint32_t fp32_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float fp16_to_fp32(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0x1f)  // inf, or nan made quiet as F16C and ARM's fcvt do
        return fp32_from_bits(sign | 0x7f800000u | (mant ? 0x00400000u : 0) | (mant << 13));
    if (exp == 0) {
        if (mant == 0) return fp32_from_bits(sign);
        // subnormal half: value = mant * 2^-24, exactly representable in fp32
        float v = float(mant) * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return fp32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

// Round to nearest even, as _mm_cvtps_ph and numpy do.
inline uint16_t fp32_to_fp16(float f) {
    uint32_t x = fp32_to_bits(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
    if (absx >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to >= 65520: inf
    if (absx < 0x38800000u) {                                 // below 2^-14: subnormal or zero
        // add 0.5 as a magic number so the FPU does the round-to-nearest-even for us
        float v = fp32_from_bits(absx) + 0.5f;
        return uint16_t(sign | (fp32_to_bits(v) - 0x3f000000u));
    }
    uint32_t mant_odd = (absx >> 13) & 1;
    absx += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round
    return uint16_t(sign | (absx >> 13));
}

inline float bf16_to_fp32(uint16_t h) { return fp32_from_bits(uint32_t(h) << 16); }

inline uint16_t fp32_to_bf16(float f) {
    uint32_t x = fp32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // keep nan a nan
    return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

}  // namespace hearth
