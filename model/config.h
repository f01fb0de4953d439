// The hyperparameters of a Llama-family model, as stored in a hearth checkpoint.
#pragma once
#include <cstdint>
#include <string>

struct ModelConfig {
    int dim = 0;         // residual stream width
    int hidden_dim = 0;  // SwiGLU inner width
    int n_layers = 0;
    int n_heads = 0;
    int n_kv_heads = 0;  // < n_heads: grouped-query attention
    int head_dim = 0;    // usually dim / n_heads, but not always
    int vocab_size = 0;
    int max_seq_len = 0;
    int bos_id = 1;
    int eos_id = 2;
    bool tied_embeddings = false;
    float rope_theta = 10000.0f;
    float rms_eps = 1e-5f;
    std::string arch = "llama";
    std::string chat_template;
};

// "" when the configuration is one hearth can run, else what is wrong with it.
std::string validate_config(const ModelConfig& c);
