#include "server/request.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstring>
#include <optional>
#include <nlohmann/json.hpp>

#include "base/json_input.h"
#include "base/limits.h"
#include "base/printable.h"

namespace hearth {

using json = nlohmann::json;

ApiError bad_request(const std::string& message, const std::string& param, const std::string& code) {
    ApiError e;
    e.status = 400;
    e.message = message;
    e.param = param;
    e.code = code;
    return e;
}

std::string error_body(const ApiError& e) {
    json err = {{"message", e.message}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
    if (!e.param.empty()) err["param"] = e.param;
    if (!e.code.empty()) err["code"] = e.code;
    return json{{"error", err}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// A present, non-null field.
const json* field(const json& j, const char* name) {
    auto it = j.find(name);
    return it == j.end() || it->is_null() ? nullptr : &*it;
}

const char* type_name_of(const json& v) {
    switch (v.type()) {
        case json::value_t::object: return "an object";
        case json::value_t::array: return "an array";
        case json::value_t::string: return "a string";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned: return "an integer";
        case json::value_t::number_float: return "a number";
        default: return "null";
    }
}

ApiError wrong_type(const char* name, const json& v, const std::string& want) {
    // A number that is not an integer is shown as it was read: 2^70 or 1e30 are read as floats
    // (past 64 bits), and "must be an integer, not a number" would puzzle.
    const std::string given = v.is_number_float() ? v.dump() : type_name_of(v);
    return bad_request(std::string("'") + name + "' must be " + want + ", not " + given, name);
}

// Each reads an optional field into *out; absent or null leaves *out as it is.
ApiError read_bool(const json& j, const char* name, bool* out) {
    const json* v = field(j, name);
    if (!v) return {};
    if (!v->is_boolean()) return wrong_type(name, *v, "a boolean");
    *out = v->get<bool>();
    return {};
}

ApiError read_real(const json& j, const char* name, double lo, double hi, float* out) {
    const json* v = field(j, name);
    if (!v) return {};
    if (!v->is_number()) return wrong_type(name, *v, "a number");
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi)) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "'%s' must be from %g to %g, not %g", name, lo, hi, x);
        return bad_request(buf, name);
    }
    *out = float(x);
    return {};
}

// A JSON number that is an integer: an integer, or a float with no fraction within 64 bits
// (2.0: Python clients send max_tokens=n/2, and llama-server takes it). *x is clamped to
// [LLONG_MIN, LLONG_MAX] for unsigned values past it. False for anything else.
bool integer_value(const json& v, long long* x) {
    if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        *x = u > uint64_t(LLONG_MAX) ? LLONG_MAX : (long long)u;
        return true;
    }
    if (v.is_number_integer()) {
        *x = v.get<long long>();
        return true;
    }
    if (!v.is_number_float()) return false;
    const double d = v.get<double>();
    if (!(d >= -9.2e18 && d <= 9.2e18) || d != std::floor(d)) return false;
    *x = (long long)d;
    return true;
}

// An integer in [lo, hi]; above hi it is clamped to hi when clamp, else refused.
ApiError read_int(const json& j, const char* name, long long lo, long long hi, bool clamp, long long* out) {
    const json* v = field(j, name);
    if (!v) return {};
    long long x;
    if (!integer_value(*v, &x)) return wrong_type(name, *v, "an integer");
    if (x > hi && clamp) x = hi;
    if (x < lo || x > hi)
        return bad_request("'" + std::string(name) + "' must be an integer from " + std::to_string(lo) +
                               (clamp ? " up" : " to " + std::to_string(hi)) + ", not " + v->dump(),
                           name);
    *out = x;
    return {};
}

ApiError unsupported(const char* name, const std::string& why) {
    return bad_request("'" + std::string(name) + "' is not supported by hearth: " + why, name, "unsupported_parameter");
}

// The text of a message's content: a string, or OpenAI's list of content parts of type text.
ApiError message_text(const json& content, size_t index, const char* separator, std::string* out) {
    const std::string where = "messages[" + std::to_string(index) + "].content";
    if (content.is_string()) {
        *out = content.get<std::string>();
        return {};
    }
    if (!content.is_array())
        return bad_request("'" + where + "' must be a string or a list of text parts, not " + type_name_of(content), "messages");
    out->clear();
    for (const json& part : content) {
        const json* type = part.is_object() ? field(part, "type") : nullptr;
        if (!type || !type->is_string())
            return bad_request("each part of '" + where + "' must be an object with a 'type'", "messages");
        if (type->get<std::string>() != "text")
            return bad_request(
                "'" + where + "' has a part of type " + in_quotes(type->get<std::string>()) + ": hearth takes text parts only",
                "messages", "unsupported_parameter");
        const json* text = field(part, "text");
        if (!text || !text->is_string()) return bad_request("a text part of '" + where + "' needs a string 'text'", "messages");
        if (&part != &content.front()) *out += separator;
        *out += text->get<std::string>();
    }
    return {};
}

// continue_last: a last assistant message is the start of the reply (CompletionRequest).
ApiError read_messages(const json& j, bool continue_last, std::vector<ChatMessage>* out) {
    const json* m = field(j, "messages");
    if (!m) return bad_request("'messages' is required", "messages");
    if (!m->is_array()) return wrong_type("messages", *m, "a list of messages");
    if (m->empty()) return bad_request("'messages' is empty: at least one user message is needed", "messages");
    if (m->size() > limits::kServerMessages)
        return bad_request("'messages' has " + std::to_string(m->size()) + " messages, more than the " +
                               std::to_string(limits::kServerMessages) + " hearth takes",
                           "messages");
    out->clear();
    bool spoken = false;  // a user or assistant message has come
    for (size_t i = 0; i < m->size(); i++) {
        const json& msg = (*m)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!msg.is_object()) return bad_request("'" + where + "' must be an object, not " + type_name_of(msg), "messages");
        const json* role = field(msg, "role");
        if (!role || !role->is_string()) return bad_request("'" + where + "' needs a string 'role'", "messages");
        std::string r = role->get<std::string>();
        if (r == "developer") r = "system";  // OpenAI's newer name for it
        if (r == "tool" || r == "function")
            return bad_request("'" + where + "' has role " + in_quotes(r) + ": tools are not supported by hearth", "messages",
                               "unsupported_parameter");
        if (r != "system" && r != "user" && r != "assistant")
            return bad_request(
                "'" + where + "' has role " + in_quotes(r) + ": the roles are system, developer, user and assistant", "messages");
        if (field(msg, "tool_calls") || field(msg, "function_call"))
            return bad_request("'" + where + "' has tool calls: tools are not supported by hearth", "messages",
                               "unsupported_parameter");
        const json* content = field(msg, "content");
        if (!content) return bad_request("'" + where + "' needs a 'content'", "messages");
        ChatMessage cm;
        cm.role = r;
        // Text parts are lines, as llama-server and vLLM join them; those of a last assistant
        // message (the start of the reply) paragraphs, as llama-server joins a prefill's.
        const bool prefill = r == "assistant" && i + 1 == m->size() && continue_last;
        if (ApiError e = message_text(*content, i, prefill ? "\n\n" : "\n", &cm.content)) return e;
        // A last assistant message is the start of the reply, which the model continues (as
        // llama-server prefills it); llama-server refuses two at the end.
        if (prefill && !out->empty() && out->back().role == "assistant")
            return bad_request("'" + where + "' and the message before it are the assistant's: a reply to continue (the last " +
                                   "message) must follow another side's message",
                               "messages");
        // Several messages in a row from the same side (OpenAI and llama-server take them) are
        // joined into one, a blank line between them, which every template can render. Where a
        // system message may stand besides first depends on the chat template (format_chat).
        if (!out->empty() && out->back().role == r) {
            out->back().content += "\n\n" + cm.content;
            continue;
        }
        // The user speaks first; but a reply begun after the system message alone is continued,
        // as llama-server renders it (the system turn, the generation prompt, the reply's text).
        if (r == "assistant" && !spoken && !(prefill && !out->empty()))
            return bad_request("'" + where +
                                   "' is from the assistant: the conversation must start with the user's message (or, "
                                   "after a system message, with a reply to continue, as the last message)",
                               "messages");
        spoken |= r != "system";
        out->push_back(std::move(cm));
    }
    if (!spoken) return bad_request("'messages' holds a system message only: a user message is needed", "messages");
    return {};
}

ApiError parse_object(std::string_view body, json* j) {
    const std::string err = parse_json(body, j);
    if (!err.empty()) return bad_request("the body is " + err);
    if (!j->is_object()) return bad_request(std::string("the body must be a JSON object, not ") + type_name_of(*j));
    return {};
}

}  // namespace

ApiError parse_completion_request(std::string_view body, bool chat, const SamplerParams& defaults, CompletionRequest* out) {
    json j;
    if (ApiError e = parse_object(body, &j)) return e;
    CompletionRequest r;
    r.chat = chat;
    r.sampler = defaults;

    // Parameters that would change the reply and that hearth does not implement.
    if (const json* n = field(j, "n")) {
        long long x = 0;
        if (!integer_value(*n, &x)) return wrong_type("n", *n, "an integer");
        if (x != 1) return unsupported("n", "one choice per request (n = 1); send the request again for another");
    }
    // llama-server's own fields that change the reply, which clients written for it send, and two
    // of OpenAI's (reasoning_effort, web_search_options): refused
    // by name unless they hold the value that changes nothing (other unknown fields are ignored).
    // Not `samplers`, the order of the samplers, which such clients send with every request:
    // hearth's order is llama-server's default, and the ones it lacks are refused here when on.
    struct Neutral {
        const char* name;
        double off;  // NaN: no number is neutral (only null, or an empty string)
        int side;    // the values that turn it off too, as llama.cpp reads them: +1 those above, -1 below
    };
    static const Neutral kLlamaFields[] = {
        {"grammar", NAN, 0},    {"json_schema", NAN, 0},   {"mirostat", 0, 0},           {"typical_p", 1, +1},
        {"tfs_z", 1, +1},       {"dynatemp_range", 0, -1}, {"xtc_probability", 0, -1},   {"dry_multiplier", 0, -1},
        {"top_n_sigma", 0, -1}, {"n_probs", 0, -1},        {"reasoning_effort", NAN, 0}, {"web_search_options", NAN, 0}};
    for (const Neutral& f : kLlamaFields) {
        const json* v = field(j, f.name);
        if (!v || (v->is_string() && v->get<std::string>().empty() && std::isnan(f.off))) continue;
        if (v->is_number()) {
            const double x = v->get<double>();
            if (x == f.off || (f.side > 0 && x > f.off) || (f.side < 0 && x < f.off)) continue;
        }
        char off[64];
        std::snprintf(off, sizeof off, "only %s%g, which turns it off", f.side > 0 ? ">= " : f.side < 0 ? "<= " : "", f.off);
        // reasoning_effort and web_search_options are OpenAI's own, for its reasoning and search models.
        const bool openai = std::strcmp(f.name, "reasoning_effort") == 0 || std::strcmp(f.name, "web_search_options") == 0;
        return unsupported(f.name, !std::isnan(f.off) ? off
                                   : openai           ? "OpenAI's field for its reasoning and search models, not implemented"
                                                      : "llama-server's extension, not implemented");
    }
    // Qwen3's switch: hearth's template renders thinking off, so only enable_thinking true, or
    // any other argument, changes anything.
    if (const json* k = field(j, "chat_template_kwargs")) {
        const json* think = k->is_object() ? field(*k, "enable_thinking") : nullptr;
        const bool off = k->is_object() ? k->size() == (think ? 1u : 0u) && (!think || *think == false)
                                        : k->is_string() && k->get<std::string>().empty();
        if (!off)
            return unsupported("chat_template_kwargs", "the built-in templates take no arguments (Qwen3's thinking stays off)");
    }
    // continue_final_message (vLLM's, after transformers' apply_chat_template; llama-server reads
    // it too) says what a last assistant message is. true: the start of the reply, continued, as
    // hearth takes it when the field is absent (llama-server's "content" says the same). false: a
    // finished turn, after which the reply is a new one (vLLM's reading; llama-server takes
    // false as absent and continues the message).
    std::optional<bool> continue_final;
    if (const json* c = field(j, "continue_final_message")) {
        if (*c == "reasoning_content")
            return unsupported("continue_final_message", "\"reasoning_content\": the built-in templates render no reasoning");
        if (!c->is_boolean() && *c != "content") return wrong_type("continue_final_message", *c, "a boolean");
        continue_final = *c != false;
    }
    r.continue_last = continue_final.value_or(true);
    // vLLM's and llama-server's switch for the assistant header after the last message: without
    // it the model continues the last message's text. That is what continue_final_message true
    // asks, and both servers refuse the two true together (add_generation_prompt is true unless
    // given): the last message, the assistant's, is then continued. Else hearth takes only true.
    const json* g = field(j, "add_generation_prompt");
    if (continue_final == true && (!g || *g != false))
        return bad_request(
            "'continue_final_message' true continues the last message, so no assistant header may follow it: send "
            "'add_generation_prompt': false with it (which is true unless given), as vLLM and llama-server ask",
            "add_generation_prompt");
    if (continue_final != true && g && *g != true)
        return unsupported("add_generation_prompt",
                           "only true (the reply follows the assistant's header), or false with 'continue_final_message' true");
    if (const json* b = field(j, "best_of"); b && *b != 1) return unsupported("best_of", "only best_of = 1");
    for (const char* name : {"tools", "functions"})
        if (const json* t = field(j, name); t && !(t->is_array() && t->empty()))
            return unsupported(name, "tools and function calls");
    for (const char* name : {"tool_choice", "function_call"})
        if (const json* t = field(j, name); t && *t != "none") return unsupported(name, "tools and function calls");
    // Log-probabilities of the reply's tokens. Chat: "logprobs": true, and "top_logprobs": N
    // alternatives per token. Completions (the legacy API): "logprobs": N, the alternatives.
    // A client may send the other API's "off" (chat 0, completions false): that is off too.
    const int kTop = limits::kServerTopLogprobs;
    long long top = 0;
    const json* lp = field(j, "logprobs");
    const bool off = lp && (chat ? *lp == 0 : *lp == false);
    if (off) {
        if (field(j, "top_logprobs")) return bad_request("'top_logprobs' needs 'logprobs'", "top_logprobs");
    } else if (chat) {
        bool want = false;
        if (ApiError e = read_bool(j, "logprobs", &want)) return e;
        if (ApiError e = read_int(j, "top_logprobs", 0, kTop, false, &top)) return e;
        if (field(j, "top_logprobs") && !want) return bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
        r.logprobs = want ? int(top) : -1;
    } else {
        top = -1;
        if (ApiError e = read_int(j, "logprobs", 0, kTop, false, &top)) return e;
        r.logprobs = int(top);
        if (field(j, "top_logprobs"))
            return bad_request("'top_logprobs' is the chat API's: a completion asks with 'logprobs': N", "top_logprobs");
    }
    if (const json* f = field(j, "response_format")) {
        const json* t = f->is_object() ? field(*f, "type") : nullptr;
        if (!t || *t != "text") return unsupported("response_format", "text replies only (type 'text')");
    }
    if (const json* b = field(j, "logit_bias"); b && !(b->is_object() && b->empty()))
        return unsupported("logit_bias", "no logit bias");
    // The legacy completions' echo: the prompt's text, and with logprobs its tokens' (a scorer's
    // request, e.g. lm-evaluation-harness's loglikelihood: echo, logprobs and max_tokens 0 or 1).
    if (ApiError e = read_bool(j, "echo", &r.echo)) return e;
    if (r.echo && chat) return unsupported("echo", "it is the completions API's; a chat reply does not echo its messages");
    if (const json* s = field(j, "suffix"); s && *s != "") return unsupported("suffix", "no insertion (suffix)");
    for (const char* name : {"audio", "prediction"})
        if (field(j, name)) return unsupported(name, "text only");
    if (const json* m = field(j, "modalities"))
        if (!m->is_array() || std::any_of(m->begin(), m->end(), [](const json& x) { return x != "text"; }))
            return unsupported("modalities", "text only ([\"text\"])");

    if (const json* m = field(j, "model")) {
        if (!m->is_string()) return wrong_type("model", *m, "a string");
        r.model = m->get<std::string>();
    }
    if (chat) {
        if (ApiError e = read_messages(j, r.continue_last, &r.messages)) return e;
        if (continue_final == true && r.messages.back().role != "assistant")
            return bad_request(
                "'continue_final_message' true continues the last message, which must be the assistant's: the start of "
                "the reply (hearth does not continue a user's or system message)",
                "continue_final_message");
    } else {
        const json* p = field(j, "prompt");
        if (!p) return bad_request("'prompt' is required", "prompt");
        // A list of one prompt is that prompt; more than one would be a batch (n choices).
        if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
        if (p->is_array() && !p->empty() && (*p)[0].is_number()) {
            // Token ids, as OpenAI's API allows: evaluated as given (no BOS is added). The
            // server checks them against the vocabulary, which the parser does not know.
            if (p->size() > limits::kServerTokenIds)
                return bad_request("'prompt' holds more than " + std::to_string(limits::kServerTokenIds) + " token ids",
                                   "prompt");
            for (const json& x : *p) {
                if (!x.is_number_integer())
                    return bad_request(std::string("'prompt' as token ids must hold integers, not ") + type_name_of(x), "prompt");
                const bool in_range = x.is_number_unsigned() ? x.get<uint64_t>() <= uint64_t(INT_MAX)
                                                             : x.get<int64_t>() >= 0 && x.get<int64_t>() <= INT_MAX;
                if (!in_range) return bad_request("token id " + x.dump() + " in 'prompt' is not a token id", "prompt");
                r.prompt_ids.push_back(int(x.get<int64_t>()));
            }
            r.prompt_is_ids = true;
        } else {
            if (p->is_array() && p->empty()) return bad_request("'prompt' is an empty list", "prompt");
            if (p->is_array() && p->size() > 1 && (*p)[0].is_string())
                return bad_request("'prompt' holds " + std::to_string(p->size()) + " prompts: hearth takes one per request",
                                   "prompt");
            if (!p->is_string())
                return bad_request(
                    std::string("'prompt' must be a string or a list of token ids (or a list of one of them), not ") +
                        type_name_of(*p),
                    "prompt");
            r.prompt = p->get<std::string>();
        }
    }

    if (ApiError e = read_bool(j, "stream", &r.stream)) return e;
    if (const json* so = field(j, "stream_options")) {
        if (!so->is_object()) return wrong_type("stream_options", *so, "an object");
        if (!r.stream) return bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
        if (ApiError e = read_bool(*so, "include_usage", &r.include_usage)) {
            e.param = "stream_options";
            return e;
        }
    }
    long long v = 0;
    // max_completion_tokens is the newer name; when both are given it decides. n_predict is
    // llama-server's, where -1 means no limit but the context (as absent).
    for (const char* name : {"n_predict", "max_tokens", "max_completion_tokens"}) {
        v = -1;
        const bool llama = name[0] == 'n';
        if (ApiError e = read_int(j, name, llama ? -1 : 0, INT_MAX, true, &v)) return e;
        if (v == 0 && !r.echo)
            return bad_request("'" + std::string(name) + "' must be at least 1 (0, nothing generated, only with 'echo')", name);
        if (v >= 0) r.max_tokens = int(v);
    }
    if (ApiError e = read_bool(j, "ignore_eos", &r.ignore_eos)) return e;

    SamplerParams& s = r.sampler;
    if (ApiError e = read_real(j, "temperature", 0, 2, &s.temperature)) return e;
    if (ApiError e = read_real(j, "top_p", 0, 1, &s.top_p)) return e;
    if (ApiError e = read_real(j, "min_p", 0, 1, &s.min_p)) return e;
    if (ApiError e = read_real(j, "repeat_penalty", 0.01, 100, &s.repeat_penalty)) return e;
    if (ApiError e = read_real(j, "frequency_penalty", -2, 2, &s.frequency_penalty)) return e;
    if (ApiError e = read_real(j, "presence_penalty", -2, 2, &s.presence_penalty)) return e;
    v = s.top_k;
    if (ApiError e = read_int(j, "top_k", 0, 1 << 30, false, &v)) return e;
    s.top_k = int(v);
    v = s.repeat_last_n;
    if (ApiError e = read_int(j, "repeat_last_n", 0, 1 << 24, false, &v)) return e;
    s.repeat_last_n = int(v);
    if (const json* seed = field(j, "seed")) {
        long long x = 0;
        if (!integer_value(*seed, &x)) return wrong_type("seed", *seed, "an integer");
        // -1 asks for a random seed, as in llama-server (whose clients send it by default).
        if (x != -1) {
            s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : uint64_t(x);
            r.seed_given = true;
        }
    }

    if (const json* st = field(j, "stop")) {
        std::vector<std::string> stops;
        if (st->is_string()) {
            stops.push_back(st->get<std::string>());
        } else if (st->is_array()) {
            if (st->size() > limits::kServerStopStrings)
                return bad_request("'stop' has " + std::to_string(st->size()) + " strings, more than " +
                                       std::to_string(limits::kServerStopStrings),
                                   "stop");
            for (const json& x : *st) {
                if (!x.is_string()) return bad_request(std::string("'stop' must hold strings, not ") + type_name_of(x), "stop");
                stops.push_back(x.get<std::string>());
            }
        } else {
            return wrong_type("stop", *st, "a string or a list of strings");
        }
        for (std::string& x : stops) {
            if (x.size() > limits::kServerStopBytes)
                return bad_request("a stop string is " + std::to_string(x.size()) + " bytes, more than " +
                                       std::to_string(limits::kServerStopBytes),
                                   "stop");
            if (!x.empty()) r.stop.push_back(std::move(x));
        }
    }
    *out = std::move(r);
    return {};
}

ApiError parse_tokenize_request(std::string_view body, TokenizeRequest* out) {
    json j;
    if (ApiError e = parse_object(body, &j)) return e;
    const json* c = field(j, "content");
    if (!c) return bad_request("'content' is required", "content");
    TokenizeRequest r;
    if (c->is_string()) {
        r.content.push_back({c->get<std::string>(), -1});
    } else if (c->is_array()) {
        // llama-server's mixed content: texts and token ids, in order.
        if (c->size() > limits::kServerTokenIds)
            return bad_request("'content' has more than " + std::to_string(limits::kServerTokenIds) + " parts", "content");
        for (const json& x : *c) {
            if (x.is_string()) {
                r.content.push_back({x.get<std::string>(), -1});
                continue;
            }
            const bool id = x.is_number_unsigned()
                                ? x.get<uint64_t>() <= uint64_t(INT_MAX)
                                : x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= INT_MAX;
            if (!id) return bad_request("'content' as a list must hold texts and token ids, not " + x.dump(), "content");
            r.content.push_back({"", int(x.get<int64_t>())});
        }
    } else {
        return wrong_type("content", *c, "a string or a list of texts and token ids");
    }
    if (ApiError e = read_bool(j, "add_special", &r.add_special)) return e;
    if (ApiError e = read_bool(j, "parse_special", &r.parse_special)) return e;
    if (ApiError e = read_bool(j, "with_pieces", &r.with_pieces)) return e;
    *out = std::move(r);
    return {};
}

ApiError parse_detokenize_request(std::string_view body, int vocab_size, std::vector<int>* tokens) {
    json j;
    if (ApiError e = parse_object(body, &j)) return e;
    const json* t = field(j, "tokens");
    if (!t) return bad_request("'tokens' is required", "tokens");
    if (!t->is_array()) return wrong_type("tokens", *t, "a list of token ids");
    if (t->size() > limits::kServerTokenIds)
        return bad_request("'tokens' has more than " + std::to_string(limits::kServerTokenIds) + " ids", "tokens");
    tokens->clear();
    for (const json& x : *t) {
        if (!x.is_number_integer())
            return bad_request(std::string("'tokens' must hold integers, not ") + type_name_of(x), "tokens");
        const bool in_range = x.is_number_unsigned() ? x.get<uint64_t>() < uint64_t(vocab_size)
                                                     : x.get<int64_t>() >= 0 && x.get<int64_t>() < vocab_size;
        if (!in_range)
            return bad_request("token id " + x.dump() + " is outside the vocabulary 0.." + std::to_string(vocab_size - 1),
                               "tokens");
        tokens->push_back(int(x.get<int64_t>()));
    }
    return {};
}

namespace {

// The items of a comma-separated list, lowercased, each without the spaces and tabs around it.
std::vector<std::string> list_items(std::string_view list) {
    std::vector<std::string> items;
    for (size_t at = 0; at <= list.size();) {
        size_t end = list.find(',', at);
        if (end == std::string_view::npos) end = list.size();
        std::string item = ascii_lower(list.substr(at, end - at));
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        items.push_back(std::move(item));
        at = end + 1;
    }
    return items;
}

// The host of `text` when it is HOST or HOST:PORT (a Host header, RFC 9110 7.2; an origin
// after its scheme), lowercased: a name of letters, digits, '-', '.' and '_', or a bracketed
// IPv6 address; the port, if any, one or more digits. "" when `text` is not of that form.
std::string host_of(std::string_view text) {
    const std::string t = ascii_lower(text);
    size_t end;
    if (!t.empty() && t[0] == '[') {
        end = t.find(']');
        if (end == std::string::npos) return "";
        end++;
    } else {
        end = std::min(t.find(':'), t.size());
        if (end == 0 || t.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-._") < end) return "";
    }
    if (end < t.size()) {
        if (t[end] != ':' || end + 1 == t.size()) return "";
        for (size_t i = end + 1; i < t.size(); i++)
            if (!std::isdigit((unsigned char)t[i])) return "";
    }
    return t.substr(0, end);
}

// Whether a host (as host_of gives it) names this machine's loopback interface, whatever any
// DNS says: localhost and the names under .localhost (RFC 6761 6.3: resolved to loopback by
// the system and by browsers themselves), an address in 127.0.0.0/8, [::1] (RFC 6890), or
// the IPv6 form of a 127.0.0.0/8 address.
bool is_loopback_host(const std::string& host) {
    const std::string sub = ".localhost";
    if (host == "localhost" || (host.size() > sub.size() && ends_with(host, sub)))
        return host.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") == std::string::npos;
    in_addr v4;
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    in6_addr v6;
    if (host.size() > 2 && host[0] == '[' && inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &v6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
    return false;
}

// Whether an origin is an http or https one on this machine's loopback names; an origin has
// no path.
bool origin_is_loopback(std::string_view origin) {
    const std::string o = ascii_lower(origin);
    const size_t at = o.rfind("http://", 0) == 0 ? 7 : o.rfind("https://", 0) == 0 ? 8 : std::string::npos;
    if (at == std::string::npos) return false;
    const std::string host = host_of(std::string_view(o).substr(at));
    return !host.empty() && is_loopback_host(host);
}

}  // namespace

std::string bearer_token(std::string_view authorization) {
    if (authorization.size() < 7 || ascii_lower(authorization.substr(0, 7)) != "bearer ") return "";
    std::string_view token = authorization.substr(7);
    token.remove_prefix(std::min(token.find_first_not_of(' '), token.size()));
    return std::string(token);
}

bool origin_allowed(std::string_view origin, std::string_view allowed) {
    // An origin let in is echoed in a header: never one with a control character (a CR would
    // end the header line there), whatever --cors-origins says.
    if (origin.empty() || std::any_of(origin.begin(), origin.end(), [](char c) { return (unsigned char)c < 0x20 || c == 0x7f; }))
        return false;
    const std::string o = ascii_lower(origin);
    for (const std::string& item : list_items(allowed))
        if (item == "*" || item == o || (item == "localhost" && origin_is_loopback(o))) return true;
    return false;
}

bool host_allowed(std::string_view host_header, std::string_view allowed) {
    const std::vector<std::string> items = list_items(allowed);
    if (std::find(items.begin(), items.end(), "*") != items.end()) return true;
    const std::string host = host_of(host_header);
    if (host.empty()) return false;
    if (is_loopback_host(host)) return true;
    for (const std::string& item : items) {
        if (item == host) return true;
        // ".example.com": the name and every name under it, as Vite's server.allowedHosts has it.
        if (item.size() > 1 && item[0] == '.' && (host == item.substr(1) || (host.size() > item.size() && ends_with(host, item))))
            return true;
    }
    return false;
}

std::string check_allowed_hosts(std::string_view allowed) {
    for (const std::string& item : list_items(allowed)) {
        if (item.empty()) return "an item of the list is empty";
        if (item == "*") continue;
        const std::string name = item[0] == '.' ? item.substr(1) : item;
        const std::string host = host_of(name);
        if (host.empty()) return "'" + printable(item, 100) + "' is not a host name or address";
        if (host != name) return "'" + printable(item, 100) + "': name the host without its port";
    }
    return "";
}

}  // namespace hearth
