// Perplexity of a token sequence, computed as llama.cpp's perplexity tool does so the
// numbers compare: the text is cut into windows of n_ctx tokens, each window starts with
// BOS in place of its first token, and only the second half of each window is scored
// (every scored token then has at least n_ctx/2 tokens of context).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/model.h"

namespace hearth {

struct PerplexityResult {
    double perplexity = 0;
    double mean_nll = 0;  // natural log, per scored token
    long scored = 0;
    int windows = 0;
};

// How many windows of n_ctx the tokens make; "" or why they make none to score.
std::string perplexity_windows(size_t n_tokens, int n_ctx, int* windows);

// `progress(window, total, running_perplexity)` is called after each window.
std::string compute_perplexity(const Model& m, const std::vector<int>& tokens, int n_ctx, KvCacheTypes cache_types,
                               PerplexityResult* out, const std::function<void(int, int, double)>& progress = nullptr);

}  // namespace hearth
