// Prompt-processing and generation speed, measured as llama-bench does: ppN evaluates N
// random tokens in one batch from an empty cache; tgN generates N tokens one at a time.
#pragma once
#include <cstdint>
#include <string>

#include "model/forward.h"
#include "model/model.h"

namespace hearth {

struct BenchResult {
    double pp_tok_s = 0;           // median over the repetitions
    double tg_tok_s = 0;           // median over the repetitions
    uint64_t bytes_per_token = 0;  // weight bytes one generated token reads
};

// "" on success. n_pp or n_tg may be 0 to skip that part.
std::string bench_model(const Model& m, int n_pp, int n_tg, int reps, KvCacheTypes cache_types, BenchResult* out);

}  // namespace hearth
