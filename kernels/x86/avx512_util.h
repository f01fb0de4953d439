// Helpers the AVX-512 kernel files share (x86/gemm_avx512.cpp, gemv_avx512.cpp,
// gemv_q4_k_avx512.cpp). Included inside their ISA guard.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace hearth {

// acc + dpbusd(w, the 4 bytes at p in every lane). kEmbedded: the broadcast embedded in the
// instruction ({1to16}; GCC 12 does not fold _mm512_set1_epi32 of a load into vpdpbusd; AT&T
// syntax). Else a broadcast of its own: GCC 12 then also gives the kernel zmm16-31, which it
// leaves unused around the asm, and where a kernel holds many sums (8 tokens' float sums, beside
// their integer ones) it keeps them in registers instead of on the stack (Zen 5, the Q4_0 few-token
// kernel at 8 tokens: TinyLlama q4_0 8 sequences 488.0 -> 518.9 tok/s, the 7B 77.1 -> 80.6; the
// prompt GEMM's tiles: TinyLlama q4_0 pp512 482.8 -> 510.0, q8_0 pp128 488.3 -> 532.5, the 7B's
// pp128 85.0 -> 89.5). Where it did not pay it is not used: the Q4_0 kernel at 4 tokens (3% slower),
// the Q4_K few-token kernel at 8 (q4_k_m 8 sequences 411.8 -> 372.2). The same integers either way.
template <bool kEmbedded = true>
inline __m512i dpbusd_bcast(__m512i acc, __m512i w, const int8_t* p) {
    if constexpr (kEmbedded) {
        asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(p)));
        return acc;
    } else {
        int32_t v;
        std::memcpy(&v, p, 4);
        return _mm512_dpbusd_epi32(acc, w, _mm512_set1_epi32(v));
    }
}

// acc + dpwssd(w, the int16 pair at p in every lane), the broadcast embedded.
inline __m512i dpwssd_bcast(__m512i acc, __m512i w, const int32_t* p) {
    asm("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*p));
    return acc;
}

}  // namespace hearth
