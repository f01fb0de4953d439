// What the GEMMs on interleaved rows (kernels/rows_x8.h) of x86/gemm_avx512.cpp (zmm) and
// x86/gemm_amx.cpp (tiles) share: the driver over token blocks, 16-row panels, packed K chunks and
// tiles of tokens, and the parts of Q4_K's packing that do not depend on how the products are made
// (its super-block's float side with the mins, Q2_K's too on plain rows in x86/gemm_avx512.cpp).
// AVX-512 code: included only where HEARTH_ISA_AVX512 is set.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/prefetch.h"
#include "kernels/quant_types.h"
#include "kernels/x86/avx2_util.h"

namespace hearth {

inline __m256i loadu256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

// The 16 rows' mins and float scales of a Q4_K super-block, for the float side of a tile.
struct alignas(64) Q4kMinsScales16 {
    uint32_t min_pair[4][16];  // [k][row]: m_2k | m_2k+1 << 16
    float d[16];
    float neg_dmin[16];
};

// Of the Q4_K super-block records ra and rb (a group pair's; their 6-bit scales and mins unpacked
// as sa and sb): the mins as (m_2k, m_2k+1) int16 pairs, d and -dmin.
inline void pack_q4k_mins_and_scales(const uint8_t* ra, const uint8_t* rb, const Q4kScalesX8& sa, const Q4kScalesX8& sb,
                                     Q4kMinsScales16& p) {
    for (int k = 0; k < 4; ++k) {
        const __m256i ctl = lane_bytes_to_int16(2 * k % 4, 2 * k % 4 + 1);
        _mm512_store_si512(p.min_pair[k], join(_mm256_shuffle_epi8(k < 2 ? sa.mn_lo : sa.mn_hi, ctl),
                                               _mm256_shuffle_epi8(k < 2 ? sb.mn_lo : sb.mn_hi, ctl)));
    }
    auto halves16 = [](const uint8_t* a, const uint8_t* b) {
        return _mm512_cvtph_ps(
            _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
                                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1));
    };
    _mm512_store_ps(p.d, halves16(ra, rb));
    _mm512_store_ps(p.neg_dmin, _mm512_sub_ps(_mm512_setzero_ps(), halves16(ra + 16, rb + 16)));
}

// acc + one token's super-block of 16 rows of a type with mins: (d * isum - dmin * sum_j m_j *
// sums[j]) * d8, isum being sum_j sc_j * (the integer dot of part j), the mins' sum by kPairs
// vpdpwssd of the (m_2k, m_2k+1) int16 pairs with the token's (sums[2k], sums[2k+1]).
template <int kPairs>
inline __m512 super_add_with_mins(__m512 acc, __m512i isum, const uint32_t (*min_pair)[16], const int16_t* sums, const float* d,
                                  const float* neg_dmin, float d8) {
    __m512i m = _mm512_setzero_si512();
    for (int k = 0; k < kPairs; ++k) {
        int32_t pair;
        std::memcpy(&pair, sums + 2 * k, 4);
        m = _mm512_dpwssd_epi32(m, _mm512_load_si512(min_pair[k]), _mm512_set1_epi32(pair));
    }
    const __m512 x = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_load_ps(d),
                                     _mm512_mul_ps(_mm512_cvtepi32_ps(m), _mm512_load_ps(neg_dmin)));
    return _mm512_fmadd_ps(x, _mm512_set1_ps(d8), acc);
}

// Q4_K's: the parts are its 8 sub-blocks of 32, the mins' sum <= 256 * 128 * 63 < 2^21.
inline __m512 q4k_super_add(__m512 acc, __m512i isum, const Q4kMinsScales16& w, const int16_t* sub_sums, float d8) {
    return super_add_with_mins<4>(acc, isum, w.min_pair, sub_sums, w.d, w.neg_dmin, d8);
}

// One super-block of Q8_K activations for a tile of kTileN tokens: token t's quants, its scale,
// and the sums of its 8 sub-blocks of 32 (|.| <= 32 * 128).
template <int kTileN>
struct alignas(64) ActQ8KTile {
    int8_t q[kTileN][256];
    float d[kTileN];
    int16_t sub_sums[kTileN][8];
};

// The tiles of tokens [t0, te) (the last tile repeats its last token), nsb super-blocks each.
template <int kTileN>
void pack_acts_q8k(const char* A, size_t arb, int nsb, int t0, int te, ActQ8KTile<kTileN>* out) {
    for (int g = t0; g < te; g += kTileN) {
        const block_q8_K* a[kTileN];
        for (int i = 0; i < kTileN; ++i) a[i] = reinterpret_cast<const block_q8_K*>(A + size_t(std::min(g + i, te - 1)) * arb);
        for (int b = 0; b < nsb; ++b, ++out)
            for (int i = 0; i < kTileN; ++i) {
                const block_q8_K& x = a[i][b];
                out->d[i] = x.d;
                std::memcpy(out->q[i], x.qs, 256);
                const __m256i bs = loadu256(x.bsums);
                const __m128i s8 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
                _mm_store_si128(reinterpret_cast<__m128i*>(out->sub_sums[i]), s8);
            }
    }
}

// Weights of format F, rows [r0, r1) in whole groups of 8. Loop order: token blocks (F::kTokBlock
// tokens, activations packed once per block, kept in L2) -> 16-row panels (a group pair; an odd
// last group is paired with itself and only its 8 rows stored) -> K chunks (F::kChunkBlocks
// blocks, packed once per token block, L1-resident) -> tiles of F::kTile tokens, each adding its
// chunk's partial sums to the output after the first. What the driver needs of F besides: its
// packed chunk and activation tile types, the columns per block, the bytes per record (one block
// of 8 rows), a Scope held for the call (the AMX tiles' configuration), and how to pack a chunk of
// a group pair's records, pack the activations and run a tile.
template <typename F>
void gemm_x8_panels(const void* W, size_t wrb, const void* A, size_t arb, int n_cols, int n_tokens, float* out, int os, int r0,
                    int r1) {
    if (r0 >= r1 || n_tokens <= 0) return;
    constexpr int kTile = F::kTile, kTokBlock = F::kTokBlock;
    [[maybe_unused]] typename F::Scope scope;
    const int nb = n_cols / F::kBlockCols;
    const uint8_t* Wc = static_cast<const uint8_t*>(W);
    const size_t group_bytes = 8 * wrb;
    typename F::Packed* pw = F::packed();
    typename F::Act* acts = F::acts(size_t((kTokBlock + kTile - 1) / kTile) * size_t(nb));
    for (int t0 = 0; t0 < n_tokens; t0 += kTokBlock) {
        const int te = std::min(n_tokens, t0 + kTokBlock);
        F::pack_activations(static_cast<const char*>(A), arb, nb, t0, te, acts);
        const int n_tiles = (te - t0 + kTile - 1) / kTile;
        for (int r = r0; r < r1; r += 16) {
            const int nr = std::min(16, r1 - r);  // 16, or 8: an odd last group, paired with itself
            const uint8_t* ga = Wc + size_t(r) * wrb;
            const uint8_t* gb = nr == 16 ? ga + group_bytes : ga;
            const __mmask16 keep = nr == 16 ? __mmask16(0xFFFF) : __mmask16(0x00FF);
            for (int kb = 0; kb < nb; kb += F::kChunkBlocks) {
                const int kn = std::min(F::kChunkBlocks, nb - kb);
                F::pack_weights(ga + size_t(kb) * F::kRec, gb + size_t(kb) * F::kRec, kn, pw);
                // The chunk packed next, fetched while the tiles compute on this one, so that
                // packing finds it in cache: the same groups' next records, or the next panel's first.
                const uint8_t *na = nullptr, *nbp = nullptr;
                size_t bytes = 0;
                if (kb + kn < nb) {
                    na = ga + size_t(kb + kn) * F::kRec;
                    nbp = gb + size_t(kb + kn) * F::kRec;
                    bytes = size_t(std::min(F::kChunkBlocks, nb - kb - kn)) * F::kRec;
                } else if (r + 16 < r1) {
                    na = ga + 2 * group_bytes;
                    nbp = na + group_bytes;
                    bytes = size_t(std::min(F::kChunkBlocks, nb)) * F::kRec;
                }
                ChunkPrefetch next = ChunkPrefetch::over(na, nbp, (bytes + 63) / 64, size_t(n_tiles) * size_t(kn));
                for (int t = t0; t < te; t += kTile) {
                    __m512 res[kTile];
                    F::run_tile(pw, acts + size_t(t - t0) / kTile * size_t(nb) + kb, kn, next, res);
                    const int nt = std::min(kTile, te - t);
                    for (int i = 0; i < nt; ++i) {
                        float* o = out + size_t(t + i) * size_t(os) + r;
                        const __m512 v = kb == 0 ? res[i] : _mm512_add_ps(res[i], _mm512_maskz_loadu_ps(keep, o));
                        _mm512_mask_storeu_ps(o, keep, v);
                    }
                }
            }
        }
    }
}

}  // namespace hearth
