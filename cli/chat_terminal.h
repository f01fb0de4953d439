// `run --chat`: the read-reply loop, in a terminal (libedit line editing and history,
// colour, Ctrl-C) or over a pipe (one message a line, plain text).
#pragma once
#include <string>

#include "model/forward.h"
#include "model/model.h"
#include "model/sampler.h"

namespace hearth {

class Tokenizer;

struct ChatOptions {
    std::string template_name;  // --template; "" for the checkpoint's (see run_chat)
    std::string system_prompt;  // --system; "" for the template's default (default_system_message), often none
    int n_ctx = 0;              // context length in tokens
    int n_predict = 256;        // a reply's maximum length in tokens
    SamplerParams sampler;
    bool ignore_eos = false;  // replies run to -n, past EOS and end-of-turn markers
    bool verbose = false;     // timing of every reply on stderr
    int draft = 0;            // --draft: the most tokens a step drafts from the context; 0: none
    KvCacheTypes cache_types;
};

// Chats until /quit, Ctrl-D or Ctrl-C at an empty prompt, or the end of stdin; returns
// the exit code. The template is --template's, else resolve_chat_template's choice
// (chat/chat_template.h): the checkpoint's, else chatml when the vocabulary has
// <|im_start|> and <|im_end|> as tokens (such a model was surely tuned on it), else raw:
// wrapping a base model's text in markers it never saw would only make its continuations worse.
int run_chat(const Model& model, const Tokenizer& tok, const ChatOptions& opt);

}  // namespace hearth
