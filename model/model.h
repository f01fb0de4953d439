// A loaded model: configuration, tokenizer and views of every weight, pointing into the memory
// map of its file (hearth v1/v2 or GGUF) or, for weights repacked at load, into `repacked`.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "formats/hearth.h"
#include "formats/mapped_file.h"
#include "model/checkpoint.h"
#include "model/config.h"

namespace hearth {

class Metadata;

// The fields are named after their roles in model/tensors.h, which binds them.
struct LayerWeights {
    TensorView attn_norm;                              // [dim] f32
    TensorView attn_q, attn_k, attn_v, attn_output;    // [q_dim, dim], [kv_dim, dim] x2, [dim, q_dim]
    TensorView attn_q_norm, attn_k_norm;               // [head_dim] f32 (qwen3 only)
    TensorView attn_q_bias, attn_k_bias, attn_v_bias;  // [q_dim], [kv_dim], [kv_dim] f32 (qwen2 only)
    TensorView ffn_norm;                               // [dim] f32
    TensorView ffn_gate, ffn_up, ffn_down;             // [hidden, dim] x2, [dim, hidden]
};

struct Model {
    MappedFile file;
    AnonymousMemory repacked;  // weights stored plain (v1, GGUF) repacked at load for the kernels, if any
    uint64_t repacked_bytes = 0;
    ModelConfig config;
    TokenizerSpec tokenizer;
    TensorView token_embd;   // [vocab, dim]
    TensorView output_norm;  // [dim] f32
    TensorView rope_freqs;   // [head_dim / 2] f32, when RoPE has frequency factors (ModelConfig::rope_freq_factors)
    TensorView output;       // [vocab, dim]; token_embd itself when embeddings are tied
    std::vector<LayerWeights> layers;
    std::vector<TensorView> all_tensors;
};

// Maps and checks the file (a hearth checkpoint or a GGUF file, told apart by their magic),
// and repacks weights for this build's kernels where they want another layout
// (TensorView::type then says so). "" on success, else a one-line reason.
std::string load_model(const std::string& path, Model* model);
// The same checks on a checkpoint already parsed (the loader tests use this); no repacking.
std::string bind_model(const ParsedCheckpoint& parsed, Model* model);
// The model's tokenizer, as run uses it: "" or why the embedded tokenizer cannot be used
// (including one larger than the model's vocabulary). A model without one is an error too.
std::string load_tokenizer(const Model& model, Tokenizer* tok);
// The checks a reader applies to a file's metadata (its limits, the configuration, the
// tokenizer), for metadata about to be written: "" or why the file would not load.
std::string check_model_metadata(const Metadata& meta);
// Every check `run` applies when it loads the file (parse, bind, tokenizer), without mapping
// more than it reads or repacking anything: what quantize asks of its output before it is
// renamed into place. "" or the reason.
std::string check_model_file(const std::string& path);

// Weight bytes read to generate one token: every matrix once, one row of the embedding.
uint64_t weight_bytes_per_token(const Model& m);

// The (type, layout) pairs of the matrices the forward pass multiplies (the embedding only as a
// tied output matrix), each once, in the order of the model's tensor table.
struct MatrixKind {
    uint32_t type;
    Layout layout;
};
std::vector<MatrixKind> matmul_kinds(const Model& m);

}  // namespace hearth
