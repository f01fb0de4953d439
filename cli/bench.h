// Prompt-processing and generation speed, measured as llama-bench does: ppN evaluates N
// random tokens in one batch from an empty cache; tgN generates N tokens one at a time. With
// n_seqs > 1, tgN advances n_seqs sequences together, one token of each per forward_batch call
// (as the server's slots are batched), each with its own KV cache, and counts all their tokens.
#pragma once
#include <cstdint>
#include <string>

#include "model/forward.h"
#include "model/model.h"

namespace hearth {

struct BenchResult {
    double pp_tok_s = 0;           // median over the repetitions
    double tg_tok_s = 0;           // median over the repetitions; all sequences' tokens together
    uint64_t bytes_per_token = 0;  // weight bytes one generated token reads
};

// "" on success. n_pp or n_tg may be 0 to skip that part; 1 <= n_seqs <= kMaxBatch.
std::string bench_model(const Model& m, int n_pp, int n_tg, int n_seqs, int reps, KvCacheTypes cache_types, BenchResult* out);

}  // namespace hearth
