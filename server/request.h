// The server's request parser: a JSON body of an OpenAI-style request becomes generation
// parameters, or the error to answer with, in OpenAI's shape. Pure functions: no I/O, no model,
// no tokenizer, so that a fuzzer can drive them (tests/fuzz/fuzz_server_request.cpp).
//
// What a body may hold follows OpenAI's API reference (chat completions and the legacy
// completions), plus llama.cpp's cheap extras (top_k, min_p, repeat_penalty, repeat_last_n,
// ignore_eos, n_predict). Fields hearth does not implement are refused by name when they would
// change the reply (n > 1, tools, a response_format other than text, llama-server's grammar,
// mirostat, ...); fields that change nothing (user, metadata, store, ...) and unknown fields are
// ignored, as llama-server does, since clients send such things.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"
#include "model/sampler.h"

namespace hearth {

// OpenAI's error object: {"error": {"message", "type", "param", "code"}} with an HTTP status.
struct ApiError {
    int status = 0;  // 0: no error
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;  // "" is null
    std::string code;   // "" is null
    explicit operator bool() const { return status != 0; }
};

ApiError bad_request(const std::string& message, const std::string& param = "", const std::string& code = "");

struct CompletionRequest {
    bool chat = false;  // /v1/chat/completions, else /v1/completions
    // chat: the user's first (after system messages), then user and assistant in turn, no two in a row
    // from one side; system messages where format_chat takes them; a last assistant message is the
    // start of the reply, which the model continues (a prefill), when continue_last
    std::vector<ChatMessage> messages;
    // continue_final_message: true or absent, a last assistant message is continued (and may follow
    // the system message alone); false, it is a finished turn and the reply a new one after it
    bool continue_last = true;
    std::string prompt;           // completions: the text to continue
    bool prompt_is_ids = false;   // completions: the prompt came as token ids, in prompt_ids
    std::vector<int> prompt_ids;  // each in 0..INT_MAX; the server checks them against its vocabulary
    std::string model;            // as given ("" when absent): echoed back
    bool stream = false;
    bool include_usage = false;     // stream_options.include_usage
    int max_tokens = -1;            // -1: the rest of the slot's context; always capped by it; 0 only with echo
    bool ignore_eos = false;        // llama.cpp's extra: go on past end-of-turn ids
    SamplerParams sampler;          // starts as the server's defaults
    bool seed_given = false;        // else the server draws one
    std::vector<std::string> stop;  // non-empty strings
    int logprobs = -1;              // -1: none; else each token's log-probability and this many alternatives'
    bool echo = false;              // completions: the reply's text (and logprobs) begin with the prompt's
};

// Parses a request body. `defaults` are the server's sampling settings (run's --temp etc.),
// which a request's own fields override. On error *out is left in an unspecified state.
ApiError parse_completion_request(std::string_view body, bool chat, const SamplerParams& defaults, CompletionRequest* out);

// POST /tokenize, llama-server's shape: {"content": TEXT, "add_special": false,
// "parse_special": true, "with_pieces": false}, with llama-server's defaults.
struct TokenizeRequest {
    // The content: a text, or llama-server's mixed list of texts and token ids, each a part.
    struct Part {
        std::string text;
        int id = -1;  // >= 0: a token id, in 0..INT_MAX (the server checks it against its vocabulary)
    };
    std::vector<Part> content;
    bool add_special = false;   // BOS first, when the tokenizer adds one and the content starts with text
    bool parse_special = true;  // control tokens' texts in the content become their ids
    bool with_pieces = false;   // each id with its text: {"id", "piece"}
};
ApiError parse_tokenize_request(std::string_view body, TokenizeRequest* out);
// POST /detokenize: {"tokens": [ID, ...]}, each id in 0..vocab_size-1.
ApiError parse_detokenize_request(std::string_view body, int vocab_size, std::vector<int>* tokens);

// The error as its JSON body.
std::string error_body(const ApiError& e);

// The token of an Authorization header of the Bearer scheme (RFC 6750 2.1: "Bearer", its
// name without regard to case as RFC 9110 11.1 has every scheme's, one or more spaces, the
// token), or "" when the header is of another scheme or has no token.
std::string bearer_token(std::string_view authorization);

// Whether a browser page of `origin` (a request's Origin header: scheme://host[:port], or
// "null") may call the server and read its replies (CORS). `allowed` is --cors-origins, a
// comma-separated list whose items are origins (compared without regard to case), "*" (any
// origin) or "localhost" (any http or https origin whose host is localhost, a name under
// .localhost, an address in 127.0.0.0/8 or [::1]: a page served from this machine).
bool origin_allowed(std::string_view origin, std::string_view allowed);

// Whether a request's Host header (RFC 9110 7.2: HOST or HOST:PORT) is let in by `allowed`,
// --allowed-hosts: this machine's loopback names always are (localhost, a name under
// .localhost, an address in 127.0.0.0/8, [::1]); besides them the list's comma-separated items,
// each a host name or address (compared without regard to case, whatever the port), ".NAME"
// (NAME and every name under it) or "*" (any Host). Against DNS rebinding (server.cpp).
bool host_allowed(std::string_view host_header, std::string_view allowed);
// "" when `allowed` is a list host_allowed takes, else what is wrong with it.
std::string check_allowed_hosts(std::string_view allowed);

}  // namespace hearth
