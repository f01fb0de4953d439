// RMSNorm, softmax, SiLU and RoPE against their textbook formulas evaluated in double.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "model/ops.h"

using namespace hearth;

TEST_CASE("rmsnorm matches x / sqrt(mean(x^2) + eps) * w") {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 3.0f);
    for (int n : {1, 7, 64, 4096}) {
        std::vector<float> x(n), w(n), out(n);
        for (int i = 0; i < n; i++) x[i] = nd(rng), w[i] = 1.0f + 0.1f * nd(rng);
        const float eps = 1e-5f;
        rmsnorm(out.data(), x.data(), w.data(), n, eps);
        double ss = 0;
        for (float v : x) ss += double(v) * v;
        double scale = 1.0 / std::sqrt(ss / n + eps);
        for (int i = 0; i < n; i++) CHECK(out[i] == doctest::Approx(x[i] * scale * w[i]).epsilon(1e-5));
    }
}

TEST_CASE("rmsnorm works in place and the eps term matters for tiny inputs") {
    std::vector<float> x = {1e-4f, -2e-4f, 3e-4f, 0.0f}, w(4, 1.0f);
    std::vector<float> expected(4);
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    for (int i = 0; i < 4; i++) expected[i] = float(x[i] / std::sqrt(ss / 4 + 1e-5));
    rmsnorm(x.data(), x.data(), w.data(), 4, 1e-5f);
    for (int i = 0; i < 4; i++) CHECK(x[i] == doctest::Approx(expected[i]).epsilon(1e-5));
}

TEST_CASE("softmax equals exp(x_i) / sum exp(x_j) and is stable for large logits") {
    std::vector<float> x = {1000.0f, 1001.0f, 999.0f, -1000.0f};
    std::vector<double> e(4);
    double sum = 0;
    for (int i = 0; i < 4; i++) sum += (e[i] = std::exp(double(x[i]) - 1001.0));
    softmax(x.data(), 4);
    double total = 0;
    for (int i = 0; i < 4; i++) {
        CHECK(std::isfinite(x[i]));
        CHECK(x[i] == doctest::Approx(e[i] / sum).epsilon(1e-6));
        total += x[i];
    }
    CHECK(total == doctest::Approx(1.0).epsilon(1e-6));
    std::vector<float> one = {-5.0f};
    softmax(one.data(), 1);
    CHECK(one[0] == 1.0f);
}

TEST_CASE("rope tables equal cos/sin of pos * theta^(-2i/d) for every position") {
    for (float theta : {10000.0f, 500000.0f}) {
        for (int head_dim : {8, 64, 128}) {
            const int n_pos = 4096;
            RopeTable t = make_rope_table(head_dim, n_pos, theta);
            REQUIRE(t.cos.size() == size_t(n_pos) * head_dim / 2);
            for (int p : {0, 1, 2, 17, 1000, 4095}) {
                for (int i = 0; i < head_dim / 2; i++) {
                    double angle = p * std::pow(double(theta), -2.0 * i / head_dim);
                    CHECK(t.cos[size_t(p) * head_dim / 2 + i] == doctest::Approx(std::cos(angle)).epsilon(1e-6).scale(1));
                    CHECK(t.sin[size_t(p) * head_dim / 2 + i] == doctest::Approx(std::sin(angle)).epsilon(1e-6).scale(1));
                }
            }
        }
    }
}

TEST_CASE("apply_rope rotates each adjacent pair as a complex multiplication") {
    const int head_dim = 16, n_heads = 3, pos = 37;
    RopeTable t = make_rope_table(head_dim, 64, 10000.0f);
    std::mt19937 rng(2);
    std::normal_distribution<float> nd;
    std::vector<float> x(n_heads * head_dim), y;
    for (float& v : x) v = nd(rng);
    y = x;
    apply_rope(y.data(), n_heads, t, pos);
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < head_dim / 2; i++) {
            double angle = pos * std::pow(10000.0, -2.0 * i / head_dim);
            double a = x[h * head_dim + 2 * i], b = x[h * head_dim + 2 * i + 1];
            CHECK(y[h * head_dim + 2 * i] == doctest::Approx(a * std::cos(angle) - b * std::sin(angle)).epsilon(1e-5));
            CHECK(y[h * head_dim + 2 * i + 1] == doctest::Approx(a * std::sin(angle) + b * std::cos(angle)).epsilon(1e-5));
        }
    // Position 0 is the identity.
    y = x;
    apply_rope(y.data(), n_heads, t, 0);
    CHECK(y == x);
}

TEST_CASE("rope tables divide each frequency by its factor (Llama-3's rope scaling)") {
    const int head_dim = 16;
    std::vector<float> factors(head_dim / 2);
    for (int i = 0; i < head_dim / 2; i++) factors[size_t(i)] = 1.0f + 0.75f * float(i);
    RopeTable t = make_rope_table(head_dim, 512, 500000.0f, factors);
    for (int p : {0, 1, 31, 300, 511})
        for (int i = 0; i < head_dim / 2; i++) {
            const double angle = p * std::pow(500000.0, -2.0 * i / head_dim) / factors[size_t(i)];
            CHECK(t.cos[size_t(p) * head_dim / 2 + i] == doctest::Approx(std::cos(angle)).epsilon(1e-6).scale(1));
            CHECK(t.sin[size_t(p) * head_dim / 2 + i] == doctest::Approx(std::sin(angle)).epsilon(1e-6).scale(1));
        }
}

TEST_CASE("apply_rope_halves rotates element i with element i + head_dim/2 (Hugging Face's rotate_half)") {
    const int head_dim = 16, half = head_dim / 2, n_heads = 3, pos = 37;
    RopeTable t = make_rope_table(head_dim, 64, 1000000.0f);
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    std::vector<float> x(n_heads * head_dim), y, pairs(n_heads * head_dim);
    for (float& v : x) v = nd(rng);
    y = x;
    apply_rope_halves(y.data(), n_heads, t, pos);
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < half; i++) {
            const double angle = pos * std::pow(1000000.0, -2.0 * i / head_dim);
            const double a = x[h * head_dim + i], b = x[h * head_dim + i + half];
            CHECK(y[h * head_dim + i] == doctest::Approx(a * std::cos(angle) - b * std::sin(angle)).epsilon(1e-5));
            CHECK(y[h * head_dim + i + half] == doctest::Approx(a * std::sin(angle) + b * std::cos(angle)).epsilon(1e-5));
            // The same as apply_rope on the head reordered into adjacent pairs, which is why
            // importing a llama folder may reorder q/k rows (docs/format.md, RoPE convention).
            pairs[h * head_dim + 2 * i] = float(a);
            pairs[h * head_dim + 2 * i + 1] = float(b);
        }
    apply_rope(pairs.data(), n_heads, t, pos);
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < half; i++) {
            CHECK(pairs[h * head_dim + 2 * i] == y[h * head_dim + i]);
            CHECK(pairs[h * head_dim + 2 * i + 1] == y[h * head_dim + i + half]);
        }
}
