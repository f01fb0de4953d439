// What the NEON kernels of interleaved rows share (arm/rows_x8_neon.cpp: Q4_0 and Q8_0;
// arm/q4_kx8_neon.cpp: Q4_K and Q5_K): the dot-product steps with and without dotprod, and the driver of
// tiles over a group's records. Each kernel K supplies its record layout and the dots of a tile
// (K::records). Include only under HEARTH_ISA_NEON (kernels/isa.h).
//
// A 32-byte step of a record holds 4 bytes of each of the group's 8 rows, one row per 32-bit lane:
// two 16-byte registers, rows 0..3 and rows 4..7. Each is multiplied with the step's 4 activation
// bytes broadcast to every lane, so that each lane is one row from start to end: no horizontal
// sums, no transposes, and one 8-byte load gives 4 rows' fp16 scales.
//  - With dotprod, SDOT (vdotq_s32) adds the 4 products of each lane into it.
//  - Without, SMULL / SMULL2 give the 16 products as int16, rows 0-1 and rows 2-3. Byte weights
//    (Q8_0): a product reaches 128 * 128, two overflow int16, so each step is added into int32
//    pairs with SADALP. 4- and 5-bit weights (Q4_0, Q4_K; Q5_K): |product| <= 31 * 128 = 3968, so
//    SMLAL / SMLAL2 sum the up to 8 steps of a block or sub-block in int16 (<= 31744 < 32767),
//    widened once. A pairwise add then gives one row per lane.
// Q4_0: unsigned nibbles (low: elements 4k.., high: 16 + 4k..), the -8 offset subtracted as the
// integer 8 * sum(q) of the activation block. Q4_K: sub-block sums times each row's 6-bit scale,
// mins against the activation's sub-block sums, as q4_kx8_avx2.cpp does (the bounds are there).
//
// Tiles: a group's 8 rows x up to kTileTokens tokens, whose accumulators stay in registers (32 of
// them), so that each record is read once per tile. One token (generation) is a tile of one that
// streams the group's records, with prefetches a few KB ahead (kernels/prefetch.h). With more
// tokens than one tile, the first tile reads a chunk of records from memory, the others from L1.
// Chunks are K::kSumChunk records for any token count, each chunk's sums added to the output after
// the first: the partial sums of arm/gemm_neon_i8mm.cpp, whose panels are that long, so that a
// batch there gives each token the bits it gets alone here, as drafts need (model/generate.h).
// Whole groups only: kernels/matmul.cpp sends the plain rows after the last whole group to the
// plain layout's kernel.
#pragma once
#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/fp16.h"
#include "kernels/prefetch.h"
#include "kernels/quant.h"
#include "kernels/scratch.h"

namespace hearth {

namespace x8_neon {

// Records per partial sum (and per chunk read by several tiles; 4.5-9 KB, in L1): Q4_0 and Q8_0,
// Q4_K and Q5_K.
constexpr int kX8SumChunkBlocks = 32, kX8KSumChunkSuperBlocks = 4;

#if defined(HEARTH_ISA_DOTPROD)
constexpr bool kDotprod = true;
#else
constexpr bool kDotprod = false;
#endif

// 4 bytes at p in every 32-bit lane: one step's activation bytes.
inline int8x16_t bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// The 4 fp16 values at p (4 rows' scales) as floats.
inline float32x4_t load_f16x4(const uint8_t* p) { return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p))); }

// Per-row sums of the products of 16-byte weight registers (4 bytes of each of 4 rows, one row
// per 32-bit lane) with broadcast activation bytes, over the steps of a block or sub-block;
// rows() has row i in lane i. ByteDots takes any int8 weights, NibbleDots weights 0..31 and, with
// no dotprod, at most 8 steps.
#if defined(HEARTH_ISA_DOTPROD)
struct ByteDots {
    int32x4_t s = vdupq_n_s32(0);
    void add(int8x16_t w, int8x16_t a) { s = vdotq_s32(s, w, a); }
    int32x4_t rows() const { return s; }
};
using NibbleDots = ByteDots;
#else
struct ByteDots {
    int32x4_t s01 = vdupq_n_s32(0), s23 = vdupq_n_s32(0);  // rows 0, 1 and rows 2, 3: 2 pair sums each
    void add(int8x16_t w, int8x16_t a) {
        s01 = vpadalq_s16(s01, vmull_s8(vget_low_s8(w), vget_low_s8(a)));
        s23 = vpadalq_s16(s23, vmull_high_s8(w, a));
    }
    int32x4_t rows() const { return vpaddq_s32(s01, s23); }
};
struct NibbleDots {
    int16x8_t s01 = vdupq_n_s16(0), s23 = vdupq_n_s16(0);  // rows 0, 1 and rows 2, 3: 4 sums each
    void add(int8x16_t w, int8x16_t a) {
        s01 = vmlal_s8(s01, vget_low_s8(w), vget_low_s8(a));
        s23 = vmlal_high_s8(s23, w, a);
    }
    int32x4_t rows() const { return vpaddq_s32(vpaddlq_s16(s01), vpaddlq_s16(s23)); }
};
#endif

// Bit `bit` (0-7) of each byte moved to bit 4, the others cleared: Q5_K's fifth bit of a quant.
inline uint8x16_t q5_k_bit4(uint8x16_t qh, int bit) {
    return vandq_u8(vshlq_u8(qh, vdupq_n_s8(int8_t(4 - bit))), vdupq_n_u8(0x10));
}

// An empty volatile asm after each step of a tile: GCC's scheduler otherwise hoists the loads of
// all the steps of a block or chunk above their first use and spills what it loaded (GCC 12 -O3,
// counted in this file's objdump: with dotprod, Q4_K spilled and reloaded ~17 registers per chunk
// of 8 steps for one token and ~150 for 4 tokens, Q4_0 ~48 per block for 4 tokens; with it, none
// in the step loops). A volatile asm is a scheduling barrier and sends nothing to memory.
inline void step_barrier() { asm volatile(""); }

// Byte j of each 32-bit lane of v, zero-extended (TBL gives 0 for indices past 15).
inline int32x4_t lane_byte(uint8x16_t v, int j) {
    const uint32x4_t lane_base = {0xFFFFFF00u, 0xFFFFFF04u, 0xFFFFFF08u, 0xFFFFFF0Cu};
    return vreinterpretq_s32_u8(vqtbl1q_u8(v, vreinterpretq_u8_u32(vaddq_u32(lane_base, vdupq_n_u32(uint32_t(j))))));
}

// Per-call scratch: the activations' per-block terms, once per token and block.
template <typename T>
T* scratch(size_t n) {
    struct Tag;
    return thread_scratch<Tag, T>(n);
}

// Tokens [t0, t0 + NT) x records [kb, kb + kn) of the group of rows r..r+7 at g: the partial dots
// written (kb == 0) or added to out.
template <typename K, int NT>
void tile(const uint8_t* g, const char* A, size_t arb, const typename K::Terms* at, int nb, int kb, int kn, int t0, size_t pf,
          float* out, int os, int r) {
    const typename K::ABlock* a[NT];
    const typename K::Terms* e[NT];
    for (int t = 0; t < NT; ++t) {
        a[t] = reinterpret_cast<const typename K::ABlock*>(A + size_t(t0 + t) * arb) + kb;
        e[t] = at + size_t(t0 + t) * nb + kb;
    }
    float32x4_t acc[NT][2];
    for (int t = 0; t < NT; ++t) acc[t][0] = acc[t][1] = vdupq_n_f32(0.f);
    K::template records<NT>(g + size_t(kb) * K::kRecordBytes, a, e, kn, pf, acc);
    for (int t = 0; t < NT; ++t)
        for (int h = 0; h < 2; ++h) {
            float* o = out + size_t(t0 + t) * os + r + 4 * h;
            vst1q_f32(o, kb == 0 ? acc[t][h] : vaddq_f32(acc[t][h], vld1q_f32(o)));
        }
}

// tile<K, nt> for nt = 1 .. NT tokens.
template <typename K, int NT = K::kTileTokens, typename... Args>
void tile_for(int nt, Args... args) {
    if constexpr (NT > 1)
        if (nt < NT) return tile_for<K, NT - 1>(nt, args...);
    tile<K, NT>(args...);
}

// Whole groups of rows [r0, r1) (multiples of 8) to the tiles.
template <typename K>
void matmul_x8(const void* W, size_t wrb, const void* A, size_t arb, int n_cols, int n_tokens, float* out, int os, int r0,
               int r1) {
    if (r0 >= r1 || n_tokens <= 0) return;
    {
        const int nb = n_cols / K::kBlockElems;
        const char* Ac = static_cast<const char*>(A);
        typename K::Terms* at = scratch<typename K::Terms>(size_t(nb) * n_tokens);
        for (int t = 0; t < n_tokens; ++t)
            for (int b = 0; b < nb; ++b)
                at[size_t(t) * nb + b] = K::terms(reinterpret_cast<const typename K::ABlock*>(Ac + size_t(t) * arb)[b]);
        const int chunk = K::kSumChunk;
        const size_t pf = prefetch_distance(K::kRecordBytes);
        for (int r = r0; r < r1; r += 8) {
            const uint8_t* g = static_cast<const uint8_t*>(W) + size_t(r) * wrb;
            for (int kb = 0; kb < nb; kb += chunk)
                for (int t0 = 0; t0 < n_tokens; t0 += K::kTileTokens)
                    tile_for<K>(std::min(K::kTileTokens, n_tokens - t0), g, Ac, arb, at, nb, kb, std::min(chunk, nb - kb), t0, pf,
                                out, os, r);
        }
    }
}

}  // namespace x8_neon

}  // namespace hearth
