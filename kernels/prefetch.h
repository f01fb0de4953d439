// Software prefetch of weight rows for the matrix kernels.
//
// Generation reads every weight matrix once, straight from DRAM, at a few bytes per
// instruction. The hardware prefetchers do not keep up with that on their own: they stop at
// each 4 KB page boundary and track the several interleaved row streams of a tile poorly, so a
// single thread reached only about half of its read bandwidth (Q4_0 TinyLlama shape, tg64:
// 4.6 of 9.7 GB/s). The kernels therefore ask for the lines they will need a few KB ahead,
// one prefetch per 64 bytes of weights consumed (tg64 1.5x faster; docs/benchmarks.md).
#pragma once
#include <cstddef>

// How far ahead to prefetch: at least kPrefetchBytes, and a whole number of tiles of
// `tile_bytes` (the weight bytes one pass of a kernel's row tile covers), so that the line
// asked for is the same position of a later tile and every line is asked for once.
constexpr size_t kPrefetchBytes = 4096;
inline size_t prefetch_distance(size_t tile_bytes) {
    return tile_bytes == 0 ? kPrefetchBytes : tile_bytes * ((kPrefetchBytes + tile_bytes - 1) / tile_bytes);
}

// Prefetch the kBytes that start `ahead` bytes after p (one request per cache line; a
// prefetch past the end of the mapping is harmless, it never faults).
template <size_t kBytes>
inline void prefetch_ahead(const void* p, size_t ahead) {
    const char* q = static_cast<const char*>(p) + ahead;
    for (size_t o = 0; o < kBytes; o += 64) __builtin_prefetch(q + o, 0, 3);
}
