// Prompt-lookup drafts (model/draft.h, Generator::set_draft): the lookup, the back-off,
// speculative sampling of a point-mass draft against the distribution it must reproduce,
// and generation on the default model: greedy ids equal to those without drafts, with
// drafts really verified and accepted.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "model/draft.h"
#include "model/generate.h"
#include "tokenizer/tokenizer.h"
#include "tests/test_helpers.h"

namespace {

std::vector<int> lookup(const std::vector<int>& ids, int max_tokens) {
    std::vector<int> d;
    lookup_draft(ids, max_tokens, &d);
    return d;
}

}  // namespace

TEST_CASE("draft lookup: the ids after the most recent earlier occurrence of the longest suffix") {
    // The suffix 7 8 9 occurred at 1..3 (followed by 10 11 12) and 8 9 also at 5..6 (followed
    // by 20): the longer match wins.
    const std::vector<int> ids = {1, 7, 8, 9, 10, 11, 12, 8, 9, 20, 7, 8, 9};
    CHECK(lookup(ids, 2) == std::vector<int>{10, 11});
    CHECK(lookup(ids, 8) == std::vector<int>{10, 11, 12, 8, 9, 20, 7, 8});
    // Of two occurrences of the same length, the most recent.
    CHECK(lookup({5, 6, 1, 5, 6, 2, 5, 6}, 1) == std::vector<int>{2});
    // An occurrence overlapping the suffix: a run of one id drafts that id.
    CHECK(lookup({3, 3, 3}, 4) == std::vector<int>{3});
    // Nothing repeats, or only single ids do (too weak a match), or nothing is wanted.
    CHECK(lookup({1, 2, 3, 4, 5}, 4).empty());
    CHECK(lookup({1, 2, 3, 1, 4, 5, 1}, 4).empty());
    CHECK(lookup({1, 2, 1, 2}, 0).empty());
    CHECK(lookup({}, 4).empty());
    CHECK(lookup({1}, 4).empty());
}

TEST_CASE("draft back-off: pauses double while nothing is accepted, an acceptance resumes at once") {
    DraftBackoff b(8);
    CHECK(b.next_length(100) == 8);
    CHECK(b.next_length(3) == 3);  // no more than fits
    CHECK(b.next_length(0) == 0);
    int expected_pause = 1;
    for (int miss = 0; miss < 8; miss++) {
        b.verified(1, 0);
        int skipped = 0;
        while (b.next_length(100) == 0) skipped++;
        CHECK(skipped == expected_pause);
        expected_pause = std::min(2 * expected_pause, DraftBackoff::kMaxPause);
    }
    // After misses a draft is one token; accepted in full, its length doubles up to the most.
    b.verified(1, 1);
    CHECK(b.next_length(100) == 2);
    b.verified(2, 2);
    CHECK(b.next_length(100) == 4);
    b.verified(4, 4);
    b.verified(8, 8);
    CHECK(b.next_length(100) == 8);
    // A partial acceptance: one more than was accepted.
    b.verified(8, 2);
    CHECK(b.next_length(100) == 3);
    CHECK(DraftBackoff(0).next_length(100) == 0);
}

namespace {

// Chi-square of observed counts against expected ones (cells with expectation 0 must be empty).
double chi_square(const std::map<int, long>& seen, const std::vector<double>& expected) {
    double x2 = 0;
    for (size_t i = 0; i < expected.size(); i++) {
        const auto it = seen.find(int(i));
        const double o = it == seen.end() ? 0.0 : double(it->second);
        if (expected[i] == 0) {
            if (o > 0) return INFINITY;
            continue;
        }
        x2 += (o - expected[i]) * (o - expected[i]) / expected[i];
    }
    return x2;
}

// One token of speculative sampling with draft d: kept with probability p(d), else drawn
// from p without d.
int speculate(Sampler& s, const std::vector<float>& logits, int d) {
    const std::vector<Candidate> c = s.distribution(logits.data(), int(logits.size()), {});
    return s.accept_draft(c, d) ? d : s.draw_excluding(c, d);
}

}  // namespace

TEST_CASE("draft sampling: accept with p(d), else draw from p without d -- the tokens follow p") {
    // A fixed distribution; logits log(p) give p back at temperature 1.
    const std::vector<double> p = {0.5, 0.2, 0.15, 0.1, 0.05};
    std::vector<float> logits;
    for (double x : p) logits.push_back(float(std::log(x)));
    const long n = 200000;
    // 4 degrees of freedom: P(chi2 > 18.47) = 0.001. The seeds are fixed, so this either
    // always passes or always fails; 0.001 only says how unlucky a correct sampler would be.
    const double critical_df4 = 18.47, critical_df2 = 13.82;

    SamplerParams sp;
    sp.temperature = 1.0f;
    sp.top_k = 0;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    for (int d : {0, 1, 4}) {  // the most likely token, a middling one, the least likely
        CAPTURE(d);
        sp.seed = 1234 + d;
        Sampler s(sp);
        std::map<int, long> seen;
        long drafts_kept = 0;
        for (long t = 0; t < n; t++) {
            const std::vector<Candidate> c = s.distribution(logits.data(), int(logits.size()), {});
            const bool keep = s.accept_draft(c, d);
            drafts_kept += keep;
            seen[keep ? d : s.draw_excluding(c, d)]++;
        }
        std::vector<double> expected;
        for (double x : p) expected.push_back(x * n);
        CHECK(chi_square(seen, expected) < critical_df4);
        // The draft itself is kept with probability p(d): a binomial, within 5 sigma.
        CHECK(std::fabs(drafts_kept - p[d] * n) < 5 * std::sqrt(n * p[d] * (1 - p[d])));
    }

    // Through the sampler's chain: top-k 3 at temperature 2 leaves q ~ p^(1/2) over the three
    // most likely tokens; a draft outside them (id 4) is never kept.
    sp.temperature = 2.0f;
    sp.top_k = 3;
    std::vector<double> q = {std::sqrt(0.5), std::sqrt(0.2), std::sqrt(0.15), 0, 0};
    const double sum = q[0] + q[1] + q[2];
    for (double& x : q) x = x / sum * n;
    for (int d : {0, 2, 4}) {
        CAPTURE(d);
        sp.seed = 99 + d;
        Sampler s(sp);
        std::map<int, long> seen;
        for (long t = 0; t < n; t++) seen[speculate(s, logits, d)]++;
        CHECK(chi_square(seen, q) < critical_df2);  // 3 cells: 2 degrees of freedom, P = 0.001
    }
}

TEST_CASE("draft sampling: greedy keeps the argmax only, and draws no random numbers") {
    SamplerParams sp;
    sp.temperature = 0;
    Sampler s(sp);
    const std::vector<float> logits = {0.1f, 2.0f, 1.9f};
    const std::vector<Candidate> c = s.distribution(logits.data(), 3, {});
    REQUIRE(c.size() == 1);
    CHECK(c[0].id == 1);
    CHECK(s.accept_draft(c, 1));
    CHECK_FALSE(s.accept_draft(c, 2));
    CHECK(s.draw_excluding(c, 2) == 1);
    CHECK(s.sample(logits.data(), 3, {}) == 1);
}

namespace {

struct Generated {
    std::vector<int> ids;
    std::string text;  // what on_token streamed
    GenerationEnd end;
    long forward_calls;
    DraftStats drafts;
};

struct DefaultModel {
    Model model;
    Tokenizer tok;
    DefaultModel() {
        REQUIRE(load_model("models/tiny-shakespeare.hearth", &model) == "");
        REQUIRE(tok.load(model.tokenizer) == "");
    }

    Generated generate(const std::string& prompt, int draft, int max_tokens, int n_ctx = 512, std::vector<int> end_ids = {},
                       float temperature = 0, uint64_t seed = 1) {
        RunState state;
        REQUIRE(make_run_state(model.config, n_ctx, &state) == "");
        std::vector<int> context = encoded(tok, prompt, true);
        REQUIRE(int(context.size()) < n_ctx);
        std::vector<float> logits(model.config.vocab_size);
        REQUIRE(forward(model, state, context.data(), int(context.size()), 0, logits.data()) == "");
        SamplerParams sp;
        sp.temperature = temperature;
        sp.seed = seed;
        Sampler sampler(sp);
        Generator gen(model, tok, sampler, end_ids);
        gen.set_draft(draft);
        Generated g;
        GenerationCallbacks cb;
        cb.on_token = [&](int id, const std::string& text) {
            g.ids.push_back(id);
            g.text += text;
        };
        g.end = gen.generate(state, context, logits, max_tokens, cb);
        REQUIRE(gen.error() == "");
        CHECK(g.ids == gen.tokens());
        g.forward_calls = gen.evaluated();
        g.drafts = gen.draft_stats();
        return g;
    }
};

// Text that repeats (a passage, then its start again) and text that does not.
const std::string kCopy =
    "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun. "
    "Arise, fair sun, and kill the envious moon.\n"
    "ROMEO: But soft, what light through yonder window breaks? It is the east,";
const std::string kCopy2 = "To be, or not to be: that is the question. To be, or not to be: that is the question. To be, or";
const std::string kProse = "KING HENRY: Once more unto the breach, dear friends";

}  // namespace

TEST_CASE("draft generation: greedy ids equal those without drafts, and drafts are verified and accepted") {
    DefaultModel m;
    long verified = 0, accepted = 0;
    for (const std::string& prompt : {kCopy, kCopy2, kProse}) {
        const Generated plain = m.generate(prompt, 0, 96);
        CHECK(plain.drafts.verifications == 0);
        CHECK(plain.forward_calls == long(plain.ids.size()) - 1);  // the last token is not evaluated
        for (int n : {1, 2, 4, 8}) {
            CAPTURE(prompt);
            CAPTURE(n);
            const Generated d = m.generate(prompt, n, 96);
            CHECK(d.ids == plain.ids);
            CHECK(d.text == plain.text);
            CHECK(d.end == plain.end);
            CHECK(d.drafts.accepted <= d.drafts.proposed);
            CHECK(d.drafts.proposed <= n * d.drafts.verifications);
            // Every kept draft token is a token this step did not need a forward call for.
            CHECK(d.forward_calls == long(d.ids.size()) - 1 - d.drafts.accepted);
            verified += d.drafts.verifications;
            accepted += d.drafts.accepted;
        }
    }
    // Not vacuous: drafts were made, and some were right.
    CHECK(verified > 20);
    CHECK(accepted > 10);
    // On the copy task, in particular, with the largest N.
    const Generated copy = m.generate(kCopy2, 8, 96);
    CHECK(copy.drafts.accepted > 20);
    CHECK(copy.forward_calls < long(copy.ids.size()) * 3 / 4);
}

TEST_CASE("draft generation: max_tokens, a full context and an end id end where they do without drafts") {
    DefaultModel m;
    for (int n : {2, 8}) {
        CAPTURE(n);
        // max_tokens: never more tokens, whatever the draft.
        for (int max_tokens : {1, 2, 3, 5, 17}) {
            CAPTURE(max_tokens);
            const Generated plain = m.generate(kCopy2, 0, max_tokens), d = m.generate(kCopy2, n, max_tokens);
            CHECK(d.ids == plain.ids);
            CHECK(d.end == GenerationEnd::length_limit);
            CHECK(int(d.ids.size()) == max_tokens);
        }
        // A context that fills mid-draft: the drafts never evaluate past it.
        const int prompt_len = int(encoded(m.tok, kCopy2, true).size());
        for (int room : {1, 2, 7, 30}) {
            CAPTURE(room);
            const Generated plain = m.generate(kCopy2, 0, 200, prompt_len + room), d = m.generate(kCopy2, n, 200, prompt_len + room);
            CHECK(plain.end == GenerationEnd::context_full);
            CHECK(d.end == GenerationEnd::context_full);
            CHECK(d.ids == plain.ids);
        }
        // An end id that the copied text contains: generation ends at its first occurrence,
        // inside an accepted draft or not.
        const Generated plain = m.generate(kCopy2, 0, 60);
        REQUIRE(plain.ids.size() > 20);
        for (size_t at : {size_t(3), size_t(12), size_t(19)}) {
            const int end_id = plain.ids[at];
            const Generated e0 = m.generate(kCopy2, 0, 60, 512, {end_id}), e = m.generate(kCopy2, n, 60, 512, {end_id});
            CHECK(e0.end == GenerationEnd::end_id);
            CHECK(e.end == GenerationEnd::end_id);
            CHECK(e.ids == e0.ids);
            CHECK(e.text == e0.text);
        }
    }
}

TEST_CASE("draft generation: sampling with drafts runs to the limit and accepts drafts on a copy task") {
    DefaultModel m;
    long accepted = 0;
    for (uint64_t seed : {1, 2, 3}) {
        const Generated d = m.generate(kCopy2, 4, 64, 512, {}, 0.3f, seed);
        CHECK(d.ids.size() == 64);
        CHECK(d.forward_calls == long(d.ids.size()) - 1 - d.drafts.accepted);
        accepted += d.drafts.accepted;
    }
    CHECK(accepted > 0);
}

TEST_CASE("draft: run --draft gives the ids of --draft 0, and --verbose reports the acceptance") {
    const std::string cmd = "./run -p '" + kCopy2 + "' -n 40 --temp 0 --print-ids";
    const CommandResult off = run_command(cmd + " --draft 0"), on = run_command(cmd + " --draft 8 --verbose");
    REQUIRE(off.exit_code == 0);
    REQUIRE(on.exit_code == 0);
    CHECK(on.out == off.out);
    CHECK(on.err.find("drafts: ") != std::string::npos);
    CHECK(on.err.find("tokens accepted") != std::string::npos);
    CHECK(run_command("./run --draft -1 -p x").exit_code == 1);
}
