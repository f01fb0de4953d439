#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

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

// As llama.cpp and the CTRL paper: a seen token's positive logit is divided by the
// penalty, a negative one multiplied, so either way it becomes less likely.
void Sampler::apply_repeat_penalty(std::vector<Candidate>& c, const std::vector<int>& recent, int last_n, float penalty) {
    if (penalty == 1.0f || last_n <= 0 || recent.empty()) return;
    std::unordered_set<int> seen(recent.end() - std::min<size_t>(recent.size(), size_t(last_n)), recent.end());
    for (Candidate& x : c)
        if (seen.count(x.id)) x.logit = x.logit > 0 ? x.logit / penalty : x.logit * penalty;
}

static void sort_by_logit(std::vector<Candidate>& c) {
    std::sort(c.begin(), c.end(),
              [](const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); });
}

void Sampler::keep_top_k(std::vector<Candidate>& c, int k) {
    if (k <= 0 || size_t(k) >= c.size()) {
        sort_by_logit(c);
        return;
    }
    std::partial_sort(c.begin(), c.begin() + k, c.end(), [](const Candidate& a, const Candidate& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    });
    c.resize(k);
}

void Sampler::softmax_with_temperature(std::vector<Candidate>& c, float temperature) {
    sort_by_logit(c);
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

int Sampler::sample(const float* logits, int vocab, const std::vector<int>& recent) {
    // The candidates' buffer is kept between calls: a fresh one per token (384 KB for a 32000-id
    // vocabulary) went back to the system each time and came back as page faults, about 1% of
    // a server step of 8 slots.
    std::vector<Candidate>& c = candidates_;
    c.resize(size_t(vocab));
    for (int i = 0; i < vocab; i++) c[i] = {i, logits[i], 0.0f};
    apply_repeat_penalty(c, recent, params_.repeat_last_n, params_.repeat_penalty);
    if (params_.temperature <= 0.0f) {
        return std::max_element(c.begin(), c.end(),
                                [](const Candidate& a, const Candidate& b) {
                                    return a.logit < b.logit || (a.logit == b.logit && a.id > b.id);
                                })
            ->id;
    }
    keep_top_k(c, params_.top_k);
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
