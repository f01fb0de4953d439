#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace hearth {

uint64_t Rng::next_u64() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545f4914f6cdd1dull;
}

float Rng::next_float() { return float(next_u64() >> 40) / float(1ull << 24); }

int Sampler::argmax(const float* logits, int vocab) {
    int best = 0;
    for (int i = 1; i < vocab; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

static bool penalties_apply(const std::vector<int>& recent, const SamplerParams& p) {
    return (p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) && p.repeat_last_n > 0 &&
           !recent.empty();
}

// As llama.cpp's penalties sampler, over the last repeat_last_n ids: a seen id's positive logit
// is divided by repeat_penalty, a negative one multiplied (the CTRL paper's repetition
// penalty, once however often the id occurs), so either way it becomes less likely; then
// OpenAI's frequency and presence penalties, logit - count * frequency - presence (with count
// the id's occurrences in the window: OpenAI counts the reply's tokens, llama.cpp the window).
void Sampler::apply_penalties(float* logits, int vocab, const std::vector<int>& recent, const SamplerParams& p) {
    if (!penalties_apply(recent, p)) return;
    std::unordered_map<int, int> count;
    for (auto it = recent.end() - std::min<size_t>(recent.size(), size_t(p.repeat_last_n)); it != recent.end(); ++it)
        count[*it]++;
    for (const auto& [id, n] : count) {
        if (id < 0 || id >= vocab) continue;
        float& l = logits[id];
        if (p.repeat_penalty != 1.0f) l = l > 0 ? l / p.repeat_penalty : l * p.repeat_penalty;
        l -= float(n) * p.frequency_penalty + p.presence_penalty;
    }
}

// Highest logit first, the lower id first on ties: the order every step keeps.
static bool ranks_before(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// One pass over the logits with the k best so far in a heap whose top is the worst of them, so
// that nearly every id costs one comparison; sorting all 32000 candidates (or partially) for
// every token cost ~0.1 ms, paid per slot per step by the server.
void Sampler::top_k(const float* logits, int vocab, int k, std::vector<Candidate>& c) {
    c.clear();
    if (k <= 0 || k >= vocab) {
        for (int i = 0; i < vocab; i++) c.push_back({i, logits[i], 0.0f});
        std::sort(c.begin(), c.end(), ranks_before);
        return;
    }
    for (int i = 0; i < vocab; i++) {
        const Candidate x{i, logits[i], 0.0f};
        if (int(c.size()) < k) {
            c.push_back(x);
            std::push_heap(c.begin(), c.end(), ranks_before);
        } else if (ranks_before(x, c.front())) {
            std::pop_heap(c.begin(), c.end(), ranks_before);
            c.back() = x;
            std::push_heap(c.begin(), c.end(), ranks_before);
        }
    }
    std::sort_heap(c.begin(), c.end(), ranks_before);
}

void Sampler::softmax_with_temperature(std::vector<Candidate>& c, float temperature) {
    std::sort(c.begin(), c.end(), ranks_before);
    float max = c[0].logit, sum = 0.0f;
    for (Candidate& x : c) {
        x.p = std::exp((x.logit - max) / temperature);
        sum += x.p;
    }
    for (Candidate& x : c) x.p /= sum;
}

// The smallest prefix (by probability) whose mass reaches top_p; at least one token.
void Sampler::keep_top_p(std::vector<Candidate>& c, float top_p) {
    if (top_p >= 1.0f) return;
    float mass = 0.0f;
    size_t keep = c.size();
    for (size_t i = 0; i < c.size(); i++) {
        mass += c[i].p;
        if (mass >= top_p) {
            keep = i + 1;
            break;
        }
    }
    c.resize(keep);
}

// Drops tokens less likely than min_p times the most likely one.
void Sampler::keep_min_p(std::vector<Candidate>& c, float min_p) {
    if (min_p <= 0.0f) return;
    const float threshold = c[0].p * min_p;
    size_t keep = 1;
    while (keep < c.size() && c[keep].p >= threshold) keep++;
    c.resize(keep);
}

float log_probabilities(const float* logits, int vocab, int id, int top_n, std::vector<TokenLogprob>* top) {
    const float max = logits[Sampler::argmax(logits, vocab)];
    double sum = 0;  // >= 1: the max's own term
    for (int i = 0; i < vocab; i++) sum += std::exp(double(logits[i]) - max);
    const float log_z = max + float(std::log(sum));
    top->clear();
    if (top_n > 0) {
        std::vector<Candidate> c;
        Sampler::top_k(logits, vocab, std::min(top_n, vocab), c);
        for (const Candidate& x : c) top->push_back({x.id, x.logit - log_z});
    }
    return logits[id] - log_z;
}

int Sampler::sample(const float* logits, int vocab, const std::vector<int>& recent) {
    const float* v = logits;
    if (penalties_apply(recent, params_)) {  // on a copy: logits are the caller's
        penalized_.assign(logits, logits + vocab);
        apply_penalties(penalized_.data(), vocab, recent, params_);
        v = penalized_.data();
    }
    if (params_.temperature <= 0.0f) return argmax(v, vocab);
    std::vector<Candidate>& c = candidates_;  // kept between calls: no allocation per token
    top_k(v, vocab, params_.top_k, c);
    // top-p and min-p act on the distribution before temperature, as in llama.cpp.
    softmax_with_temperature(c, 1.0f);
    keep_top_p(c, params_.top_p);
    keep_min_p(c, params_.min_p);
    softmax_with_temperature(c, params_.temperature);
    float r = rng_.next_float(), cdf = 0.0f;
    for (const Candidate& x : c) {
        cdf += x.p;
        if (r < cdf) return x.id;
    }
    return c.back().id;  // r was within rounding of 1
}

}  // namespace hearth
