// Attention over a KV cache whose rows are f32, f16 or q8_0, for a set of query rows that
// read the same kv head: the query heads of a GQA group, for one token or several tokens of a
// prompt chunk. Every cached row is read (and converted to fp32) once per call, however many
// query rows use it, so a group of 8 heads costs one pass over its keys and values, not 8.
//
// A cached row: row p of the kv head starts at (const char*)cache + p * row_bytes and holds
// head_dim values of the cache type; q8_0 rows are head_dim / 32 blocks (head_dim a multiple of
// 32). Values are always rows. f32 and f16 keys are tiles instead (kv_keys_tiled): a kv head's
// keys are tiles of kAttnKeyTile positions, each [dim][position in the tile], so that 16
// positions of one dim are one vector. Each kernel has a scalar twin (_scalar) that computes
// the same sums in the plain order; tests/kernels/test_attention.cpp holds the SIMD versions to
// them, and them to a double formula.
//
// How the SIMD versions work: a tile of query rows x 16 positions of scores is a sum of outer
// products (query dim x the tile's keys of that dim) — no horizontal sums. Tiled keys are read
// in place; q8_0 keys are converted to fp32 a block of positions at a time and transposed into
// scratch (for fewer than kAttnFewRows rows, dot products read the rows in place). Until keys
// were tiled, f16 keys went that way too, and the transposition was half the time of the
// scores. Values are converted a block at a time (read in place when one tile holds all the
// query rows, and f32 always), and a tile of query rows x 32 dims accumulates weight * value
// row. For q8_0 the keys are dequantized, not the query quantized: the scores keep the query's
// fp32 precision (the only rounding is the cache's), and the conversion is shared by all the
// query rows of the call.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/dot_float.h"
#include "kernels/quant_types.h"

namespace hearth {

// Positions per key tile, and whether a cache type's keys are tiled (else rows, as values).
constexpr int kAttnKeyTile = 16;
constexpr bool kv_keys_tiled(uint32_t t) { return t == TYPE_F32 || t == TYPE_F16; }

// scores: s[r * s_stride + p] = dot(q + r * head_dim, key k0 + p), for r < n_q, p < n_k; keys:
// the kv head's keys from position 0 (tiles or rows, by type).
using attn_scores_fn = void (*)(const float* q, int n_q, int head_dim, const void* keys, int k0, int n_k, float* s, int s_stride,
                                float* scratch);
// values: out[r * out_stride + i] = sum over p < n_v of w[r * w_stride + p] * (value row p)[i],
// for r < n_q, i < head_dim; out is overwritten.
using attn_values_fn = void (*)(const float* w, int w_stride, int n_q, const void* v, size_t v_row_bytes, int n_v, int head_dim,
                                float* out, int out_stride, float* scratch);

// Floats of scratch one call needs (per thread); the scalar twins need none.
size_t attn_scratch_floats(int head_dim);

// With rows of keys (q8_0), a call with fewer query rows than this reads the keys in place,
// summing each score in a different order (SIMD versions); tiled keys have one order for any
// count. A row's results depend on nothing else: not on the other rows of its call nor on the
// blocks; so a caller whose calls are all on one side of this count for a given input
// computes the same bits however it splits the rows (threads).
constexpr int kAttnFewRows = 4;

#define HEARTH_DECLARE_ATTN(type, isa)                                                                                  \
    void attn_scores_##type##_##isa(const float* q, int n_q, int head_dim, const void* keys, int k0, int n_k, float* s, \
                                    int s_stride, float* scratch);                                                      \
    void attn_values_##type##_##isa(const float* w, int w_stride, int n_q, const void* v, size_t v_row_bytes, int n_v,  \
                                    int head_dim, float* out, int out_stride, float* scratch);
HEARTH_DECLARE_ATTN(f32, scalar)
HEARTH_DECLARE_ATTN(f16, scalar)
HEARTH_DECLARE_ATTN(q8_0, scalar)
#if defined(HEARTH_ISA_AVX2)
HEARTH_DECLARE_ATTN(f32, avx2)
HEARTH_DECLARE_ATTN(f16, avx2)
HEARTH_DECLARE_ATTN(q8_0, avx2)
#endif
#if defined(HEARTH_ISA_AVX512)
HEARTH_DECLARE_ATTN(f32, avx512)
HEARTH_DECLARE_ATTN(f16, avx512)
HEARTH_DECLARE_ATTN(q8_0, avx512)
#endif
#if defined(HEARTH_ISA_NEON)
HEARTH_DECLARE_ATTN(f32, neon)
HEARTH_DECLARE_ATTN(f16, neon)
HEARTH_DECLARE_ATTN(q8_0, neon)
#endif
#undef HEARTH_DECLARE_ATTN

// The types a KV cache may hold.
constexpr bool kv_cache_type_ok(uint32_t t) { return t == TYPE_F32 || t == TYPE_F16 || t == TYPE_Q8_0; }

struct AttnKernels {
    attn_scores_fn scores;
    attn_values_fn values;
};
// The fastest kernels built in for cache type t; nullptr unless kv_cache_type_ok(t).
const AttnKernels* attn_kernels(uint32_t t);

// Writes n fp32 values (one position's values, all kv heads) as a cache row of type t.
void kv_cache_store_row(uint32_t t, const float* x, void* row, int n);
// Writes one kv head's key at position pos (head_dim fp32 values) into the head's keys, of
// type t, from position 0: into its tile, or as a row. A head's keys hold whole tiles.
void kv_cache_store_key(uint32_t t, const float* x, void* keys, int pos, int head_dim);

}  // namespace hearth
