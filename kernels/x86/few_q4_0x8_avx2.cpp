// Interleaved Q4_0 rows (kernels/rows_x8.h) x Q8_0 activations from 4 tokens on (several
// conversations decoded together, drafts, prompts), AVX2 + FMA + F16C, without VNNI.
//
// Without VNNI an int8 product on ymm is a maddubs (32 multiplies), an add into its int16 sum and
// whatever it takes to bring both operands into place, and the CPU retires 3-4 such vector
// operations a cycle (Zen 3: maddubs alone 2), so a block costs what it needs besides the
// maddubs. The GEMM (x86/gemm_avx2.cpp) broadcasts 4 activation bytes for every maddubs, and
// packs each chunk of weights into a buffer first. Here:
//  - nothing is packed: a pass of up to 8 tokens reads each record once, and splits its nibbles
//    in registers;
//  - a vector holds two tokens: a maddubs multiplies 4 rows' 4 elements (the same 16 bytes in
//    both 128-bit lanes: a vbroadcasti128 of half a record step) by 4 elements of token a in the
//    low lane and of token b in the high lane. Those come from one activation vector (16 quants
//    of a, then 16 of b, copied so once per call) by an in-lane vpshufd, one per maddubs pair
//    where the GEMM broadcasts once per maddubs;
//  - the int16 sums of a block go to floats once per (4 rows, 2 tokens) vector.
// A block of 8 rows x 8 tokens: 64 maddubs, 56 adds, 8 loads and 24 and/shift ops for the
// weights, 32 shuffles and about 60 operations for the scales and the float sums; the GEMM's
// tiles take about 280, and the packing. Sums as in x86/rows_x8_avx2.cpp: unsigned nibbles x
// signed activations, |pair sum| <= 2*15*127, 8 of them < 32767; the -8 is the integer 8 * sum(a)
// of the block, subtracted.
#include "kernels/x86/x86.h"

// Built without VNNI only (kernels/table.cpp): with it, the GEMM's vpdpbusd does in one operation
// what a maddubs and an add do here.
#if defined(HEARTH_ISA_AVX2) && !defined(HEARTH_ISA_AVX_VNNI)

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/prefetch.h"
#include "kernels/quant_types.h"
#include "kernels/x86/avx2_util.h"

namespace hearth {

namespace {

constexpr int kMaxPairs = 4;  // tokens per pass: 2 * kMaxPairs

// A pair of tokens (a, b) for one block, as the kernel loads it: quants 0-15 of a then of b, quants
// 16-31 of a then of b, the scales (a in the low four lanes, b in the high) and 8 * sum(quants).
struct alignas(32) PairBlock {
    int8_t lo[32], hi[32];
    float d[8];
    int32_t c8[8];
};
static_assert(sizeof(PairBlock) == 128, "PairBlock layout");

// Tokens [t0, te) in pairs (2 tokens each; an odd count's last pair repeats its token), nb blocks
// per pair.
void pack_pairs(const char* A, size_t arb, int nb, int t0, int te, PairBlock* out) {
    for (int t = t0; t < te; t += 2) {
        const block_q8_0* a = reinterpret_cast<const block_q8_0*>(A + size_t(t) * arb);
        const block_q8_0* b = reinterpret_cast<const block_q8_0*>(A + size_t(std::min(t + 1, te - 1)) * arb);
        for (int k = 0; k < nb; ++k, ++out) {
            std::memcpy(out->lo, a[k].qs, 16);
            std::memcpy(out->lo + 16, b[k].qs, 16);
            std::memcpy(out->hi, a[k].qs + 16, 16);
            std::memcpy(out->hi + 16, b[k].qs + 16, 16);
            const float da = _cvtsh_ss(a[k].d), db = _cvtsh_ss(b[k].d);
            const int32_t ca = 8 * sum_i8x32(a[k].qs), cb = 8 * sum_i8x32(b[k].qs);
            for (int i = 0; i < 4; ++i) {
                out->d[i] = da;
                out->d[4 + i] = db;
                out->c8[i] = ca;
                out->c8[4 + i] = cb;
            }
        }
    }
}

// One group of 8 rows (records from g, nb blocks) x the nt tokens t0.. in NP pairs (nb blocks
// each, from pairs; an odd nt's last pair repeats its token): out[t * os + i] for those tokens t
// and the group's rows i.
template <int NP>
void group_pairs(const uint8_t* g, const PairBlock* pairs, int nb, size_t pf, float* out, size_t os, int t0, int nt) {
    constexpr size_t kRecordBytes = 8 * sizeof(block_q4_0);
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    // acc[p][h]: rows 4h..4h+3, token a of pair p in the low lane, b in the high; total: the
    // partial sums of `chunk` blocks before (x86/avx2_util.h: the rows kernel's bits).
    alignas(32) float acc[NP][2][8] = {}, total[NP][2][8] = {};
    const int chunk = x8_sum_chunk_blocks();
    int fold = chunk;  // the block at which the next partial sum begins
    for (int k = 0; k < nb; ++k, g += kRecordBytes) {
        if (k == fold) {
            fold += chunk;
            for (int p = 0; p < NP; ++p)
                for (int h = 0; h < 2; ++h) {
                    const __m256 a = _mm256_load_ps(acc[p][h]);
                    _mm256_store_ps(total[p][h], k == chunk ? a : _mm256_add_ps(a, _mm256_load_ps(total[p][h])));
                    _mm256_store_ps(acc[p][h], _mm256_setzero_ps());
                }
        }
        prefetch_ahead<(kRecordBytes + 63) / 64 * 64>(g, pf);
        __m256i s[NP][2];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
            // Step j (low nibbles) and 4 + j (high nibbles) of rows 0-3 and of rows 4-7.
            const __m256i w0 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16 + 32 * j)));
            const __m256i w1 =
                _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16 + 32 * j + 16)));
            const __m256i lo0 = _mm256_and_si256(w0, m4), lo1 = _mm256_and_si256(w1, m4);
            const __m256i hi0 = _mm256_and_si256(_mm256_srli_epi16(w0, 4), m4),
                          hi1 = _mm256_and_si256(_mm256_srli_epi16(w1, 4), m4);
            // Reload the activations at each step rather than keep 2 * NP vectors of them live
            // across the steps (the compiler would, and spill the sums): the opaque copy of the
            // pointer keeps it from reusing the loads.
            const PairBlock* pp = pairs + k;
            asm volatile("" : "+r"(pp));
            for (int p = 0; p < NP; ++p) {
                const PairBlock& pb = pp[size_t(p) * nb];
                const __m256i al = _mm256_load_si256(reinterpret_cast<const __m256i*>(pb.lo));
                const __m256i ah = _mm256_load_si256(reinterpret_cast<const __m256i*>(pb.hi));
                // vpshufd's immediate must be a constant: j is, once the loop is unrolled.
                __m256i xl, xh;
                switch (j) {
                    case 0: xl = _mm256_shuffle_epi32(al, 0x00), xh = _mm256_shuffle_epi32(ah, 0x00); break;
                    case 1: xl = _mm256_shuffle_epi32(al, 0x55), xh = _mm256_shuffle_epi32(ah, 0x55); break;
                    case 2: xl = _mm256_shuffle_epi32(al, 0xAA), xh = _mm256_shuffle_epi32(ah, 0xAA); break;
                    default: xl = _mm256_shuffle_epi32(al, 0xFF), xh = _mm256_shuffle_epi32(ah, 0xFF); break;
                }
                if (j == 0) {
                    s[p][0] = _mm256_maddubs_epi16(lo0, xl);
                    s[p][1] = _mm256_maddubs_epi16(lo1, xl);
                } else {
                    s[p][0] = _mm256_add_epi16(s[p][0], _mm256_maddubs_epi16(lo0, xl));
                    s[p][1] = _mm256_add_epi16(s[p][1], _mm256_maddubs_epi16(lo1, xl));
                }
                s[p][0] = _mm256_add_epi16(s[p][0], _mm256_maddubs_epi16(hi0, xh));
                s[p][1] = _mm256_add_epi16(s[p][1], _mm256_maddubs_epi16(hi1, xh));
            }
            // Sum each step as it comes (GCC would keep all the products live, and spill them).
            for (int p = 0; p + 1 < NP; p += 2) keep_step_order(s[p][0], s[p][1], s[p + 1][0], s[p + 1][1]);
            if (NP % 2) keep_step_order(s[NP - 1][0], s[NP - 1][1]);
        }
        // The 8 rows' scales as [rows 0-3, rows 0-3] and [rows 4-7, rows 4-7].
        const __m256 d0 = _mm256_cvtph_ps(_mm_castpd_si128(_mm_loaddup_pd(reinterpret_cast<const double*>(g))));
        const __m256 d1 = _mm256_cvtph_ps(_mm_castpd_si128(_mm_loaddup_pd(reinterpret_cast<const double*>(g + 8))));
        for (int p = 0; p < NP; ++p) {
            const PairBlock& pb = pairs[size_t(p) * nb + k];
            const __m256 da = _mm256_load_ps(pb.d);
            const __m256i c8 = _mm256_load_si256(reinterpret_cast<const __m256i*>(pb.c8));
            for (int h = 0; h < 2; ++h) {
                const __m256 x = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_madd_epi16(s[p][h], ones), c8));
                _mm256_store_ps(acc[p][h], _mm256_fmadd_ps(x, _mm256_mul_ps(h ? d1 : d0, da), _mm256_load_ps(acc[p][h])));
            }
        }
    }
    if (nb > chunk)
        for (int p = 0; p < NP; ++p)
            for (int h = 0; h < 2; ++h)
                _mm256_store_ps(acc[p][h], _mm256_add_ps(_mm256_load_ps(acc[p][h]), _mm256_load_ps(total[p][h])));
    for (int p = 0; p < NP; ++p)
        for (int h = 0; h < 2; ++h) {
            float* o = out + size_t(t0 + 2 * p) * os + 4 * h;
            _mm_storeu_ps(o, _mm_load_ps(acc[p][h]));
            if (2 * p + 1 < nt) _mm_storeu_ps(o + os, _mm_load_ps(acc[p][h] + 4));
        }
}

}  // namespace

// Loop order: blocks of tokens whose copied activations stay within about kActBlockBytes (the
// L2 of most CPUs: a prompt of 512 tokens x 5632 columns would need 5.8 MB), then groups of 8
// rows, then passes of up to 8 tokens over the group's records (from L1 or L2 after the first).
constexpr size_t kActBlockBytes = 512 << 10;

void matmul_q4_0x8_few_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                            float* out, int out_stride, int r0, int r1) {
    if (r0 >= r1 || n_tokens <= 0) return;
    const int nb = n_cols / 32;
    const int block_pairs =
        std::max(kMaxPairs, int(std::min<size_t>(32, kActBlockBytes / (size_t(nb) * sizeof(PairBlock)))) / kMaxPairs * kMaxPairs);
    PairBlock* pairs = reinterpret_cast<PairBlock*>(few_tokens_act_buf(size_t(block_pairs) * size_t(nb) * sizeof(PairBlock)));
    const size_t pf = prefetch_distance(8 * sizeof(block_q4_0)), os = size_t(out_stride);
    for (int t0 = 0; t0 < n_tokens; t0 += 2 * block_pairs) {
        const int te = std::min(n_tokens, t0 + 2 * block_pairs), n_pairs = (te - t0 + 1) / 2;
        pack_pairs(static_cast<const char*>(A), a_row_bytes, nb, t0, te, pairs);
        for (int r = r0; r < r1; r += 8) {
            const uint8_t* g = static_cast<const uint8_t*>(W) + size_t(r) * w_row_bytes;
            for (int p0 = 0; p0 < n_pairs; p0 += kMaxPairs) {
                const int np = std::min(kMaxPairs, n_pairs - p0), t = t0 + 2 * p0, nt = std::min(2 * np, te - t);
                const PairBlock* pb = pairs + size_t(p0) * nb;
                float* o = out + r;
                switch (np) {
                    case 1: group_pairs<1>(g, pb, nb, pf, o, os, t, nt); break;
                    case 2: group_pairs<2>(g, pb, nb, pf, o, os, t, nt); break;
                    case 3: group_pairs<3>(g, pb, nb, pf, o, os, t, nt); break;
                    default: group_pairs<4>(g, pb, nb, pf, o, os, t, nt); break;
                }
            }
        }
    }
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX2 && !HEARTH_ISA_AVX_VNNI
