#include "chat/chat_session.h"

#include <algorithm>
#include <chrono>

#include "tokenizer/tokenizer.h"
#include "model/generate.h"

namespace hearth {

using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

ChatSession::ChatSession(const Model& model, const Tokenizer& tok, RunState& state, const std::string& template_name)
    : model_(model), tok_(tok), state_(state), template_(template_name), logits_(model.config.vocab_size) {
    end_of_turn_ = chat_end_of_turn_ids(template_, tok_, model.config.eos_id);
}

std::vector<ChatMessage> ChatSession::dialog() const {
    std::vector<ChatMessage> d;
    if (!system_.empty()) d.push_back({"system", system_, {}});
    d.insert(d.end(), turns_.begin(), turns_.end());
    return d;
}

std::string ChatSession::format_with_reply(const std::vector<int>& reply_so_far, std::vector<int>* target) const {
    std::string err = format_chat(template_, tok_, dialog(), true, target);
    target->insert(target->end(), reply_so_far.begin(), reply_so_far.end());
    return err;
}

int ChatSession::drop_oldest_turns(size_t limit, const std::vector<int>& reply_so_far, std::vector<int>* target) {
    int dropped = 0;
    format_with_reply(reply_so_far, target);
    while (target->size() > limit && turns_.size() > 1) {
        turns_.erase(turns_.begin(), turns_.begin() + 2);
        dropped++;
        format_with_reply(reply_so_far, target);
    }
    return dropped;
}

// Prompt chunks of about a quarter of a second, so that Ctrl-C during a long prompt is
// answered quickly even on a large model, and of up to max_batch tokens on a small one.
int ChatSession::chunk_size() const {
    if (seconds_per_prompt_token_ <= 0) return std::min(8, state_.max_batch);
    return std::max(1, std::min(state_.max_batch, int(0.25 / seconds_per_prompt_token_)));
}

std::string ChatSession::evaluate(const std::vector<int>& target, const ChatCallbacks& cb, int* evaluated, bool* interrupted) {
    *evaluated = 0;
    *interrupted = false;
    if (target.empty()) return "nothing to evaluate";
    size_t keep = 0;
    while (keep < context_.size() && keep < target.size() && context_[keep] == target[keep]) keep++;
    if (keep == target.size()) keep--;  // evaluated again: its logits are needed
    context_.resize(keep);              // positions past `keep` are stale and get overwritten
    while (context_.size() < target.size()) {
        if (cb.interrupted && cb.interrupted()) {
            *interrupted = true;
            return "";
        }
        const int pos = int(context_.size());
        const int n = std::min(chunk_size(), int(target.size()) - pos);
        auto t = Clock::now();
        std::string err = forward(model_, state_, &target[pos], n, pos, logits_.data());
        if (!err.empty()) return err;
        seconds_per_prompt_token_ = seconds_since(t) / n;
        context_.insert(context_.end(), target.begin() + pos, target.begin() + pos + n);
        *evaluated += n;
        evaluated_ += n;
    }
    return "";
}

ReplyStats ChatSession::reply(const std::string& user_text, Sampler& sampler, int max_tokens, const ChatCallbacks& cb) {
    ReplyStats st;
    const auto t_start = Clock::now();
    const size_t n_ctx = size_t(state_.n_ctx);
    auto notice = [&](const std::string& s) {
        if (cb.on_notice) cb.on_notice(s);
    };
    // why: "is full" in the middle of a reply; before one, that the room kept for it is not left.
    auto dropped_notice = [&](int n, const std::string& why) {
        notice("the context of " + std::to_string(n_ctx) + " tokens " + why + ": dropped the " +
               (n == 1 ? std::string("oldest turn") : std::to_string(n) + " oldest turns") +
               (system_.empty() ? "" : " (the system prompt stays)"));
    };

    turns_.push_back({"user", user_text, {}});
    std::vector<int> target;
    if (!(st.error = format_with_reply({}, &target)).empty()) {
        turns_.pop_back();
        st.end = ReplyEnd::refused;
        return st;
    }
    // A dialog that encodes to nothing (no BOS, and a message that normalizes away, such as
    // an ideographic space) leaves nothing to continue from.
    if (target.empty()) {
        turns_.pop_back();
        st.end = ReplyEnd::refused;
        st.error = "the message is empty once encoded: there is nothing to reply to";
        return st;
    }
    // Room for a reply of a useful length; without it the turn would drop history at once.
    const size_t reserve = std::min(size_t(std::max(max_tokens, 1)), n_ctx / 4);
    const std::vector<ChatMessage> turns_before = turns_;
    if (target.size() + reserve > n_ctx) st.dropped_turns = drop_oldest_turns(n_ctx / 2, {}, &target);
    if (target.size() >= n_ctx) {
        turns_ = turns_before;  // a refused message costs no history
        turns_.pop_back();
        st.dropped_turns = 0;
        st.end = ReplyEnd::refused;
        st.error = "the message" + std::string(system_.empty() ? "" : " with the system prompt") + " is " +
                   std::to_string(target.size()) + " tokens, too long for the context of " + std::to_string(n_ctx) +
                   " (raise -c)";
        return st;
    }

    if (st.dropped_turns)
        dropped_notice(st.dropped_turns, "has no room left for a reply of " + std::to_string(reserve) + " tokens");

    bool interrupted = false;
    const auto t_prompt = Clock::now();
    st.error = evaluate(target, cb, &st.prompt_tokens, &interrupted);
    st.reused_tokens = int(target.size()) - st.prompt_tokens;
    st.prompt_seconds = seconds_since(t_prompt);
    if (!st.error.empty() || interrupted) {
        // Nothing was answered: the message is withdrawn. The cache keeps what was
        // evaluated, which the next turn reuses as far as it matches.
        turns_.pop_back();
        st.end = interrupted ? ReplyEnd::cancelled : ReplyEnd::refused;
        return st;
    }

    const auto t_reply = Clock::now();
    Generator gen(model_, tok_, sampler, ignore_end_of_turn_ ? std::vector<int>{} : end_of_turn_);
    gen.set_draft(draft_);
    GenerationCallbacks gcb;
    gcb.interrupted = cb.interrupted;
    gcb.on_token = [&](int, const std::string& text) {
        if (gen.tokens().size() == 1) st.first_token_seconds = seconds_since(t_start);
        if (cb.on_text) cb.on_text(text);
    };
    for (;;) {
        const GenerationEnd end = gen.generate(state_, context_, logits_, max_tokens, gcb);
        if (end != GenerationEnd::context_full) {
            st.end = end == GenerationEnd::end_id         ? ReplyEnd::end_of_turn
                     : end == GenerationEnd::length_limit ? ReplyEnd::length_limit
                     : end == GenerationEnd::interrupted  ? ReplyEnd::interrupted
                                                          : ReplyEnd::refused;
            st.error = gen.error();
            break;
        }

        // Full in the middle of the reply: make room by dropping old turns and
        // re-evaluating what remains, the reply so far included, then go on.
        std::vector<int> t;
        const int dropped = drop_oldest_turns(n_ctx / 2, gen.tokens(), &t);
        if (dropped) {
            st.dropped_turns += dropped;
            dropped_notice(dropped, "is full");
        }
        if (dropped == 0 || t.size() >= n_ctx) {
            st.end = ReplyEnd::context_full;
            break;
        }
        int n = 0;
        const auto t_re = Clock::now();
        st.error = evaluate(t, cb, &n, &interrupted);
        st.prompt_seconds += seconds_since(t_re);
        if (!st.error.empty() || interrupted) {
            st.end = interrupted ? ReplyEnd::interrupted : ReplyEnd::refused;
            break;
        }
    }
    const std::vector<int>& reply_ids = gen.tokens();
    if (reply_ids.empty() && st.end == ReplyEnd::end_of_turn) st.first_token_seconds = seconds_since(t_start);
    if (cb.on_text) cb.on_text(gen.finish());
    evaluated_ += gen.evaluated_tokens();
    st.drafts = gen.draft_stats();
    st.reply_seconds = seconds_since(t_reply);
    st.reply_tokens = int(reply_ids.size());

    if (reply_ids.empty() && st.end == ReplyEnd::interrupted) {
        turns_.pop_back();  // interrupted before the first token: as if never sent
        st.end = ReplyEnd::cancelled;
    } else {
        // The reply stays, however it ended; the template closes it at the next turn.
        turns_.push_back({"assistant", tok_.decode(reply_ids), reply_ids});
    }
    return st;
}

}  // namespace hearth
