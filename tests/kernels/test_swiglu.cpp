// Tests for kernels/swiglu: g = silu(g) * u, every implementation built against a double
// reference, over the whole float range that matters (including e^-x overflow for x << 0).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/swiglu.h"

using namespace hearth;

namespace {

void check_swiglu(void (*fn)(float*, const float*, size_t)) {
    std::vector<float> g, u;
    for (double x : {-200.0, -100.0, -88.5, -87.0, -20.0, -3.0, -0.5, -1e-8, 0.0, 1e-8, 0.5, 3.0, 20.0, 87.5, 100.0}) {
        g.push_back(float(x));
        u.push_back(1.0f);
    }
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.f, 4.f);
    for (int i = 0; i < 1000; i++) {  // 1015 values: several vectors and a ragged tail
        g.push_back(nd(rng));
        u.push_back(nd(rng));
    }
    std::vector<float> out = g;
    fn(out.data(), u.data(), out.size());
    int bad = 0;
    for (size_t i = 0; i < g.size(); i++) {
        const double x = g[i], ref = x / (1.0 + std::exp(-x)) * u[i];
        if (!(std::fabs(out[i] - ref) <= 2e-6 * std::fabs(ref) + 1e-30)) ++bad;
    }
    CHECK(bad == 0);
}

}  // namespace

TEST_CASE("swiglu: silu(g) * u within 2e-6 relative of double precision") {
    SUBCASE("scalar") { check_swiglu(swiglu_f32_scalar); }
#if defined(HEARTH_ISA_AVX2)
    SUBCASE("avx2") { check_swiglu(swiglu_f32_avx2); }
#endif
}
