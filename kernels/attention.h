// Attention over a KV cache whose rows are f32, f16 or q8_0, for a set of query rows that
// read the same kv head: the query heads of a GQA group, for one token or several tokens of a
// prompt chunk. Every cached row is read (and converted to fp32) once per call, however many
// query rows use it, so a group of 8 heads costs one pass over its keys and values, not 8.
//
// A cached row: row p of the kv head starts at (const char*)cache + p * row_bytes and holds
// head_dim values of the cache type; q8_0 rows are head_dim / 32 blocks (head_dim a multiple of
// 32). Each kernel has a scalar twin (_scalar) that computes the same sums in the plain order;
// tests/kernels/test_attention.cpp holds the SIMD versions to them, and them to a double formula.
//
// How the SIMD versions work: keys are converted to fp32 a block of positions at a time and
// transposed into scratch ([dim][position]), so that a tile of query rows x 16 positions is a
// sum of outer products — no horizontal sums — with the block in L1 for all the query rows.
// Values are converted a block at a time too (f32 values are read in place), and a tile of
// query rows x 16 dims accumulates weight * value row. For q8_0 the keys are dequantized,
// not the query quantized: the scores keep the query's fp32 precision (the only rounding is the
// cache's), and the conversion is shared by all the query rows of the call.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/dot_float.h"
#include "kernels/quant_types.h"

namespace hearth {

// scores: s[r * s_stride + p] = dot(q + r * head_dim, key row p), for r < n_q, p < n_k.
using attn_scores_fn = void (*)(const float* q, int n_q, int head_dim, const void* k, size_t k_row_bytes, int n_k, float* s,
                                int s_stride, float* scratch);
// values: out[r * out_stride + i] = sum over p < n_v of w[r * w_stride + p] * (value row p)[i],
// for r < n_q, i < head_dim; out is overwritten.
using attn_values_fn = void (*)(const float* w, int w_stride, int n_q, const void* v, size_t v_row_bytes, int n_v, int head_dim,
                                float* out, int out_stride, float* scratch);

// Floats of scratch one call needs (per thread); the scalar twins need none.
size_t attn_scratch_floats(int head_dim);

// A call with fewer query rows than this reads the keys in place, summing each score in a
// different order (SIMD versions). A row's results depend on nothing else: not on the other
// rows of its call nor on the blocks; so a caller whose calls are all on one side of this
// count for a given input computes the same bits however it splits the rows (threads).
constexpr int kAttnFewRows = 4;

#define HEARTH_DECLARE_ATTN(type, isa)                                                                                           \
    void attn_scores_##type##_##isa(const float* q, int n_q, int head_dim, const void* k, size_t k_row_bytes, int n_k, float* s, \
                                    int s_stride, float* scratch);                                                               \
    void attn_values_##type##_##isa(const float* w, int w_stride, int n_q, const void* v, size_t v_row_bytes, int n_v,           \
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

// Writes n fp32 values (one position's keys or values, all kv heads) as a cache row of type t.
void kv_cache_store_row(uint32_t t, const float* x, void* row, int n);

}  // namespace hearth
