// Prompt-lookup drafts (issue 23): speculation from the context itself, no second model.
// When the last few ids of the context occurred earlier in it, the ids that followed them
// then are a guess at what follows now; Generator::step evaluates the guess together with
// the token it has to evaluate anyway, in one forward() call, and keeps the prefix that the
// sampler would have produced (model/sampler.h, accept_draft). Text that repeats its
// prompt (quoting, editing code, summaries that copy names) then costs one forward() call
// for several tokens.
#pragma once
#include <string>
#include <vector>

namespace hearth {

// The n-grams the lookup tries, longest first: a match of 4 ids predicts better than one
// of 2; a single id matches nearly everywhere in prose and predicts nothing.
constexpr int kDraftLongestNgram = 4;

// Writes to *draft the up to max_tokens ids that followed the most recent earlier
// occurrence of the longest suffix of `ids` (kDraftLongestNgram down to shortest_ngram
// ids) that occurred before; empty when none did.
void lookup_draft(const std::vector<int>& ids, int max_tokens, int shortest_ngram, std::vector<int>* draft);

// Counters of the drafts, for --verbose and the tests.
struct DraftStats {
    long verifications = 0;  // forward() calls that carried a draft
    long proposed = 0;       // draft tokens evaluated
    long accepted = 0;       // of those, kept
    double acceptance() const { return proposed ? double(accepted) / double(proposed) : 0.0; }
};

// "drafts: 120 of 300 tokens accepted (40.0%) in 80 forward calls", for --verbose and logs.
std::string draft_summary(const DraftStats& s);

// How much to draft at the next step, so that prose is never slower than without drafts.
//
// A draft is not free: its tokens widen the forward pass, and a rejected one is wasted
// work. On a large model, whose weights are read from memory once per forward pass
// whatever its width, a few more tokens cost little; on a small one, whose weights stay
// in cache, nearly in proportion: on the default model (one thread) a pass over 2 tokens
// takes 1.6x as long as over 1, over 5 tokens 2.4x. Counting a drafted token at half a
// generated one (that small-model worst case, rounded up), a verification pays when at
// least half its tokens are kept. On text that does not repeat, lookups still find short
// matches, and most are rejected. So:
//  - a verification that keeps fewer than half its tokens is a miss: drafting pauses for
//    1, 2, 4, ... up to kMaxPause steps (exponential back-off), and the next draft is a
//    single token;
//  - a good one ends the pause and takes one miss off the count, so drafting goes on at
//    every step while drafts are kept, but the pauses shrink only as fast as good drafts
//    outnumber misses: prose, where a lucky single-token draft comes now and then, stays
//    near the longest pause. It then costs one single-token draft in about kMaxPause
//    steps (under 2% of the passes at the cost above), and a return to copying is noticed
//    within kMaxPause tokens;
//  - the next draft is one longer than the run that was kept, or twice as long when all
//    of it was, up to max_tokens;
//  - while misses are counted, the lookup wants a match of 3 ids, not 2: in prose most
//    matches are of 2 ids and most of those are wrong (on the default model, sampled
//    prose drew 29 verifications in 300 tokens with 2, 11 with 3), while in a passage
//    being copied, 2 ids find the place again after the model strays from it.
// The policy changes the speed only: which tokens are generated never depends on it.
struct DraftBackoff {
    static constexpr int kMaxPause = 32;
    static constexpr int kMaxMisses = 6;  // 1 << (6 - 1) = kMaxPause: more would only slow the recovery
    int max_tokens = 0;                   // --draft: the most drafted at once; 0 drafts nothing
    int length = 0;                       // the next draft's length, 1..max_tokens
    int misses = 0;                       // verifications in a row that kept fewer than half their tokens
    int pause = 0;                        // steps left without drafting

    explicit DraftBackoff(int max_tokens = 0) : max_tokens(max_tokens), length(max_tokens) {}
    // The most to draft at this step (0: none), given how many more tokens fit (`room`).
    // Counts down a pause.
    int next_length(int room);
    int shortest_ngram() const { return misses ? 3 : 2; }
    void verified(int proposed, int accepted);
};

}  // namespace hearth
