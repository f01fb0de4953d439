// Whether the float work of the few-token kernels (x86/gemv_avx512.cpp: per block of 32 weights,
// token and 16 rows, one convert, one multiply and one FMA beside 8 vpdpbusd) competes with
// vpdpbusd for the same execution ports. One thread times a loop of 64 independent vpdpbusd zmm
// alone, then with 8 or 16 vfmadd231ps zmm or vcvtdq2ps zmm added: if a ratio is ~1 the added
// instructions run on other ports for free; if it is ~1 + added / 64, they take vpdpbusd's.
// CPU time of the thread, so that time descheduled on a shared machine does not count.
//   build/vnni_ports        (x86 with AVX512-VNNI only; run by hand, docs/benchmarks.md)
#include <cstdio>
#include <ctime>

#if defined(__AVX512VNNI__)
#include <immintrin.h>

static double thread_seconds() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// Seconds per iteration of: 64 vpdpbusd (8 chains of 8), then n_fma vfmadd231ps, n_cvt vcvtdq2ps.
template <int kFma, int kCvt>
__attribute__((noinline)) double seconds_per_iteration(long iterations) {
    __m512i acc[8];
    __m512 facc[8];
    for (int i = 0; i < 8; i++) {
        acc[i] = _mm512_set1_epi32(i);
        facc[i] = _mm512_set1_ps(float(i));
    }
    const __m512i w = _mm512_set1_epi32(3), x = _mm512_set1_epi32(5);
    const __m512 s = _mm512_set1_ps(1.0001f);
    const double t0 = thread_seconds();
    for (long it = 0; it < iterations; it++) {
        for (int r = 0; r < 8; r++)
            for (int i = 0; i < 8; i++) asm volatile("vpdpbusd %2, %1, %0" : "+v"(acc[i]) : "v"(w), "v"(x));
        for (int i = 0; i < kFma; i++) asm volatile("vfmadd231ps %2, %1, %0" : "+v"(facc[i & 7]) : "v"(s), "v"(s));
        for (int i = 0; i < kCvt; i++) {
            __m512 c;
            asm volatile("vcvtdq2ps %1, %0" : "=v"(c) : "v"(acc[i & 7]));
            asm volatile("" : : "v"(c));
        }
    }
    return (thread_seconds() - t0) / iterations;
}

int main() {
    const long n = 20000000;
    for (int round = 0; round < 3; round++) {
        const double alone = seconds_per_iteration<0, 0>(n);
        std::printf("64 vpdpbusd: %.2f ns; with 8 / 16 vfmadd231ps %.3fx / %.3fx, with 8 / 16 vcvtdq2ps %.3fx / %.3fx\n",
                    alone * 1e9, seconds_per_iteration<8, 0>(n) / alone, seconds_per_iteration<16, 0>(n) / alone,
                    seconds_per_iteration<0, 8>(n) / alone, seconds_per_iteration<0, 16>(n) / alone);
    }
    return 0;
}
#else
int main() {
    std::puts("vnni_ports: this build has no AVX512-VNNI (-march=native on a CPU without it)");
    return 0;
}
#endif
