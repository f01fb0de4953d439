// The Llama-2 forward pass over a batch of tokens, with a KV cache.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model.h"
#include "ops.h"

struct RunState {
    int n_ctx = 0;      // positions the KV cache holds
    int max_batch = 0;  // tokens evaluated together; longer inputs go in chunks
    RopeTable rope;
    // Activations of the current chunk, [max_batch][width].
    std::vector<float> x, xb, xb2, q, k, v, hb, hb2;
    std::vector<float> att;  // attention scores, one row of n_ctx per thread
    // [layer][position][kv_dim]; left uninitialised so untouched context costs no memory.
    std::unique_ptr<float[]> key_cache, value_cache;
};

// Bytes make_run_state allocates for a context of n_ctx positions: the KV cache, the RoPE
// table and the buffers, so that a program can check them against the machine's memory
// before anything large is allocated. It is fixed + per_position * n_ctx.
struct RunStateBytes {
    uint64_t fixed, per_position;
    uint64_t total(int n_ctx) const { return fixed + per_position * uint64_t(n_ctx); }
};
RunStateBytes run_state_bytes(const ModelConfig& c);

// Allocates buffers for a context of n_ctx positions. "" on success, or why not (never throws).
std::string make_run_state(const ModelConfig& c, int n_ctx, RunState* s);

// Evaluates tokens[0..n) at positions pos..pos+n-1, adding them to the KV cache.
// Writes the logits of the last token to logits[vocab], or with all_logits those of
// every token to logits[n][vocab]. "" on success, else why nothing was evaluated
// (a token id outside the vocabulary, or positions beyond the context).
std::string forward(const Model& m, RunState& s, const int* tokens, int n, int pos, float* logits,
                    bool all_logits = false);
