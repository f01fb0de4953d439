// The tensors a model has: one row per role (attn_q, ffn_down, ...), and nothing else in
// hearth lists weights. Binding a loaded file, the importers (Hugging Face, GGUF, llama2.c),
// the checkpoint and GGUF writers, the load-time repacking and --bench's bytes per token all
// read kTensorRoles. A new model family is rows here (with the `need` that says when they are
// present) plus what its forward pass does differently.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "formats/hearth.h"

namespace hearth {

struct LayerWeights;
struct Model;

// The extent of one dimension, as a rule on the configuration.
enum class Extent : uint8_t { dim, hidden, q_dim, kv_dim, vocab, head_dim, rope_pairs /* head_dim / 2 */ };

// When a role's tensor is in a model.
enum class Need : uint8_t {
    always,
    untied_output,  // only when the output projection is not the token embedding
    rope_freqs,     // only when RoPE has frequency factors (ModelConfig::rope_freq_factors: Llama-3)
    qk_norm,        // only in families that normalize query and key heads (ModelFamily::qk_norm: qwen3)
    qkv_bias,       // only in families with q/k/v projection biases (ModelFamily::qkv_bias: qwen2)
};

// How Hugging Face orders the rows of a q/k projection: by rotate-half pairs, which hearth
// reorders into adjacent pairs while importing a family whose RoPE rotates adjacent pairs
// (ModelFamily::rope_style in model/family.h; docs/format.md, "RoPE convention").
enum class HfRope : uint8_t { none, q_heads, kv_heads };

struct TensorRole {
    const char* name;  // hearth's and GGUF's name; per-layer roles get the prefix "blk.N."
    bool per_layer;
    bool matrix;        // a weight matrix [rows, cols] of any type run multiplies; else an f32 vector [cols]
    Extent rows, cols;  // rows is unused for vectors
    Need need;
    const char* hf_name;  // the name in a Hugging Face checkpoint; "%d" stands for the layer; "" for
                          // none (rope_freqs: the importer computes it from config.json)
    HfRope hf_rope;
    const char* llama2c_name;  // the field of llama2.c's TransformerWeights ("" for none)
    // Where binding puts the view: a member of LayerWeights (per-layer) or of Model.
    TensorView LayerWeights::*layer_field;
    TensorView Model::*model_field;
};

// In llama2.c's file order (its importer relies on it); hearth writes files layer by layer
// (model_tensors below).
extern const TensorRole kTensorRoles[];
extern const int kTensorRoleCount;

// One tensor of a particular model: its role, layer (-1 for whole-model roles), name and shape.
struct ModelTensor {
    const TensorRole* role;
    int layer;
    std::string name;
    int n_dims;
    uint64_t shape[kMaxDims];  // outermost first: [rows, cols] or [cols]
};

// The tensors a model of this configuration has, in hearth's file order: the whole-model roles
// before the first per-layer role, then each layer's, then the rest.
std::vector<ModelTensor> model_tensors(const ModelConfig& c);

// The value of an extent for a configuration.
uint64_t extent_value(Extent e, const ModelConfig& c);

// Whether a role's tensor is part of a model of this configuration.
bool role_needed(const TensorRole& r, const ModelConfig& c);

// The role a hearth/GGUF tensor name belongs to, and its layer (-1 for whole-model roles);
// nullptr for a name no role has.
const TensorRole* role_of(const std::string& name, int* layer);

// The checkpoint's tensor for each of model_tensors(c), by name, checked to have that shape
// (a tensor the configuration does not use is an error too). "" or a one-line reason naming the tensor.
struct MatchedTensor {
    ModelTensor want;
    const TensorView* got;
};
std::string match_tensors(const ModelConfig& c, const std::vector<TensorView>& tensors, std::vector<MatchedTensor>* out);

}  // namespace hearth
