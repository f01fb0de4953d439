// Measures memory read bandwidth: threads sum disjoint parts of a buffer much larger
// than the last-level cache, as generation streams the weights. Prints the median of
// several passes for 1 thread and for each count up to the number of cores. The buffer sits in
// 2 MB pages where the kernel grants them, as the weights do (formats/mapped_file.cpp): on the
// AMD EPYC Zen 4 host that read 5-15% faster than 4 KB pages (1 thread 31.4-31.8 GB/s against
// 27.1-29.6, 2 threads 33.6-34.3 against 32.1-32.6). A software prefetch 4 KB ahead, as the
// kernels do, changed nothing there (30.2 / 33.7), so the read stays plain.
//   build/membw [MB]   (default 2048)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <omp.h>
#include <vector>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "base/platform.h"
#include "cli/cpu_info.h"

using namespace hearth;

static double read_pass(const float* data, size_t n, int threads) {
    double total = 0;
    auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        const int ith = omp_get_thread_num(), nth = omp_get_num_threads();
        const size_t chunk = (n / nth) / 64 * 64;
        const float* p = data + chunk * ith;
        const size_t len = ith == nth - 1 ? n - chunk * ith : chunk;
#if defined(__AVX2__)
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        size_t i = 0;
        for (; i + 32 <= len; i += 32) {
            a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
            a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
            a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
            a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
        }
        float tmp[8];
        _mm256_storeu_ps(tmp, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
        for (float v : tmp) total += v;
        for (; i < len; i++) total += p[i];
#else
        float s = 0;
        for (size_t i = 0; i < len; i++) s += p[i];
        total += s;
#endif
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (total == 12345.678) std::puts("");  // keeps the sum alive
    return n * sizeof(float) / secs / 1e9;
}

int main(int argc, char** argv) {
    size_t mb = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 2048;
    if (mb < 64) mb = 64;
    mb += mb % 2;  // whole 2 MB pages: aligned_alloc asks for a size that is a multiple of the alignment
    const size_t n = mb * (1 << 20) / sizeof(float);
    float* data = static_cast<float*>(std::aligned_alloc(size_t(2) << 20, n * sizeof(float)));
    if (!data) {
        std::fprintf(stderr, "membw: cannot allocate %zu MB\n", mb);
        return 1;
    }
    advise_huge_pages(data, n * sizeof(float));  // before the first touch
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) data[i] = float(i & 1023);
    const int cores = physical_core_count();
    for (int threads = 1; threads <= cores; threads++) {
        std::vector<double> gbs;
        for (int pass = 0; pass < 7; pass++) gbs.push_back(read_pass(data, n, threads));
        std::sort(gbs.begin(), gbs.end());
        std::printf("memory read bandwidth, %d thread%s: %.1f GB/s (median of 7 passes over %zu MB)\n", threads,
                    threads > 1 ? "s" : "", gbs[3], mb);
    }
    std::free(data);
    return 0;
}
