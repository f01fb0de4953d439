#include "model/tensors.h"

#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "model/model.h"

namespace hearth {

// clang-format off
const TensorRole kTensorRoles[] = {
//   name                  layer  matrix rows            cols            need                 Hugging Face name                            HF RoPE order     llama2.c
    {"token_embd.weight",  false, true,  Extent::vocab,  Extent::dim,    Need::always,        "model.embed_tokens.weight",                 HfRope::none,     "token_embedding_table", nullptr, &Model::token_embd},
    {"rope_freqs.weight",  false, false, Extent::rope_pairs, Extent::rope_pairs, Need::rope_freqs, "",                                   HfRope::none,     "", nullptr, &Model::rope_freqs},
    {"attn_norm.weight",   true,  false, Extent::dim,    Extent::dim,    Need::always,        "model.layers.%d.input_layernorm.weight",    HfRope::none,     "rms_att_weight", &LayerWeights::attn_norm, nullptr},
    {"attn_q.weight",      true,  true,  Extent::q_dim,  Extent::dim,    Need::always,        "model.layers.%d.self_attn.q_proj.weight",   HfRope::q_heads,  "wq", &LayerWeights::attn_q, nullptr},
    {"attn_k.weight",      true,  true,  Extent::kv_dim, Extent::dim,    Need::always,        "model.layers.%d.self_attn.k_proj.weight",   HfRope::kv_heads, "wk", &LayerWeights::attn_k, nullptr},
    {"attn_v.weight",      true,  true,  Extent::kv_dim, Extent::dim,    Need::always,        "model.layers.%d.self_attn.v_proj.weight",   HfRope::none,     "wv", &LayerWeights::attn_v, nullptr},
    // The biases' elements are in Hugging Face's order: only halves families have them (model/family.h).
    {"attn_q.bias",        true,  false, Extent::q_dim,  Extent::q_dim,  Need::qkv_bias,      "model.layers.%d.self_attn.q_proj.bias",     HfRope::none,     "", &LayerWeights::attn_q_bias, nullptr},
    {"attn_k.bias",        true,  false, Extent::kv_dim, Extent::kv_dim, Need::qkv_bias,      "model.layers.%d.self_attn.k_proj.bias",     HfRope::none,     "", &LayerWeights::attn_k_bias, nullptr},
    {"attn_v.bias",        true,  false, Extent::kv_dim, Extent::kv_dim, Need::qkv_bias,      "model.layers.%d.self_attn.v_proj.bias",     HfRope::none,     "", &LayerWeights::attn_v_bias, nullptr},
    {"attn_q_norm.weight", true,  false, Extent::head_dim, Extent::head_dim, Need::qk_norm,   "model.layers.%d.self_attn.q_norm.weight",   HfRope::none,     "", &LayerWeights::attn_q_norm, nullptr},
    {"attn_k_norm.weight", true,  false, Extent::head_dim, Extent::head_dim, Need::qk_norm,   "model.layers.%d.self_attn.k_norm.weight",   HfRope::none,     "", &LayerWeights::attn_k_norm, nullptr},
    {"attn_output.weight", true,  true,  Extent::dim,    Extent::q_dim,  Need::always,        "model.layers.%d.self_attn.o_proj.weight",   HfRope::none,     "wo", &LayerWeights::attn_output, nullptr},
    {"ffn_norm.weight",    true,  false, Extent::dim,    Extent::dim,    Need::always,        "model.layers.%d.post_attention_layernorm.weight", HfRope::none, "rms_ffn_weight", &LayerWeights::ffn_norm, nullptr},
    {"ffn_gate.weight",    true,  true,  Extent::hidden, Extent::dim,    Need::always,        "model.layers.%d.mlp.gate_proj.weight",      HfRope::none,     "w1", &LayerWeights::ffn_gate, nullptr},
    {"ffn_down.weight",    true,  true,  Extent::dim,    Extent::hidden, Need::always,        "model.layers.%d.mlp.down_proj.weight",      HfRope::none,     "w2", &LayerWeights::ffn_down, nullptr},
    {"ffn_up.weight",      true,  true,  Extent::hidden, Extent::dim,    Need::always,        "model.layers.%d.mlp.up_proj.weight",        HfRope::none,     "w3", &LayerWeights::ffn_up, nullptr},
    {"output_norm.weight", false, false, Extent::dim,    Extent::dim,    Need::always,        "model.norm.weight",                         HfRope::none,     "rms_final_weight", nullptr, &Model::output_norm},
    {"output.weight",      false, true,  Extent::vocab,  Extent::dim,    Need::untied_output, "lm_head.weight",                            HfRope::none,     "wcls", nullptr, &Model::output},
};
// clang-format on
const int kTensorRoleCount = int(sizeof kTensorRoles / sizeof kTensorRoles[0]);

uint64_t extent_value(Extent e, const ModelConfig& c) {
    switch (e) {
        case Extent::dim: return uint64_t(c.dim);
        case Extent::hidden: return uint64_t(c.hidden_dim);
        case Extent::q_dim: return uint64_t(c.n_heads) * uint64_t(c.head_dim);
        case Extent::kv_dim: return uint64_t(c.n_kv_heads) * uint64_t(c.head_dim);
        case Extent::vocab: return uint64_t(c.vocab_size);
        case Extent::head_dim: return uint64_t(c.head_dim);
        case Extent::rope_pairs: return uint64_t(c.head_dim / 2);
    }
    return 0;
}

bool role_needed(const TensorRole& r, const ModelConfig& c) {
    switch (r.need) {
        case Need::always: return true;
        case Need::untied_output: return !c.tied_embeddings;
        case Need::rope_freqs: return !c.rope_freq_factors.empty();
        case Need::qk_norm: return family_of(c).qk_norm;
        case Need::qkv_bias: return family_of(c).qkv_bias;
    }
    return false;
}

static ModelTensor instance(const TensorRole& r, int layer, const ModelConfig& c) {
    ModelTensor t{&r, layer, r.per_layer ? "blk." + std::to_string(layer) + "." + r.name : r.name, 0, {1, 1, 1, 1}};
    if (r.matrix) {
        t.n_dims = 2;
        t.shape[0] = extent_value(r.rows, c);
        t.shape[1] = extent_value(r.cols, c);
    } else {
        t.n_dims = 1;
        t.shape[0] = extent_value(r.cols, c);
    }
    return t;
}

std::vector<ModelTensor> model_tensors(const ModelConfig& c) {
    std::vector<ModelTensor> out;
    int first_layer_role = 0;
    while (first_layer_role < kTensorRoleCount && !kTensorRoles[first_layer_role].per_layer) first_layer_role++;
    for (int i = 0; i < first_layer_role; i++)
        if (role_needed(kTensorRoles[i], c)) out.push_back(instance(kTensorRoles[i], -1, c));
    for (int l = 0; l < c.n_layers; l++)
        for (int i = 0; i < kTensorRoleCount; i++)
            if (kTensorRoles[i].per_layer && role_needed(kTensorRoles[i], c)) out.push_back(instance(kTensorRoles[i], l, c));
    for (int i = first_layer_role; i < kTensorRoleCount; i++)
        if (!kTensorRoles[i].per_layer && role_needed(kTensorRoles[i], c)) out.push_back(instance(kTensorRoles[i], -1, c));
    return out;
}

const TensorRole* role_of(const std::string& name, int* layer) {
    *layer = -1;
    std::string rest = name;
    if (name.compare(0, 4, "blk.") == 0) {
        const char* digits = name.c_str() + 4;
        char* end = nullptr;
        const long l = std::strtol(digits, &end, 10);
        if (end == digits || *end != '.' || l < 0 || l > 100000 || (digits[0] == '0' && end - digits > 1)) return nullptr;
        *layer = int(l);
        rest = end + 1;
    }
    for (int i = 0; i < kTensorRoleCount; i++)
        if (kTensorRoles[i].per_layer == (*layer >= 0) && rest == kTensorRoles[i].name) return &kTensorRoles[i];
    return nullptr;
}

std::string match_tensors(const ModelConfig& c, const std::vector<TensorView>& tensors, std::vector<MatchedTensor>* out) {
    std::unordered_map<std::string, const TensorView*> by_name;
    for (const TensorView& t : tensors) by_name[t.name] = &t;
    out->clear();
    for (ModelTensor& want : model_tensors(c)) {
        auto it = by_name.find(want.name);
        if (it == by_name.end()) return "tensor " + want.name + " is missing";
        const TensorView& t = *it->second;
        bool same_shape = t.n_dims == want.n_dims;
        for (int d = 0; same_shape && d < want.n_dims; d++) same_shape = t.shape[d] == want.shape[d];
        if (!same_shape)
            return "tensor " + want.name + " has shape " + shape_string(t.n_dims, t.shape) + ", the configuration needs " +
                   shape_string(want.n_dims, want.shape);
        out->push_back({std::move(want), &t});
    }
    // A tensor the configuration does not use is refused rather than left out: llama.cpp loads
    // no file with a tensor it does not use (llama_model_loader: "wrong number of tensors"), so
    // in a file it runs every tensor counts, and hearth would compute without it (a llama file's
    // optional biases, attn_output.bias and ffn_*.bias, or a fused attn_qkv.weight).
    if (out->size() != tensors.size()) {
        std::unordered_map<std::string, bool> used;
        for (const MatchedTensor& m : *out) used[m.want.name] = true;
        for (const TensorView& t : tensors)
            if (!used.count(t.name))
                return "tensor " + t.name + " is not part of a " + c.arch +
                       " model as hearth computes it (hearth would compute without it: not supported)";
    }
    return "";
}

}  // namespace hearth
