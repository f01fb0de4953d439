// `run MODEL --server`: an OpenAI-compatible HTTP server (cpp-httplib) in front of one model.
//
// Threads: cpp-httplib's pool reads requests, parses and checks them (server/request.h),
// tokenizes the prompt and queues a job, then waits for the job's text (or streams it as
// server-sent events). One scheduler thread owns the model and the slots: each slot is a
// conversation with its own KV cache (RunState). The scheduler admits queued jobs to free
// slots and then gives each busy slot one step in turn: a chunk of its prompt, or one token.
//
// A new job goes to the free slot whose cached ids share the longest prefix with the job's
// prompt, when that prefix is at least half the prompt, else to the least recently used free
// slot; only the ids after the prefix the chosen slot shares are evaluated: a follow-up turn
// of a chat lands where its conversation is cached, and a new conversation does not evict one. Replies the
// server generated keep their ids (as ChatSession does), so the next turn's prompt matches
// them exactly instead of re-tokenizing the reply's text.
#pragma once
#include <functional>
#include <string>

#include "base/limits.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/sampler.h"
#include "tokenizer/tokenizer.h"

namespace hearth {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;
    int n_parallel = 4;                      // slots
    int n_ctx_total = 0;                     // split evenly among the slots; 0: the model's context, at most 4096
    std::string api_key;                     // "" for none
    std::string cors_origins = "localhost";  // --cors-origins: the browser pages on other origins let in (origin_allowed)
    std::string allowed_hosts;  // --allowed-hosts: Host names let in besides the loopback ones (host_allowed); "" not given
    int timeout_seconds = limits::kServerTimeoutSeconds;  // reading a request, writing a response
    std::string model_name;                               // what /v1/models and the replies call the model
    SamplerParams sampler;                                // defaults a request's fields override
    std::string template_name;                            // --template, "" for the model's (as --chat picks it)
    KvCacheTypes cache_types;
    int draft = 0;  // --draft: the most tokens a step drafts from the context; 0: none
};

// What the server serves once it is loaded; filled by the loader.
struct LoadedModel {
    Model model;
    Tokenizer tok;
    std::string template_name;   // resolved: a built-in name
    std::string default_system;  // the system message of chats that give none (default_system_message), or ""
    int n_ctx_total = 0;         // the context to split among the slots
};

// Loads the model into *m; "" or why not. Called after the server listens, so that /health
// answers 503 while it runs.
using ModelLoader = std::function<std::string(LoadedModel* m)>;

// Listens, loads, serves until SIGINT or SIGTERM; returns the exit code (0 after a signal,
// 1 when it cannot listen or load, with one line on stderr).
int serve(const ServerOptions& options, const ModelLoader& load);

}  // namespace hearth
