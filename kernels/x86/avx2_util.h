// Small AVX2 helpers shared by the kernels. Include only under HEARTH_ISA_AVX2 (kernels/isa.h).
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/platform.h"
#include "kernels/isa.h"
#include "kernels/quant.h"
#include "kernels/quant_types.h"
#include "kernels/scratch.h"

namespace hearth {

// Q4_0 and Q8_0 interleaved rows: how many blocks of 32 columns one partial sum covers. The
// AVX-512 few-token kernels (x86/gemv_avx512.cpp) read rows in chunks of columns whose
// activations (8 tokens x 40 bytes per block) stay in L1 for all the pairs: with the whole of a
// 5632-column row (TinyLlama's ffn_down, 56 KB of them) 8 tokens ran at 9.8 GB/s of weights
// instead of 13.7 (bench_kernels, 1 thread). 64 blocks (20 KB) fit any L1 of 32 KB, 128 (40 KB)
// one of 48 KB (Intel since Ice Lake); and with 128, Llama-2-7B's 4096-column rows are read
// whole, in one stream per group rather than in two halves a pass over all the rows apart: it
// decoded 8 sequences ~7% faster, and one sequence too (docs/benchmarks.md, "Serial stretches of
// a batched step"). A chunk's partial sum is added to the chunks' before it, and every other
// kernel of these rows below the GEMMs' 16 tokens sums in the same pieces with the same float
// operations per block: the AVX2 rows (x86/rows_x8_avx2.cpp), the AVX2 GEMM (x86/gemm_avx2.cpp,
// carrying its tiles' sums across its packed chunks of 64 blocks) and the AVX2 few-token kernel
// (x86/few_q4_0x8_avx2.cpp). One token and a batch then give the same bits wherever they run on
// different kernels (AVX2: the rows, then from 4 tokens the GEMM; AMD Zen 4 and 5: the AVX2 rows,
// then the AVX-512 kernels), as drafts need (model/generate.h). A multiple of 64.
inline int x8_sum_chunk_blocks() {
#ifdef HEARTH_FEW_CHUNK  // tuning override for tools/bench_kernels builds
    return HEARTH_FEW_CHUNK;
#else
    static const int blocks = l1_data_cache_bytes() >= 48 * 1024 ? 128 : 64;
    return blocks;
#endif
}

// Q4_K and Q5_K interleaved rows: how many super-blocks (256 columns) one partial sum covers, for
// the same reason. The AVX-512 few-token kernel (x86/gemv_q4_k_avx512.cpp) reads rows in chunks
// of 8 (a chunk's activations of 8 tokens, 17.7 KB, and a pair's weights, 18 KB, stay in L1), and
// the AVX2 rows (x86/q4_kx8_avx2.cpp) sum in the same pieces, also where they read whole rows.
#ifndef HEARTH_Q4K_FEW_CHUNK  // tuning override for tools/bench_kernels builds
#define HEARTH_Q4K_FEW_CHUNK 8
#endif
constexpr int kX8KSumChunkSuperBlocks = HEARTH_Q4K_FEW_CHUNK;

inline __m256i loadu(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// VNNI (AVX512-VNNI with AVX512VL, or AVX-VNNI): where the host has it, the GEMM tiles multiply
// u8 x s8 with one instruction that also sums each 4 products into an int32 lane, instead of
// maddubs (int16 pair sums), int16 adds and a madd to widen. Like NEON's dotprod, it is chosen
// at compile time (-march=native); the plain AVX2 tiles stay, and are tested in a second build
// (Makefile: kernel_tests_avx2).
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
// acc + sum of the 4 products u[4i+k] * s[4i+k] in lane i; u unsigned bytes, s signed.
inline __m256i dot4_u8s8_add(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
#elif defined(HEARTH_ISA_AVX_VNNI)  // AVX-VNNI
inline __m256i dot4_u8s8_add(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
#endif

// acc + madd(a, b) (int16 pair products summed into int32 lanes): one instruction with VNNI, the
// same bits (neither saturates).
inline __m256i madd16_add(__m256i acc, __m256i a, __m256i b) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpwssd_epi32(acc, a, b);
#elif defined(HEARTH_ISA_AVX_VNNI)
    return _mm256_dpwssd_avx_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

// One buffer per thread for the copied activations of every few-token kernel (x86/gemv_avx512.cpp,
// gemv_q4_k_avx512.cpp, gemv_q6_k_avx512.cpp, few_q4_0x8_avx2.cpp), grown to the largest call's;
// 64-byte aligned, for aligned zmm loads.
inline uint8_t* few_tokens_act_buf(size_t bytes) {
    struct FewTokensActs;
    return thread_scratch<FewTokensActs, uint8_t, 64>(bytes);
}

// Eight fp16 values at p as fp32 (F16C's vcvtph2ps).
inline __m256 load8_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
// Eight bf16 values at p as fp32: a bf16 is the upper half of an fp32, so each is widened to 32
// bits and shifted into place (exact, as bf16_to_fp32).
inline __m256 load8_bf16(const uint16_t* p) {
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}

// 4 bytes at p in every 32-bit lane (one activation step of a GEMM tile).
inline __m256i bcast32(const void* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// 16 bytes of packed nibbles -> 32 bytes 0..15 in element order (low nibbles first).
inline __m256i unpack_nibbles16(const uint8_t* qs) {
    const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    return _mm256_and_si256(_mm256_srlv_epi64(b, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
}

// 16 bytes of packed IQ4 codes (nibble order as unpack_nibbles16) -> their 32 grid values.
inline __m256i iq4_values(const uint8_t* qs) {
    const __m256i grid = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values)));
    return _mm256_shuffle_epi8(grid, unpack_nibbles16(qs));
}

// Byte j of the result is 0x10 where bit j of a Q5_0 / Q5_1 block's qh is set: the quants' bit 4.
inline __m256i q5_bit4(const uint8_t* qh) {
    uint32_t h;
    std::memcpy(&h, qh, 4);
    const __m256i byte_of_h = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    const __m256i x = _mm256_shuffle_epi8(_mm256_set1_epi32(int(h)), byte_of_h);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(x, bit), bit), _mm256_set1_epi8(0x10));
}

// The 16 group scales of a Q6_K, Q3_K, IQ4_XS or Q2_K block as signed bytes (Q3_K's and IQ4_XS's
// unpacked, -32..31; IQ4_XS's sub-block j is groups 2j and 2j + 1; Q2_K's the low nibbles, 0..15).
inline __m128i group16_scales(const block_q6_K& b) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)); }
inline __m128i group16_scales(const block_q2_K& b) {
    return _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)), _mm_set1_epi8(0x0F));
}
// Q2_K's 16 group mins (the scales' high nibbles, 0..15) as int16.
inline __m256i q2k_mins_epi16(const block_q2_K& b) {
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    return _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), _mm_set1_epi8(0x0F)));
}
// Q3_K's as kernels/quant.h's q3k_unpack_scales, in vector lanes: unpacked into memory and loaded
// back, they cost a store-forwarding stall per block (as IQ4_XS's below).
inline __m128i group16_scales(const block_q3_K& b) {
    uint32_t hi;
    std::memcpy(&hi, b.scales + 8, 4);
    const __m128i lo8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales));  // words lo0, lo1
    const __m128i low =
        _mm_and_si128(_mm_srlv_epi32(_mm_unpacklo_epi64(lo8, lo8), _mm_setr_epi32(0, 0, 4, 4)), _mm_set1_epi8(0x0F));
    const __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(int(hi)), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(0x03));
    return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi32(high, 4)), _mm_set1_epi8(32));
}
// IQ4_XS's in vector lanes (the bit layout of iq4xs_scale, kernels/quant.h): unpacked one byte at
// a time and then loaded as a vector, they cost a store-forwarding stall per block, a tenth or
// more of the one-token kernel's time (docs/benchmarks.md, "IQ4_XS's prompts on Q8_0's GEMM").
inline __m128i group16_scales(const block_iq4_xs& b) {
    uint32_t lo;
    std::memcpy(&lo, b.scales_l, 4);
    const __m256i low = _mm256_srlv_epi32(_mm256_set1_epi32(int(lo)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    const __m256i high = _mm256_srlv_epi32(_mm256_set1_epi32(b.scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    const __m256i v = _mm256_sub_epi32(_mm256_or_si256(_mm256_and_si256(low, _mm256_set1_epi32(15)),
                                                       _mm256_slli_epi32(_mm256_and_si256(high, _mm256_set1_epi32(3)), 4)),
                                       _mm256_set1_epi32(32));
    // 8 int32 -> 8 bytes in order (lane 0 holds scales 0-3, lane 1 scales 4-7), each twice.
    const __m256i w16 = _mm256_packs_epi32(v, v);
    const __m256i b8 = _mm256_packs_epi16(w16, w16);
    const __m128i s8 = _mm_unpacklo_epi32(_mm256_castsi256_si128(b8), _mm256_extracti128_si256(b8, 1));
    return _mm_unpacklo_epi8(s8, s8);
}

// Chunk k (elements 32k..32k+31, k = 4h + s) of Q2_K's and Q3_K's 2-bit fields qs[64]: bits
// 2s..2s+1 of qs[32h..32h+31], 0..3 (Q2_K's quants, Q3_K's low two bits).
inline __m256i two_bit_chunk(const uint8_t* qs, int k) {
    return _mm256_and_si256(_mm256_srl_epi16(loadu(qs + 32 * (k / 4)), _mm_cvtsi32_si128(2 * (k % 4))), _mm256_set1_epi8(3));
}

// Q3_K chunk k as unsigned quants 0..7: its 2-bit field, and bit k of hmask as bit 2 (the quant
// is this minus 4).
inline __m256i q3k_chunk(const block_q3_K& b, int k) {
    const __m256i low = two_bit_chunk(b.qs, k), hm = loadu(b.hmask);
    // bit k of each byte to bit 2 by a 16-bit shift: the mask keeps no bit from the next byte
    const __m256i at2 = k < 2 ? _mm256_sll_epi16(hm, _mm_cvtsi32_si128(2 - k)) : _mm256_srl_epi16(hm, _mm_cvtsi32_si128(k - 2));
    return _mm256_or_si256(low, _mm256_and_si256(at2, _mm256_set1_epi8(4)));
}

// Bit `bit` (0-7) of each byte moved to bit 4, the others cleared: Q5_K's fifth bit of a quant
// (bit 2c of qh[l] for the low nibble of qs[32c + l], bit 2c + 1 for its high nibble).
inline __m256i q5_k_bit4(__m256i qh, int bit) {
    const __m256i v = bit <= 4 ? _mm256_slli_epi16(qh, 4 - bit) : _mm256_srli_epi16(qh, bit - 4);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

// The sum of 32 int8 values (a Q8 block's quants), for the -8 / -32 offset terms.
inline int32_t sum_i8x32(const int8_t* q) {
    const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), loadu(q)), _mm256_set1_epi16(1));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
    return _mm_cvtsi128_si32(s4);
}

// The sum of the 8 lanes.
inline float hsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// 8x8 transpose of 32-bit lanes: v[i] lane k -> v[k] lane i.
inline void transpose8(__m256i v[8]) {
    const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
    const __m256i t4 = _mm256_unpacklo_epi32(v[4], v[5]), t5 = _mm256_unpackhi_epi32(v[4], v[5]);
    const __m256i t6 = _mm256_unpacklo_epi32(v[6], v[7]), t7 = _mm256_unpackhi_epi32(v[6], v[7]);
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
    v[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
    v[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
    v[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
    v[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
    v[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
    v[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
    v[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
    v[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

// The 6-bit scales and mins of 8 Q4_K rows, one row per 32-bit lane: q4k_unpack_scales
// (kernels/quant.h) for 8 rows at once. `packed` is 96 bytes: the rows' scales[0..3] (row i at
// 4i), then their scales[4..7], then scales[8..11] (the interleaved Q4_K record, kernels/rows_x8.h).
// Byte j of a lane of sc_lo is its row's scale of sub-block j, of sc_hi that of sub-block 4 + j;
// mn_lo / mn_hi likewise hold the mins.
struct Q4kScalesX8 {
    __m256i sc_lo, sc_hi, mn_lo, mn_hi;
};
inline Q4kScalesX8 q4k_unpack_scales_x8(const void* packed) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m6 = _mm256_set1_epi8(0x3F), m30 = _mm256_set1_epi8(0x30);
    const uint8_t* p = static_cast<const uint8_t*>(packed);
    const __m256i u0 = loadu(p), u1 = loadu(p + 32), u2 = loadu(p + 64);
    return {_mm256_and_si256(u0, m6), _mm256_or_si256(_mm256_and_si256(u2, m4), _mm256_and_si256(_mm256_srli_epi16(u0, 2), m30)),
            _mm256_and_si256(u1, m6),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(u2, 4), m4), _mm256_and_si256(_mm256_srli_epi16(u1, 2), m30))};
}

// _mm256_shuffle_epi8 control that puts byte lo of each 32-bit lane, zero-extended, into the
// lane's low int16 and byte hi into its high int16 (lo == hi: a byte in both halves, the form
// _mm256_madd_epi16 wants a per-row factor in).
inline __m256i lane_bytes_to_int16(int lo, int hi) {
    const __m256i lane_base = _mm256_setr_epi32(0, 0x00040004, 0x00080008, 0x000C000C, 0, 0x00040004, 0x00080008, 0x000C000C);
    return _mm256_add_epi32(lane_base, _mm256_set1_epi32(int32_t(0x80008000u | uint32_t(hi) << 16 | uint32_t(lo))));
}

// An empty asm that "changes" 4 integer accumulators, called after each step of a GEMM tile:
// GCC may then no longer reassociate the adds of the steps before and after it. Without it GCC 12
// computes all 32 maddubs of a Q4_0 block first and sums them as a tree, which needs 32 live
// registers: 54 spills per block with AVX2's 16 ymm registers (18 with AVX-512's 32).
inline void keep_step_order(__m256i& a, __m256i& b, __m256i& c, __m256i& d) { asm("" : "+x"(a), "+x"(b), "+x"(c), "+x"(d)); }
inline void keep_step_order(__m256i& a, __m256i& b) { asm("" : "+x"(a), "+x"(b)); }

// A GEMM tile's partial results res[i][0..nr) (token t+i, rows r..r+nr) into out: written for the
// first K chunk, added for the later ones.
inline void store_gemm_tile(float* out, size_t os, int r, int nr, int t, int nt, const float (*res)[8], bool first) {
    for (int i = 0; i < nt; ++i) {
        float* o = out + size_t(t + i) * os + r;
        if (nr == 8) {
            const __m256 v = _mm256_loadu_ps(res[i]);
            _mm256_storeu_ps(o, first ? v : _mm256_add_ps(v, _mm256_loadu_ps(o)));
        } else {
            for (int k = 0; k < nr; ++k) o[k] = first ? res[i][k] : o[k] + res[i][k];
        }
    }
}

}  // namespace hearth
