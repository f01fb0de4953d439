// Each sampling step's effect on a distribution, and the sampled frequencies against
// the probabilities computed directly.
#include <doctest/doctest.h>

#include <cmath>
#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "model/sampler.h"

using namespace hearth;

static std::vector<Candidate> candidates(const std::vector<float>& logits) {
    std::vector<Candidate> c;
    for (size_t i = 0; i < logits.size(); i++) c.push_back({int(i), logits[i], 0.0f});
    return c;
}

TEST_CASE("temperature 0 is greedy: the highest logit, lowest id on ties") {
    SamplerParams p;
    p.temperature = 0.0f;
    Sampler s(p);
    std::vector<float> logits = {0.1f, 3.0f, -1.0f, 2.9f, 3.0f};
    CHECK(s.sample(logits.data(), 5, {}) == 1);
    CHECK(Sampler::argmax(logits.data(), 5) == 1);
}

TEST_CASE("top-k keeps exactly the k highest logits") {
    std::vector<float> logits = {0.5f, 2.0f, -1.0f, 3.0f, 1.0f};
    std::vector<Candidate> c;
    Sampler::top_k(logits.data(), 5, 2, c);
    REQUIRE(c.size() == 2);
    CHECK(c[0].id == 3);
    CHECK(c[1].id == 1);
    Sampler::top_k(logits.data(), 2, 0, c);  // 0 = off: all, sorted
    REQUIRE(c.size() == 2);
    CHECK(c[0].id == 1);
    CHECK(c[1].id == 0);
}

TEST_CASE("top-k is the first k of all the logits sorted, lower id first on ties") {
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> level(0, 40);  // few distinct values: many ties
    for (int vocab : {1, 7, 100, 5000})
        for (int k : {1, 2, 40, vocab - 1, vocab, vocab + 3}) {
            std::vector<float> logits(vocab);
            for (float& l : logits) l = 0.25f * float(level(rng)) - 5.0f;
            std::vector<int> order(vocab);
            for (int i = 0; i < vocab; i++) order[i] = i;
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
            std::vector<Candidate> c;
            Sampler::top_k(logits.data(), vocab, k, c);
            const int want = k <= 0 || k >= vocab ? vocab : k;
            REQUIRE(int(c.size()) == want);
            for (int i = 0; i < want; i++) CHECK(c[i].id == order[i]);
        }
}

TEST_CASE("softmax with temperature gives exp(l/T) / sum exp(l/T)") {
    std::vector<float> logits = {1.0f, 2.0f, 0.0f};
    for (float T : {0.5f, 1.0f, 2.0f}) {
        auto c = candidates(logits);
        Sampler::softmax_with_temperature(c, T);
        double z = 0;
        for (float l : logits) z += std::exp(l / T);
        for (const Candidate& x : c) CHECK(x.p == doctest::Approx(std::exp(logits[x.id] / T) / z).epsilon(1e-6));
        CHECK(c[0].id == 1);  // sorted, most likely first
    }
}

TEST_CASE("top-p keeps the smallest prefix whose mass reaches p") {
    // probabilities 0.5, 0.3, 0.15, 0.05
    std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
    auto c = candidates(logits);
    Sampler::softmax_with_temperature(c, 1.0f);
    auto c1 = c;
    Sampler::keep_top_p(c1, 0.75f);
    CHECK(c1.size() == 2);  // 0.5 + 0.3 = 0.8 >= 0.75
    auto c2 = c;
    Sampler::keep_top_p(c2, 0.5f);
    CHECK(c2.size() == 1);
    auto c3 = c;
    Sampler::keep_top_p(c3, 0.9f);
    CHECK(c3.size() == 3);
    auto c4 = c;
    Sampler::keep_top_p(c4, 1.0f);
    CHECK(c4.size() == 4);
}

TEST_CASE("min-p drops tokens below min_p times the top probability") {
    std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
    auto c = candidates(logits);
    Sampler::softmax_with_temperature(c, 1.0f);
    auto c1 = c;
    Sampler::keep_min_p(c1, 0.2f);  // threshold 0.1: keeps 0.5, 0.3, 0.15
    CHECK(c1.size() == 3);
    auto c2 = c;
    Sampler::keep_min_p(c2, 0.7f);  // threshold 0.35: keeps 0.5
    CHECK(c2.size() == 1);
}

TEST_CASE("repetition penalty divides positive and multiplies negative logits of recent tokens") {
    std::vector<float> l = {2.0f, -2.0f, 1.0f, 4.0f};
    SamplerParams p;
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 3;
    Sampler::apply_penalties(l.data(), 4, {0, 1, 3, 3}, p);  // only the last 3 (1, 3, 3) count, 3 once
    CHECK(l[0] == 2.0f);
    CHECK(l[1] == -4.0f);
    CHECK(l[2] == 1.0f);
    CHECK(l[3] == 2.0f);
}

TEST_CASE("frequency and presence penalties: logit - count * frequency - presence, after the repetition penalty") {
    // OpenAI's formula (its API reference, "frequency and presence penalties"), counted over the
    // window as llama.cpp's penalties sampler does, which applies the repetition penalty first.
    std::vector<float> l = {2.0f, -1.0f, 0.5f, 3.0f, 1.0f};
    SamplerParams p;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.25f;
    p.repeat_last_n = 4;
    Sampler::apply_penalties(l.data(), 5, {4, 0, 0, 1, 3}, p);  // the window is 0, 0, 1, 3: id 4 is outside it
    CHECK(l[0] == 2.0f - 2 * 0.5f - 0.25f);
    CHECK(l[1] == -1.0f - 0.5f - 0.25f);
    CHECK(l[2] == 0.5f);
    CHECK(l[3] == 3.0f - 0.5f - 0.25f);
    CHECK(l[4] == 1.0f);
    std::vector<float> m = {2.0f, -1.0f};
    p.repeat_penalty = 2.0f;
    Sampler::apply_penalties(m.data(), 2, {0, 0, 1}, p);
    CHECK(m[0] == 2.0f / 2 - 2 * 0.5f - 0.25f);
    CHECK(m[1] == -1.0f * 2 - 0.5f - 0.25f);
    // A negative presence penalty makes seen tokens likelier, as OpenAI allows (-2..2).
    std::vector<float> n = {0.0f, 0.0f};
    SamplerParams q;
    q.presence_penalty = -1.0f;
    Sampler::apply_penalties(n.data(), 2, {1}, q);
    CHECK(n[0] == 0.0f);
    CHECK(n[1] == 1.0f);
}

TEST_CASE("greedy with a presence penalty takes the best logit after it") {
    SamplerParams p;
    p.temperature = 0.0f;
    p.presence_penalty = 1.5f;
    Sampler s(p);
    std::vector<float> logits = {1.0f, 3.0f, 2.0f};
    CHECK(s.sample(logits.data(), 3, {}) == 1);
    CHECK(s.sample(logits.data(), 3, {1}) == 2);  // 3 - 1.5 < 2
    CHECK(logits[1] == 3.0f);
}

TEST_CASE("greedy with a repetition penalty takes the best logit after the penalty") {
    SamplerParams p;
    p.temperature = 0.0f;
    p.repeat_penalty = 2.0f;
    Sampler s(p);
    std::vector<float> logits = {1.0f, 3.0f, 2.0f};
    CHECK(s.sample(logits.data(), 3, {}) == 1);
    CHECK(s.sample(logits.data(), 3, {1}) == 2);  // 3 / 2 < 2
    CHECK(logits[1] == 3.0f);                     // the caller's logits are left alone
}

// Pearson's chi-square statistic of observed counts against expected probabilities.
static double chi_square(const std::map<int, int>& counts, const std::vector<double>& probs, int n) {
    double chi = 0;
    for (size_t i = 0; i < probs.size(); i++) {
        double e = probs[i] * n;
        auto it = counts.find(int(i));
        double o = it == counts.end() ? 0 : it->second;
        if (e > 0)
            chi += (o - e) * (o - e) / e;
        else
            CHECK(o == 0);
    }
    return chi;
}

TEST_CASE("sampled frequencies follow softmax(logits / T)") {
    std::vector<float> logits = {1.0f, 0.5f, 0.0f, -0.5f, 2.0f};
    SamplerParams p;
    p.temperature = 1.5f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 1234;
    Sampler s(p);
    const int n = 40000;
    std::map<int, int> counts;
    for (int i = 0; i < n; i++) counts[s.sample(logits.data(), 5, {})]++;
    std::vector<double> probs;
    double z = 0;
    for (float l : logits) z += std::exp(l / 1.5);
    for (float l : logits) probs.push_back(std::exp(l / 1.5) / z);
    // 4 degrees of freedom: the 99.99th percentile of chi-square is 23.5.
    CHECK(chi_square(counts, probs, n) < 23.5);
}

TEST_CASE("top-k then temperature: only the k best are ever drawn, in their renormalised proportions") {
    std::vector<float> logits = {0.0f, 3.0f, 2.0f, 1.0f, 2.5f};
    SamplerParams p;
    p.temperature = 1.0f;
    p.top_k = 2;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 99;
    Sampler s(p);
    const int n = 20000;
    std::map<int, int> counts;
    for (int i = 0; i < n; i++) counts[s.sample(logits.data(), 5, {})]++;
    double z = std::exp(3.0) + std::exp(2.5);
    std::vector<double> probs = {0, std::exp(3.0) / z, 0, 0, std::exp(2.5) / z};
    CHECK(chi_square(counts, probs, n) < 23.5);
}

TEST_CASE("the same seed gives the same tokens, another seed other tokens") {
    std::vector<float> logits(100);
    for (int i = 0; i < 100; i++) logits[i] = std::sin(float(i));
    auto draw = [&](uint64_t seed) {
        SamplerParams p;
        p.temperature = 1.0f;
        p.top_k = 0;
        p.top_p = 1.0f;
        p.min_p = 0.0f;
        p.seed = seed;
        Sampler s(p);
        std::vector<int> out;
        for (int i = 0; i < 50; i++) out.push_back(s.sample(logits.data(), 100, {}));
        return out;
    };
    CHECK(draw(7) == draw(7));
    CHECK(draw(7) != draw(8));
}

TEST_CASE("log_probabilities: log(softmax(logits)) at temperature 1, the top ids in order, masked ids -inf") {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    std::vector<float> logits(1000);
    for (float& x : logits) x = normal(rng);
    logits[17] = logits[18] = 30.0f;  // a tie at the top: the lower id first
    logits[5] = -INFINITY;            // masked (a padded vocabulary's row)
    double sum = 0;
    for (float x : logits) sum += std::exp(double(x));
    std::vector<TokenLogprob> top;
    for (int id : {17, 18, 0, 999, 5}) {
        const float lp = log_probabilities(logits.data(), int(logits.size()), id, 4, &top);
        INFO("id " << id);
        if (id == 5)
            CHECK(lp == -INFINITY);
        else
            CHECK(lp == doctest::Approx(double(logits[id]) - std::log(sum)).epsilon(1e-5));
        REQUIRE(top.size() == 4);
        CHECK(top[0].id == 17);
        CHECK(top[1].id == 18);
        CHECK(top[0].logprob == top[1].logprob);
        CHECK(top[0].logprob == doctest::Approx(30.0 - std::log(sum)).epsilon(1e-5));
        for (int i = 2; i < 4; i++) {
            CHECK(top[i].logprob <= top[i - 1].logprob);
            CHECK(top[i].logprob == doctest::Approx(double(logits[top[i].id]) - std::log(sum)).epsilon(1e-5));
        }
    }
    // The rest are below the top ones; no alternatives when none are asked for.
    std::vector<float> sorted(logits);
    std::sort(sorted.rbegin(), sorted.rend());
    CHECK(logits[top[3].id] == sorted[3]);
    log_probabilities(logits.data(), int(logits.size()), 0, 0, &top);
    CHECK(top.empty());
}
