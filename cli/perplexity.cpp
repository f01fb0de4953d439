#include "cli/perplexity.h"

#include <algorithm>
#include <cmath>

#include "model/forward.h"

namespace hearth {

std::string perplexity_windows(size_t n_tokens, int n_ctx, int* windows) {
    // Window positions n_ctx/2 .. n_ctx-2 are scored: fewer than 3 positions score none.
    if (n_ctx < 3) return "perplexity needs a context of at least 3 tokens (-c)";
    *windows = int(n_tokens / size_t(n_ctx));
    if (*windows < 1) {
        const std::string count = std::to_string(n_tokens) + (n_tokens == 1 ? " token" : " tokens");
        if (n_tokens < 3) return "the text is " + count + ": perplexity needs at least 3";
        return "the text is " + count + ", less than one window of " + std::to_string(n_ctx) + " (-c " +
               std::to_string(n_tokens) + " or less fits it)";
    }
    return "";
}

std::string compute_perplexity(const Model& m, const std::vector<int>& tokens, int n_ctx, KvCacheTypes cache_types,
                               PerplexityResult* out, const std::function<void(int, int, double)>& progress) {
    const int vocab = m.config.vocab_size;
    int windows = 0;
    std::string err = perplexity_windows(tokens.size(), n_ctx, &windows);
    if (!err.empty()) return err;
    RunState s;
    err = make_run_state(m.config, n_ctx, &s, cache_types);
    if (!err.empty()) return err;
    // The logits of one chunk at a time: a whole window's would be n_ctx * vocab floats, 2 GiB
    // for Llama-3's 128256-token vocabulary at -c 4096. Chunks of max_batch tokens are the
    // ones forward() evaluates a window in anyway, so the logits are the same.
    const int chunk = s.max_batch;
    std::vector<float> logits(size_t(chunk) * vocab);
    std::vector<int> window(n_ctx);
    double nll = 0;
    long scored = 0;
    const int first = n_ctx / 2;
    for (int w = 0; w < windows; w++) {
        window.assign(tokens.begin() + size_t(w) * n_ctx, tokens.begin() + size_t(w + 1) * n_ctx);
        if (m.config.bos_id >= 0) window[0] = m.config.bos_id;
        for (int done = 0; done < n_ctx; done += chunk) {
            const int n = std::min(chunk, n_ctx - done);
            const bool scored_here = done + n > first;  // else the chunk only fills the KV cache
            if (!(err = forward(m, s, window.data() + done, n, done, scored_here ? logits.data() : nullptr, scored_here)).empty())
                return err;
            if (scored_here && !(err = check_logits(logits.data(), size_t(n) * vocab)).empty()) return err;
            // The logits at position j predict token j + 1 of the original text.
            for (int j = std::max(first, done); j < std::min(done + n, n_ctx - 1); j++) {
                const float* row = &logits[size_t(j - done) * vocab];
                const int target = tokens[size_t(w) * n_ctx + j + 1];
                double max = row[0];
                for (int v = 1; v < vocab; v++) max = std::max(max, double(row[v]));
                double sum = 0;
                for (int v = 0; v < vocab; v++) sum += std::exp(double(row[v]) - max);
                nll += std::log(sum) + max - row[target];
                scored++;
            }
        }
        if (progress) progress(w + 1, windows, std::exp(nll / scored));
    }
    out->mean_nll = nll / scored;
    out->perplexity = std::exp(out->mean_nll);
    out->scored = scored;
    out->windows = windows;
    return "";
}

}  // namespace hearth
