// The driver the few-token kernels on interleaved rows share (x86/gemv_avx512.cpp for Q4_0
// and Q8_0, x86/gemv_q4_k_avx512.cpp for Q4_K): the activations copied once per call into
// blocks of up to kMaxTok tokens, then whole groups of rows [r0, r1), any number of tokens, in
// chunks of `chunk` weight blocks (columns), in each chunk the pairs of groups, and in each pair
// the blocks of tokens. The activations of token block j start at kMaxTok * j * nb * kTokBytes
// bytes (every block before the last is full). Each pair's chunk adds its partial sums to the
// output after the first. What differs per type is K, the kernels by token count:
//   K::pack[nt - 1](A, a_row_bytes, nb, t0, dst): tokens t0..t0+nt-1's activations, copied
//   K::run[nt - 1](ga, gb, na, nbp, kn, acts, out, out_stride, keep, accumulate): one pair of
//     groups (ga, gb; gb == ga for an odd last group, keep masks its rows) over kn blocks of
//     columns, prefetching na/nbp (the next chunk to read, or null)
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/x86/avx2_util.h"  // few_tokens_act_buf

namespace hearth {

template <class K, int kMaxTok, size_t kRec, size_t kTokBytes>
void few_tokens_x8(const void* W, size_t wrb, const void* A, size_t arb, int nb, int n_tokens, float* out, int os, int r0, int r1,
                   int chunk) {
    if (r0 >= r1 || n_tokens <= 0) return;
    uint8_t* buf = few_tokens_act_buf(size_t(n_tokens) * size_t(nb) * kTokBytes);
    for (int t0 = 0; t0 < n_tokens; t0 += kMaxTok) {
        const int nt = std::min(kMaxTok, n_tokens - t0);
        K::pack[nt - 1](static_cast<const char*>(A), arb, nb, t0, buf + size_t(t0) * size_t(nb) * kTokBytes);
    }
    const uint8_t* Wc = static_cast<const uint8_t*>(W);
    const size_t group_bytes = 8 * wrb;
    // The second group of the pair at row r (itself for an odd last group).
    auto second = [&](const uint8_t* ga, int r) { return r + 8 < r1 ? ga + group_bytes : ga; };
    for (int kb = 0; kb < nb; kb += chunk) {
        const int kn = std::min(chunk, nb - kb);
        for (int r = r0; r < r1; r += 16) {
            const uint8_t* ga = Wc + size_t(r) * wrb + size_t(kb) * kRec;
            const uint8_t* gb = second(ga, r);
            const __mmask16 keep = gb != ga ? __mmask16(0xFFFF) : __mmask16(0x00FF);
            // Prefetched near the chunk's end: the next pair's chunk, or the first pair's next chunk.
            const uint8_t *na = nullptr, *nbp = nullptr;
            if (r + 16 < r1) {
                na = ga + 2 * group_bytes;
                nbp = second(na, r + 16);
            } else if (kb + kn < nb) {
                na = Wc + size_t(r0) * wrb + size_t(kb + kn) * kRec;
                nbp = second(na, r0);
            }
            for (int t0 = 0; t0 < n_tokens; t0 += kMaxTok) {
                const int nt = std::min(kMaxTok, n_tokens - t0);
                K::run[nt - 1](ga, gb, na, nbp, kn, buf + (size_t(t0) * size_t(nb) + size_t(nt) * size_t(kb)) * kTokBytes,
                               out + size_t(t0) * size_t(os) + r, size_t(os), keep, kb > 0);
            }
        }
    }
}

}  // namespace hearth
