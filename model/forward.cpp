#include "forward.h"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <omp.h>

#include "../kernels/dot_float.h"
#include "../kernels/matmul.h"
#include "../kernels/swiglu.h"

RunStateBytes run_state_bytes(const ModelConfig& c) {
    const uint64_t B = 64, q_dim = uint64_t(c.n_heads) * c.head_dim, kv_dim = uint64_t(c.n_kv_heads) * c.head_dim;
    const uint64_t activations = B * (2 * uint64_t(c.dim) + std::max<uint64_t>(c.dim, q_dim) + 2 * q_dim + 2 * kv_dim + 2 * uint64_t(c.hidden_dim));
    const uint64_t per_position = 2 * uint64_t(c.n_layers) * kv_dim  // keys and values
                                  + uint64_t(c.head_dim)             // RoPE cos and sin
                                  + uint64_t(omp_get_max_threads()); // attention scores
    return {activations * sizeof(float), per_position * sizeof(float)};
}

std::string make_run_state(const ModelConfig& c, int n_ctx, RunState* s) {
    if (n_ctx < 1) return "context length must be at least 1";
    const std::string no_memory = "not enough memory for a context of " + std::to_string(n_ctx) + " positions (" +
                                  std::to_string(run_state_bytes(c).total(n_ctx) >> 20) + " MiB)";
    try {
        s->n_ctx = n_ctx;
        s->max_batch = 64;
        s->rope = make_rope_table(c.head_dim, n_ctx, c.rope_theta);
        const size_t B = s->max_batch, q_dim = size_t(c.n_heads) * c.head_dim, kv_dim = size_t(c.n_kv_heads) * c.head_dim;
        s->x.assign(B * c.dim, 0.0f);
        s->xb.assign(B * std::max<size_t>(c.dim, q_dim), 0.0f);
        s->xb2.assign(B * q_dim, 0.0f);
        s->q.assign(B * q_dim, 0.0f);
        s->k.assign(B * kv_dim, 0.0f);
        s->v.assign(B * kv_dim, 0.0f);
        s->hb.assign(B * c.hidden_dim, 0.0f);
        s->hb2.assign(B * c.hidden_dim, 0.0f);
        s->att.assign(size_t(omp_get_max_threads()) * n_ctx, 0.0f);
    } catch (const std::bad_alloc&) {
        return no_memory;
    }
    const size_t cache = size_t(c.n_layers) * n_ctx * size_t(c.n_kv_heads) * c.head_dim;
    s->key_cache.reset(new (std::nothrow) float[cache]);
    s->value_cache.reset(new (std::nothrow) float[cache]);
    if (!s->key_cache || !s->value_cache) return no_memory;
    return "";
}

static void matmul_tensor(float* out, const TensorView& w, const float* x, int n_tokens) {
    matmul(out, w.type, w.data, int(w.rows()), int(w.cols()), x, n_tokens);
}

// Several weight matrices with the same input (q/k/v, gate/up): one parallel region.
static void matmul_tensors(std::initializer_list<std::pair<float*, const TensorView*>> outs, const float* x, int n_tokens) {
    MatmulJob jobs[3];
    int n_jobs = 0, cols = 0;
    for (const auto& o : outs) {
        jobs[n_jobs++] = MatmulJob{o.first, o.second->type, o.second->data, int(o.second->rows())};
        cols = int(o.second->cols());
    }
    matmul_many(jobs, n_jobs, cols, x, n_tokens);
}

// Causal grouped-query attention for `n` tokens at positions pos.., reading the cache
// of one layer. Query head h reads kv head h / (n_heads / n_kv_heads).
static void attention(const ModelConfig& c, RunState& s, const float* k_cache, const float* v_cache, int n, int pos) {
    const int hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
    const int group = c.n_heads / c.n_kv_heads;
    const float scale = 1.0f / std::sqrt(float(hd));
#pragma omp parallel for schedule(dynamic, 1)
    for (int th = 0; th < n * c.n_heads; th++) {
        const int t = th / c.n_heads, h = th % c.n_heads, kvh = h / group;
        const int n_seen = pos + t + 1;  // this token sees itself and everything before it
        const float* q = &s.q[size_t(t) * q_dim + size_t(h) * hd];
        float* att = &s.att[size_t(omp_get_thread_num()) * s.n_ctx];
        dot_f32_rows(q, k_cache + size_t(kvh) * hd, kv_dim, n_seen, hd, att);
        for (int p = 0; p < n_seen; p++) att[p] *= scale;
        softmax(att, n_seen);
        weighted_sum_rows(att, v_cache + size_t(kvh) * hd, kv_dim, n_seen, hd, &s.xb2[size_t(t) * q_dim + size_t(h) * hd]);
    }
}

// One chunk of at most max_batch tokens; logits may be null when none are wanted.
static void forward_chunk(const Model& m, RunState& s, const int* tokens, int n, int pos, float* logits, bool all_logits) {
    const ModelConfig& c = m.config;
    const int dim = c.dim, hidden = c.hidden_dim, q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;

    for (int t = 0; t < n; t++) dequantize_row(m.token_embd.type, m.token_embd.data, dim, tokens[t], &s.x[size_t(t) * dim]);

    for (int l = 0; l < c.n_layers; l++) {
        const LayerWeights& L = m.layers[l];
        float* k_cache = s.key_cache.get() + size_t(l) * s.n_ctx * kv_dim;
        float* v_cache = s.value_cache.get() + size_t(l) * s.n_ctx * kv_dim;

        // Attention block: x += attn_output · attention(rope(attn_q · norm(x)), rope(attn_k · norm(x)), attn_v · norm(x))
        for (int t = 0; t < n; t++)
            rmsnorm(&s.xb[size_t(t) * dim], &s.x[size_t(t) * dim], static_cast<const float*>(L.attn_norm.data), dim, c.rms_eps);
        matmul_tensors({{s.q.data(), &L.attn_q}, {s.k.data(), &L.attn_k}, {s.v.data(), &L.attn_v}}, s.xb.data(), n);
        for (int t = 0; t < n; t++) {
            apply_rope(&s.q[size_t(t) * q_dim], c.n_heads, s.rope, pos + t);
            apply_rope(&s.k[size_t(t) * kv_dim], c.n_kv_heads, s.rope, pos + t);
            std::memcpy(k_cache + size_t(pos + t) * kv_dim, &s.k[size_t(t) * kv_dim], sizeof(float) * kv_dim);
            std::memcpy(v_cache + size_t(pos + t) * kv_dim, &s.v[size_t(t) * kv_dim], sizeof(float) * kv_dim);
        }
        attention(c, s, k_cache, v_cache, n, pos);
        matmul_tensor(s.xb.data(), L.attn_output, s.xb2.data(), n);
        for (size_t i = 0; i < size_t(n) * dim; i++) s.x[i] += s.xb[i];

        // Feed-forward block: x += ffn_down · (silu(ffn_gate · norm(x)) * (ffn_up · norm(x)))
        for (int t = 0; t < n; t++)
            rmsnorm(&s.xb[size_t(t) * dim], &s.x[size_t(t) * dim], static_cast<const float*>(L.ffn_norm.data), dim, c.rms_eps);
        matmul_tensors({{s.hb.data(), &L.ffn_gate}, {s.hb2.data(), &L.ffn_up}}, s.xb.data(), n);
        swiglu_f32(s.hb.data(), s.hb2.data(), size_t(n) * hidden);
        matmul_tensor(s.xb.data(), L.ffn_down, s.hb.data(), n);
        for (size_t i = 0; i < size_t(n) * dim; i++) s.x[i] += s.xb[i];
    }

    // Only the tokens whose logits are wanted go through the (large) output projection.
    if (!logits) return;
    const int first = all_logits ? 0 : n - 1;
    for (int t = first; t < n; t++)
        rmsnorm(&s.xb[size_t(t - first) * dim], &s.x[size_t(t) * dim], static_cast<const float*>(m.output_norm.data), dim, c.rms_eps);
    matmul_tensor(logits, m.output, s.xb.data(), n - first);
}

std::string forward(const Model& m, RunState& s, const int* tokens, int n, int pos, float* logits, bool all_logits) {
    if (n < 1) return "nothing to evaluate";
    if (pos < 0 || n > s.n_ctx - pos)
        return "positions " + std::to_string(pos) + ".." + std::to_string(pos + n - 1) + " exceed the context of " + std::to_string(s.n_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m.config.vocab_size)
            return "token id " + std::to_string(tokens[i]) + " is outside the vocabulary (0.." + std::to_string(m.config.vocab_size - 1) + ")";
    for (int done = 0; done < n; done += s.max_batch) {
        const int chunk = std::min(s.max_batch, n - done);
        const bool last = done + chunk == n;
        if (all_logits) {
            forward_chunk(m, s, tokens + done, chunk, pos + done, logits + size_t(done) * m.config.vocab_size, true);
        } else {
            // Earlier chunks only fill the cache: no output projection for them.
            forward_chunk(m, s, tokens + done, chunk, pos + done, last ? logits : nullptr, false);
        }
    }
    return "";
}
