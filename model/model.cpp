#include "model.h"

#include <map>
#include <tuple>

#include "../kernels/matmul.h"
#include "../kernels/rows_x8.h"
#include "../kernels/quant_types.h"

static std::string shape_string(const TensorView& t) {
    std::string s = "[";
    for (int i = 0; i < t.n_dims; i++) s += (i ? ", " : "") + std::to_string(t.shape[i]);
    return s + "]";
}

std::string bind_model(const ParsedCheckpoint& parsed, Model* m) {
    m->config = parsed.config;
    m->tokenizer = parsed.tokenizer;
    m->tokenizer_bytes = parsed.tokenizer_bytes;
    m->all_tensors = parsed.tensors;
    std::map<std::string, const TensorView*> by_name;
    for (const TensorView& t : m->all_tensors) by_name[t.name] = &t;

    const ModelConfig& c = m->config;
    const uint64_t q_dim = uint64_t(c.n_heads) * c.head_dim, kv_dim = uint64_t(c.n_kv_heads) * c.head_dim;
    std::string err;
    // Finds a tensor and checks its shape; a matrix must also be of a type matmul can run.
    auto get = [&](const std::string& name, std::vector<uint64_t> shape, bool is_matrix, TensorView* out) {
        if (!err.empty()) return;
        auto it = by_name.find(name);
        if (it == by_name.end()) { err = "tensor " + name + " is missing"; return; }
        const TensorView& t = *it->second;
        bool ok = t.n_dims == int(shape.size());
        for (size_t i = 0; ok && i < shape.size(); i++) ok = t.shape[i] == shape[i];
        if (!ok) { err = "tensor " + name + " has shape " + shape_string(t) + ", the configuration needs " +
                         shape_string(TensorView{name, 0, int(shape.size()), {shape[0], shape.size() > 1 ? shape[1] : 1, 1, 1}}); return; }
        if (is_matrix && !matmul_supports(t.type)) { err = "tensor " + name + " has type " + type_name(t.type) + ", which run cannot multiply"; return; }
        if (!is_matrix && t.type != TYPE_F32) { err = "tensor " + name + " must be f32, not " + type_name(t.type); return; }
        *out = t;
    };
    const uint64_t dim = c.dim, hidden = c.hidden_dim, vocab = c.vocab_size;
    get("token_embd.weight", {vocab, dim}, true, &m->token_embd);
    get("output_norm.weight", {dim}, false, &m->output_norm);
    if (c.tied_embeddings) {
        m->output = m->token_embd;
    } else {
        get("output.weight", {vocab, dim}, true, &m->output);
    }
    m->layers.assign(c.n_layers, LayerWeights{});
    for (int l = 0; l < c.n_layers && err.empty(); l++) {
        std::string p = "blk." + std::to_string(l) + ".";
        LayerWeights& L = m->layers[l];
        get(p + "attn_norm.weight", {dim}, false, &L.attn_norm);
        get(p + "attn_q.weight", {q_dim, dim}, true, &L.wq);
        get(p + "attn_k.weight", {kv_dim, dim}, true, &L.wk);
        get(p + "attn_v.weight", {kv_dim, dim}, true, &L.wv);
        get(p + "attn_output.weight", {dim, q_dim}, true, &L.wo);
        get(p + "ffn_norm.weight", {dim}, false, &L.ffn_norm);
        get(p + "ffn_gate.weight", {hidden, dim}, true, &L.w_gate);
        get(p + "ffn_up.weight", {hidden, dim}, true, &L.w_up);
        get(p + "ffn_down.weight", {dim, hidden}, true, &L.w_down);
    }
    return err;
}

// Q4_0 / Q8_0 / Q4_K matrices into the row-interleaved layout of this build's kernels
// (kernels/rows_x8.h), copied into one anonymous buffer; the file's pages of them are then
// dropped. The token embedding stays plain: its rows are looked up one at a time (and with tied
// embeddings it is the output matrix too).
static std::string repack_for_kernels(Model* m) {
    std::vector<TensorView*> views;
    for (LayerWeights& L : m->layers)
        for (TensorView* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) views.push_back(t);
    views.push_back(&m->output);
    auto wanted = [&](const TensorView* t) { return x8_type_for(t->type) != 0 && t->data != m->token_embd.data; };
    // Offsets in the buffer by source: a tensor seen twice (the same data, type and shape) is
    // repacked once. Views that share data otherwise (a file may overlap tensors) get copies
    // of their own, so that none reads past its region.
    using Source = std::tuple<const void*, uint32_t, uint64_t, uint64_t>;  // data, type, rows, cols
    auto source = [](const TensorView* t) { return Source{t->data, t->type, t->rows(), t->cols()}; };
    std::map<Source, size_t> offset;
    std::vector<const TensorView*> sources;
    size_t total = 0;
    for (TensorView* t : views) {
        if (!wanted(t) || offset.count(source(t))) continue;
        offset[source(t)] = total;
        sources.push_back(t);
        total += (t->bytes + 63) / 64 * 64;
    }
    if (total == 0) return "";
    std::string err = m->repacked.allocate(total);
    if (!err.empty()) return "repacking weights for the kernels: " + err;
    char* base = static_cast<char*>(m->repacked.data());
    for (const TensorView* t : sources)
        repack_rows_to_x8(t->type, t->data, base + offset[source(t)], int64_t(t->rows()), int64_t(t->cols()));
    for (const TensorView* t : sources) m->file.release(t->data, t->bytes);  // after all copies: sources may overlap
    for (TensorView* t : views) {
        if (!wanted(t)) continue;
        t->data = base + offset[source(t)];
        t->type = x8_type_for(t->type);
    }
    return "";
}

std::string load_model(const std::string& path, Model* m) {
    std::string err = m->file.open(path);
    if (!err.empty()) return err;
    ParsedCheckpoint parsed;
    err = parse_checkpoint(m->file.data(), m->file.size(), &parsed);
    if (!err.empty()) return path + ": " + err;
    err = bind_model(parsed, m);
    if (!err.empty()) return path + ": " + err;
    err = repack_for_kernels(m);
    return err.empty() ? "" : path + ": " + err;
}
