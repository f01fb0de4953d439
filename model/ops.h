// The small fp32 operations of the Llama forward pass.
#pragma once
#include <vector>

namespace hearth {

// out = x / sqrt(mean(x^2) + eps) * weight, accumulated in fp32 (out may alias x).
void rmsnorm(float* out, const float* x, const float* weight, int n, float eps);

// In place, numerically stable (the maximum is subtracted first).
void softmax(float* x, int n);

// cos/sin of pos * theta^(-2i/head_dim) / freq_factors[i] for every position of the context
// and every pair i < head_dim/2, computed once at load (in double, then rounded once).
// freq_factors: empty, or head_dim/2 divisors (Llama-3's rope scaling, ModelConfig).
struct RopeTable {
    int head_dim = 0;
    int n_pos = 0;
    std::vector<float> cos, sin;  // [n_pos][head_dim/2]
};
RopeTable make_rope_table(int head_dim, int n_pos, float theta, const std::vector<float>& freq_factors = {});

// Rotates each adjacent pair (x[2i], x[2i+1]) of every head by angle i for `pos`.
// This is the GGUF/Meta convention of llama; quantize permutes Hugging Face's q/k rows into it.
void apply_rope(float* x, int n_heads, const RopeTable& rope, int pos);

// Rotates x[i] with x[i + head_dim/2] of every head by angle i for `pos`: Hugging Face's
// rotate_half, llama.cpp's NEOX RoPE (qwen3).
void apply_rope_halves(float* x, int n_heads, const RopeTable& rope, int pos);

}  // namespace hearth
