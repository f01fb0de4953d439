// AVX2 + FMA + F16C kernels (no AVX-512 instructions are used).
//
// Integer products use _mm256_maddubs_epi16 (unsigned x signed bytes -> saturating int16 pairs):
//  - Q8_0 x Q8_0 : sign trick, |w| x sign(a, w)  (activations are never -128)
//  - Q4_0 x Q8_0 : the unsigned nibbles, with the -8 folded into a per-block activation term
//                  c = -d8*sum(q8) computed once per call, so the inner loop is maddubs, madd, cvt, 2 fma per block/token.
//                  Q5_0 (-16) likewise; Q4_1 / Q5_1 add their offset m times d8*sum(q8); IQ4_NL's grid
//                  values take Q8_0's sign trick.
//  - Q4_K / Q5_K / Q6_K / Q3_K / Q2_K : unsigned 4/5/6/3/2-bit quants x q8, sub-block scales applied
//                  with _mm256_madd_epi16 and accumulated in int32 over the super-block; Q4_K/Q5_K/Q2_K
//                  mins and Q6_K's -32 (Q3_K's -4) offset go through the q8 block sums (bsums).
//                  IQ4_XS's grid values take the sign trick (Q8_K activations are never -128 either).
// No int16 saturation is possible: max pair sums are 2*127*127 (Q8_0, IQ4_NL, IQ4_XS),
// 2*15*128 (Q4), 2*31*128 (Q5), 2*63*128 (Q6), 2*7*128 (Q3_K), 2*3*128 (Q2_K).
#include "kernels/prefetch.h"
#include "kernels/quant.h"
#include "kernels/x86/x86.h"

#if defined(HEARTH_ISA_AVX2)

#if defined(HEARTH_ISA_AVX512)  // the Group16 tiles of several tokens (below)
#include "kernels/x86/avx512_gcc_warnings.h"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "kernels/x86/avx2_util.h"
#include "kernels/scratch.h"

namespace hearth {

namespace {

inline float f16(uint16_t h) { return _cvtsh_ss(h); }

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

// Sum of 8 int32 lanes of maddubs(x_unsigned, y_signed) as float lanes.
inline __m256 dot_us(__m256i xu, __m256i ys) {
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(xu, ys), _mm256_set1_epi16(1)));
}

// x * s clamped to [-127, 127], rounded half-to-even, as int32 (matches the scalar quantizers).
inline __m256i quant_lane(__m256 x, __m256 s) {
    __m256 v = _mm256_mul_ps(x, s);
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.f)), _mm256_set1_ps(127.f));
    return _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// 4 x 8 int32 (each in [-127,127]) -> 32 int8 in order.
inline __m256i pack32(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
    const __m256i a = _mm256_packs_epi32(i0, i1);
    const __m256i b = _mm256_packs_epi32(i2, i3);
    return _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

inline __m256 fabs8(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// Broadcast int16 lane j of a 128-bit-duplicated vector to all 16 lanes.
inline __m256i bcast_i16(__m256i v, int j) {
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16(int16_t((2 * j) | ((2 * j + 1) << 8))));
}

// Q6_K: 16-bit scale vector for 32-element chunk c: lanes 0-7 = sc[2c], lanes 8-15 = sc[2c+1].
inline __m256i q6k_chunk_scales(__m128i sc8, int c) {
    const __m128i shuf = _mm_set_epi64x(0x0101010101010101LL * (2 * c + 1), 0x0101010101010101LL * (2 * c));
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, shuf));
}

// Scratch for per-call activation tables (one per thread).
float* scratch(size_t n) {
    struct Tag;
    return thread_scratch<Tag, float>(n);
}

int8_t* scratch_bytes(size_t n) {
    struct Tag;
    return thread_scratch<Tag, int8_t, 64>(n);
}

float* scratch_part(size_t n) {
    struct Tag;
    return thread_scratch<Tag, float>(n);
}

}  // namespace

// =========================================================================================
// Activation quantizers (bytes identical to the scalar ones)
// =========================================================================================

void quantize_row_q8_0_avx2(const float* x, void* vy, int64_t n) {
    block_q8_0* y = static_cast<block_q8_0*>(vy);
    const int64_t nb = n / QK8_0;
    for (int64_t i = 0; i < nb; ++i, x += QK8_0) {
        const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
        const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
        const __m256 m = _mm256_max_ps(_mm256_max_ps(fabs8(v0), fabs8(v1)), _mm256_max_ps(fabs8(v2), fabs8(v3)));
        const float amax = hmax(m);
        const uint16_t dh = _cvtss_sh(amax / 127.f, _MM_FROUND_TO_NEAREST_INT);
        const float d = f16(dh);
        const __m256 id = _mm256_set1_ps(d != 0.f ? 1.f / d : 0.f);
        y[i].d = dh;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs),
                            pack32(quant_lane(v0, id), quant_lane(v1, id), quant_lane(v2, id), quant_lane(v3, id)));
    }
}

void quantize_row_q8_k_avx2(const float* x, void* vy, int64_t n) {
    block_q8_K* y = static_cast<block_q8_K*>(vy);
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < QK_K; j += 8) m = _mm256_max_ps(m, fabs8(_mm256_loadu_ps(x + j)));
        const float amax = hmax(m);
        if (amax == 0.f) {
            std::memset(&y[i], 0, sizeof(block_q8_K));
            continue;
        }
        const float d = q8k_scale(amax);
        y[i].d = d;
        const __m256 s = _mm256_set1_ps(1.f / d);
        const __m256i ones = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
        for (int j = 0; j < QK_K; j += 32) {
            const __m256i q = pack32(quant_lane(_mm256_loadu_ps(x + j), s), quant_lane(_mm256_loadu_ps(x + j + 8), s),
                                     quant_lane(_mm256_loadu_ps(x + j + 16), s), quant_lane(_mm256_loadu_ps(x + j + 24), s));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs + j), q);
            // group sums: lanes 0-3 of the int32 sums belong to elements j..j+15, lanes 4-7 to j+16..j+31
            const __m256i s32 = _mm256_madd_epi16(_mm256_maddubs_epi16(ones, q), ones16);
            const __m128i s4 = _mm_hadd_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
            const __m128i s2 = _mm_hadd_epi32(s4, s4);  // [g0, g1, g0, g1]
            y[i].bsums[j / 16] = int16_t(_mm_cvtsi128_si32(s2));
            y[i].bsums[j / 16 + 1] = int16_t(_mm_extract_epi32(s2, 1));
        }
    }
}

// =========================================================================================
// Tiled multi-token matmul
//
// Per call, the activation rows are repacked into token-interleaved panels: for each group of
// (up to) 8 tokens, block b of token t sits at panel + (b*nt + t)*qk, 32-byte aligned, next to
// a small per-(block, token) table of scales/sums. A tile (NR rows x NT tokens) then needs one
// pointer for all its activations and one for the table (immediate offsets), which keeps the
// inner loops free of spills, and the panel of one K-chunk stays in L1 while the rows of an
// L2-sized row chunk stream through.
// =========================================================================================

namespace {

constexpr int kMaxTokens = 8;             // tokens per tile
constexpr size_t kChunkBytes = 64 << 10;  // weight rows revisited by all token tiles while in L2
constexpr size_t kPanelBytes = 16 << 10;  // activation panel of a token tile, kept in L1

struct Ctx {
    const char* W;
    size_t wrb;
    int nb;  // blocks per row
    float* out;
    int os;
    const int8_t* aq;  // packed activation quants
    const float* tab;  // packed per-(block, token) table, E floats per entry
    int qk;            // quants per activation block
    int E;
};

// A tile: rows [r, r+NR) x tokens [t0, t0+NT) over blocks [kb, ke). When the row is split in
// several K-chunks, the float accumulators are parked in `part` (NR*NT vectors) in between.
struct Span {
    int r, t0, kb, ke;
    float* part;
};

template <typename WBlock>
inline const WBlock* wrow(const Ctx& c, int r) {
    return reinterpret_cast<const WBlock*>(c.W + size_t(r) * c.wrb);
}

// Panel of the tile's token group; block b, token t at + (b*NT + t)*qk (resp. *E).
inline const int8_t* panel_q(const Ctx& c, const Span& s) { return c.aq + size_t(s.t0) * c.nb * c.qk; }
inline const float* panel_t(const Ctx& c, const Span& s) { return c.tab + size_t(s.t0) * c.nb * c.E; }

inline __m256i load_a(const int8_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }

inline __m256 bcast_f16(const uint16_t* h) { return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(*h))); }

// Accumulators of a tile. Loaded / stored through plain copies so that GCC keeps the
// loop-carried values in registers (passing the loop's array by reference to the finishing code
// made it store every accumulator to the stack on each iteration).
template <int NR, int NT>
struct Acc {
    __m256 v[NR][NT];
};

template <int NR, int NT>
inline Acc<NR, NT> init_tile(const Span& s) {
    Acc<NR, NT> a;
    for (int i = 0; i < NR; ++i)
        for (int t = 0; t < NT; ++t) a.v[i][t] = s.kb == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(s.part + 8 * (i * NT + t));
    return a;
}

template <int NR, int NT>
inline void finish_tile(const Ctx& c, const Span& s, Acc<NR, NT> a) {
    if (s.ke < c.nb) {
        for (int i = 0; i < NR; ++i)
            for (int t = 0; t < NT; ++t) _mm256_storeu_ps(s.part + 8 * (i * NT + t), a.v[i][t]);
        return;
    }
    for (int t = 0; t < NT; ++t)
        for (int i = 0; i < NR; ++i) c.out[size_t(s.t0 + t) * c.os + s.r + i] = hsum_avx2(a.v[i][t]);
}

template <typename K, int NT>
void run_rows(const Ctx& c, int rb, int re, int t0, int kb, int ke, float* part) {
    constexpr int NR = NT == 1 ? K::kRowsFor1 : NT == 2 ? K::kRowsFor2 : 1;
    auto span = [&](int r) { return Span{r, t0, kb, ke, part ? part + size_t(r - rb) * NT * 8 : nullptr}; };
    int r = rb;
    for (; r + NR <= re; r += NR) K::template tile<NR, NT>(c, span(r));
    for (; r < re; ++r) K::template tile<1, NT>(c, span(r));
}

// Loop order: row chunks whose weights stay in L2 -> token tiles -> K-chunks whose activation
// panel stays in L1 -> row tiles.
template <typename K>
void drive(const Ctx& c, int n_tokens, int r0, int r1) {
    int chunk = int(kChunkBytes / std::max<size_t>(c.wrb, 1));
    chunk = std::max(8, chunk - chunk % 4);
    const int nt_max = std::min(kMaxTokens, n_tokens);
    const size_t a_block = size_t(c.qk) + 4 * size_t(c.E);
    int kc = c.nb;
    if (size_t(nt_max) * a_block * size_t(c.nb) > kPanelBytes) kc = std::max(1, int(kPanelBytes / (size_t(nt_max) * a_block)));
    float* part = kc < c.nb ? scratch_part(size_t(std::min(chunk, r1 - r0)) * kMaxTokens * 8) : nullptr;
    for (int rb = r0; rb < r1; rb += chunk) {
        const int re = std::min(r1, rb + chunk);
        for (int t0 = 0; t0 < n_tokens; t0 += kMaxTokens) {
            const int nt = std::min(kMaxTokens, n_tokens - t0);
            for (int kb = 0; kb < c.nb; kb += kc) {
                const int ke = std::min(c.nb, kb + kc);
                switch (nt) {
                    case 1: run_rows<K, 1>(c, rb, re, t0, kb, ke, part); break;
                    case 2: run_rows<K, 2>(c, rb, re, t0, kb, ke, part); break;
                    case 3: run_rows<K, 3>(c, rb, re, t0, kb, ke, part); break;
                    case 4: run_rows<K, 4>(c, rb, re, t0, kb, ke, part); break;
                    case 5: run_rows<K, 5>(c, rb, re, t0, kb, ke, part); break;
                    case 6: run_rows<K, 6>(c, rb, re, t0, kb, ke, part); break;
                    case 7: run_rows<K, 7>(c, rb, re, t0, kb, ke, part); break;
                    default: run_rows<K, 8>(c, rb, re, t0, kb, ke, part); break;
                }
            }
        }
    }
}

// Repack n_tokens activation rows (blocks of type ABlock with `qk` quants in .qs) into the
// token-interleaved panels; entry(block, float* e) fills the E floats of the table entry.
template <typename ABlock, typename EntryFn>
void pack_panels(Ctx& c, const void* A, size_t arb, int n_tokens, int qk, int E, EntryFn entry) {
    int8_t* q = scratch_bytes(size_t(n_tokens) * c.nb * qk);
    float* tab = scratch(size_t(n_tokens) * c.nb * E);
    for (int t0 = 0; t0 < n_tokens; t0 += kMaxTokens) {
        const int nt = std::min(kMaxTokens, n_tokens - t0);
        int8_t* qg = q + size_t(t0) * c.nb * qk;
        float* tg = tab + size_t(t0) * c.nb * E;
        for (int t = 0; t < nt; ++t) {
            const ABlock* a = reinterpret_cast<const ABlock*>(static_cast<const char*>(A) + size_t(t0 + t) * arb);
            for (int b = 0; b < c.nb; ++b) {
                const size_t e = size_t(b) * nt + t;
                std::memcpy(qg + e * qk, a[b].qs, size_t(qk));
                entry(a[b], tg + e * E);
            }
        }
    }
    c.aq = q;
    c.tab = tab;
    c.qk = qk;
    c.E = E;
}

// ---- The 32-element block types x Q8_0: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL. ----
// Each weight block is decoded once per tile to 32 bytes of quants, then one maddubs per token:
//  - signed values (Q8_0; IQ4_NL's grid values, -127..113): the sign trick, |w| x sign(a, w).
//    Table entry: d8.
//  - unsigned quants with a fixed offset (Q4_0: q - 8, Q5_0: q - 16): the offset folded into the
//    table entry (d8, -offset/8 * d8 * sum(q8)), which each of the 8 lanes adds.
//  - unsigned quants with the block's own offset m (Q4_1, Q5_1: d*q + m): m times the table's
//    (d8, d8 * sum(q8) / 8) in each lane.
enum class Block32Kind { signed_values, fixed_offset, block_offset };

template <typename Block>
struct Block32;
template <>
struct Block32<block_q8_0> {
    static constexpr Block32Kind kKind = Block32Kind::signed_values;
    static __m256i quants(const block_q8_0& b) { return loadu(b.qs); }
};
template <>
struct Block32<block_iq4_nl> {
    static constexpr Block32Kind kKind = Block32Kind::signed_values;
    static __m256i quants(const block_iq4_nl& b) { return iq4_values(b.qs); }
};
template <>
struct Block32<block_q4_0> {
    static constexpr Block32Kind kKind = Block32Kind::fixed_offset;
    static constexpr int kOffset = 8;
    static __m256i quants(const block_q4_0& b) { return unpack_nibbles16(b.qs); }
};
template <>
struct Block32<block_q5_0> {
    static constexpr Block32Kind kKind = Block32Kind::fixed_offset;
    static constexpr int kOffset = 16;
    static __m256i quants(const block_q5_0& b) { return _mm256_or_si256(unpack_nibbles16(b.qs), q5_bit4(b.qh)); }
};
template <>
struct Block32<block_q4_1> {
    static constexpr Block32Kind kKind = Block32Kind::block_offset;
    static __m256i quants(const block_q4_1& b) { return unpack_nibbles16(b.qs); }
};
template <>
struct Block32<block_q5_1> {
    static constexpr Block32Kind kKind = Block32Kind::block_offset;
    static __m256i quants(const block_q5_1& b) { return _mm256_or_si256(unpack_nibbles16(b.qs), q5_bit4(b.qh)); }
};

template <typename Block>
struct KBlock32 {
    using B = Block32<Block>;
    static constexpr Block32Kind kKind = B::kKind;
    static constexpr int E = kKind == Block32Kind::signed_values ? 1 : 2;
    static constexpr int kRowsFor1 = 4, kRowsFor2 = 2;
    template <int NR, int NT>
    static void tile(const Ctx& c, const Span& s) {
        const Block* w[NR];
        for (int i = 0; i < NR; ++i) w[i] = wrow<Block>(c, s.r + i);
        const size_t pf = prefetch_distance(NR * c.wrb);
        const int8_t* aq = panel_q(c, s);
        const float* tb = panel_t(c, s);
        Acc<NR, NT> A0 = init_tile<NR, NT>(s);
        __m256 acc[NR][NT];
        for (int i = 0; i < NR; ++i)
            for (int t = 0; t < NT; ++t) acc[i][t] = A0.v[i][t];
        const __m256i ones16 = _mm256_set1_epi16(1);
        for (int b = s.kb; b < s.ke; ++b) {
            __m256i q[NR], qabs[NR];
            __m256 dw[NR], mw[NR];
            for (int i = 0; i < NR; ++i) {
                prefetch_ahead<sizeof(Block)>(&w[i][b], pf);
                q[i] = B::quants(w[i][b]);
                if constexpr (kKind == Block32Kind::signed_values) qabs[i] = _mm256_sign_epi8(q[i], q[i]);
                dw[i] = bcast_f16(&w[i][b].d);
                if constexpr (kKind == Block32Kind::block_offset) mw[i] = bcast_f16(&w[i][b].m);
            }
            const int8_t* ab = aq + size_t(b) * NT * QK8_0;
            const float* tbb = tb + size_t(b) * NT * E;
            for (int t = 0; t < NT; ++t) {
                const __m256i qa = load_a(ab + QK8_0 * t);
                const __m256 d8 = _mm256_broadcast_ss(tbb + E * t);
                if constexpr (kKind == Block32Kind::signed_values) {
                    for (int i = 0; i < NR; ++i) {
                        const __m256 x = dot_us(qabs[i], _mm256_sign_epi8(qa, q[i]));
                        acc[i][t] = _mm256_fmadd_ps(_mm256_mul_ps(dw[i], d8), x, acc[i][t]);
                    }
                } else {
                    const __m256 c8 = _mm256_broadcast_ss(tbb + E * t + 1);
                    for (int i = 0; i < NR; ++i) {
                        const __m256 x = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(q[i], qa), ones16));
                        if constexpr (kKind == Block32Kind::fixed_offset)
                            acc[i][t] = _mm256_fmadd_ps(dw[i], _mm256_fmadd_ps(d8, x, c8), acc[i][t]);
                        else
                            acc[i][t] = _mm256_fmadd_ps(mw[i], c8, _mm256_fmadd_ps(dw[i], _mm256_mul_ps(d8, x), acc[i][t]));
                    }
                }
            }
        }
        Acc<NR, NT> A1;
        for (int i = 0; i < NR; ++i)
            for (int t = 0; t < NT; ++t) A1.v[i][t] = acc[i][t];
        finish_tile<NR, NT>(c, s, A1);
    }
    static void pack(Ctx& c, const void* A, size_t arb, int n_tokens) {
        pack_panels<block_q8_0>(c, A, arb, n_tokens, QK8_0, E, [](const block_q8_0& a, float* e) {
            const float d8 = f16(a.d);
            e[0] = d8;
            if constexpr (kKind == Block32Kind::fixed_offset) e[1] = -float(B::kOffset / 8) * d8 * float(sum_i8x32(a.qs));
            if constexpr (kKind == Block32Kind::block_offset) e[1] = d8 * float(sum_i8x32(a.qs)) * 0.125f;
        });
    }
};
using KQ8_0 = KBlock32<block_q8_0>;
using KQ4_0 = KBlock32<block_q4_0>;

// ---- Q4_K and Q5_K x Q8_K. Table entry: [d8, pad x7, d8*(bsums[2j]+bsums[2j+1]) for j=0..7]. ----
// Q5_K is Q4_K with bit 4 of each quant in qh (bit 2k of qh[l] for the low nibble of qs[32k + l],
// bit 2k + 1 for its high nibble): quants 0..31, pair sums at most 2*31*128.
template <typename WBlock>
struct KQ4_K_or_Q5_K {
    static constexpr bool kFifthBit = std::is_same<WBlock, block_q5_K>::value;
    static constexpr int kRowsFor1 = 1, kRowsFor2 = 1;
    template <int NR, int NT>
    static void tile(const Ctx& c, const Span& s) {
        static_assert(NR == 1, "one row per tile");
        const WBlock* w = wrow<WBlock>(c, s.r);
        const size_t pf = prefetch_distance(c.wrb);
        const int8_t* aq = panel_q(c, s);
        const float* tb = panel_t(c, s);
        Acc<1, NT> A0 = init_tile<1, NT>(s);
        __m256 acc[1][NT];
        for (int t = 0; t < NT; ++t) acc[0][t] = A0.v[0][t];
        const __m256i m4 = _mm256_set1_epi8(0x0F);
        for (int b = s.kb; b < s.ke; ++b) {
            prefetch_ahead<sizeof(WBlock)>(&w[b], pf);
            uint32_t u[4];
            q4k_unpack_scales(w[b].scales, u);
            const __m256i sc =
                _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(u))));
            const __m256 minsf =
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(u + 2)))),
                              _mm256_set1_ps(-f16(w[b].dmin)));
            const __m256 d4 = bcast_f16(&w[b].d);
            const int8_t* ab = aq + size_t(b) * NT * QK_K;
            __m256i sumi[NT];
            for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
            __m256i qh = _mm256_setzero_si256();
            if constexpr (kFifthBit) qh = loadu(w[b].qh);
            for (int k = 0; k < 4; ++k) {
                const __m256i bits = loadu(w[b].qs + 32 * k);
                __m256i lo = _mm256_and_si256(bits, m4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
                if constexpr (kFifthBit) {
                    lo = _mm256_or_si256(lo, q5_k_bit4(qh, 2 * k));
                    hi = _mm256_or_si256(hi, q5_k_bit4(qh, 2 * k + 1));
                }
                const __m256i sl = bcast_i16(sc, 2 * k), sh = bcast_i16(sc, 2 * k + 1);
                for (int t = 0; t < NT; ++t) {
                    const int8_t* q8 = ab + QK_K * t + 64 * k;
                    const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load_a(q8)), sl);
                    const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load_a(q8 + 32)), sh);
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(pl, ph));
                }
            }
            const float* tbb = tb + size_t(b) * NT * 16;
            for (int t = 0; t < NT; ++t) {
                const float* e = tbb + 16 * t;
                acc[0][t] = _mm256_fmadd_ps(_mm256_mul_ps(d4, _mm256_broadcast_ss(e)), _mm256_cvtepi32_ps(sumi[t]), acc[0][t]);
                acc[0][t] = _mm256_fmadd_ps(minsf, _mm256_loadu_ps(e + 8), acc[0][t]);
            }
        }
        Acc<1, NT> A1;
        for (int t = 0; t < NT; ++t) A1.v[0][t] = acc[0][t];
        finish_tile<1, NT>(c, s, A1);
    }
    static void pack(Ctx& c, const void* A, size_t arb, int n_tokens) {
        pack_panels<block_q8_K>(c, A, arb, n_tokens, QK_K, 16, [](const block_q8_K& a, float* e) {
            const __m256i bs = loadu(a.bsums);
            const __m128i bs8 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
            e[0] = a.d;
            for (int j = 1; j < 8; ++j) e[j] = 0.f;
            _mm256_storeu_ps(e + 8, _mm256_mul_ps(_mm256_set1_ps(a.d), _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(bs8))));
        });
    }
};
using KQ4_K = KQ4_K_or_Q5_K<block_q4_K>;
using KQ5_K = KQ4_K_or_Q5_K<block_q5_K>;

// ---- Q6_K, Q3_K, IQ4_XS and Q2_K x Q8_K: 16 groups of 16 with a scale each (IQ4_XS: sub-blocks
// of 32, two groups of one scale). Table entry: [d8, pad x7, bsums as int16]. The quants:
//  - unsigned with a fixed offset (Q6_K 0..63 - 32, Q3_K 0..7 - 4), which goes through the bsums
//    times the group's scale;
//  - signed (IQ4_XS's grid values), by Q8_0's sign trick (Q8_K activations are never -128 either:
//    the quantizer clamps to +-127);
//  - unsigned with a min per group (Q2_K 0..3: d*sc*q - dmin*m), whose term is dmin times the
//    mins' dot with the bsums, as Q4_K's. ----
enum class Group16Kind { fixed_offset, signed_values, mins };

template <typename Block>
struct Group16;
template <>
struct Group16<block_q6_K> {
    static constexpr Group16Kind kKind = Group16Kind::fixed_offset;
    static constexpr int kOffsetShift = 5;
    static __m128i scales(const block_q6_K& b) { return group16_scales(b); }
    // f(k, quants of 32-element chunk k), in the order two chunks share their loads.
    template <typename F>
    static void chunks(const block_q6_K& b, F f) {
        const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = b.ql + 64 * h;
            const __m256i qh = loadu(b.qh + 32 * h);
            for (int p = 0; p < 2; ++p) {  // p=0: chunks 0,2 (ql[0..31]); p=1: chunks 1,3 (ql[32..63])
                const __m256i l = loadu(ql + 32 * p);
                const __m256i hA = p == 0 ? _mm256_slli_epi16(qh, 4) : _mm256_slli_epi16(qh, 2);
                const __m256i hB = p == 0 ? qh : _mm256_srli_epi16(qh, 2);
                f(4 * h + p, _mm256_or_si256(_mm256_and_si256(l, m4), _mm256_and_si256(hA, m30)));
                f(4 * h + p + 2, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l, 4), m4), _mm256_and_si256(hB, m30)));
            }
        }
    }
};
template <>
struct Group16<block_q3_K> {
    static constexpr Group16Kind kKind = Group16Kind::fixed_offset;
    static constexpr int kOffsetShift = 2;
    static __m128i scales(const block_q3_K& b) { return group16_scales(b); }
    template <typename F>
    static void chunks(const block_q3_K& b, F f) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) f(k, q3k_chunk(b, k));
    }
};

template <>
struct Group16<block_iq4_xs> {
    static constexpr Group16Kind kKind = Group16Kind::signed_values;
    static __m128i scales(const block_iq4_xs& b) { return group16_scales(b); }
    template <typename F>
    static void chunks(const block_iq4_xs& b, F f) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) f(k, iq4_values(b.qs + 16 * k));
    }
};

template <>
struct Group16<block_q2_K> {
    static constexpr Group16Kind kKind = Group16Kind::mins;
    static __m128i scales(const block_q2_K& b) { return group16_scales(b); }
    static __m256i mins(const block_q2_K& b) { return q2k_mins_epi16(b); }
    template <typename F>
    static void chunks(const block_q2_K& b, F f) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) f(k, two_bit_chunk(b.qs, k));
    }
};

#if defined(HEARTH_ISA_AVX512)
// Two tokens' ymm lanes in one zmm (the first token's in the low half): AVX-512 builds run a
// Group16 tile of several tokens two tokens to an instruction, each half the same operations on
// the same values as the ymm code, so the same bits (the batch of generated tokens runs these
// rows with each token's bits, kernels/table.h).
// (zext, not cast: GCC 12 warns of the undefined upper half a cast leaves, kernels/x86/avx512_gcc_warnings.h)
inline __m512i join256(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1); }
inline __m512 join256(__m256 lo, __m256 hi) {
    return _mm512_castsi512_ps(join256(_mm256_castps_si256(lo), _mm256_castps_si256(hi)));
}
inline __m256 low256(__m512 v) { return _mm512_castps512_ps256(v); }
inline __m256 high256(__m512 v) { return _mm256_castsi256_ps(_mm512_extracti64x4_epi64(_mm512_castps_si512(v), 1)); }
#endif

template <typename Block>
struct KGroup16 {
    using G = Group16<Block>;
    static constexpr int kRowsFor1 = 1, kRowsFor2 = 1;
#if defined(HEARTH_ISA_AVX512)
    // tile<1, NT> for NT >= 2 on zmm: tokens in pairs (an odd count's last token twice, its copy
    // dropped).
    template <int NT>
    static void tile_pairs(const Ctx& c, const Span& s) {
        constexpr int NP = (NT + 1) / 2;
        auto tok = [](int p, int h) { return std::min(2 * p + h, NT - 1); };
        const Block* w = wrow<Block>(c, s.r);
        const size_t pf = prefetch_distance(c.wrb);
        const int8_t* aq = panel_q(c, s);
        const float* tb = panel_t(c, s);
        Acc<1, NT> A0 = init_tile<1, NT>(s);
        __m512 acc[NP];
        for (int p = 0; p < NP; ++p) acc[p] = join256(A0.v[0][tok(p, 0)], A0.v[0][tok(p, 1)]);
        for (int b = s.kb; b < s.ke; ++b) {
            prefetch_ahead<sizeof(Block)>(&w[b], pf);
            const __m128i sc8 = G::scales(w[b]);
            const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
            const int8_t* ab = aq + size_t(b) * NT * QK_K;
            const float* tbb = tb + size_t(b) * NT * 16;
            __m512i sumi[NP];
            for (int p = 0; p < NP; ++p) {
                if constexpr (G::kKind == Group16Kind::fixed_offset) {
                    const __m512i bs = join256(loadu(tbb + 16 * tok(p, 0) + 8), loadu(tbb + 16 * tok(p, 1) + 8));
                    sumi[p] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                               _mm512_slli_epi32(_mm512_madd_epi16(join256(sc16, sc16), bs), G::kOffsetShift));
                } else {
                    sumi[p] = _mm512_setzero_si512();
                }
            }
            G::chunks(w[b], [&](int k, __m256i q) {
                const __m256i sk = q6k_chunk_scales(sc8, k);
                const __m512i skz = join256(sk, sk);
                for (int p = 0; p < NP; ++p) {
                    __m512i qa = join256(load_a(ab + QK_K * tok(p, 0) + 32 * k), load_a(ab + QK_K * tok(p, 1) + 32 * k));
                    __m512i qw;
                    if constexpr (G::kKind == Group16Kind::signed_values) {
                        // sign(a, q) as the ymm code takes it: a negated where q < 0 (where q is 0,
                        // |q| is 0 and so is the product either way)
                        const __m512i qz = join256(q, q);
                        qa = _mm512_mask_sub_epi8(qa, _mm512_movepi8_mask(qz), _mm512_setzero_si512(), qa);
                        qw = _mm512_abs_epi8(qz);
                    } else {
                        qw = join256(q, q);
                    }
                    sumi[p] = _mm512_dpwssd_epi32(sumi[p], _mm512_maddubs_epi16(qw, qa), skz);
                }
            });
            const __m256 dw8 = bcast_f16(&w[b].d);
            const __m512 dw = join256(dw8, dw8);
            for (int p = 0; p < NP; ++p) {
                const __m512 da = join256(_mm256_broadcast_ss(tbb + 16 * tok(p, 0)), _mm256_broadcast_ss(tbb + 16 * tok(p, 1)));
                acc[p] = _mm512_fmadd_ps(_mm512_mul_ps(dw, da), _mm512_cvtepi32_ps(sumi[p]), acc[p]);
            }
            if constexpr (G::kKind == Group16Kind::mins) {
                const __m256i m16 = G::mins(w[b]);
                const __m256 neg_dmin = _mm256_sub_ps(_mm256_setzero_ps(), bcast_f16(&w[b].dmin));
                const __m512 nd = join256(neg_dmin, neg_dmin);
                for (int p = 0; p < NP; ++p) {
                    const __m512i bs = join256(loadu(tbb + 16 * tok(p, 0) + 8), loadu(tbb + 16 * tok(p, 1) + 8));
                    const __m512 da =
                        join256(_mm256_broadcast_ss(tbb + 16 * tok(p, 0)), _mm256_broadcast_ss(tbb + 16 * tok(p, 1)));
                    acc[p] = _mm512_fmadd_ps(_mm512_mul_ps(nd, da), _mm512_cvtepi32_ps(_mm512_madd_epi16(join256(m16, m16), bs)),
                                             acc[p]);
                }
            }
        }
        Acc<1, NT> A1;
        for (int p = 0; p < NP; ++p) {
            A1.v[0][tok(p, 0)] = low256(acc[p]);
            if (2 * p + 1 < NT) A1.v[0][2 * p + 1] = high256(acc[p]);
        }
        finish_tile<1, NT>(c, s, A1);
    }
#endif
    template <int NR, int NT>
    static void tile(const Ctx& c, const Span& s) {
        static_assert(NR == 1, "one row per tile");
#if defined(HEARTH_ISA_AVX512)
        if constexpr (NT >= 2) return tile_pairs<NT>(c, s);
#endif
        const Block* w = wrow<Block>(c, s.r);
        const size_t pf = prefetch_distance(c.wrb);
        const int8_t* aq = panel_q(c, s);
        const float* tb = panel_t(c, s);
        Acc<1, NT> A0 = init_tile<1, NT>(s);
        __m256 acc[1][NT];
        for (int t = 0; t < NT; ++t) acc[0][t] = A0.v[0][t];
        for (int b = s.kb; b < s.ke; ++b) {
            prefetch_ahead<sizeof(Block)>(&w[b], pf);
            const __m128i sc8 = G::scales(w[b]);
            const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
            const int8_t* ab = aq + size_t(b) * NT * QK_K;
            const float* tbb = tb + size_t(b) * NT * 16;
            __m256i sumi[NT];
            for (int t = 0; t < NT; ++t) {
                if constexpr (G::kKind == Group16Kind::fixed_offset)
                    sumi[t] =
                        _mm256_sub_epi32(_mm256_setzero_si256(),
                                         _mm256_slli_epi32(_mm256_madd_epi16(sc16, loadu(tbb + 16 * t + 8)), G::kOffsetShift));
                else
                    sumi[t] = _mm256_setzero_si256();
            }
            G::chunks(w[b], [&](int k, __m256i q) {
                const __m256i sk = q6k_chunk_scales(sc8, k);
                if constexpr (G::kKind == Group16Kind::signed_values) {
                    const __m256i qabs = _mm256_sign_epi8(q, q);
                    for (int t = 0; t < NT; ++t) {
                        const __m256i qa = _mm256_sign_epi8(load_a(ab + QK_K * t + 32 * k), q);
                        sumi[t] = madd16_add(sumi[t], _mm256_maddubs_epi16(qabs, qa), sk);
                    }
                } else {
                    for (int t = 0; t < NT; ++t) {
                        const __m256i qa = load_a(ab + QK_K * t + 32 * k);
                        sumi[t] = madd16_add(sumi[t], _mm256_maddubs_epi16(q, qa), sk);
                    }
                }
            });
            const __m256 dw = bcast_f16(&w[b].d);
            for (int t = 0; t < NT; ++t)
                acc[0][t] =
                    _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_broadcast_ss(tbb + 16 * t)), _mm256_cvtepi32_ps(sumi[t]), acc[0][t]);
            if constexpr (G::kKind == Group16Kind::mins) {
                const __m256i m16 = G::mins(w[b]);
                const __m256 neg_dmin = _mm256_sub_ps(_mm256_setzero_ps(), bcast_f16(&w[b].dmin));
                for (int t = 0; t < NT; ++t) {
                    const __m256i summ = _mm256_madd_epi16(m16, loadu(tbb + 16 * t + 8));
                    acc[0][t] = _mm256_fmadd_ps(_mm256_mul_ps(neg_dmin, _mm256_broadcast_ss(tbb + 16 * t)),
                                                _mm256_cvtepi32_ps(summ), acc[0][t]);
                }
            }
        }
        Acc<1, NT> A1;
        for (int t = 0; t < NT; ++t) A1.v[0][t] = acc[0][t];
        finish_tile<1, NT>(c, s, A1);
    }
    static void pack(Ctx& c, const void* A, size_t arb, int n_tokens) {
        pack_panels<block_q8_K>(c, A, arb, n_tokens, QK_K, 16, [](const block_q8_K& a, float* e) {
            e[0] = a.d;
            for (int j = 1; j < 8; ++j) e[j] = 0.f;
            std::memcpy(e + 8, a.bsums, sizeof(a.bsums));
        });
    }
};
using KQ6_K = KGroup16<block_q6_K>;
using KQ3_K = KGroup16<block_q3_K>;
using KIQ4_XS = KGroup16<block_iq4_xs>;
using KQ2_K = KGroup16<block_q2_K>;

template <typename K>
void matmul(const void* W, size_t wrb, const void* A, size_t arb, int n_cols, int qk, int n_tokens, float* out, int os, int r0,
            int r1) {
    if (n_tokens <= 0 || r1 <= r0) return;
    Ctx c{};
    c.W = static_cast<const char*>(W);
    c.wrb = wrb;
    c.nb = n_cols / qk;
    c.out = out;
    c.os = os;
    K::pack(c, A, arb, n_tokens);
    drive<K>(c, n_tokens, r0, r1);
}

}  // namespace

void matmul_q8_0_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    matmul<KQ8_0>(W, w_row_bytes, A, a_row_bytes, n_cols, QK8_0, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_0_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    matmul<KQ4_0>(W, w_row_bytes, A, a_row_bytes, n_cols, QK4_0, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_1_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    matmul<KBlock32<block_q4_1>>(W, w_row_bytes, A, a_row_bytes, n_cols, 32, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_0_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    matmul<KBlock32<block_q5_0>>(W, w_row_bytes, A, a_row_bytes, n_cols, 32, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_1_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    matmul<KBlock32<block_q5_1>>(W, w_row_bytes, A, a_row_bytes, n_cols, 32, n_tokens, out, out_stride, r0, r1);
}

void matmul_iq4_nl_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul<KBlock32<block_iq4_nl>>(W, w_row_bytes, A, a_row_bytes, n_cols, 32, n_tokens, out, out_stride, r0, r1);
}

void matmul_q2_k_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    matmul<KQ2_K>(W, w_row_bytes, A, a_row_bytes, n_cols, QK_K, n_tokens, out, out_stride, r0, r1);
}

void matmul_q3_k_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    matmul<KQ3_K>(W, w_row_bytes, A, a_row_bytes, n_cols, QK_K, n_tokens, out, out_stride, r0, r1);
}

void matmul_iq4_xs_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                             float* out, int out_stride, int r0, int r1) {
    matmul<KIQ4_XS>(W, w_row_bytes, A, a_row_bytes, n_cols, QK_K, n_tokens, out, out_stride, r0, r1);
}

void matmul_q4_k_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    matmul<KQ4_K>(W, w_row_bytes, A, a_row_bytes, n_cols, QK_K, n_tokens, out, out_stride, r0, r1);
}

void matmul_q5_k_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    matmul<KQ5_K>(W, w_row_bytes, A, a_row_bytes, n_cols, QK_K, n_tokens, out, out_stride, r0, r1);
}

void matmul_q6_k_rows_avx2(const void* W, size_t w_row_bytes, const void* A, size_t a_row_bytes, int n_cols, int n_tokens,
                           float* out, int out_stride, int r0, int r1) {
    matmul<KQ6_K>(W, w_row_bytes, A, a_row_bytes, n_cols, QK_K, n_tokens, out, out_stride, r0, r1);
}

}  // namespace hearth

#endif  // HEARTH_ISA_AVX2
