#include "kernels/attention.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "kernels/table.h"

#if defined(HEARTH_ISA_AVX512)
#include "kernels/x86/avx512_gcc_warnings.h"
#endif
#if defined(HEARTH_ISA_AVX2)
#include "kernels/x86/avx2_util.h"
#endif
#if defined(HEARTH_ISA_NEON)
#include <arm_neon.h>
#endif

namespace hearth {

// Positions per block: the block's fp32 keys or values (block * head_dim floats, 16 KB) stay
// in L1 while every query row of the call reads them. A multiple of 16, the tile width.
static int block_positions(int head_dim) { return std::max(16, 4096 / head_dim / 16 * 16); }

size_t attn_scratch_floats(int head_dim) { return size_t(block_positions(head_dim)) * head_dim; }

// Element d of a cached row, as fp32: the scalar twins and the SIMD kernels' odd tails.
template <uint32_t T>
static inline float cache_value(const void* row, int d) {
    if constexpr (T == TYPE_F32) {
        return static_cast<const float*>(row)[d];
    } else if constexpr (T == TYPE_F16) {
        return fp16_to_fp32(static_cast<const uint16_t*>(row)[d]);
    } else {
        const block_q8_0& b = static_cast<const block_q8_0*>(row)[d / QK8_0];
        return fp16_to_fp32(b.d) * b.qs[d % QK8_0];
    }
}

// Tiled keys (kv_keys_tiled): the bytes of one dim of a tile (kAttnKeyTile elements), and
// where dim d of tile t of a head's keys starts.
template <uint32_t T>
constexpr size_t key_dim_bytes() {
    return type_row_bytes(T, kAttnKeyTile);
}
template <uint32_t T, class Byte>
static inline Byte* key_tile_dim(Byte* keys, int hd, int t, int d) {
    return keys + (size_t(t) * hd + d) * key_dim_bytes<T>();
}
// Key (position p, dim d) of a kv head's keys, as fp32, in either layout.
template <uint32_t T>
static inline float key_value(const void* keys, int hd, int p, int d) {
    const char* k = static_cast<const char*>(keys);
    if constexpr (kv_keys_tiled(T)) {
        const int t = p / kAttnKeyTile, i = p % kAttnKeyTile;
        return cache_value<T>(key_tile_dim<T>(k, hd, t, d), i);
    } else {
        return cache_value<T>(k + size_t(p) * type_row_bytes(T, hd), d);
    }
}

// ---------------------------------------------------------------------------------------
// Scalar twins: the formulas, summed in order in fp32.
// ---------------------------------------------------------------------------------------
template <uint32_t T>
static void scores_scalar(const float* q, int n_q, int hd, const void* keys, int k0, int n_k, float* s, int s_stride) {
    for (int r = 0; r < n_q; r++)
        for (int p = 0; p < n_k; p++) {
            float sum = 0.0f;
            for (int d = 0; d < hd; d++) sum += q[r * hd + d] * key_value<T>(keys, hd, k0 + p, d);
            s[size_t(r) * s_stride + p] = sum;
        }
}

template <uint32_t T>
static void values_scalar(const float* w, int w_stride, int n_q, const void* v, size_t v_row_bytes, int n_v, int hd, float* out,
                          int out_stride) {
    for (int r = 0; r < n_q; r++) {
        float* o = out + size_t(r) * out_stride;
        for (int i = 0; i < hd; i++) o[i] = 0.0f;
        for (int p = 0; p < n_v; p++) {
            const void* row = static_cast<const char*>(v) + p * v_row_bytes;
            const float wp = w[size_t(r) * w_stride + p];
            for (int i = 0; i < hd; i++) o[i] += wp * cache_value<T>(row, i);
        }
    }
}

#define HEARTH_DEFINE_ATTN_SCALAR(name, T)                                                                                       \
    void attn_scores_##name##_scalar(const float* q, int n_q, int hd, const void* keys, int k0, int n_k, float* s, int s_stride, \
                                     float*) {                                                                                   \
        scores_scalar<T>(q, n_q, hd, keys, k0, n_k, s, s_stride);                                                                \
    }                                                                                                                            \
    void attn_values_##name##_scalar(const float* w, int w_stride, int n_q, const void* v, size_t v_row_bytes, int n_v, int hd,  \
                                     float* out, int out_stride, float*) {                                                       \
        values_scalar<T>(w, w_stride, n_q, v, v_row_bytes, n_v, hd, out, out_stride);                                            \
    }
HEARTH_DEFINE_ATTN_SCALAR(f32, TYPE_F32)
HEARTH_DEFINE_ATTN_SCALAR(f16, TYPE_F16)
HEARTH_DEFINE_ATTN_SCALAR(q8_0, TYPE_Q8_0)

// ---------------------------------------------------------------------------------------
// SIMD: one generic implementation over a vector of W floats (Isa below: AVX-512's 16, AVX2's
// 8, NEON's 4). An Isa provides V, W, zero, load, store, bcast (all lanes = *p), fma (a * b +
// c), transpose (W vectors of W lanes), hsums (lane i = the sum of vector i), in_register,
// set1, load_i8 (W int8 codes as floats), load_row<T>(row, d): W values of a cached row from
// dim d, where d is a multiple of W and d + W <= head_dim (never across a q8_0 block: 32 is a
// multiple of W), and its tiles' query rows: kScoreRows (a scores tile: kScoreRows x 16
// accumulators) and kValueRows (a values tile: kValueRows x 32 accumulators), as many as its
// registers hold beside the operands.
// ---------------------------------------------------------------------------------------
#define HEARTH_UNROLL _Pragma("GCC unroll 16")
constexpr int kTile = 16;       // positions per scores tile
constexpr int kValueDims = 32;  // dims per values tile

// The cache a step reads was last read a whole step earlier, since when the weights have gone
// through the caches: its rows come from L3 or memory, and a head's rows (a few KB) are too few
// for the hardware prefetchers to reach their distance. So the kernels ask for the rows they
// read kAheadRows positions ahead: every line of the row of hd values at `row`.
constexpr int kAheadRows = 32;
template <uint32_t T>
static inline void prefetch_row(const char* row, int hd) {
    for (size_t o = 0; o < type_row_bytes(T, hd); o += 64) __builtin_prefetch(row + o, 0, 3);
}

// f(std::integral_constant<int, m>()) for 1 <= m <= Max: a tile's row count as a template argument.
template <int Max, int M = 1, class F>
static inline void with_rows(int m, F&& f) {
    if constexpr (M >= Max) {
        f(std::integral_constant<int, Max>());
    } else {
        if (m == M) return f(std::integral_constant<int, M>());
        with_rows<Max, M + 1>(m, f);
    }
}

// The keys of positions [0, n) transposed into kt[d * stride + p]; positions n..stride-1
// (stride a multiple of kTile) are zero. Rows [0, n_pf) exist, for the prefetches (n_pf >= n).
template <class Isa, uint32_t T>
static void pack_keys(const char* k, size_t row_bytes, int n, int n_pf, int hd, float* kt, int stride) {
    using V = typename Isa::V;
    constexpr int W = Isa::W;
    for (int p0 = 0; p0 < stride; p0 += W) {
        const int rows = std::min(W, n - p0);  // <= 0 past the keys: a zero-padded group
        for (int i = p0 + kAheadRows; i < std::min(p0 + kAheadRows + W, n_pf); i++) prefetch_row<T>(k + i * row_bytes, hd);
        int d = 0;
        for (; d + W <= hd; d += W) {
            V v[W];
            for (int i = 0; i < W; i++) v[i] = i < rows ? Isa::template load_row<T>(k + (p0 + i) * row_bytes, d) : Isa::zero();
            Isa::transpose(v);
            for (int j = 0; j < W; j++) Isa::store(kt + size_t(d + j) * stride + p0, v[j]);
        }
        for (; d < hd; d++)
            for (int i = 0; i < W; i++)
                kt[size_t(d) * stride + p0 + i] = i < rows ? cache_value<T>(k + (p0 + i) * row_bytes, d) : 0.0f;
    }
}

// s[r][j - lo] = dot(q row r, key j) for M query rows and the keys j in [lo, hi) of the kTile
// at kt: dim d of the tile's keys is kTile values of type T at kt + d * d_bytes (tiled keys, or
// keys transposed into fp32 scratch). pf: a later tile's keys to prefetch (or null).
template <class Isa, uint32_t T, int M>
static inline void scores_tile(const float* q, int hd, const char* kt, size_t d_bytes, const char* pf, float* s, int s_stride,
                               int lo, int hi) {
    using V = typename Isa::V;
    constexpr int NV = kTile / Isa::W;
    // Every loop over the tile is unrolled, so that the accumulators live in registers only.
    V acc[M][NV];
    HEARTH_UNROLL for (int r = 0; r < M; r++) HEARTH_UNROLL for (int j = 0; j < NV; j++) acc[r][j] = Isa::zero();
    for (int d = 0; d < hd; d++) {
        if (pf) __builtin_prefetch(pf + d * d_bytes, 0, 3);
        V kv[NV];
        HEARTH_UNROLL for (int j = 0; j < NV; j++) kv[j] =
            Isa::in_register(Isa::template load_row<T>(kt + d * d_bytes, j * Isa::W));
        HEARTH_UNROLL for (int r = 0; r < M; r++) {
            const V qb = Isa::bcast(q + r * hd + d);
            HEARTH_UNROLL for (int j = 0; j < NV; j++) acc[r][j] = Isa::fma(qb, kv[j], acc[r][j]);
        }
    }
    const bool whole = lo == 0 && hi == kTile;
    float tmp[M][kTile];
    float* out = whole ? s : &tmp[0][0];
    const int out_stride = whole ? s_stride : kTile;
    HEARTH_UNROLL for (int r = 0; r < M; r++) HEARTH_UNROLL for (int j = 0; j < NV; j++)
        Isa::store(out + size_t(r) * out_stride + j * Isa::W, acc[r][j]);
    if (!whole)
        for (int r = 0; r < M; r++) std::memcpy(s + size_t(r) * s_stride, tmp[r] + lo, sizeof(float) * (hi - lo));
}

// Rows of keys (q8_0) and few query rows (generation with few heads per group): transposing or
// converting the keys would cost more than the dot products themselves, so each query row takes
// W keys at a time straight from the cache, and one transposing reduction (Isa::hsums) turns W
// accumulators into W scores.
template <class Isa, uint32_t T>
static void scores_dots(const float* q, int n_q, int hd, const char* k, size_t k_row_bytes, int n_k, float* s, int s_stride) {
    using V = typename Isa::V;
    constexpr int W = Isa::W;
    const int hd_v = hd / W * W;
    for (int r = 0; r < n_q; r++) {
        const float* qr = q + size_t(r) * hd;
        float* sr = s + size_t(r) * s_stride;
        int p = 0;
        for (; p + W <= n_k; p += W) {
            if (r == 0)
                for (int i = p + kAheadRows; i < std::min(p + kAheadRows + W, n_k); i++) prefetch_row<T>(k + i * k_row_bytes, hd);
            V acc[W];
            HEARTH_UNROLL for (int i = 0; i < W; i++) acc[i] = Isa::zero();
            if constexpr (T == TYPE_Q8_0) {
                // A block's codes times the query, summed, then scaled once: the scale costs
                // one FMA per 32 values instead of a conversion and a multiply per W.
                for (int d = 0; d < hd; d += QK8_0) HEARTH_UNROLL for (int i = 0; i < W; i++) {
                        const block_q8_0* b = reinterpret_cast<const block_q8_0*>(k + (p + i) * k_row_bytes) + d / QK8_0;
                        V sum = Isa::zero();
                        HEARTH_UNROLL for (int j = 0; j < QK8_0; j += W) sum =
                            Isa::fma(Isa::load(qr + d + j), Isa::load_i8(b->qs + j), sum);
                        acc[i] = Isa::fma(Isa::set1(fp16_to_fp32(b->d)), sum, acc[i]);
                    }
            } else {
                for (int d = 0; d < hd_v; d += W) {
                    const V qv = Isa::load(qr + d);
                    HEARTH_UNROLL for (int i = 0; i < W; i++) acc[i] =
                        Isa::fma(qv, Isa::template load_row<T>(k + (p + i) * k_row_bytes, d), acc[i]);
                }
            }
            Isa::store(sr + p, Isa::hsums(acc));
            for (int d = hd_v; d < hd; d++)
                for (int i = 0; i < W; i++) sr[p + i] += qr[d] * cache_value<T>(k + (p + i) * k_row_bytes, d);
        }
        for (; p < n_k; p++) {
            V acc[W];
            acc[0] = Isa::zero();
            for (int d = 0; d < hd_v; d += W)
                acc[0] = Isa::fma(Isa::load(qr + d), Isa::template load_row<T>(k + p * k_row_bytes, d), acc[0]);
            HEARTH_UNROLL for (int i = 1; i < W; i++) acc[i] = Isa::zero();
            float sums[W];
            Isa::store(sums, Isa::hsums(acc));
            for (int d = hd_v; d < hd; d++) sums[0] += qr[d] * cache_value<T>(k + p * k_row_bytes, d);
            sr[p] = sums[0];
        }
    }
}

// Tiled keys are read in place, a tile at a time, for every query row; the tile two ahead is
// prefetched by the first rows' pass (a step's cache comes from L3 or memory, kAheadRows).
static_assert(kTile == kAttnKeyTile, "a scores tile reads one key tile");
template <class Isa, uint32_t T>
static void scores_tiled(const float* q, int n_q, int hd, const char* keys, int k0, int n_k, float* s, int s_stride) {
    const size_t d_bytes = key_dim_bytes<T>(), tile_bytes = d_bytes * hd;
    const int t0 = k0 / kTile, t1 = (k0 + n_k - 1) / kTile;
    for (int t = t0; t <= t1; t++) {
        const int lo = std::max(k0 - t * kTile, 0), hi = std::min(k0 + n_k - t * kTile, kTile);
        const char* kt = key_tile_dim<T>(keys, hd, t, 0);
        const char* pf = t + 2 <= t1 ? kt + 2 * tile_bytes : nullptr;
        for (int r0 = 0; r0 < n_q; r0 += Isa::kScoreRows) {
            float* sr = s + size_t(r0) * s_stride + (t * kTile + lo - k0);
            with_rows<Isa::kScoreRows>(n_q - r0, [&](auto rows) {
                scores_tile<Isa, T, rows()>(q + size_t(r0) * hd, hd, kt, d_bytes, r0 == 0 ? pf : nullptr, sr, s_stride, lo, hi);
            });
        }
    }
}

template <class Isa, uint32_t T>
static void scores_simd(const float* q, int n_q, int hd, const void* keys, int k0, int n_k, float* s, int s_stride,
                        float* scratch) {
    if (n_k <= 0) return;
    if constexpr (kv_keys_tiled(T)) {
        return scores_tiled<Isa, T>(q, n_q, hd, static_cast<const char*>(keys), k0, n_k, s, s_stride);
    } else {
        const size_t k_row_bytes = type_row_bytes(T, hd);
        const char* k = static_cast<const char*>(keys) + size_t(k0) * k_row_bytes;
        if (n_q < kAttnFewRows) return scores_dots<Isa, T>(q, n_q, hd, k, k_row_bytes, n_k, s, s_stride);
        const int block = block_positions(hd);
        for (int p0 = 0; p0 < n_k; p0 += block) {
            const int n = std::min(block, n_k - p0), stride = (n + kTile - 1) / kTile * kTile;
            pack_keys<Isa, T>(k + p0 * k_row_bytes, k_row_bytes, n, n_k - p0, hd, scratch, stride);
            for (int r0 = 0; r0 < n_q; r0 += Isa::kScoreRows) {
                const float* qr = q + size_t(r0) * hd;
                for (int j = 0; j < n; j += kTile) {
                    float* sr = s + size_t(r0) * s_stride + p0 + j;
                    const int nv = std::min(kTile, n - j);
                    with_rows<Isa::kScoreRows>(n_q - r0, [&](auto rows) {
                        scores_tile<Isa, TYPE_F32, rows()>(qr, hd, reinterpret_cast<const char*>(scratch + j),
                                                           sizeof(float) * stride, nullptr, sr, s_stride, 0, nv);
                    });
                }
            }
        }
    }
}

// out[r][0..NV*W) (+)= sum over p < n of w[r][p] * (row p)[i0..], for M query rows; rows are
// of type T (f32 for the converted scratch). `first`: out starts at zero, else the block adds
// to what earlier blocks left there. Rows [0, n_pf) at v are prefetched kAheadRows ahead, whole
// (hd dims): the first tile over the rows asks for them, the others find them (n_pf 0).
template <class Isa, uint32_t T, int M, int NV>
static inline void values_tile(const float* w, int w_stride, const char* v, size_t row_bytes, int i0, int n, int n_pf, int hd,
                               float* out, int out_stride, bool first) {
    using V = typename Isa::V;
    V acc[M][NV];
    HEARTH_UNROLL for (int r = 0; r < M; r++) HEARTH_UNROLL for (int j = 0; j < NV; j++) acc[r][j] =
        first ? Isa::zero() : Isa::load(out + size_t(r) * out_stride + j * Isa::W);
    for (int p = 0; p < n; p++) {
        if (p + kAheadRows < n_pf) prefetch_row<T>(v + (p + kAheadRows) * row_bytes, hd);
        // M weights, then one vector of the value row at a time: M * NV + M + 1 registers.
        V wb[M];
        HEARTH_UNROLL for (int r = 0; r < M; r++) wb[r] = Isa::bcast(w + size_t(r) * w_stride + p);
        HEARTH_UNROLL for (int j = 0; j < NV; j++) {
            const V vv = Isa::in_register(Isa::template load_row<T>(v + p * row_bytes, i0 + j * Isa::W));
            HEARTH_UNROLL for (int r = 0; r < M; r++) acc[r][j] = Isa::fma(wb[r], vv, acc[r][j]);
        }
    }
    HEARTH_UNROLL for (int r = 0; r < M; r++) HEARTH_UNROLL for (int j = 0; j < NV; j++)
        Isa::store(out + size_t(r) * out_stride + j * Isa::W, acc[r][j]);
}

template <class Isa, uint32_t T, int NV>
static void values_cols(const float* w, int w_stride, int n_q, const char* v, size_t row_bytes, int i0, int n, int n_pf, int hd,
                        float* out, int out_stride, bool first) {
    for (int r0 = 0; r0 < n_q; r0 += Isa::kValueRows) {
        const float* wr = w + size_t(r0) * w_stride;
        float* o = out + size_t(r0) * out_stride + i0;
        with_rows<Isa::kValueRows>(n_q - r0, [&](auto rows) {
            values_tile<Isa, T, rows(), NV>(wr, w_stride, v, row_bytes, i0, n, r0 == 0 ? n_pf : 0, hd, o, out_stride, first);
        });
    }
}

// One query row (a head of its own KV head, as in Llama-2-7B's generation): a tile of kValueDims
// has only kValueDims / W accumulators, each FMA waiting on the one before it in its chain, so
// one row takes kOneRowVectors vectors a tile (8 chains; 10 registers with its operands). Every
// output dim still sums the positions in the same order: the same bits.
constexpr int kOneRowVectors = 8;

// The n value rows at v (type T) weighted into out, every dim; rows [0, n_pf) exist, for the
// prefetches (0: none, as for the scratch).
template <class Isa, uint32_t T>
static void values_block(const float* w, int w_stride, int n_q, const char* v, size_t row_bytes, int n, int n_pf, int hd,
                         float* out, int out_stride, bool first) {
    constexpr int W = Isa::W;
    int i = 0;
    if (n_q == 1 && kOneRowVectors * W > kValueDims)
        for (; i + kOneRowVectors * W <= hd; i += kOneRowVectors * W)
            values_tile<Isa, T, 1, kOneRowVectors>(w, w_stride, v, row_bytes, i, n, i == 0 ? n_pf : 0, hd, out + i, out_stride,
                                                   first);
    for (; i + kValueDims <= hd; i += kValueDims)
        values_cols<Isa, T, kValueDims / W>(w, w_stride, n_q, v, row_bytes, i, n, i == 0 ? n_pf : 0, hd, out, out_stride, first);
    for (; i + W <= hd; i += W)
        values_cols<Isa, T, 1>(w, w_stride, n_q, v, row_bytes, i, n, i == 0 ? n_pf : 0, hd, out, out_stride, first);
    for (; i < hd; i++)  // dims past the last whole vector (head_dim not a multiple of W)
        for (int r = 0; r < n_q; r++) {
            float sum = first ? 0.0f : out[size_t(r) * out_stride + i];
            for (int p = 0; p < n; p++) sum += w[size_t(r) * w_stride + p] * cache_value<T>(v + p * row_bytes, i);
            out[size_t(r) * out_stride + i] = sum;
        }
}

// f32 values are read where they are, and so are the others when one tile holds all the query
// rows (each value is then converted once either way); else a block of positions is converted
// into scratch once for all the tiles. Both give the same bits: the conversion is the same.
template <class Isa, uint32_t T>
static void values_simd(const float* w, int w_stride, int n_q, const void* v, size_t v_row_bytes, int n_v, int hd, float* out,
                        int out_stride, float* scratch) {
    constexpr int W = Isa::W;
    const int block = block_positions(hd);
    for (int p0 = 0; p0 < n_v; p0 += block) {
        const int n = std::min(block, n_v - p0);
        const char* rows = static_cast<const char*>(v) + p0 * v_row_bytes;
        if (T == TYPE_F32 || n_q <= Isa::kValueRows) {
            values_block<Isa, T>(w + p0, w_stride, n_q, rows, v_row_bytes, n, n_v - p0, hd, out, out_stride, p0 == 0);
            continue;
        }
        for (int p = 0; p < n; p++) {
            if (p + kAheadRows < n_v - p0) prefetch_row<T>(rows + (p + kAheadRows) * v_row_bytes, hd);
            int d = 0;
            for (; d + W <= hd; d += W)
                Isa::store(scratch + size_t(p) * hd + d, Isa::template load_row<T>(rows + p * v_row_bytes, d));
            for (; d < hd; d++) scratch[size_t(p) * hd + d] = cache_value<T>(rows + p * v_row_bytes, d);
        }
        values_block<Isa, TYPE_F32>(w + p0, w_stride, n_q, reinterpret_cast<const char*>(scratch), sizeof(float) * hd, n, 0, hd,
                                    out, out_stride, p0 == 0);
    }
}

#define HEARTH_DEFINE_ATTN_SIMD(name, T, isa, Isa)                                                                              \
    void attn_scores_##name##_##isa(const float* q, int n_q, int hd, const void* keys, int k0, int n_k, float* s, int s_stride, \
                                    float* scratch) {                                                                           \
        scores_simd<Isa, T>(q, n_q, hd, keys, k0, n_k, s, s_stride, scratch);                                                   \
    }                                                                                                                           \
    void attn_values_##name##_##isa(const float* w, int w_stride, int n_q, const void* v, size_t v_row_bytes, int n_v, int hd,  \
                                    float* out, int out_stride, float* scratch) {                                               \
        values_simd<Isa, T>(w, w_stride, n_q, v, v_row_bytes, n_v, hd, out, out_stride, scratch);                               \
    }

#if defined(HEARTH_ISA_AVX2)
struct Avx2 {
    using V = __m256;
    static constexpr int W = 8;
    // Scores: 6 x 2 accumulators; values: 3 x 4 (of 16 registers), whose loads per FMA stay
    // low also for one or two query rows.
    static constexpr int kScoreRows = 6, kValueRows = 3;
    static V zero() { return _mm256_setzero_ps(); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
    static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    // A vector several FMAs use, loaded once: left alone, GCC folds the load into every FMA.
    static V in_register(V v) {
        __asm__("" : "+x"(v));
        return v;
    }
    // Lane i = the sum of v[i]'s lanes: hadd pairs, then the two 128-bit halves added.
    static V hsums(const V v[8]) {
        const __m256 s01 = _mm256_hadd_ps(v[0], v[1]), s23 = _mm256_hadd_ps(v[2], v[3]);
        const __m256 s45 = _mm256_hadd_ps(v[4], v[5]), s67 = _mm256_hadd_ps(v[6], v[7]);
        const __m256 s0123 = _mm256_hadd_ps(s01, s23), s4567 = _mm256_hadd_ps(s45, s67);
        return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
    }
    static void transpose(V v[8]) {
        __m256i u[8];
        for (int i = 0; i < 8; i++) u[i] = _mm256_castps_si256(v[i]);
        transpose8(u);
        for (int i = 0; i < 8; i++) v[i] = _mm256_castsi256_ps(u[i]);
    }
    template <uint32_t T>
    static V load_row(const char* row, int d) {
        if constexpr (T == TYPE_F32) {
            return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + d);
        } else if constexpr (T == TYPE_F16) {
            return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
        } else {
            const block_q8_0* b = reinterpret_cast<const block_q8_0*>(row) + d / QK8_0;
            return _mm256_mul_ps(load_i8(b->qs + d % QK8_0), _mm256_set1_ps(_cvtsh_ss(b->d)));
        }
    }
    static V load_i8(const int8_t* p) {
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    }
    static V set1(float x) { return _mm256_set1_ps(x); }
};
HEARTH_DEFINE_ATTN_SIMD(f32, TYPE_F32, avx2, Avx2)
HEARTH_DEFINE_ATTN_SIMD(f16, TYPE_F16, avx2, Avx2)
HEARTH_DEFINE_ATTN_SIMD(q8_0, TYPE_Q8_0, avx2, Avx2)
#endif

#if defined(HEARTH_ISA_AVX512)
struct Avx512 {
    using V = __m512;
    static constexpr int W = 16;
    // Scores: 8 x 1 accumulators, a GQA group of 8 heads in one tile; values: 8 x 2 (of 32
    // registers), so a group of up to 8 reads its f16 values in place.
    static constexpr int kScoreRows = 8, kValueRows = 8;
    static V zero() { return _mm512_setzero_ps(); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static V bcast(const float* p) { return _mm512_set1_ps(*p); }
    static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V in_register(V v) {
        __asm__("" : "+v"(v));
        return v;
    }
    // Lane i = the sum of v[i]'s lanes, in four halving steps: 256-bit halves, 128-bit
    // quarters, then pairs and single lanes within the quarters. Fed in the order below, the
    // steps leave the sums in lane order.
    static V hsums(const V in[16]) {
        V v[16];
        for (int i = 0; i < 16; i++) v[i] = in[(i % 4) * 4 + i / 4];
        V a[8], b[4], c[2];
        for (int i = 0; i < 8; i++)  // [v0 lanes 0-7 + 8-15 | v1 likewise]
            a[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                                 _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
        for (int i = 0; i < 4; i++)  // quarter j: 4 partial sums of one vector
            b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x88),
                                 _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xDD));
        for (int i = 0; i < 2; i++)
            c[i] =
                _mm512_add_ps(_mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0x88), _mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0xDD));
        return _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], 0x88), _mm512_shuffle_ps(c[0], c[1], 0xDD));
    }
    static void transpose(V v[16]) {
        V t[16], u[16];
        for (int i = 0; i < 16; i += 2) {  // 2 x 2 blocks of floats
            t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
            t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
        }
        for (int i = 0; i < 16; i += 4) {  // 4 x 4 blocks within each 128-bit quarter
            const __m512d t0 = _mm512_castps_pd(t[i]), t1 = _mm512_castps_pd(t[i + 1]);
            const __m512d t2 = _mm512_castps_pd(t[i + 2]), t3 = _mm512_castps_pd(t[i + 3]);
            u[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
            u[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
            u[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
            u[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
        }
        for (int h = 0; h < 16; h += 8)  // the quarters: even ones of two rows of 4 x 4 blocks, then odd
            for (int i = 0; i < 4; i++) {
                t[h + i] = _mm512_shuffle_f32x4(u[h + i], u[h + i + 4], 0x88);
                t[h + i + 4] = _mm512_shuffle_f32x4(u[h + i], u[h + i + 4], 0xDD);
            }
        for (int i = 0; i < 8; i++) {
            v[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
            v[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
        }
    }
    template <uint32_t T>
    static V load_row(const char* row, int d) {
        if constexpr (T == TYPE_F32) {
            return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + d);
        } else if constexpr (T == TYPE_F16) {
            return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * d)));
        } else {
            const block_q8_0* b = reinterpret_cast<const block_q8_0*>(row) + d / QK8_0;
            return _mm512_mul_ps(load_i8(b->qs + d % QK8_0), _mm512_set1_ps(_cvtsh_ss(b->d)));
        }
    }
    static V load_i8(const int8_t* p) {
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    }
    static V set1(float x) { return _mm512_set1_ps(x); }
};
HEARTH_DEFINE_ATTN_SIMD(f32, TYPE_F32, avx512, Avx512)
HEARTH_DEFINE_ATTN_SIMD(f16, TYPE_F16, avx512, Avx512)
HEARTH_DEFINE_ATTN_SIMD(q8_0, TYPE_Q8_0, avx512, Avx512)
#endif

#if defined(HEARTH_ISA_NEON)
struct Neon {
    using V = float32x4_t;
    static constexpr int W = 4;
    static constexpr int kScoreRows = 6, kValueRows = 3;  // 24 and 24 accumulators of 32 registers
    static V zero() { return vdupq_n_f32(0.0f); }
    static V load(const float* p) { return vld1q_f32(p); }
    static void store(float* p, V v) { vst1q_f32(p, v); }
    static V bcast(const float* p) { return vld1q_dup_f32(p); }
    static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
    static V in_register(V v) { return v; }  // NEON's FMA has no memory operand
    static V hsums(const V v[4]) { return vpaddq_f32(vpaddq_f32(v[0], v[1]), vpaddq_f32(v[2], v[3])); }
    static void transpose(V v[4]) {
        const float32x4_t t0 = vtrn1q_f32(v[0], v[1]), t1 = vtrn2q_f32(v[0], v[1]);
        const float32x4_t t2 = vtrn1q_f32(v[2], v[3]), t3 = vtrn2q_f32(v[2], v[3]);
        v[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
        v[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
        v[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
        v[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
    }
    template <uint32_t T>
    static V load_row(const char* row, int d) {
        if constexpr (T == TYPE_F32) {
            return vld1q_f32(reinterpret_cast<const float*>(row) + d);
        } else if constexpr (T == TYPE_F16) {
            return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(row) + d)));
        } else {
            const block_q8_0* b = reinterpret_cast<const block_q8_0*>(row) + d / QK8_0;
            return vmulq_n_f32(load_i8(b->qs + d % QK8_0), fp16_to_fp32(b->d));
        }
    }
    static V load_i8(const int8_t* p) {  // 4 codes: one 32-bit lane load, widened twice
        int32_t four;
        std::memcpy(&four, p, 4);
        const int8x8_t q = vreinterpret_s8_s32(vdup_n_s32(four));
        return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(q))));
    }
    static V set1(float x) { return vdupq_n_f32(x); }
};
HEARTH_DEFINE_ATTN_SIMD(f32, TYPE_F32, neon, Neon)
HEARTH_DEFINE_ATTN_SIMD(f16, TYPE_F16, neon, Neon)
HEARTH_DEFINE_ATTN_SIMD(q8_0, TYPE_Q8_0, neon, Neon)
#endif

#if defined(HEARTH_ISA_AVX512)
#define HEARTH_ATTN_BEST(type) \
    { attn_scores_##type##_avx512, attn_values_##type##_avx512 }
#elif defined(HEARTH_ISA_AVX2)
#define HEARTH_ATTN_BEST(type) \
    { attn_scores_##type##_avx2, attn_values_##type##_avx2 }
#elif defined(HEARTH_ISA_NEON)
#define HEARTH_ATTN_BEST(type) \
    { attn_scores_##type##_neon, attn_values_##type##_neon }
#else
#define HEARTH_ATTN_BEST(type) \
    { attn_scores_##type##_scalar, attn_values_##type##_scalar }
#endif

const AttnKernels* attn_kernels(uint32_t t) {
    static const AttnKernels f32 = HEARTH_ATTN_BEST(f32), f16 = HEARTH_ATTN_BEST(f16), q8_0 = HEARTH_ATTN_BEST(q8_0);
    switch (t) {
        case TYPE_F32: return &f32;
        case TYPE_F16: return &f16;
        case TYPE_Q8_0: return &q8_0;
        default: return nullptr;
    }
}

void kv_cache_store_key(uint32_t t, const float* x, void* keys, int pos, int hd) {
    char* k = static_cast<char*>(keys);
    const int tile = pos / kAttnKeyTile, i = pos % kAttnKeyTile;
    switch (t) {
        case TYPE_F32:
            for (int d = 0; d < hd; d++) reinterpret_cast<float*>(key_tile_dim<TYPE_F32>(k, hd, tile, d))[i] = x[d];
            break;
        case TYPE_F16:
            for (int d = 0; d < hd; d++)
                reinterpret_cast<uint16_t*>(key_tile_dim<TYPE_F16>(k, hd, tile, d))[i] = fp32_to_fp16(x[d]);
            break;
        default: kv_cache_store_row(t, x, k + size_t(pos) * type_row_bytes(t, hd), hd); break;
    }
}

void kv_cache_store_row(uint32_t t, const float* x, void* row, int n) {
    switch (t) {
        case TYPE_F32: std::memcpy(row, x, sizeof(float) * n); break;
        case TYPE_F16: f32_to_f16_row(x, static_cast<uint16_t*>(row), n); break;
        case TYPE_Q8_0: pick_kernel(KernelOp::quantize, TYPE_Q8_0, Layout::rows, 1)->quantize(x, row, n); break;
        default: break;
    }
}

}  // namespace hearth
