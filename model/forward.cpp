#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <omp.h>

#include "base/printable.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/swiglu.h"
#include "kernels/table.h"

namespace hearth {

// Query rows one attention task takes at most: heads of a GQA group, for one token or several
// tokens of a chunk, which read each cached key and value of their kv head once together.
constexpr int kAttnRows = 32;

static const TensorType kCacheTypes[] = {TYPE_F32, TYPE_F16, TYPE_Q8_0};

std::string kv_cache_type_from_name(const std::string& name, TensorType* t) {
    for (TensorType c : kCacheTypes)
        if (name == type_name(c)) return *t = c, "";
    return in_quotes(name) + " is not a KV cache type: f32, f16 or q8_0";
}

std::string check_kv_cache_types(const ModelConfig& c, KvCacheTypes types) {
    for (const auto& [what, t] : {std::pair<const char*, TensorType>{"key", types.k}, {"value", types.v}}) {
        if (!kv_cache_type_ok(t)) return std::string(what) + " cache type " + type_name(t) + " is not one of f32, f16, q8_0";
        if (t == TYPE_Q8_0 && c.head_dim % QK8_0 != 0)
            return std::string("a q8_0 ") + what +
                   " cache needs a head dimension that is a multiple of 32, and this model's is " + std::to_string(c.head_dim) +
                   ": use f16 or f32";
    }
    return "";
}

RunStateBytes run_state_bytes(const ModelConfig& c, KvCacheTypes types, int max_batch) {
    const uint64_t B = std::max(max_batch, 0), hd = c.head_dim, q_dim = uint64_t(c.n_heads) * hd,
                   kv_dim = uint64_t(c.n_kv_heads) * hd;
    const uint64_t threads = omp_get_max_threads();
    const uint64_t activations =
        B * (2 * uint64_t(c.dim) + std::max<uint64_t>(c.dim, q_dim) + 2 * q_dim + 2 * kv_dim + 2 * uint64_t(c.hidden_dim));
    const uint64_t attention = threads * (2 * kAttnRows * hd + attn_scratch_floats(c.head_dim));  // queries, outputs, scratch
    const uint64_t cache = uint64_t(c.n_layers) * (type_row_bytes(types.k, kv_dim) + type_row_bytes(types.v, kv_dim));
    const uint64_t per_position_floats = hd                      // RoPE cos and sin
                                         + threads * kAttnRows;  // attention scores
    // The cache holds n_ctx rounded up to whole key tiles (cache_stride): up to kAttnKeyTile - 1
    // positions more, counted in the fixed part.
    return {(activations + attention) * sizeof(float) + (kAttnKeyTile - 1) * cache, cache + per_position_floats * sizeof(float)};
}

// Positions a kv head's rows take in the cache: n_ctx in whole key tiles (cache_row).
static size_t cache_stride(const RunState& s) { return (size_t(s.n_ctx) + kAttnKeyTile - 1) / kAttnKeyTile * kAttnKeyTile; }

std::string make_run_state(const ModelConfig& c, int n_ctx, RunState* s, KvCacheTypes types, int max_batch) {
    if (n_ctx < 1) return "context length must be at least 1";
    if (max_batch < 0) return "max_batch must be 0 or more";
    std::string err = check_kv_cache_types(c, types);
    if (!err.empty()) return err;
    const std::string no_memory = "not enough memory for a context of " + std::to_string(n_ctx) + " positions (" +
                                  std::to_string(run_state_bytes(c, types, max_batch).total(n_ctx) >> 20) + " MiB)";
    const size_t threads = omp_get_max_threads(), hd = c.head_dim;
    const size_t B = max_batch, q_dim = size_t(c.n_heads) * hd, kv_dim = size_t(c.n_kv_heads) * hd;
    try {
        s->n_ctx = n_ctx;
        s->max_batch = max_batch;
        s->cache_types = types;
        s->k_row_bytes = type_row_bytes(types.k, kv_dim);
        s->v_row_bytes = type_row_bytes(types.v, kv_dim);
        s->rope = make_rope_table(c.head_dim, n_ctx, c.rope_theta, c.rope_freq_factors);
        s->x.assign(B * c.dim, 0.0f);
        s->xb.assign(B * std::max<size_t>(c.dim, q_dim), 0.0f);
        s->xb2.assign(B * q_dim, 0.0f);
        s->q.assign(B * q_dim, 0.0f);
        s->k.assign(B * kv_dim, 0.0f);
        s->v.assign(B * kv_dim, 0.0f);
        s->hb.assign(B * c.hidden_dim, 0.0f);
        s->hb2.assign(B * c.hidden_dim, 0.0f);
        s->att_q.assign(threads * kAttnRows * hd, 0.0f);
        s->att_out.assign(threads * kAttnRows * hd, 0.0f);
        s->att_scratch.assign(threads * attn_scratch_floats(c.head_dim), 0.0f);
    } catch (const std::bad_alloc&) {
        return no_memory;
    }
    s->att.reset(new (std::nothrow) float[threads * kAttnRows * size_t(n_ctx)]);
    const size_t positions = size_t(c.n_layers) * cache_stride(*s);
    s->key_cache.reset(new (std::nothrow) uint8_t[positions * s->k_row_bytes]);
    s->value_cache.reset(new (std::nothrow) uint8_t[positions * s->v_row_bytes]);
    if (!s->att || !s->key_cache || !s->value_cache) return no_memory;
    return "";
}

// The cached row of one layer's kv head at position pos (head_bytes: one head's row, k_row_bytes
// or v_row_bytes / n_kv_heads). A head's rows are contiguous, so that attention reads them
// as one stream. Stored position-major instead ([layer][position][all heads]), a head's 256 bytes
// (head_dim 128, f16) came every 8 KB, a stride the hardware prefetchers do not follow: every
// line was a miss to memory, and with 8 sequences at positions 140-204, Llama-2-7B decoded 24%
// slower than at position 0 (docs/benchmarks.md, "Attention at depth").
// Keys are tiles of kAttnKeyTile positions (kernels/attention.h), so a head holds n_ctx
// rounded up to whole tiles.
static uint8_t* cache_row(uint8_t* cache, const ModelConfig& c, const RunState& s, size_t head_bytes, int layer, int kvh,
                          int pos) {
    return cache + ((size_t(layer) * c.n_kv_heads + kvh) * cache_stride(s) + pos) * head_bytes;
}

// A batch's rows in the two groups whose matmuls run apart: rows [0, few), the leading sequences
// of fewer than kFewTokenRowsBelow tokens each, on kernels that keep each token's bits
// (matmul_many's token_bits), and the rest, on those picked for their count. A generated token
// (and its drafts) thus gets the bits it gets alone, whether other sequences generate beside it
// or a prompt is read beside it (which would take the batch to the GEMMs); this reads the weights
// once more in a step that has both, a prompt's step, which is bound by its arithmetic.
struct RowGroups {
    int few, n;
};

static RowGroups row_groups(const SequenceChunk* seqs, int n_seqs, int n) {
    int few = 0;
    for (int i = 0; i < n_seqs && seqs[i].n < kFewTokenRowsBelow; i++) few += seqs[i].n;
    return {few, n};
}

// Several weight matrices with the same input (q/k/v, gate/up): one parallel region per group of rows.
static void matmul_tensors(std::initializer_list<std::pair<float*, const TensorView*>> outs, const float* x, RowGroups g) {
    MatmulJob jobs[3];
    int n_jobs = 0, cols = 0;
    for (const auto& o : outs) {
        jobs[n_jobs++] = MatmulJob{o.first, o.second->type, o.second->layout, o.second->data, int(o.second->rows())};
        cols = int(o.second->cols());
    }
    if (g.few > 0) matmul_many(jobs, n_jobs, cols, x, g.few, /*token_bits=*/true);
    if (g.few == g.n) return;
    for (int j = 0; j < n_jobs; j++) jobs[j].out += size_t(g.few) * size_t(jobs[j].rows);
    matmul_many(jobs, n_jobs, cols, x + size_t(g.few) * size_t(cols), g.n - g.few);
}

static void matmul_tensor(float* out, const TensorView& w, const float* x, RowGroups g) { matmul_tensors({{out, &w}}, x, g); }

// x += bias, an f32 vector (qwen2's q/k/v projections).
static void add_bias(float* x, const TensorView& bias, int n) {
    const float* b = static_cast<const float*>(bias.data);
    for (int i = 0; i < n; i++) x[i] += b[i];
}

// Causal grouped-query attention for the tokens of a batch, each sequence over its own cache,
// for one layer. Query head h reads kv head h / group. The query rows of a sequence's kv head,
// (token, head of the group) in token-major order, are cut into tasks of at most kAttnRows
// rows: each task reads the cached rows its last token sees once, for all its rows (earlier
// tokens' rows mask the positions after theirs). There are at least as many tasks as threads
// where there are rows enough, so that one generated token's few groups still keep every thread
// busy; but no task has fewer than kAttnFewRows rows unless the kv head has, so that the logits
// do not depend on the number of threads. With a sliding window (Mistral), a token sees only the
// last sliding_window positions up to its own: a task reads the positions from its first token's
// window on, and the scores of its later tokens before their windows get weight 0.
//
// The queries are w.q's rows and the outputs go to the same rows of w.xb2 (w holds the batch's
// activations; each sequence's state its cache and attention buffers).
struct AttnSeq {
    RunState* s;
    int row0, n, pos, per_head;  // its rows in w, its tokens and first position, tasks per kv head
};

// The sets of attention buffers make_run_state gave s: one per thread it may run on.
static int attention_buffer_sets(const ModelConfig& c, const RunState& s) {
    return int(s.att_q.size() / (size_t(kAttnRows) * c.head_dim));
}

static int attention_tasks_per_head(const ModelConfig& c, const RunState& s, int n) {
    const int rows = n * (c.n_heads / c.n_kv_heads), threads = attention_buffer_sets(c, s);
    return std::max((rows + kAttnRows - 1) / kAttnRows,
                    std::min((threads + c.n_kv_heads - 1) / c.n_kv_heads, std::max(1, rows / kAttnFewRows)));
}

// Task `task` of sequence a (0 .. n_kv_heads * a.per_head), on thread th's buffers.
static void attention_task(const ModelConfig& c, RunState& w, const AttnSeq& a, int layer, int task, size_t th) {
    RunState& s = *a.s;
    const int hd = c.head_dim, q_dim = c.n_heads * hd, group = c.n_heads / c.n_kv_heads, rows = a.n * group;
    const float scale = 1.0f / std::sqrt(float(hd));
    const size_t k_head_bytes = s.k_row_bytes / c.n_kv_heads, v_head_bytes = s.v_row_bytes / c.n_kv_heads;
    // The last tokens' tasks first: they see the most positions. Sizes differ by one at most.
    const int kvh = task % c.n_kv_heads, part = a.per_head - 1 - task / c.n_kv_heads;
    const int r0 = int(int64_t(rows) * part / a.per_head), nr = int(int64_t(rows) * (part + 1) / a.per_head) - r0;
    float* q = &s.att_q[th * kAttnRows * hd];
    float* out = &s.att_out[th * kAttnRows * hd];
    float* scores = &s.att[th * kAttnRows * s.n_ctx];
    float* scratch = &s.att_scratch[th * attn_scratch_floats(hd)];
    auto q_offset = [&](int r) { return size_t(a.row0 + r / group) * q_dim + size_t(kvh * group + r % group) * hd; };
    for (int i = 0; i < nr; i++)  // the 1/sqrt(head_dim) of the scores goes in with the query
        for (int d = 0; d < hd; d++) q[i * hd + d] = w.q[q_offset(r0 + i) + d] * scale;
    // The positions [k0, n_keys) some row of the task sees: up to what its last token sees,
    // from the first position in its first token's window (0 without a window). Row i's
    // score of position k0 + j is scores[i][j].
    auto first_seen = [&](int n_seen) { return c.sliding_window > 0 ? std::max(0, n_seen - c.sliding_window) : 0; };
    const int n_keys = a.pos + (r0 + nr - 1) / group + 1, k0 = first_seen(a.pos + r0 / group + 1);
    const uint8_t* keys = cache_row(s.key_cache.get(), c, s, k_head_bytes, layer, kvh, 0);
    attn_kernels(s.cache_types.k)->scores(q, nr, hd, keys, k0, n_keys - k0, scores, s.n_ctx, scratch);
    for (int i = 0; i < nr; i++) {
        float* row = scores + size_t(i) * s.n_ctx;
        const int n_seen = a.pos + (r0 + i) / group + 1 - k0;  // from k0: this token, everything before it
        const int first = first_seen(n_seen + k0) - k0;        // ... within the window
        std::fill(row, row + first, 0.0f);
        softmax(row + first, n_seen - first);
        std::fill(row + n_seen, row + n_keys - k0, 0.0f);
    }
    const uint8_t* values = cache_row(s.value_cache.get(), c, s, v_head_bytes, layer, kvh, k0);
    attn_kernels(s.cache_types.v)->values(scores, s.n_ctx, nr, values, v_head_bytes, n_keys - k0, hd, out, hd, scratch);
    for (int i = 0; i < nr; i++) std::memcpy(&w.xb2[q_offset(r0 + i)], out + i * hd, sizeof(float) * hd);
}

// RoPE and the cache for every token, then all the sequences' tasks, in one parallel region:
// with 8 generating sequences a region per sequence was 8 forks and joins per layer, each with
// only 4 kv heads' tasks to share between the threads, and the other thread waited while one
// rotated and stored the tokens.
using RopeFn = void (*)(float* x, int n_heads, const RopeTable& rope, int pos);
static void attention(const ModelConfig& c, RunState& w, const AttnSeq* seqs, int n_seqs, int layer, RopeFn rope) {
    const int hd = c.head_dim, q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
    int total = 0, rows = 0, threads = omp_get_max_threads();
    for (int i = 0; i < n_seqs; i++) {
        total += c.n_kv_heads * seqs[i].per_head;
        rows += seqs[i].n;
        threads = std::min(threads, attention_buffer_sets(c, *seqs[i].s));
    }
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
        for (int r = 0; r < rows; r++) {
            int i = 0;
            while (r >= seqs[i].row0 + seqs[i].n) i++;
            RunState& s = *seqs[i].s;
            const int pos = seqs[i].pos + r - seqs[i].row0;
            const size_t k_head_bytes = s.k_row_bytes / c.n_kv_heads, v_head_bytes = s.v_row_bytes / c.n_kv_heads;
            rope(&w.q[size_t(r) * q_dim], c.n_heads, s.rope, pos);
            rope(&w.k[size_t(r) * kv_dim], c.n_kv_heads, s.rope, pos);
            for (int h = 0; h < c.n_kv_heads; h++) {
                kv_cache_store_key(s.cache_types.k, &w.k[size_t(r) * kv_dim + size_t(h) * hd],
                                   cache_row(s.key_cache.get(), c, s, k_head_bytes, layer, h, 0), pos, hd);
                kv_cache_store_row(s.cache_types.v, &w.v[size_t(r) * kv_dim + size_t(h) * hd],
                                   cache_row(s.value_cache.get(), c, s, v_head_bytes, layer, h, pos), hd);
            }
        }
#pragma omp for schedule(dynamic, 1)
        for (int t = 0; t < total; t++) {
            int i = 0, task = t;
            while (task >= c.n_kv_heads * seqs[i].per_head) task -= c.n_kv_heads * seqs[i++].per_head;
            attention_task(c, w, seqs[i], layer, task, size_t(omp_get_thread_num()));
        }
    }
}

// The sequences' tokens as the rows of one batch: at most work.max_batch in all, already checked.
// Matmuls, norms and the feed-forward block run on all rows at once; RoPE, the cache and
// attention per sequence.
static void forward_rows(const Model& m, RunState& w, const SequenceChunk* seqs, int n_seqs) {
    const ModelConfig& c = m.config;
    const int dim = c.dim, hidden = c.hidden_dim, hd = c.head_dim;
    // RoPE rotates adjacent pairs of a head (llama) or its two halves (qwen3): model/family.h.
    const ModelFamily& family = family_of(c);
    const auto rope = family.rope_style == RopeStyle::halves ? apply_rope_halves : apply_rope;
    static thread_local std::vector<AttnSeq> attn_seqs;
    attn_seqs.clear();
    for (int i = 0, row0 = 0; i < n_seqs; row0 += seqs[i].n, i++)
        attn_seqs.push_back(
            {seqs[i].state, row0, seqs[i].n, seqs[i].pos, attention_tasks_per_head(c, *seqs[i].state, seqs[i].n)});
    int n = 0;  // rows in all
    for (int i = 0; i < n_seqs; i++)
        for (int t = 0; t < seqs[i].n; t++, n++)
            dequantize_row(m.token_embd.type, m.token_embd.data, dim, seqs[i].tokens[t], &w.x[size_t(n) * dim]);
    const RowGroups groups = row_groups(seqs, n_seqs, n);

    for (int l = 0; l < c.n_layers; l++) {
        const LayerWeights& L = m.layers[l];

        // Attention block: x += attn_output · attention(rope(attn_q · norm(x)), rope(attn_k · norm(x)), attn_v · norm(x)),
        // (qwen3: rope(qk_norm(attn_q · norm(x))), ...)
        for (int t = 0; t < n; t++)
            rmsnorm(&w.xb[size_t(t) * dim], &w.x[size_t(t) * dim], static_cast<const float*>(L.attn_norm.data), dim, c.rms_eps);
        matmul_tensors({{w.q.data(), &L.attn_q}, {w.k.data(), &L.attn_k}, {w.v.data(), &L.attn_v}}, w.xb.data(), groups);
        if (family.qkv_bias) {  // Qwen2: attn_q · norm(x) + attn_q.bias, and so for k and v
            const int q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
            for (int t = 0; t < n; t++) {
                add_bias(&w.q[size_t(t) * q_dim], L.attn_q_bias, q_dim);
                add_bias(&w.k[size_t(t) * kv_dim], L.attn_k_bias, kv_dim);
                add_bias(&w.v[size_t(t) * kv_dim], L.attn_v_bias, kv_dim);
            }
        }
        if (family.qk_norm) {  // Qwen3: each query and key head is RMS-normalized on its own, before RoPE
            for (int h = 0; h < n * c.n_heads; h++)
                rmsnorm(&w.q[size_t(h) * hd], &w.q[size_t(h) * hd], static_cast<const float*>(L.attn_q_norm.data), hd, c.rms_eps);
            for (int h = 0; h < n * c.n_kv_heads; h++)
                rmsnorm(&w.k[size_t(h) * hd], &w.k[size_t(h) * hd], static_cast<const float*>(L.attn_k_norm.data), hd, c.rms_eps);
        }
        attention(c, w, attn_seqs.data(), n_seqs, l, rope);
        matmul_tensor(w.xb.data(), L.attn_output, w.xb2.data(), groups);
        for (size_t i = 0; i < size_t(n) * dim; i++) w.x[i] += w.xb[i];

        // Feed-forward block: x += ffn_down · (silu(ffn_gate · norm(x)) * (ffn_up · norm(x)))
        for (int t = 0; t < n; t++)
            rmsnorm(&w.xb[size_t(t) * dim], &w.x[size_t(t) * dim], static_cast<const float*>(L.ffn_norm.data), dim, c.rms_eps);
        matmul_tensors({{w.hb.data(), &L.ffn_gate}, {w.hb2.data(), &L.ffn_up}}, w.xb.data(), groups);
        // Each token's row on its own thread: for a batch this was the longest stretch of one
        // thread working while the other waited (its exp is ~20 us for 8 TinyLlama tokens).
#pragma omp parallel for schedule(static) if (n > 1)
        for (int t = 0; t < n; t++) swiglu_f32(&w.hb[size_t(t) * hidden], &w.hb2[size_t(t) * hidden], size_t(hidden));
        matmul_tensor(w.xb.data(), L.ffn_down, w.hb.data(), groups);
        for (size_t i = 0; i < size_t(n) * dim; i++) w.x[i] += w.xb[i];
    }

    // Only the rows whose logits are wanted go through the (large) output projection: straight
    // into their sequence's buffer when one sequence wants them, else into work's and then
    // copied. They are grouped as the batch's rows are.
    int n_out = 0, wanting = 0;
    RowGroups out_groups{0, 0};
    for (int i = 0, row0 = 0; i < n_seqs; row0 += seqs[i].n, i++) {
        if (!seqs[i].logits) continue;
        wanting++;
        for (int t = seqs[i].all_logits ? 0 : seqs[i].n - 1; t < seqs[i].n; t++, n_out++)
            rmsnorm(&w.xb[size_t(n_out) * dim], &w.x[size_t(row0 + t) * dim], static_cast<const float*>(m.output_norm.data), dim,
                    c.rms_eps);
        if (row0 + seqs[i].n <= groups.few) out_groups.few = n_out;
    }
    out_groups.n = n_out;
    if (n_out == 0) return;
    const size_t vocab = c.vocab_size;
    if (wanting == 1) {
        for (int i = 0; i < n_seqs; i++)
            if (seqs[i].logits) matmul_tensor(seqs[i].logits, m.output, w.xb.data(), out_groups);
        return;
    }
    if (w.batch_logits.size() < n_out * vocab) w.batch_logits.resize(n_out * vocab);
    matmul_tensor(w.batch_logits.data(), m.output, w.xb.data(), out_groups);
    const float* from = w.batch_logits.data();
    for (int i = 0; i < n_seqs; i++) {
        if (!seqs[i].logits) continue;
        const size_t floats = (seqs[i].all_logits ? seqs[i].n : 1) * vocab;
        std::copy_n(from, floats, seqs[i].logits);
        from += floats;
    }
}

// "" when tokens[0..n) may be evaluated at positions pos.. of a context of n_ctx, else why not.
static std::string check_chunk(const ModelConfig& c, int n_ctx, const int* tokens, int n, int pos) {
    if (n < 1) return "nothing to evaluate";
    if (pos < 0 || n > n_ctx - pos)
        return "positions " + std::to_string(pos) + ".." + std::to_string(int64_t(pos) + n - 1) + " exceed the context of " +
               std::to_string(n_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c.vocab_size)
            return "token id " + std::to_string(tokens[i]) + " is outside the vocabulary (0.." +
                   std::to_string(c.vocab_size - 1) + ")";
    return "";
}

std::string forward_batch(const Model& m, RunState& work, const SequenceChunk* seqs, int n_seqs) {
    if (n_seqs < 1) return "nothing to evaluate";
    int64_t total = 0;
    for (int i = 0; i < n_seqs; i++) {
        if (!seqs[i].state) return "a sequence without a state";
        for (int j = 0; j < i; j++)
            if (seqs[j].state == seqs[i].state) return "one state is given for two sequences";
        std::string err = check_chunk(m.config, seqs[i].state->n_ctx, seqs[i].tokens, seqs[i].n, seqs[i].pos);
        if (!err.empty()) return err;
        total += seqs[i].n;
    }
    if (total > work.max_batch)
        return std::to_string(total) + " tokens in one batch, more than its buffers hold (" + std::to_string(work.max_batch) +
               ")";
    forward_rows(m, work, seqs, n_seqs);
    return "";
}

std::string check_logits(const float* logits, size_t n) {
    bool numbers = true, any_finite = n == 0;
    for (size_t i = 0; i < n; i++) {
        numbers &= !std::isnan(logits[i]) && logits[i] != INFINITY;
        any_finite |= std::isfinite(logits[i]);
    }
    return numbers && any_finite ? "" : "the model's output is not a number (NaN or infinite weights in the file?)";
}

std::string forward(const Model& m, RunState& s, const int* tokens, int n, int pos, float* logits, bool all_logits) {
    std::string err = check_chunk(m.config, s.n_ctx, tokens, n, pos);
    if (!err.empty()) return err;
    if (s.max_batch < 1) return "this state holds a cache only: it is evaluated in another state's batches";
    for (int done = 0; done < n; done += s.max_batch) {
        SequenceChunk chunk{&s, tokens + done, std::min(s.max_batch, n - done), pos + done, nullptr, all_logits};
        if (logits && all_logits)
            chunk.logits = logits + size_t(done) * m.config.vocab_size;
        else if (done + chunk.n == n)  // earlier chunks only fill the cache: no output projection for them
            chunk.logits = logits;
        forward_rows(m, s, &chunk, 1);
    }
    return "";
}

}  // namespace hearth
