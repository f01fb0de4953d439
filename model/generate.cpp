#include "model/generate.h"

#include <algorithm>
#include <cmath>

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
    while (step(state, context, logits, max_tokens, cb, &end)) {
    }
    return end;
}

bool Generator::step(RunState& state, std::vector<int>& context, std::vector<float>& logits, int max_tokens,
                     const GenerationCallbacks& cb, GenerationEnd* end) {
    const int vocab = model_.config.vocab_size;
    auto stop = [&](GenerationEnd e) {
        *end = e;
        return false;
    };
    if (int(tokens_.size()) >= max_tokens) return stop(GenerationEnd::length_limit);
    if (cb.interrupted && cb.interrupted()) return stop(GenerationEnd::interrupted);
    if (int(context.size()) >= state.n_ctx) return stop(GenerationEnd::context_full);
    // Ids past the tokenizer's pieces (padding rows of the embedding) were never
    // trained on and have no text. Without a tokenizer (0 pieces) none are known.
    if (tok_.vocab_size() > 0)
        for (int id = tok_.vocab_size(); id < vocab; id++) logits[id] = -INFINITY;
    const int next = sampler_.sample(logits.data(), vocab, context);
    if (std::find(end_ids_.begin(), end_ids_.end(), next) != end_ids_.end()) return stop(GenerationEnd::end_id);
    tokens_.push_back(next);
    if (cb.on_token) cb.on_token(next, streamer_.push(next));
    if (int(tokens_.size()) == max_tokens) return stop(GenerationEnd::length_limit);
    error_ = forward(model_, state, &next, 1, int(context.size()), logits.data());
    if (!error_.empty()) return stop(GenerationEnd::error);
    context.push_back(next);
    evaluated_++;
    return true;
}
