// GEMM on AMX tiles (prompt processing): interleaved Q4_0 / Q8_0 weights (kernels/rows_x8.h) x
// Q8_0 activations, the contract of x86/gemm_avx512.cpp's GEMMs (the same rows, activations and
// outputs), with the integer products on the tile unit.
//
// One TDPBSSD multiplies a tile of 16 tokens x 32 activation bytes (one Q8_0 block of each token,
// signed) by a tile of 8 rows of 64 bytes, each row a step of 4 elements of 16 weight rows (the
// layout of gemm_avx512.cpp's packed steps, weights signed here: Q4_0 nibbles - 8, Q8_0 as they
// are), into a tile of 16 tokens x 16 weight rows of int32: a block's exact integer dots. The
// scales differ per block, so every block needs its own int32 tile: K is one block (32 bytes),
// half of the 64 a TDPBSSD could take. The int32 tile is then stored and turned into floats by
// AVX-512 as in the zmm GEMM: per token one conversion, one multiply of the 16 rows' scales by
// the token's, one FMA into the token's 16 accumulators.
// Where the time goes (one thread, 128 tokens, against the zmm GEMM's time for the same work):
// without the float side the tiles alone ran 1.8x as fast as the zmm GEMM, without their
// TILESTORED 3x; the float side alone 2.8x. Together they barely overlap (1.1-1.2x): every
// block pays a 1 KB tile store (4 bytes per 32 products, whatever the tile shapes) and 48
// vector operations per 8192 products, and the vector loads of the stored tile wait for it to
// reach L1. A per-block scale is what keeps this from AMX's usual speed-up.
// Signed x signed: no offset term (the zmm GEMM's neg_term). A block's sum is at most
// 32 * 128 * 128 = 2^19 in magnitude; the integer sums are the scalar kernels' exactly.
//
// Tile registers (one configuration, loaded by every call on its thread: kernels run inside
// matmul's parallel region, and AMX state is per thread; released on return):
//   tmm0, tmm1  C: 16 tokens x 16 rows int32 (blocks b even, odd)
//   tmm2, tmm3  A: 16 tokens x 32 activation bytes
//   tmm4, tmm5  B: 8 steps x 64 bytes (16 rows x 4 elements)
// Loop order as gemm_avx512.cpp's: token blocks (activations packed once per block) -> 16-row
// panels -> K chunks (packed once per token block, L1-resident) -> tiles of 16 tokens. Fewer
// tokens than 16 fill the tile with repeats of the last token (not stored).
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AMX)

#include "kernels/x86/avx512_gcc_warnings.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/prefetch.h"
#include "kernels/quant_types.h"

namespace hearth {

namespace {

#ifndef HEARTH_AMX_CHUNK  // tuning overrides for tools/bench_kernels builds
#define HEARTH_AMX_CHUNK 32
#define HEARTH_AMX_TOKBLOCK 128
#endif
constexpr int kChunk = HEARTH_AMX_CHUNK;  // blocks per packed chunk: 32 * 576 B = 18 KB
constexpr int kTokBlock =
    HEARTH_AMX_TOKBLOCK;   // tokens per activation block: 8 tiles x 64 blocks x 576 B = 295 KB at 2048 columns
constexpr int kTile = 16;  // tokens per tile (the rows of an A and a C tile)

// The tile configuration (palette 1), as LDTILECFG reads it: 64 bytes.
struct alignas(64) TileConfig {
    uint8_t palette;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];  // bytes per row of tmm i
    uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

TileConfig make_config() {
    TileConfig c{};
    c.palette = 1;
    for (int i = 0; i < 2; ++i) c.rows[i] = kTile, c.colsb[i] = 16 * 4;  // C
    for (int i = 2; i < 4; ++i) c.rows[i] = kTile, c.colsb[i] = 32;      // A
    for (int i = 4; i < 6; ++i) c.rows[i] = 8, c.colsb[i] = 64;          // B: 32 / 4 steps
    return c;
}

// The tiles are configured for the duration of one kernel call on its thread.
struct TileScope {
    TileScope() {
        static const TileConfig config = make_config();
        _tile_loadconfig(&config);
    }
    ~TileScope() { _tile_release(); }
};

// One block of a 16-row panel: the B tile (step j: elements 4j..4j+3 of row i of the first group
// at 4i, of the second at 32 + 4i; signed) and the 16 rows' scales.
struct alignas(64) PanelBlock {
    int8_t q[8][64];
    float d[16];
};

// One block of a tile of 16 tokens: the A tile (token t's 32 quants at row t) and their scales.
struct alignas(64) ActBlock {
    int8_t q[kTile][32];
    float d[kTile];
};

PanelBlock* packed_buf() {
    thread_local PanelBlock buf[kChunk];
    return buf;
}

ActBlock* act_buf(size_t n) {
    thread_local std::vector<ActBlock> buf;
    if (buf.size() < n) buf.resize(n);
    return buf.data();
}

inline __m256i loadu256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

// Pack kn records of the group pair (ga, gb) (record b of each at + b * 8 * sizeof(WBlock)).
template <typename WBlock>
void pack_x8_pair(const uint8_t* ga, const uint8_t* gb, int kn, PanelBlock* p) {
    constexpr size_t kRec = 8 * sizeof(WBlock);
    const __m512i m4 = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
    for (int b = 0; b < kn; ++b, ++p, ga += kRec, gb += kRec) {
        __m512i* q = reinterpret_cast<__m512i*>(p->q);
        if (sizeof(WBlock) == sizeof(block_q4_0)) {
            for (int k = 0; k < 4; ++k) {
                const __m512i w = join(loadu256(ga + 16 + 32 * k), loadu256(gb + 16 + 32 * k));
                _mm512_store_si512(q + k, _mm512_sub_epi8(_mm512_and_si512(w, m4), eight));
                _mm512_store_si512(q + k + 4, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(w, 4), m4), eight));
            }
        } else {
            for (int k = 0; k < 8; ++k) _mm512_store_si512(q + k, join(loadu256(ga + 16 + 32 * k), loadu256(gb + 16 + 32 * k)));
        }
        const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ga))),
                                                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)), 1);
        _mm512_store_ps(p->d, _mm512_cvtph_ps(h));
    }
}

// Activation tiles of tokens [t0, te): tile g holds tokens t0 + 16g + i (the last tile repeats
// its last token), nb blocks each.
void pack_acts(const char* A, size_t arb, int nb, int t0, int te, ActBlock* out) {
    for (int g = t0; g < te; g += kTile) {
        const block_q8_0* a[kTile];
        for (int i = 0; i < kTile; ++i) a[i] = reinterpret_cast<const block_q8_0*>(A + size_t(std::min(g + i, te - 1)) * arb);
        for (int b = 0; b < nb; ++b, ++out)
            for (int i = 0; i < kTile; ++i) {
                _mm256_store_si256(reinterpret_cast<__m256i*>(out->q[i]), loadu256(a[i][b].qs));
                out->d[i] = _cvtsh_ss(a[i][b].d);
            }
    }
}

// acc[t] += the block's int32 dots c[t] (16 rows) x the rows' scales x token t's scale. One asm
// statement per token: GCC otherwise hoisted all 16 conversions ahead of the multiplies and, short
// of registers, kept half the accumulators on the stack (a load and a store per FMA).
inline void scale_add(const int32_t (*c)[16], const PanelBlock& w, const ActBlock& a, __m512 acc[kTile]) {
    const __m512 dw = _mm512_load_ps(w.d);
    for (int t = 0; t < kTile; ++t) {
        __m512 x, s;
        asm volatile(
            "vcvtdq2ps %[c], %[x]\n\t"
            "vmulps %[da]%{1to16%}, %[dw], %[s]\n\t"
            "vfmadd231ps %[x], %[s], %[acc]"
            : [acc] "+v"(acc[t]), [x] "=&v"(x), [s] "=&v"(s)
            : [c] "m"(*reinterpret_cast<const __m512i*>(c[t])), [da] "m"(a.d[t]), [dw] "v"(dw));
    }
}

// A block's products on a set of tiles (C, A, B: literal tile numbers), and their store to c.
#define HEARTH_AMX_DOTS(C, A, B, w, a) \
    do {                               \
        _tile_loadd(A, (a).q, 32);     \
        _tile_loadd(B, (w).q, 64);     \
        _tile_zero(C);                 \
        _tile_dpbssd(C, A, B);         \
    } while (0)

// kn blocks of the packed chunk pw x the activation tile ab: res[t] = the 16 rows' partial dots
// with token t. The blocks alternate between two sets of tiles (even blocks: tmm0, 2, 4; odd:
// tmm1, 3, 5) and their int32 tiles between two buffers; a block's buffer is scaled one block
// later than it is stored. Vector loads cannot take a tile store's data from the store buffer:
// they wait until it is written to L1, after it retires; scaled right away, each block left the
// vector unit idle for that wait, and the tile unit for the scaling after it (1.2x the zmm GEMM).
// In this order the vector unit scales block b - 1 while block b's tile is stored and block
// b + 1's TDPBSSD runs.
void tile(const PanelBlock* pw, const ActBlock* ab, int kn, ChunkPrefetch& next, __m512 res[kTile]) {
    alignas(64) int32_t c[2][kTile][16];
    __m512 acc[kTile];
    for (int t = 0; t < kTile; ++t) acc[t] = _mm512_setzero_ps();
    // The tile loads read memory the compiler does not know they read (GCC's intrinsics are asm
    // without a memory operand): the packed weights and activations must be in memory by now.
    asm volatile("" ::: "memory");
    HEARTH_AMX_DOTS(0, 2, 4, pw[0], ab[0]);
    for (int b = 0; b < kn; b += 2) {
        next.step();
        if (b + 1 < kn) HEARTH_AMX_DOTS(1, 3, 5, pw[b + 1], ab[b + 1]);
        _tile_stored(0, c[0], 64);
        if (b > 0) scale_add(c[1], pw[b - 1], ab[b - 1], acc);
        if (b + 1 < kn) {
            next.step();
            if (b + 2 < kn) HEARTH_AMX_DOTS(0, 2, 4, pw[b + 2], ab[b + 2]);
            _tile_stored(1, c[1], 64);
            scale_add(c[0], pw[b], ab[b], acc);
        }
    }
    // The last block's buffer.
    if (kn % 2)
        scale_add(c[0], pw[kn - 1], ab[kn - 1], acc);
    else
        scale_add(c[1], pw[kn - 1], ab[kn - 1], acc);
    for (int t = 0; t < kTile; ++t) res[t] = acc[t];
}
#undef HEARTH_AMX_DOTS

// Interleaved weights of WBlock (Q4_0 or Q8_0), rows [r0, r1) in whole groups of 8.
template <typename WBlock>
void gemm_x8(const void* W, size_t wrb, const void* A, size_t arb, int n_cols, int n_tokens, float* out, int os, int r0, int r1) {
    if (r0 >= r1 || n_tokens <= 0) return;
    constexpr size_t kRec = 8 * sizeof(WBlock);
    const TileScope tiles;
    const int nb = n_cols / 32;
    const uint8_t* Wc = static_cast<const uint8_t*>(W);
    const size_t group_bytes = 8 * wrb;
    PanelBlock* pw = packed_buf();
    ActBlock* acts = act_buf(size_t((kTokBlock + kTile - 1) / kTile) * size_t(nb));
    for (int t0 = 0; t0 < n_tokens; t0 += kTokBlock) {
        const int te = std::min(n_tokens, t0 + kTokBlock);
        pack_acts(static_cast<const char*>(A), arb, nb, t0, te, acts);
        const int n_tiles = (te - t0 + kTile - 1) / kTile;
        for (int r = r0; r < r1; r += 16) {
            const int nr = std::min(16, r1 - r);  // 16, or 8: an odd last group, paired with itself
            const uint8_t* ga = Wc + size_t(r) * wrb;
            const uint8_t* gb = nr == 16 ? ga + group_bytes : ga;
            const __mmask16 keep = nr == 16 ? __mmask16(0xFFFF) : __mmask16(0x00FF);
            for (int kb = 0; kb < nb; kb += kChunk) {
                const int kn = std::min(kChunk, nb - kb);
                pack_x8_pair<WBlock>(ga + size_t(kb) * kRec, gb + size_t(kb) * kRec, kn, pw);
                // The chunk packed next, fetched while the tiles compute on this one (as in
                // gemm_avx512.cpp): the same groups' next records, or the next panel's first.
                const uint8_t *na = nullptr, *nbp = nullptr;
                size_t bytes = 0;
                if (kb + kn < nb) {
                    na = ga + size_t(kb + kn) * kRec;
                    nbp = gb + size_t(kb + kn) * kRec;
                    bytes = size_t(std::min(kChunk, nb - kb - kn)) * kRec;
                } else if (r + 16 < r1) {
                    na = ga + 2 * group_bytes;
                    nbp = na + group_bytes;
                    bytes = size_t(std::min(kChunk, nb)) * kRec;
                }
                ChunkPrefetch next = ChunkPrefetch::over(na, nbp, (bytes + 63) / 64, size_t(n_tiles) * size_t(kn));
                for (int t = t0; t < te; t += kTile) {
                    __m512 res[kTile];
                    tile(pw, acts + size_t(t - t0) / kTile * size_t(nb) + kb, kn, next, res);
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

}  // namespace

void matmul_q4_0x8_gemm_amx(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                            float* out, int out_stride, int r0, int r1) {
    gemm_x8<block_q4_0>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q8_0x8_gemm_amx(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                            float* out, int out_stride, int r0, int r1) {
    gemm_x8<block_q8_0>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AMX
