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

using namespace hearth;

namespace {

std::vector<int> lookup(const std::vector<int>& ids, int max_tokens, int shortest_ngram = 2) {
    std::vector<int> d;
    lookup_draft(ids, max_tokens, shortest_ngram, &d);
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
    // The shortest match wanted: 1 2 3 repeats, 8 2 3 does not.
    CHECK(lookup({1, 2, 3, 4, 8, 2, 3}, 4, 2) == std::vector<int>{4, 8, 2, 3});
    CHECK(lookup({1, 2, 3, 4, 8, 2, 3}, 4, 3).empty());
    CHECK(lookup({1, 2, 3, 4, 1, 2, 3}, 4, 3) == std::vector<int>{4, 1, 2, 3});
    CHECK(lookup({}, 4).empty());
    CHECK(lookup({1}, 4).empty());
}

TEST_CASE("draft back-off: pauses double while under half the draft is kept; good drafts resume at once, shorten pauses slowly") {
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
    // A good draft ends the pause at once; the next draft is one token, and when all of
    // it is kept, twice as long, up to the most.
    b.verified(1, 1);
    CHECK(b.next_length(100) == 2);
    // One good draft after many misses takes only one miss off: the next miss pauses long.
    b.verified(2, 0);
    int skipped = 0;
    while (b.next_length(100) == 0) skipped++;
    CHECK(skipped == DraftBackoff::kMaxPause);
    // Good drafts in a row shorten the pauses again, one miss each.
    for (int i = 0; i < DraftBackoff::kMaxMisses; i++) b.verified(1, 1);
    CHECK(b.misses == 0);
    b.verified(1, 0);
    CHECK(b.next_length(100) == 0);
    CHECK(b.next_length(100) == 1);
    b.verified(1, 1);
    CHECK(b.next_length(100) == 2);
    b.verified(2, 2);
    CHECK(b.next_length(100) == 4);
    b.verified(4, 4);
    b.verified(8, 8);
    CHECK(b.next_length(100) == 8);
    // Half kept: one more than was kept next time.
    b.verified(8, 4);
    CHECK(b.next_length(100) == 5);
    // Under half: a miss, as nothing kept is.
    b.verified(5, 2);
    CHECK(b.next_length(100) == 0);
    CHECK(b.next_length(100) == 1);
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

// Upper 0.001 quantiles of chi-square by degrees of freedom: the seeds are fixed, so each
// check always passes or always fails; 0.001 says how unlucky a correct rule would be.
const double kChi2Critical[] = {0, 10.83, 13.82, 16.27, 18.47};

// The rule Generator::step verifies a draft token d with: draw the token from the sampler
// as a step without drafts would, keep d when they agree, else the drawn token.
// Speculative sampling with a point-mass draft must keep d with probability p(d), and on
// rejection give p without d, renormalized; in all, the tokens follow p.
void check_speculation(const SamplerParams& sp, const std::vector<float>& logits, const std::vector<double>& p, int d) {
    CAPTURE(d);
    const long n = 200000;
    Sampler s(sp);
    std::map<int, long> all, rejected;
    long kept = 0;
    for (long t = 0; t < n; t++) {
        const int token = s.sample(logits.data(), int(logits.size()), {});
        all[token]++;
        if (token == d)
            kept++;
        else
            rejected[token]++;
    }
    int support = 0;
    for (double x : p) support += x > 0;
    std::vector<double> expected, residual;
    for (size_t i = 0; i < p.size(); i++) {
        expected.push_back(p[i] * n);
        residual.push_back(int(i) == d ? 0.0 : p[i] / (1 - p[d]) * double(n - kept));
    }
    CHECK(chi_square(all, expected) < kChi2Critical[support - 1]);
    CHECK(chi_square(rejected, residual) < kChi2Critical[support - (p[d] > 0 ? 2 : 1)]);
    // The draft is kept with probability p(d): a binomial count, within 5 sigma.
    CHECK(std::fabs(double(kept) - p[d] * n) <= 5 * std::sqrt(n * p[d] * (1 - p[d])) + 1e-9);
}

}  // namespace

TEST_CASE("draft sampling: a draft token is kept with probability p(d), else the token follows p without d") {
    // A fixed distribution; logits log(p) give p back at temperature 1.
    const std::vector<double> p = {0.5, 0.2, 0.15, 0.1, 0.05};
    std::vector<float> logits;
    for (double x : p) logits.push_back(float(std::log(x)));
    SamplerParams sp;
    sp.temperature = 1.0f;
    sp.top_k = 0;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    for (int d : {0, 1, 4}) {  // the most likely token, a middling one, the least likely
        sp.seed = 1234 + d;
        check_speculation(sp, logits, p, d);
    }
    // Through the sampler's chain: top-k 3 at temperature 2 leaves q ~ p^(1/2) over the three
    // most likely tokens; a draft outside them (id 4) is never kept.
    sp.temperature = 2.0f;
    sp.top_k = 3;
    std::vector<double> q = {std::sqrt(0.5), std::sqrt(0.2), std::sqrt(0.15), 0, 0};
    const double sum = q[0] + q[1] + q[2];
    for (double& x : q) x /= sum;
    for (int d : {0, 2, 4}) {
        sp.seed = 99 + d;
        check_speculation(sp, logits, q, d);
    }
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
    explicit DefaultModel(const std::string& path = "models/tiny-shakespeare.hearth") {
        REQUIRE(load_model(path, &model) == "");
        REQUIRE(tok.load(model.tokenizer) == "");
    }

    Generated generate(const std::string& prompt, int draft, int max_tokens, int n_ctx = 512, std::vector<int> end_ids = {},
                       float temperature = 0, uint64_t seed = 1, size_t interrupt_after = 0) {
        RunState state;
        REQUIRE(make_run_state(model.config, n_ctx, &state) == "");
        std::vector<int> context = encoded(tok, prompt, true);
        const std::vector<int> prompt_ids = context;
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
        if (interrupt_after) cb.interrupted = [&] { return g.ids.size() >= interrupt_after; };
        g.end = gen.generate(state, context, logits, max_tokens, cb);
        REQUIRE(gen.error() == "");
        // The context is the prompt and every kept token that was evaluated: all of them,
        // but for the last when the length limit ended the generation.
        std::vector<int> expected = prompt_ids;
        expected.insert(expected.end(), g.ids.begin(), g.ids.end() - (g.end == GenerationEnd::length_limit ? 1 : 0));
        CHECK(context == expected);
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

TEST_CASE("draft generation: on a model that copies, a repeated passage comes from drafts, with the ids of no drafts") {
    // tests/data/copy-model.hearth: 2 layers, 172k parameters, trained by tools/train_copy.py
    // (--steps 2000, its defaults) to continue a passage it has seen (98% of a repeated
    // passage's ids, measured in PyTorch by the script), then `quantize copy.bin
    // copy-model.hearth --tokenizer tests/data/tiny-shakespeare-tokenizer.model`.
    DefaultModel m("tests/data/copy-model.hearth");
    const std::string passage =
        "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun. Arise, fair "
        "sun, and kill the envious moon, who is already sick and pale with grief, that thou her maid art far more fair "
        "than she.";
    const std::string prompt = passage + "\nROMEO: But soft, what light";
    const Generated plain = m.generate(prompt, 0, 60);
    CAPTURE(plain.text);
    // It copies: the passage goes on as it did the first time.
    CHECK(plain.text.find("through yonder window breaks? It is the east") <= 1);  // after a space or not
    for (int n : {4, 8}) {
        CAPTURE(n);
        const Generated d = m.generate(prompt, n, 60);
        CHECK(d.ids == plain.ids);
        CHECK(d.end == plain.end);
        // Most tokens came from drafts: under half of them needed a forward call of their own.
        CHECK(d.drafts.accepted > long(d.ids.size()) / 2);
        CHECK(d.forward_calls < long(d.ids.size()) / 2);
    }
}

TEST_CASE("draft generation: max_tokens, a full context, an end id and an interruption end where they do without drafts") {
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
            const Generated plain = m.generate(kCopy2, 0, 200, prompt_len + room),
                            d = m.generate(kCopy2, n, 200, prompt_len + room);
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
        // Interrupted (as the server's stop strings do) after any number of tokens, inside a
        // draft or not: no token more than without drafts, and every one evaluated.
        for (size_t after : {size_t(1), size_t(5), size_t(14), size_t(23)}) {
            CAPTURE(after);
            const Generated i = m.generate(kCopy2, n, 60, 512, {}, 0, 1, after);
            CHECK(i.end == GenerationEnd::interrupted);
            CHECK(i.ids == std::vector<int>(plain.ids.begin(), plain.ids.begin() + after));
        }
    }
}

TEST_CASE("draft generation: sampled with a seed, the ids equal those without drafts") {
    DefaultModel m;
    long accepted = 0;
    for (uint64_t seed : {1, 2, 3}) {
        for (float temperature : {0.3f, 0.8f}) {
            CAPTURE(seed);
            CAPTURE(temperature);
            const Generated plain = m.generate(kCopy2, 0, 80, 512, {}, temperature, seed);
            for (int n : {2, 8}) {
                const Generated d = m.generate(kCopy2, n, 80, 512, {}, temperature, seed);
                CHECK(d.ids == plain.ids);
                CHECK(d.forward_calls == long(d.ids.size()) - 1 - d.drafts.accepted);
                accepted += d.drafts.accepted;
            }
        }
    }
    CHECK(accepted > 10);
}

TEST_CASE("draft: run --draft gives the ids of --draft 0 for a seed, and --verbose reports the acceptance") {
    const std::string cmd = "./run models/tiny-shakespeare.hearth -p '" + kCopy2 + "' -n 40 --temp 0.5 -s 3 --print-ids";
    const CommandResult off = run_command(cmd + " --draft 0"), on = run_command(cmd + " --draft 8 --verbose");
    REQUIRE(off.exit_code == 0);
    REQUIRE(on.exit_code == 0);
    CHECK(on.out == off.out);
    CHECK(on.err.find("drafts: ") != std::string::npos);
    CHECK(on.err.find("tokens accepted") != std::string::npos);
    const CommandResult bad = run_command("./run models/tiny-shakespeare.hearth --draft -1 -p x");
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.find("--draft") != std::string::npos);
}
