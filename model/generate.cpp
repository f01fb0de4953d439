#include "model/generate.h"

#include <algorithm>
#include <cmath>

namespace hearth {

Generator::Generator(const Model& model, const Tokenizer& tok, Sampler& sampler, std::vector<int> end_ids)
    : model_(model), tok_(tok), sampler_(sampler), end_ids_(std::move(end_ids)), streamer_(tok) {}

std::string Generator::text_before(const std::vector<int>& ids) {
    std::string text;
    for (int id : ids) text += streamer_.push(id);
    return text;
}

GenerationEnd Generator::generate(RunState& state, std::vector<int>& context, std::vector<float>& logits, int max_tokens,
                                  const GenerationCallbacks& cb) {
    GenerationEnd end = GenerationEnd::error;
    while (step(state, context, logits, max_tokens, cb, &end)) {}
    return end;
}

bool Generator::step(RunState& state, std::vector<int>& context, std::vector<float>& logits, int max_tokens,
                     const GenerationCallbacks& cb, GenerationEnd* end) {
    SequenceChunk eval;
    if (!begin_step(state, context, logits, max_tokens, cb, end, &eval, state.max_batch)) return false;
    const std::string err = forward_batch(model_, state, &eval, 1);
    if (!err.empty()) {
        fail_step(err);
        *end = GenerationEnd::error;
        return false;
    }
    return end_step(context, logits, cb, end);
}

bool Generator::stop(GenerationEnd e, GenerationEnd* end) {
    *end = e;
    pending_ = -1;  // whatever comes next starts from fresh logits
    return false;
}

// Ids past the tokenizer's pieces (padding rows of the embedding) were never trained on and
// have no text. Without a tokenizer (0 pieces) none are known.
void Generator::mask_padding(float* logits) const {
    if (tok_.vocab_size() > 0)
        for (int id = tok_.vocab_size(); id < model_.config.vocab_size; id++) logits[id] = -INFINITY;
}

bool Generator::is_end(int id) const { return std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end(); }

bool Generator::begin_step(RunState& state, std::vector<int>& context, std::vector<float>& logits, int max_tokens,
                           const GenerationCallbacks& cb, GenerationEnd* end, SequenceChunk* eval, int max_eval) {
    const int vocab = model_.config.vocab_size;
    max_tokens_ = max_tokens;
    if (int(tokens_.size()) >= max_tokens) return stop(GenerationEnd::length_limit, end);
    if (cb.interrupted && cb.interrupted()) return stop(GenerationEnd::interrupted, end);
    if (int(context.size()) >= state.n_ctx) return stop(GenerationEnd::context_full, end);
    if (pending_ < 0) {  // else the token was sampled from batch logits that end_step checked
        const std::string err = check_logits(logits.data(), size_t(vocab));
        if (!err.empty()) {
            fail_step(err);
            return stop(GenerationEnd::error, end);
        }
    }
    mask_padding(logits.data());
    int next = pending_;
    pending_ = -1;
    if (next < 0) next = sampler_.sample(logits.data(), vocab, context);
    if (is_end(next)) return stop(GenerationEnd::end_id, end);
    tokens_.push_back(next);
    if (cb.on_logits) cb.on_logits(next, logits.data());
    if (cb.on_token) cb.on_token(next, streamer_.push(next));
    if (int(tokens_.size()) == max_tokens) return stop(GenerationEnd::length_limit, end);

    // A draft only where its tokens could be kept: inside the cache, short of the
    // max_tokens-th token (which is never evaluated), and within the caller's batch.
    const int pos = int(context.size());
    const int room = std::min({state.n_ctx - pos - 1, max_tokens - int(tokens_.size()) - 1, max_eval - 1});
    const int want = backoff_.next_length(room);
    batch_.assign(1, next);
    if (want > 0) {
        context.push_back(next);  // the lookup matches the context's tail, this token included
        std::vector<int> draft;
        lookup_draft(context, want, backoff_.shortest_ngram(), &draft);
        context.pop_back();
        batch_.insert(batch_.end(), draft.begin(), draft.end());
    }
    // One token's logits go straight to `logits`; a draft's, all of them, to batch_logits_.
    const int n = int(batch_.size());
    float* out = logits.data();
    if (n > 1) {
        batch_logits_.resize(size_t(n) * vocab);
        out = batch_logits_.data();
    }
    *eval = SequenceChunk{&state, batch_.data(), n, pos, out, n > 1};
    return true;
}

bool Generator::end_step(std::vector<int>& context, std::vector<float>& logits, const GenerationCallbacks& cb,
                         GenerationEnd* end) {
    const int vocab = model_.config.vocab_size, k = int(batch_.size()) - 1;
    context.push_back(batch_[0]);
    evaluated_++;
    evaluated_tokens_ += k + 1;
    if (k == 0) return true;  // its logits are checked where the next step samples them
    if (std::string err = check_logits(batch_logits_.data(), size_t(k + 1) * vocab); !err.empty()) {
        fail_step(err);
        return stop(GenerationEnd::error, end);
    }
    draft_stats_.verifications++;
    draft_stats_.proposed += k;
    // Draft token i is checked by sampling the token that follows batch_[i-1], exactly as a
    // step without drafts would, with the same random numbers in the same order, and
    // keeping d if the two agree. For a draft that proposes d with certainty this is
    // speculative sampling: d is kept with probability p(d), and when it is not, the token
    // drawn is distributed as p without d, renormalized -- the rejection rule's residual
    // (p - q)+ for q the point mass on d. So the output is the same ids as without drafts,
    // greedy or sampled with a seed, and the draft policy (DraftBackoff) cannot change it.
    // The cache past the last kept token holds rejected drafts, which later positions
    // overwrite (the context says what the cache holds).
    int accepted = 0;
    auto finish = [&](int i) {  // logits after batch_[i] become the step's logits
        std::copy_n(&batch_logits_[size_t(i) * vocab], vocab, logits.begin());
        draft_stats_.accepted += accepted;
        backoff_.verified(k, accepted);
    };
    for (int i = 1; i <= k; i++) {
        // As at the top of a step of its own.
        if (cb.interrupted && cb.interrupted()) {
            finish(i - 1);
            return stop(GenerationEnd::interrupted, end);
        }
        float* before = &batch_logits_[size_t(i - 1) * vocab];
        mask_padding(before);
        const int t = sampler_.sample(before, vocab, context);
        if (t != batch_[i]) {
            // The next step starts with t, evaluated together with its own draft.
            finish(i - 1);
            pending_ = t;
            return true;
        }
        accepted++;
        if (is_end(t)) {
            finish(i - 1);
            return stop(GenerationEnd::end_id, end);
        }
        tokens_.push_back(t);
        if (cb.on_logits) cb.on_logits(t, before);
        if (cb.on_token) cb.on_token(t, streamer_.push(t));
        if (int(tokens_.size()) == max_tokens_) {  // cannot happen (room), but as a step would
            finish(i - 1);
            return stop(GenerationEnd::length_limit, end);
        }
        context.push_back(t);
    }
    finish(k);
    return true;
}

}  // namespace hearth
