#include "model/ops.h"

#include <cmath>

#include "kernels/softmax.h"

namespace hearth {

void rmsnorm(float* out, const float* x, const float* weight, int n, float eps) {
    // The sum of squares in 16 interleaved partial sums, added up at the end: independent chains
    // that the compiler makes one vector. One chain of 2048 dependent adds (TinyLlama's dim) took
    // ~3 us, and a batch of 8 tokens pays it 8 times per norm.
    float part[16] = {};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) part[j] += x[i + j] * x[i + j];
    float ss = 0.0f;
    for (int j = 0; j < 16; j++) ss += part[j];
    for (; i < n; i++) ss += x[i] * x[i];
    float scale = 1.0f / std::sqrt(ss / float(n) + eps);
    for (i = 0; i < n; i++) out[i] = x[i] * scale * weight[i];
}

void softmax(float* x, int n) { softmax_f32(x, n); }

RopeTable make_rope_table(int head_dim, int n_pos, float theta, const std::vector<float>& freq_factors) {
    RopeTable t;
    t.head_dim = head_dim;
    t.n_pos = n_pos;
    const int half = head_dim / 2;
    t.cos.resize(size_t(n_pos) * half);
    t.sin.resize(size_t(n_pos) * half);
    for (int i = 0; i < half; i++) {
        double freq = std::pow(double(theta), -2.0 * i / head_dim);
        if (!freq_factors.empty()) freq /= double(freq_factors[size_t(i)]);
        for (int p = 0; p < n_pos; p++) {
            double angle = p * freq;
            t.cos[size_t(p) * half + i] = float(std::cos(angle));
            t.sin[size_t(p) * half + i] = float(std::sin(angle));
        }
    }
    return t;
}

void apply_rope(float* x, int n_heads, const RopeTable& rope, int pos) {
    const int half = rope.head_dim / 2;
    const float* c = &rope.cos[size_t(pos) * half];
    const float* s = &rope.sin[size_t(pos) * half];
    for (int h = 0; h < n_heads; h++) {
        float* v = x + size_t(h) * rope.head_dim;
        for (int i = 0; i < half; i++) {
            float a = v[2 * i], b = v[2 * i + 1];
            v[2 * i] = a * c[i] - b * s[i];
            v[2 * i + 1] = a * s[i] + b * c[i];
        }
    }
}

void apply_rope_halves(float* x, int n_heads, const RopeTable& rope, int pos) {
    const int half = rope.head_dim / 2;
    const float* c = &rope.cos[size_t(pos) * half];
    const float* s = &rope.sin[size_t(pos) * half];
    for (int h = 0; h < n_heads; h++) {
        float* v = x + size_t(h) * rope.head_dim;
        for (int i = 0; i < half; i++) {
            float a = v[i], b = v[i + half];
            v[i] = a * c[i] - b * s[i];
            v[i + half] = a * s[i] + b * c[i];
        }
    }
}

}  // namespace hearth
