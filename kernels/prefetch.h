// Software prefetch of weight rows for the matrix kernels.
//
// Generation reads every weight matrix once, straight from DRAM, at a few bytes per
// instruction. The hardware prefetchers do not keep up with that on their own: they stop at
// each 4 KB page boundary and track the several interleaved row streams of a tile poorly, so a
// single thread reached only about half of its read bandwidth (Q4_0 TinyLlama shape, tg64:
// 4.6 of 9.7 GB/s). The kernels therefore ask for the lines they will need a few KB ahead,
// one prefetch per 64 bytes of weights consumed (tg64 1.5x faster; docs/benchmarks.md).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace hearth {

// How far ahead to prefetch: at least kPrefetchBytes, and a whole number of tiles of
// `tile_bytes` (the weight bytes one pass of a kernel's row tile covers), so that the line
// asked for is the same position of a later tile and every line is asked for once.
// (A kernel row may ask for more: kernels/table.cpp says where, and why.)
constexpr size_t kPrefetchBytes = 4096;
inline size_t prefetch_distance(size_t tile_bytes, size_t at_least = kPrefetchBytes) {
    return tile_bytes == 0 ? at_least : tile_bytes * ((at_least + tile_bytes - 1) / tile_bytes);
}

// Which cache a prefetch fills (__builtin_prefetch's locality): l1, prefetcht0 on x86, every
// level; l2, prefetcht1, L2 and below but not L1. On AMD Zen 4 the AVX-512 few-token kernels
// stream from memory up to twice as fast with l2 (kernels/table.cpp says where it is used).
enum class PrefetchTo : int { l2 = 2, l1 = 3 };

// Prefetch the kBytes that start `ahead` bytes after p (one request per cache line; a
// prefetch past the end of the mapping is harmless, it never faults).
template <size_t kBytes, PrefetchTo kTo = PrefetchTo::l1>
inline void prefetch_ahead(const void* p, size_t ahead) {
    const char* q = static_cast<const char*>(p) + ahead;
    for (size_t o = 0; o < kBytes; o += 64) __builtin_prefetch(q + o, 0, int(kTo));
}

// Prompt-processing GEMMs pack a chunk of weights, then run their tiles of tokens over it. The
// chunk they pack next is asked for while those tiles compute: step() is called once per block
// by every tile, and asks for per_step lines of each stream (b: a second stream, or null), so
// the requests spread evenly over the compute. Asked for in bursts (all of a tile's share at its
// start), they filled the miss buffers and stalled, and with few tokens there are few tiles per
// chunk (a 16-token prompt on 8-token tiles: 2); 7B q4_0 pp15 ran 27.5 tok/s that way, 35 this way.
struct ChunkPrefetch {
    const uint8_t *a, *b;
    size_t line, lines, per_step;
    void step() {
        for (const size_t e = std::min(lines, line + per_step); line < e; ++line) {
            __builtin_prefetch(a + 64 * line, 0, 3);
            if (b) __builtin_prefetch(b + 64 * line, 0, 3);
        }
    }
    // Spread `lines` lines over `steps` calls of step().
    static ChunkPrefetch over(const void* a, const void* b, size_t lines, size_t steps) {
        return {static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), 0, lines,
                steps ? (lines + steps - 1) / steps : lines};
    }
};

}  // namespace hearth
