// The hyperparameters of a Llama-family model and of its tokenizer, as a checkpoint states
// them (hearth v1 header, hearth v2 or GGUF metadata, config.json, a llama2.c header).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/family.h"

namespace hearth {

class Metadata;

struct ModelConfig {
    // The family (general.architecture): its row in model/families/ says what sets it apart.
    std::string arch = "llama";
    std::string name;    // what the model is called (general.name), "" if unknown: kept to hand on
    int dim = 0;         // residual stream width
    int hidden_dim = 0;  // SwiGLU inner width
    int n_layers = 0;
    int n_heads = 0;
    int n_kv_heads = 0;            // < n_heads: grouped-query attention
    int head_dim = 0;              // usually dim / n_heads, but not always
    int vocab_size = 0;            // rows of the embedding and output matrices (may exceed the tokenizer's pieces)
    int max_seq_len = 0;           // context length the model was trained for
    bool tied_embeddings = false;  // the output projection is token_embd.weight
    float rope_theta = 10000.0f;
    float rms_eps = 1e-5f;
    // RoPE's per-frequency divisors, [head_dim / 2]: frequency i is theta^(-2i/head_dim) /
    // rope_freq_factors[i]. Llama-3.1's "llama3" rope scaling is this (convert/import_hf.cpp computes
    // it from config.json's rope_scaling); files hold it as the tensor rope_freqs.weight, as GGUF
    // does, and finish_config reads it from there. Empty: none.
    std::vector<float> rope_freq_factors;
    // > 0: a position attends only to itself and the sliding_window - 1 positions before it
    // (Mistral; Hugging Face's mask keeps key positions k > q - sliding_window). 0: no limit.
    int sliding_window = 0;
    // Tokens. -1: none.
    int bos_id = 1;
    int eos_id = 2;
    bool add_bos = true;  // prompts start with BOS
    // The chat template as the checkpoint states it: the name of a built-in one
    // (hearth.chat_template), and the Jinja text it came with (tokenizer.chat_template); "" for
    // none. A chat chooses from them (resolve_chat_template, chat/chat_template.h).
    std::string chat_template;
    std::string chat_template_jinja;
};

// The family row of a configuration (model/family.h): what forward() and the importers do for
// it. validate_config refuses an architecture without a row before anything reads it.
const ModelFamily& family_of(const ModelConfig& c);

// "" when the configuration is one hearth can run, else what is wrong with it.
std::string validate_config(const ModelConfig& c);

// The configuration as metadata under GGUF's keys (general.architecture, general.name, llama.block_count,
// tokenizer.ggml.bos_token_id, ...), and back. Tied embeddings are not a key: a model without
// output.weight has them, in both formats; nor are RoPE's frequency factors: the tensor
// rope_freqs.weight holds them. config_from_metadata leaves vocab_size 0 when no
// key gives it (GGUF files often have none; the embedding's shape does). "" or why not.
void config_to_metadata(const ModelConfig& c, Metadata* m);
std::string config_from_metadata(const Metadata& m, ModelConfig* c);

}  // namespace hearth
