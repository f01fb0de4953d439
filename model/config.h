// The hyperparameters of a Llama-family model and of its tokenizer, as a checkpoint states
// them (hearth v1 header, hearth v2 or GGUF metadata, config.json, a llama2.c header).
#pragma once
#include <cstdint>
#include <string>

class Metadata;

struct ModelConfig {
    std::string arch = "llama";  // the family: its tensors (model/tensors.h) and forward pass
    std::string name;            // what the model is called (general.name), "" if unknown: kept to hand on
    int dim = 0;         // residual stream width
    int hidden_dim = 0;  // SwiGLU inner width
    int n_layers = 0;
    int n_heads = 0;
    int n_kv_heads = 0;  // < n_heads: grouped-query attention
    int head_dim = 0;    // usually dim / n_heads, but not always
    int vocab_size = 0;  // rows of the embedding and output matrices (may exceed the tokenizer's pieces)
    int max_seq_len = 0; // context length the model was trained for
    bool tied_embeddings = false;  // the output projection is token_embd.weight
    float rope_theta = 10000.0f;
    float rms_eps = 1e-5f;
    // Tokens. -1: none.
    int bos_id = 1;
    int eos_id = 2;
    bool add_bos = true;  // prompts start with BOS
    // The chat template: the name of a built-in one (model/chat_template.h), "" for none, and
    // the Jinja text the checkpoint came with, kept to hand on (GGUF export), "" if unknown.
    std::string chat_template;
    std::string chat_template_jinja;
};

// "" when the configuration is one hearth can run, else what is wrong with it.
std::string validate_config(const ModelConfig& c);

// The configuration as metadata under GGUF's keys (general.architecture, general.name, llama.block_count,
// tokenizer.ggml.bos_token_id, ...), and back. Tied embeddings are not a key: a model without
// output.weight has them, in both formats. config_from_metadata leaves vocab_size 0 when no
// key gives it (GGUF files often have none; the embedding's shape does). "" or why not.
void config_to_metadata(const ModelConfig& c, Metadata* m);
std::string config_from_metadata(const Metadata& m, ModelConfig* c);
