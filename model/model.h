// A loaded hearth checkpoint: configuration, tokenizer bytes and views of every weight,
// pointing into the memory map (or, for weights repacked at load, into `repacked`).
#pragma once
#include <string>
#include <vector>

#include "config.h"
#include "format.h"
#include "mapped_file.h"

struct LayerWeights {
    TensorView attn_norm;            // [dim] f32
    TensorView wq, wk, wv, wo;       // [n_heads*head_dim, dim], [kv_dim, dim] ×2, [dim, n_heads*head_dim]
    TensorView ffn_norm;             // [dim] f32
    TensorView w_gate, w_up, w_down; // [hidden, dim] ×2, [dim, hidden]
};

struct Model {
    MappedFile file;
    AnonymousMemory repacked;  // weights repacked at load for this build's kernels, if any
    ModelConfig config;
    const void* tokenizer = nullptr;  // SentencePiece model bytes, inside the map
    size_t tokenizer_bytes = 0;
    TensorView token_embd;   // [vocab, dim]
    TensorView output_norm;  // [dim] f32
    TensorView output;       // [vocab, dim]; token_embd itself when embeddings are tied
    std::vector<LayerWeights> layers;
    std::vector<TensorView> all_tensors;
};

// Maps and checks the file, and repacks weights for this build's kernels where they want
// another layout (TensorView::type then says so). "" on success, else a one-line reason.
std::string load_model(const std::string& path, Model* model);
// The same checks on a checkpoint already in memory (the loader tests use this); no repacking.
std::string bind_model(const ParsedCheckpoint& parsed, Model* model);
