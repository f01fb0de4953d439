// The generation loop that `run -p` and ChatSession share: sample a token from the
// logits, stop at an end id, stream its text, evaluate it, again — and hand control back
// when the KV cache is full, so that the caller decides what happens then (run stops and
// says so; a chat drops its oldest turns and calls generate() again).
//
// With drafts (set_draft, model/draft.h) a step evaluates its token together with a guess
// at the ones after it, taken from the context, and keeps as many of them as the sampler
// accepts: several tokens for one forward() call. What is generated, streamed and when it
// ends are as without drafts: the same ids, greedy or sampled with the same seed. The matmuls
// of a step's generated tokens and drafts give each token the bits it gets alone, for every
// weight type (kernels/table.h, batch_token_bits; tests/kernels/test_kernel_table.cpp on every
// CPU class of x86 and AArch64, test_matmul.cpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "model/draft.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/sampler.h"

namespace hearth {

enum class GenerationEnd {
    end_id,        // an end id was sampled; it is not kept
    length_limit,  // max_tokens were generated; the last one is not evaluated (no one needs its logits yet)
    context_full,  // every generated token is evaluated and the cache has no position left for the next
    interrupted,   // cb.interrupted() said stop; every generated token is evaluated
    error,         // forward() failed: Generator::error() says why
};

struct GenerationCallbacks {
    // Each kept token and the text it completes: "" while it holds part of a UTF-8
    // character (or has no text), more than its own piece when it completes one.
    std::function<void(int id, const std::string& text)> on_token;
    // Just before on_token: the logits the kept token was drawn from (the vocabulary's
    // padding masked, before the sampler's penalty and cuts), for a caller that reports
    // log-probabilities.
    std::function<void(int id, const float* logits)> on_logits;
    std::function<bool()> interrupted;  // polled before each token
};

class Generator {
public:
    // Sampling one of `end_ids` ends the generation (EOS, a chat template's end-of-turn
    // marker); none keeps it going to the length limit (--ignore-eos). All references
    // must outlive the generator.
    Generator(const Model& model, const Tokenizer& tok, Sampler& sampler, std::vector<int> end_ids);

    // `context` holds the ids in state's KV cache at positions 0, 1, ... and `logits` the
    // logits that follow its last id; each evaluated token extends both. Generates until
    // max_tokens have been generated in all, counting earlier calls, or another end. A
    // caller may change the cache between calls (ChatSession drops old turns and
    // re-evaluates) as long as context and logits stay in step.
    GenerationEnd generate(RunState& state, std::vector<int>& context, std::vector<float>& logits, int max_tokens,
                           const GenerationCallbacks& cb);
    // One token of generate(): sample it, stream it and evaluate it -- with a draft, also
    // the draft's tokens the sampler accepts, each streamed and checked (end ids,
    // max_tokens, cb.interrupted) as if it were a step of its own. Returns true when the
    // generation goes on, else false with the reason in *end. generate() is step() until
    // it returns false.
    bool step(RunState& state, std::vector<int>& context, std::vector<float>& logits, int max_tokens,
              const GenerationCallbacks& cb, GenerationEnd* end);

    // step() in two halves, for a caller that evaluates several generators' tokens in one
    // forward_batch() call (the server's conversations). begin_step samples the step's token,
    // streams it and drafts after it, at most max_eval tokens in all (at least 1), and says in
    // *eval what to evaluate (the tokens, their positions in `state`, where their logits go);
    // false when the generation ends first (*end says why). Once the caller has evaluated
    // *eval, end_step checks the draft and keeps what the sampler accepts; its result is
    // step()'s. A step whose evaluation failed ends with fail_step(why).
    bool begin_step(RunState& state, std::vector<int>& context, std::vector<float>& logits, int max_tokens,
                    const GenerationCallbacks& cb, GenerationEnd* end, SequenceChunk* eval, int max_eval);
    bool end_step(std::vector<int>& context, std::vector<float>& logits, const GenerationCallbacks& cb, GenerationEnd* end);
    void fail_step(const std::string& why) { error_ = why, pending_ = -1; }

    // Text of ids that come before the generated ones (run prints its prompt), through the
    // same decoder, so that the first generated token's text joins them as decode() would.
    std::string text_before(const std::vector<int>& ids);
    // How the decoder writes bytes that are no UTF-8 (per byte by default). Set before the first step.
    void set_invalid_utf8(InvalidUtf8 invalid) { streamer_.set_invalid_utf8(invalid); }
    // Whatever text the decoder still holds back, once the generation is over.
    std::string finish() { return streamer_.finish(); }

    // Drafts of up to max_tokens tokens at a step (model/draft.h); 0, the default, drafts
    // nothing. Set before the first step.
    void set_draft(int max_tokens) { backoff_ = DraftBackoff(max_tokens); }
    const DraftStats& draft_stats() const { return draft_stats_; }

    const std::vector<int>& tokens() const { return tokens_; }   // generated so far, end id excluded
    long evaluated() const { return evaluated_; }                // forward() calls made: one per step
    long evaluated_tokens() const { return evaluated_tokens_; }  // tokens they evaluated, rejected drafts included
    const std::string& error() const { return error_; }

private:
    bool stop(GenerationEnd e, GenerationEnd* end);  // false, with *end = e
    void mask_padding(float* logits) const;
    bool is_end(int id) const;

    const Model& model_;
    const Tokenizer& tok_;
    Sampler& sampler_;
    std::vector<int> end_ids_;
    TextStreamer streamer_;
    std::vector<int> tokens_;
    long evaluated_ = 0, evaluated_tokens_ = 0;
    int max_tokens_ = 0;  // the last begin_step's
    DraftBackoff backoff_;
    DraftStats draft_stats_;
    std::vector<int> batch_;           // the step's token and its draft
    std::vector<float> batch_logits_;  // the logits after each of them
    // The token sampled where the last step's draft was rejected: the next step's token,
    // already drawn from `logits` (-1: none, the next step samples). A generation that
    // ends before that step (interrupted) drops it, having drawn one random number more
    // than without drafts: a Sampler shared by later generations (a chat's) then draws
    // differently from there on; nothing else does.
    int pending_ = -1;
    std::string error_;
};

}  // namespace hearth
