// GEMM on AMX tiles (prompt processing): interleaved Q4_0 / Q8_0 weights (kernels/rows_x8.h) x
// Q8_0 activations, and interleaved Q4_K x Q8_K (its own section below), the contract of
// x86/gemm_avx512.cpp's GEMMs (the same rows, activations and outputs), with the integer
// products on the tile unit.
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
// Tile registers (Q4_0 / Q8_0; each format has one configuration, loaded by every call on its
// thread: kernels run inside matmul's parallel region, and AMX state is per thread; released on
// return):
//   tmm0, tmm1  C: 16 tokens x 16 rows int32 (blocks b even, odd)
//   tmm2, tmm3  A: 16 tokens x 32 activation bytes
//   tmm4, tmm5  B: 8 steps x 64 bytes (16 rows x 4 elements)
// Loop order: gemm_avx512.cpp's, by the same driver (x86/gemm_x8_avx512.h), with tiles of 16
// tokens. Fewer tokens than 16 fill the tile with repeats of the last token (not stored).
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AMX)

#include "kernels/x86/avx512_gcc_warnings.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/prefetch.h"
#include "kernels/quant_types.h"
#include "kernels/x86/avx2_util.h"
#include "kernels/scratch.h"
#include "kernels/x86/gemm_x8_avx512.h"

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

TileConfig make_config_q8_0() {
    TileConfig c{};
    c.palette = 1;
    for (int i = 0; i < 2; ++i) c.rows[i] = kTile, c.colsb[i] = 16 * 4;  // C
    for (int i = 2; i < 4; ++i) c.rows[i] = kTile, c.colsb[i] = 32;      // A
    for (int i = 4; i < 6; ++i) c.rows[i] = 8, c.colsb[i] = 64;          // B: 32 / 4 steps
    return c;
}

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
    struct Tag;
    return thread_scratch<Tag, ActBlock>(n);
}

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

// ---- Q4_K (interleaved, kernels/rows_x8.h) x Q8_K ----
//
// Q4_K's sub-block scales are 6-bit integers under one float per super-block, so unlike Q4_0's a
// super-block's products can stay integers: sum_k a_k * q_k * sc(k) over its 256 columns, where
// sc(k) is the scale of k's sub-block. q * sc does not fit a byte (15 * 63), but with sc = 8 sh +
// sl (sh, sl < 8) both q * sh and q * sl do (<= 105): one B tile of each per 64 columns, taken
// from a 128-byte table of s * q by one byte permute, and the super-block's int32 sum is
// 8 * C_hi + C_lo, with K a full 64 bytes per TDPBSSD and one store of C per super-block (and
// tile of 16 tokens), not one per 32 columns as Q4_0's. The mins and the float side are the zmm
// GEMM's (x86/gemm_avx512.cpp): sum_j m_j * (activation sum of sub-block j) by 4 vpdpwssd, then
// (d * isum - dmin * msum) * d8 per super-block and token. The integer sums are the scalar
// kernels' exactly (|C_hi| <= 256 * 128 * 105 < 2^22).
//
// Tile registers (the Q4_K configuration):
//   tmm0, tmm1  C_hi, C_lo of even super-blocks; tmm2, tmm3 of odd ones: 16 tokens x 16 rows int32
//   tmm4        A: 16 tokens x 64 activation bytes (columns 64c .. 64c + 63)
//   tmm5, tmm6  B_hi, B_lo: 16 steps x 64 bytes (16 rows x 4 columns)

#ifndef HEARTH_AMX_CHUNK_K
#define HEARTH_AMX_CHUNK_K 2
#endif
constexpr int kChunkK = HEARTH_AMX_CHUNK_K;  // super-blocks per packed chunk: 2 * 8.4 KB

TileConfig make_config_q4k() {
    TileConfig c{};
    c.palette = 1;
    for (int i = 0; i < 7; ++i) c.rows[i] = 16, c.colsb[i] = 64;
    return c;
}

// One super-block of a 16-row panel. Step r of chunk c (columns 64c .. 64c + 63): for r < 8 the
// low nibbles of the record's step r (sub-block 2c), for r >= 8 the high nibbles of step r - 8
// (sub-block 2c + 1), as kernels/rows_x8.h lays them out, times the sub-block scale's upper
// (hi) or lower (lo) 3 bits.
struct alignas(64) PanelQ4KTiles {
    int8_t hi[4][16][64];
    int8_t lo[4][16][64];
    Q4kMinsScales16 m;
};

// One super-block of a tile of 16 tokens: its q rows are the A tiles (token t's 256 quants at row t).
using ActSuperTiles = ActQ8KTile<kTile>;

// s * q at 16 s + q, for s < 8 and q < 16: the permute's table.
struct TimesTable {
    alignas(64) int8_t v[128];
    TimesTable() {
        for (int i = 0; i < 128; ++i) v[i] = int8_t((i >> 4) * (i & 15));
    }
};

// The 4 bytes of each 32-bit lane all set to its byte j (a _mm256_shuffle_epi8 control).
inline __m256i lane_byte_to_all(int j) {
    return _mm256_add_epi32(_mm256_setr_epi32(0, 0x04040404, 0x08080808, 0x0C0C0C0C, 0, 0x04040404, 0x08080808, 0x0C0C0C0C),
                            _mm256_set1_epi32(0x01010101 * j));
}

// Super-block records ra and rb (the group pair's) into p.
void pack_q4k_pair(const uint8_t* ra, const uint8_t* rb, PanelQ4KTiles& p) {
    static const TimesTable times;
    const __m512i t0 = _mm512_load_si512(times.v), t1 = _mm512_load_si512(times.v + 64);
    const __m512i m4 = _mm512_set1_epi8(0x0F), m38 = _mm512_set1_epi8(0x38), m07 = _mm512_set1_epi8(0x07);
    const Q4kScalesX8 sa = q4k_unpack_scales_x8(ra + 32), sb = q4k_unpack_scales_x8(rb + 32);
    __m512i hi_of[8], lo_of[8];  // sub-block j: the table's row (16 sh, 16 sl) in every byte of a row's lane
    for (int j = 0; j < 8; ++j) {
        const __m256i ctl = lane_byte_to_all(j % 4);
        const __m512i sc =
            join(_mm256_shuffle_epi8(j < 4 ? sa.sc_lo : sa.sc_hi, ctl), _mm256_shuffle_epi8(j < 4 ? sb.sc_lo : sb.sc_hi, ctl));
        hi_of[j] = _mm512_slli_epi16(_mm512_and_si512(sc, m38), 1);
        lo_of[j] = _mm512_slli_epi16(_mm512_and_si512(sc, m07), 4);
    }
    for (int c = 0; c < 4; ++c)
        for (int k = 0; k < 8; ++k) {
            const __m512i bits = join(loadu256(ra + 128 + 256 * c + 32 * k), loadu256(rb + 128 + 256 * c + 32 * k));
            const __m512i q0 = _mm512_and_si512(bits, m4), q1 = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
            _mm512_store_si512(p.hi[c][k], _mm512_permutex2var_epi8(t0, _mm512_or_si512(q0, hi_of[2 * c]), t1));
            _mm512_store_si512(p.hi[c][8 + k], _mm512_permutex2var_epi8(t0, _mm512_or_si512(q1, hi_of[2 * c + 1]), t1));
            _mm512_store_si512(p.lo[c][k], _mm512_permutex2var_epi8(t0, _mm512_or_si512(q0, lo_of[2 * c]), t1));
            _mm512_store_si512(p.lo[c][8 + k], _mm512_permutex2var_epi8(t0, _mm512_or_si512(q1, lo_of[2 * c + 1]), t1));
        }
    pack_q4k_mins_and_scales(ra, rb, sa, sb, p.m);
}

// acc[t] += token t's super-block sum from its C_hi and C_lo rows (16 rows each).
inline void scale_add_q4k(const int32_t (*c)[kTile][16], const PanelQ4KTiles& w, const ActSuperTiles& a, __m512 acc[kTile]) {
    for (int t = 0; t < kTile; ++t) {
        const __m512i isum = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(c[0][t]), 3), _mm512_load_si512(c[1][t]));
        acc[t] = q4k_super_add(acc[t], isum, w.m, a.sub_sums[t], a.d[t]);
    }
}

// A super-block's products into the tiles CH and CL (literal tile numbers).
#define HEARTH_AMX_SUPER(CH, CL, w, a)               \
    do {                                             \
        _tile_zero(CH);                              \
        _tile_zero(CL);                              \
        for (int c_ = 0; c_ < 4; ++c_) {             \
            _tile_loadd(4, (a).q[0] + 64 * c_, 256); \
            _tile_loadd(5, (w).hi[c_], 64);          \
            _tile_dpbssd(CH, 4, 5);                  \
            _tile_loadd(6, (w).lo[c_], 64);          \
            _tile_dpbssd(CL, 4, 6);                  \
        }                                            \
    } while (0)

// kn super-blocks of the packed chunk pw x the activation tile ab, skewed as tile()'s: the vector
// unit scales super-block b - 1 while b's tiles are stored and b + 1's products run.
void tile_q4k(const PanelQ4KTiles* pw, const ActSuperTiles* ab, int kn, ChunkPrefetch& next, __m512 res[kTile]) {
    alignas(64) int32_t c[2][2][kTile][16];  // [buffer][hi, lo][token][row]
    __m512 acc[kTile];
    for (int t = 0; t < kTile; ++t) acc[t] = _mm512_setzero_ps();
    asm volatile("" ::: "memory");  // the packed tiles are in memory (as in tile())
    HEARTH_AMX_SUPER(0, 1, pw[0], ab[0]);
    for (int b = 0; b < kn; b += 2) {
        next.step();
        if (b + 1 < kn) HEARTH_AMX_SUPER(2, 3, pw[b + 1], ab[b + 1]);
        _tile_stored(0, c[0][0], 64);
        _tile_stored(1, c[0][1], 64);
        if (b > 0) scale_add_q4k(c[1], pw[b - 1], ab[b - 1], acc);
        if (b + 1 < kn) {
            next.step();
            if (b + 2 < kn) HEARTH_AMX_SUPER(0, 1, pw[b + 2], ab[b + 2]);
            _tile_stored(2, c[1][0], 64);
            _tile_stored(3, c[1][1], 64);
            scale_add_q4k(c[0], pw[b], ab[b], acc);
        }
    }
    scale_add_q4k(c[(kn - 1) % 2], pw[kn - 1], ab[kn - 1], acc);
    for (int t = 0; t < kTile; ++t) res[t] = acc[t];
}
#undef HEARTH_AMX_SUPER

// ---- The formats of the driver (x86/gemm_x8_avx512.h) ----

// The tiles are configured for the duration of one kernel call on its thread (the driver holds
// a Scope): format F's configuration.
template <typename F>
struct TileScope {
    TileScope() {
        static const TileConfig config = F::tile_config();
        _tile_loadconfig(&config);
    }
    ~TileScope() { _tile_release(); }
};

// Interleaved Q4_0 / Q8_0 x Q8_0.
template <typename WBlock>
struct FormatQ8_0Family {
    using Packed = PanelBlock;
    using Act = ActBlock;
    using Scope = TileScope<FormatQ8_0Family>;
    static constexpr int kTile = hearth::kTile, kTokBlock = hearth::kTokBlock;
    static constexpr int kBlockCols = 32, kChunkBlocks = kChunk;
    static constexpr size_t kRec = 8 * sizeof(WBlock);
    static TileConfig tile_config() { return make_config_q8_0(); }
    static Packed* packed() { return packed_buf(); }
    static Act* acts(size_t n) { return act_buf(n); }
    static void pack_weights(const uint8_t* ga, const uint8_t* gb, int kn, Packed* p) { pack_x8_pair<WBlock>(ga, gb, kn, p); }
    static void pack_activations(const char* A, size_t arb, int nb, int t0, int te, Act* out) {
        pack_acts(A, arb, nb, t0, te, out);
    }
    static void run_tile(const Packed* p, const Act* a, int kn, ChunkPrefetch& next, __m512 res[kTile]) {
        tile(p, a, kn, next, res);
    }
};

// Interleaved Q4_K x Q8_K.
struct FormatQ4_K {
    using Packed = PanelQ4KTiles;
    using Act = ActSuperTiles;
    using Scope = TileScope<FormatQ4_K>;
    static constexpr int kTile = hearth::kTile, kTokBlock = hearth::kTokBlock;
    static constexpr int kBlockCols = QK_K, kChunkBlocks = kChunkK;
    static constexpr size_t kRec = 8 * sizeof(block_q4_K);
    static TileConfig tile_config() { return make_config_q4k(); }
    static Packed* packed() {
        thread_local PanelQ4KTiles buf[kChunkK];
        return buf;
    }
    static Act* acts(size_t n) {
        struct Tag;
        return thread_scratch<Tag, ActSuperTiles>(n);
    }
    static void pack_weights(const uint8_t* ga, const uint8_t* gb, int kn, Packed* p) {
        for (int b = 0; b < kn; ++b) pack_q4k_pair(ga + size_t(b) * kRec, gb + size_t(b) * kRec, p[b]);
    }
    static void pack_activations(const char* A, size_t arb, int nb, int t0, int te, Act* out) {
        pack_acts_q8k(A, arb, nb, t0, te, out);
    }
    static void run_tile(const Packed* p, const Act* a, int kn, ChunkPrefetch& next, __m512 res[kTile]) {
        tile_q4k(p, a, kn, next, res);
    }
};

}  // namespace

void matmul_q4_0x8_gemm_amx(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                            float* out, int out_stride, int r0, int r1) {
    gemm_x8_panels<FormatQ8_0Family<block_q4_0>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q8_0x8_gemm_amx(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                            float* out, int out_stride, int r0, int r1) {
    gemm_x8_panels<FormatQ8_0Family<block_q8_0>>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_kx8_gemm_amx(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                            float* out, int out_stride, int r0, int r1) {
    gemm_x8_panels<FormatQ4_K>(W, w_row_bytes, A, a_row_bytes, n_cols, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AMX
