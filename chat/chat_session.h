// A conversation with a model: the dialog, the KV cache that holds it, and evaluating
// only what each turn adds to it.
//
// The KV cache policy: `context()` is the list of token ids whose keys and values are in
// the cache, position by position. Each turn formats the whole dialog with the chat
// template and evaluates only what follows the longest prefix it shares with context().
// Replies keep the ids the model generated (ChatMessage::ids), so the formatted dialog of
// turn N+1 extends that of turn N: a turn evaluates the end of the previous reply (the
// template's end-of-turn marker) and the new message, whatever the length of the history.
//
// When the context fills — before a turn, or in the middle of a reply — the oldest
// (user, reply) pairs are dropped until the dialog takes at most half the context; the
// system prompt always stays. What remains is formatted again and the part that changed
// is re-evaluated (for llama2 the system prompt moves into the new first message, so
// this is usually everything after it). Halving means this happens once per half a
// context of conversation, not every turn.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "model/draft.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/sampler.h"

namespace hearth {

class Tokenizer;

// How the terminal (or a test) takes part in a reply. Any of them may be empty.
struct ChatCallbacks {
    std::function<void(const std::string&)> on_text;    // reply text as it streams
    std::function<bool()> interrupted;                  // polled between tokens and between prompt chunks
    std::function<void(const std::string&)> on_notice;  // one line the user must see (turns were dropped)
};

enum class ReplyEnd {
    end_of_turn,   // the model ended its turn (EOS, or the template's end marker)
    length_limit,  // max_tokens were generated
    interrupted,   // stopped during the reply: the reply so far stays in the dialog
    cancelled,     // stopped before any reply token: the message is withdrawn from the dialog
    context_full,  // the current turn alone fills the context: the reply so far stays
    refused,       // the message cannot be answered (too long, or an error): nothing changed
};

struct ReplyStats {
    ReplyEnd end = ReplyEnd::end_of_turn;
    std::string error;               // why, when refused
    int prompt_tokens = 0;           // tokens evaluated before the first reply token: what the cache lacked
    int reused_tokens = 0;           // tokens of the prompt that were already in the cache
    int reply_tokens = 0;            // tokens of the reply, not counting the end-of-turn token
    int dropped_turns = 0;           // (user, reply) pairs dropped to make room
    double prompt_seconds = 0;       // evaluating the prompt (including any re-evaluation after dropping turns)
    double first_token_seconds = 0;  // from the call to the first reply token: time to first token
    double reply_seconds = 0;        // from the end of the prompt to the end of the reply
    DraftStats drafts;               // the reply's prompt-lookup drafts (set_draft)
};

class ChatSession {
public:
    // Evaluates into `state`, whose KV cache becomes the session's; the context length is
    // state.n_ctx. All three must outlive the session.
    ChatSession(const Model& model, const Tokenizer& tok, RunState& state, const std::string& template_name);

    const std::string& template_name() const { return template_; }
    // Replies run on past EOS and end-of-turn markers, to the length limit (run --ignore-eos).
    void set_ignore_end_of_turn(bool ignore) { ignore_end_of_turn_ = ignore; }
    // Replies draft up to max_tokens tokens at a step from the context (Generator::set_draft); 0: none.
    void set_draft(int max_tokens) { draft_ = max_tokens; }
    // Takes effect at the next reply, which re-evaluates what changed; "" for none.
    void set_system_prompt(const std::string& text) { system_ = text; }
    const std::string& system_prompt() const { return system_; }
    // Forgets the turns and keeps the system prompt. The cache is left as it is: the next
    // turn reuses whatever prefix (BOS, the system prompt) still matches.
    void reset() { turns_.clear(); }

    // Adds the user's message, evaluates what the cache lacks of the formatted dialog and
    // generates the reply (at most max_tokens), streaming it through cb.on_text.
    ReplyStats reply(const std::string& user_text, Sampler& sampler, int max_tokens, const ChatCallbacks& cb);

    const std::vector<ChatMessage>& turns() const { return turns_; }  // user, assistant, user, ...
    std::vector<ChatMessage> dialog() const;                          // the system message first, if any
    const std::vector<int>& context() const { return context_; }      // ids at cache positions 0, 1, ...
    int n_ctx() const { return state_.n_ctx; }
    long evaluated_tokens() const { return evaluated_; }  // every token forward() has evaluated

private:
    // Makes the cache hold `target`: keeps its longest common prefix with context_ and
    // evaluates the rest in chunks, checking cb.interrupted() between them. Leaves the
    // logits of target's last token in logits_. "" on success, else forward()'s error.
    std::string evaluate(const std::vector<int>& target, const ChatCallbacks& cb, int* evaluated, bool* interrupted);
    // Drops the oldest (user, reply) pairs while the formatted dialog (with the current
    // user message, the generation prompt and `reply_so_far`) is longer than `limit`.
    // Leaves that formatted dialog in *target; returns how many pairs were dropped.
    int drop_oldest_turns(size_t limit, const std::vector<int>& reply_so_far, std::vector<int>* target);
    std::string format_with_reply(const std::vector<int>& reply_so_far, std::vector<int>* target) const;
    int chunk_size() const;

    const Model& model_;
    const Tokenizer& tok_;
    RunState& state_;
    std::string template_;
    std::string system_;
    std::vector<ChatMessage> turns_;
    std::vector<int> context_;
    std::vector<float> logits_;
    std::vector<int> end_of_turn_;
    bool ignore_end_of_turn_ = false;
    int draft_ = 0;
    long evaluated_ = 0;
    double seconds_per_prompt_token_ = 0;  // measured, to size prompt chunks (0: not yet)
};

}  // namespace hearth
