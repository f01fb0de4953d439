// Picks the next token from the logits: greedy, or llama.cpp's default chain
// (penalties, top-k, top-p, min-p, temperature, then a random draw).
#pragma once
#include <cstdint>
#include <vector>

namespace hearth {

struct SamplerParams {
    float temperature = 0.8f;        // 0: greedy
    int top_k = 40;                  // 0: off
    float top_p = 0.95f;             // 1: off
    float min_p = 0.05f;             // 0: off
    float repeat_penalty = 1.0f;     // 1: off
    float frequency_penalty = 0.0f;  // 0: off; minus this times a token's count in the window
    float presence_penalty = 0.0f;   // 0: off; minus this once for a token in the window
    int repeat_last_n = 64;          // the window: how many recent tokens the penalties look at
    uint64_t seed = 0;
};

// A small, fully specified generator (xorshift64*), so that a seed gives the same
// tokens on every platform and standard library.
struct Rng {
    uint64_t state;
    explicit Rng(uint64_t seed) : state(seed ? seed : 0x9e3779b97f4a7c15ull) {}
    uint64_t next_u64();
    float next_float();  // uniform in [0, 1)
};

struct Candidate {
    int id;
    float logit;
    float p;
};

// The log-probability of ids under the model's distribution at one position: a softmax of
// the logits at temperature 1, before sampling's penalty and cuts (what llama-server reports
// by default, and what the logits alone say). For the server's `logprobs`.
struct TokenLogprob {
    int id;
    float logprob;
};
// logprob(id), and in *top the top_n most likely ids, most likely first (the lower id first on
// ties); top_n <= 0 leaves *top empty. Ids whose logit is -inf (masked) have -inf.
float log_probabilities(const float* logits, int vocab, int id, int top_n, std::vector<TokenLogprob>* top);

class Sampler {
public:
    explicit Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {}
    // `recent` is the token history the penalties look at (its tail).
    int sample(const float* logits, int vocab, const std::vector<int>& recent);

    // The steps, public so tests can check each one's effect on a distribution.
    // Each keeps `c` sorted by logit, highest first (after top_k/top_p/min_p/softmax).
    // The penalties of p on the ids in the last p.repeat_last_n of recent (greedy too).
    static void apply_penalties(float* logits, int vocab, const std::vector<int>& recent, const SamplerParams& p);
    // c = the k highest logits as candidates, sorted (all of them when k <= 0 or k >= vocab).
    static void top_k(const float* logits, int vocab, int k, std::vector<Candidate>& c);
    static void softmax_with_temperature(std::vector<Candidate>& c, float temperature);  // fills p, sorts
    static void keep_top_p(std::vector<Candidate>& c, float top_p);                      // needs p
    static void keep_min_p(std::vector<Candidate>& c, float min_p);                      // needs p
    static int argmax(const float* logits, int vocab);

private:
    SamplerParams params_;
    Rng rng_;
    std::vector<Candidate> candidates_;  // sample's buffers, reused
    std::vector<float> penalized_;
};

}  // namespace hearth
