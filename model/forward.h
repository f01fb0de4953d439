// The forward pass of the Llama family (Llama-2/3, Mistral), Qwen2 and Qwen3 over a batch of tokens,
// with a KV cache.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kernels/quant_types.h"
#include "model/model.h"
#include "model/ops.h"

namespace hearth {

// What the KV cache holds: TYPE_F32, TYPE_F16 or TYPE_Q8_0 (blocks of 32 along each head's
// dims), for keys and values separately, as llama.cpp's -ctk / -ctv choose. f16 halves the
// memory and the bandwidth of f32 at no measurable cost in perplexity; q8_0 halves it again.
struct KvCacheTypes {
    TensorType k = TYPE_F16, v = TYPE_F16;
};

// llama.cpp's name of a cache type ("f32", "f16", "q8_0") -> *t; "" or why not.
std::string kv_cache_type_from_name(const std::string& name, TensorType* t);

// "" when the model can have a cache of these types, else why not in one line (q8_0 needs
// a head dimension that is a multiple of 32).
std::string check_kv_cache_types(const ModelConfig& c, KvCacheTypes types);

// Tokens evaluated together by default: longer inputs go in chunks of this many.
constexpr int kMaxBatch = 64;

struct RunState {
    int n_ctx = 0;      // positions the KV cache holds
    int max_batch = 0;  // tokens evaluated together; longer inputs go in chunks (0: a cache only, make_run_state)
    KvCacheTypes cache_types;
    size_t k_row_bytes = 0, v_row_bytes = 0;  // one position of one layer: n_kv_heads * head_dim values
    RopeTable rope;
    // Activations of the current chunk, [max_batch][width].
    std::vector<float> x, xb, xb2, q, k, v, hb, hb2;
    // Attention's buffers, one set per thread: scores [attention rows][n_ctx], the scaled query
    // rows and their outputs [attention rows][head_dim], the kernels' scratch.
    std::vector<float> att_q, att_out, att_scratch;
    std::unique_ptr<float[]> att;  // uninitialised, as the cache: touched as far as the context has come
    // [layer][kv head][position][head_dim] in the cache types (cache_row, forward.cpp): one
    // head's rows are contiguous; f32 and f16 keys are tiles of 16 positions within them
    // (kernels/attention.h). Left uninitialised so that positions not yet reached cost no
    // memory (past the page each head's rows have begun).
    std::unique_ptr<uint8_t[]> key_cache, value_cache;
    // forward_batch's logits when several sequences want some: [rows][vocab], grown on demand.
    std::vector<float> batch_logits;
};

// Bytes make_run_state allocates for a context of n_ctx positions, at most: the KV cache, the
// RoPE table and the buffers, so that a program can check them against the machine's memory
// before anything large is allocated. It is fixed + per_position * n_ctx; fixed includes the
// kAttnKeyTile - 1 positions by which the cache may round n_ctx up to whole key tiles.
struct RunStateBytes {
    uint64_t fixed, per_position;
    uint64_t total(int n_ctx) const { return fixed + per_position * uint64_t(n_ctx); }
};
RunStateBytes run_state_bytes(const ModelConfig& c, KvCacheTypes types = {}, int max_batch = kMaxBatch);

// Allocates buffers for a context of n_ctx positions. "" on success, or why not (never throws).
// The activations hold max_batch tokens; 0 makes a state that holds one sequence's cache only,
// to be evaluated in batches whose activations are another state's (forward_batch's work).
std::string make_run_state(const ModelConfig& c, int n_ctx, RunState* s, KvCacheTypes types = {}, int max_batch = kMaxBatch);

// One sequence's share of a batched step (forward_batch): tokens[0..n) at positions
// pos..pos+n-1 of the sequence's own KV cache, `state`, which they are added to.
struct SequenceChunk {
    RunState* state = nullptr;
    const int* tokens = nullptr;
    int n = 0, pos = 0;
    float* logits = nullptr;  // null: none wanted; else the last token's [vocab], or with all_logits every token's [n][vocab]
    bool all_logits = false;
};

// Evaluates the tokens of several sequences in one pass over the weights: each weight matrix
// is read once for all of them (what bounds generation is that read, not the arithmetic), and
// attention stays per sequence, over its own cache and positions. The activations are held in
// `work`'s buffers: any RunState of this model, one of the sequences' own included; all the
// sequences together have at most work.max_batch tokens, and no state appears twice. The
// leading sequences of fewer than kFewTokenRowsBelow tokens each (kernels/table.h: generated
// tokens and their drafts, which the server puts first) are evaluated apart from the rest when
// there is a rest, a second pass over the weights: so a prompt read beside them cannot change
// their bits: they are those of each token alone (kernels/matmul.h, token_bits).
// "" on success, else why nothing was evaluated.
std::string forward_batch(const Model& m, RunState& work, const SequenceChunk* seqs, int n_seqs);

// Evaluates tokens[0..n) at positions pos..pos+n-1, adding them to the KV cache: forward_batch
// with one sequence, in chunks of max_batch tokens.
// Writes the logits of the last token to logits[vocab], or with all_logits those of
// every token to logits[n][vocab]. "" on success, else why nothing was evaluated
// (a token id outside the vocabulary, or positions beyond the context).
std::string forward(const Model& m, RunState& s, const int* tokens, int n, int pos, float* logits, bool all_logits = false);

// "" when n logits can be sampled and scored (no NaN, no +infinity, not all -infinity), else why
// not: a file's NaN or infinite weights, which would give id 0 at every step and perplexity nan
// without a word. The callers that sample and score ask it (model/generate.cpp, cli/perplexity.cpp).
std::string check_logits(const float* logits, size_t n);

}  // namespace hearth
