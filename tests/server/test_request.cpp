// The server's request parser (server/request.h) against OpenAI's API reference: what a chat
// or completion body means, which values are refused, and the error's status and `param`.
// The expected values come from the reference's documented semantics (types, ranges, the
// parameters hearth does not implement), not from the parser's own output.
#include <doctest/doctest.h>

#include <climits>
#include <nlohmann/json.hpp>

#include "base/limits.h"
#include "server/request.h"

using namespace hearth;

namespace {

SamplerParams server_defaults() {
    SamplerParams p;
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.seed = 7;
    return p;
}

CompletionRequest chat_ok(const std::string& body) {
    CompletionRequest r;
    ApiError e = parse_completion_request(body, true, server_defaults(), &r);
    INFO(body << " -> " << e.message);
    CHECK(!e);
    return r;
}

CompletionRequest completion_ok(const std::string& body) {
    CompletionRequest r;
    ApiError e = parse_completion_request(body, false, server_defaults(), &r);
    INFO(body << " -> " << e.message);
    CHECK(!e);
    return r;
}

// A refused body: status 400 and the parameter named, in `param` and in the message.
void refused(const std::string& body, bool chat, const std::string& param) {
    CompletionRequest r;
    ApiError e = parse_completion_request(body, chat, server_defaults(), &r);
    INFO(body << " -> " << e.status << " " << e.message);
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.param == param);
    if (!param.empty()) CHECK(e.message.find(param) != std::string::npos);
    CHECK(!e.message.empty());
}

const std::string kUser = R"("messages":[{"role":"user","content":"Hi"}])";

}  // namespace

TEST_CASE("server request: a minimal chat request takes the server's defaults") {
    CompletionRequest r = chat_ok("{" + kUser + "}");
    CHECK(r.chat);
    REQUIRE(r.messages.size() == 1);
    CHECK(r.messages[0].role == "user");
    CHECK(r.messages[0].content == "Hi");
    CHECK(!r.stream);
    CHECK(r.max_tokens == -1);  // no limit given: the rest of the context
    CHECK(r.sampler.temperature == doctest::Approx(0.8));
    CHECK(r.sampler.top_k == 40);
    CHECK(!r.seed_given);
    CHECK(r.stop.empty());
}

TEST_CASE("server request: sampling fields, max_tokens and max_completion_tokens, stop, seed") {
    CompletionRequest r = chat_ok("{" + kUser +
                                  R"(,"model":"x","temperature":0,"top_p":0.5,"top_k":3,"min_p":0.1,"repeat_penalty":1.1,
                                      "seed":-1,"max_tokens":10,"stop":"\n\n","stream":true,"stream_options":{"include_usage":true}})");
    CHECK(r.model == "x");
    CHECK(r.sampler.temperature == 0);
    CHECK(r.sampler.top_p == doctest::Approx(0.5));
    CHECK(r.sampler.top_k == 3);
    CHECK(r.sampler.min_p == doctest::Approx(0.1));
    CHECK(r.sampler.repeat_penalty == doctest::Approx(1.1));
    CHECK(!r.seed_given);  // -1 asks for a random seed (llama.cpp's LLAMA_DEFAULT_SEED)
    CHECK(chat_ok("{" + kUser + R"(,"seed":18446744073709551615})").sampler.seed == UINT64_MAX);
    CHECK(chat_ok("{" + kUser + R"(,"seed":-2})").seed_given);
    CHECK(r.max_tokens == 10);
    CHECK(r.stream);
    CHECK(r.include_usage);
    CHECK(r.stop == std::vector<std::string>{"\n\n"});
    // max_completion_tokens is the newer name and wins; a huge value is capped later by the context.
    CHECK(chat_ok("{" + kUser + R"(,"max_tokens":10,"max_completion_tokens":3})").max_tokens == 3);
    CHECK(chat_ok("{" + kUser + R"(,"max_tokens":99999999999999})").max_tokens == INT_MAX);
    // llama-server's name, where -1 is no limit; a whole number written as a float is that number.
    CHECK(chat_ok("{" + kUser + R"(,"n_predict":7})").max_tokens == 7);
    CHECK(chat_ok("{" + kUser + R"(,"n_predict":-1})").max_tokens == -1);
    CHECK(chat_ok("{" + kUser + R"(,"max_tokens":2.0,"n":1.0,"seed":5.0})").max_tokens == 2);
    // null is "not given", as OpenAI's clients send it.
    CompletionRequest n = chat_ok("{" + kUser + R"(,"temperature":null,"max_tokens":null,"stop":null,"n":null,"tools":null})");
    CHECK(n.sampler.temperature == doctest::Approx(0.8));
    CHECK(n.max_tokens == -1);
    // A list of stop strings; empty ones stop nothing and are dropped.
    CHECK(chat_ok("{" + kUser + R"(,"stop":["a","","END"]})").stop == std::vector<std::string>{"a", "END"});
}

TEST_CASE("server request: messages: roles, content parts, order") {
    CompletionRequest r = chat_ok(
        R"({"messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
                                     {"role":"assistant","content":"c"},{"role":"user","content":"d","name":"me"}]})");
    REQUIRE(r.messages.size() == 4);
    CHECK(r.messages[0].role == "system");   // developer is OpenAI's newer name for system
    CHECK(r.messages[1].content == "a\nb");  // text parts are lines, as llama-server joins them
    CHECK(r.messages[2].role == "assistant");
    CHECK(r.messages[3].content == "d");

    refused(R"({})", true, "messages");
    refused(R"({"messages":[]})", true, "messages");
    refused(R"({"messages":"Hi"})", true, "messages");
    refused(R"({"messages":[{"role":"user"}]})", true, "messages");
    refused(R"({"messages":[{"role":"user","content":5}]})", true, "messages");
    refused(R"({"messages":[{"role":"wizard","content":"x"}]})", true, "messages");
    refused(R"({"messages":[{"role":"tool","content":"x","tool_call_id":"1"}]})", true, "messages");
    refused(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})", true, "messages");
    refused(R"({"messages":[{"role":"assistant","content":"x"}]})", true, "messages");  // the user speaks first
    refused(R"({"messages":[{"role":"system","content":"s"}]})", true, "messages");
    // Messages in a row from one side are one message, as OpenAI and llama-server take them.
    const CompletionRequest joined = chat_ok(
        R"({"messages":[{"role":"user","content":"x"},{"role":"user","content":"y"},{"role":"assistant","content":"a"},
                        {"role":"assistant","content":"b"},{"role":"user","content":"z"}]})");
    REQUIRE(joined.messages.size() == 3);
    CHECK(joined.messages[0].content == "x\n\ny");
    CHECK(joined.messages[1].content == "a\n\nb");
    refused(R"({"messages":[{"role":"system","content":"s"},{"role":"assistant","content":"x"},{"role":"user","content":"y"}]})",
            true, "messages");  // the user speaks first
    // A system message after the first is kept where it stands (the chat template decides: format_chat),
    // and two in a row are one.
    const CompletionRequest later =
        chat_ok(R"({"messages":[{"role":"system","content":"s"},{"role":"system","content":"t"},{"role":"user","content":"x"},)"
                R"({"role":"system","content":"y"},{"role":"user","content":"z"}]})");
    REQUIRE(later.messages.size() == 4);
    CHECK(later.messages[0].content == "s\n\nt");
    CHECK(later.messages[2].role == "system");
    CHECK(later.messages[3].content == "z");
    // A last assistant message is the start of the reply (llama-server's prefill); its text parts are
    // joined by a blank line, as llama-server joins a prefill's. Two at the end are refused, as
    // llama-server refuses them.
    const CompletionRequest prefill = chat_ok(
        R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"text","text":"Wh"},{"type":"text","text":"ill"}]}]})");
    REQUIRE(prefill.messages.size() == 2);
    CHECK(prefill.messages[1].role == "assistant");
    CHECK(prefill.messages[1].content == "Wh\n\nill");
    refused(
        R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"a"},{"role":"assistant","content":"b"}]})",
        true, "messages");
    // ...also after the system message alone, as llama-server takes it (the template decides: format_chat).
    const CompletionRequest after_system =
        chat_ok(R"({"messages":[{"role":"system","content":"s"},{"role":"assistant","content":"Wh"}]})");
    REQUIRE(after_system.messages.size() == 2);
    CHECK(after_system.messages[1].role == "assistant");
    std::string many = R"({"messages":[)";
    for (size_t i = 0; i <= limits::kServerMessages; i++) many += std::string(i ? "," : "") + R"({"role":"user","content":"x"})";
    refused(many + "]}", true, "messages");
}

// continue_final_message, as vLLM's ChatCompletionRequest and llama-server's
// (tools/server/server-common.cpp) read it: true (llama-server's "content" too) continues the
// last message and needs add_generation_prompt false (both refuse the two true together); false
// makes a last assistant message a finished turn (vLLM's reading, with a new turn after it).
TEST_CASE("server request: continue_final_message continues the last assistant message or closes it") {
    const std::string prefill = R"("messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Wh"}])";
    const CompletionRequest absent = chat_ok("{" + prefill + "}");
    CHECK(absent.continue_last);
    for (const char* value : {"true", "\"content\""}) {
        INFO(value);
        const CompletionRequest r =
            chat_ok("{" + prefill + R"(,"add_generation_prompt":false,"continue_final_message":)" + value + "}");
        CHECK(r.continue_last);
        REQUIRE(r.messages.size() == 2);
        CHECK(r.messages[1].role == "assistant");
        refused("{" + prefill + R"(,"continue_final_message":)" + value + "}", true, "add_generation_prompt");
        refused("{" + prefill + R"(,"add_generation_prompt":true,"continue_final_message":)" + value + "}", true,
                "add_generation_prompt");
    }
    // Only the assistant's message is continued.
    refused("{" + kUser + R"(,"add_generation_prompt":false,"continue_final_message":true})", true, "continue_final_message");
    const CompletionRequest closed = chat_ok("{" + prefill + R"(,"continue_final_message":false})");
    CHECK(!closed.continue_last);
    REQUIRE(closed.messages.size() == 2);
    // A closed turn is no reply begun: its text parts are lines, as every message's but a prefill's.
    CHECK(chat_ok(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"text","text":"a"},)"
                  R"({"type":"text","text":"b"}]}],"continue_final_message":false})")
              .messages[1]
              .content == "a\nb");
    // ...and the assistant does not speak first, even after a system message.
    refused(
        R"({"messages":[{"role":"system","content":"s"},{"role":"assistant","content":"Wh"}],"continue_final_message":false})",
        true, "messages");
    // With a last user message, false changes nothing.
    CHECK(chat_ok("{" + kUser + R"(,"continue_final_message":false})").messages.size() == 1);
    refused("{" + prefill + R"(,"continue_final_message":"reasoning_content","add_generation_prompt":false})", true,
            "continue_final_message");
    refused("{" + prefill + R"(,"continue_final_message":1})", true, "continue_final_message");
    refused("{" + prefill + R"(,"continue_final_message":"yes"})", true, "continue_final_message");
    refused("{" + prefill + R"(,"continue_final_message":false,"add_generation_prompt":false})", true, "add_generation_prompt");
}

TEST_CASE("server request: completions take a prompt string") {
    CompletionRequest r = completion_ok(R"({"prompt":"Once upon a time","max_tokens":5})");
    CHECK(!r.chat);
    CHECK(r.prompt == "Once upon a time");
    CHECK(r.max_tokens == 5);
    CHECK(completion_ok(R"({"prompt":["one string"]})").prompt == "one string");
    refused(R"({"max_tokens":5})", false, "prompt");
    refused(R"({"prompt":5})", false, "prompt");
    refused(R"({"prompt":["a","b"]})", false, "prompt");  // a batch of prompts: n choices
    // ...said as such (it said "not an array" of an array), as is an empty list.
    for (const auto& [body, says] : {std::pair<std::string, std::string>{R"({"prompt":["a","b"]})", "holds 2 prompts"},
                                     {R"({"prompt":[]})", "empty list"}}) {
        CompletionRequest r;
        const ApiError e = parse_completion_request(body, false, server_defaults(), &r);
        INFO(body << " -> " << e.message);
        CHECK(e.message.find(says) != std::string::npos);
    }
    // echo: the prompt's text (and with logprobs its tokens') first; max_tokens 0 only with it.
    CHECK(completion_ok(R"({"prompt":"x","echo":true})").echo);
    CHECK(!completion_ok(R"({"prompt":"x"})").echo);
    CHECK(completion_ok(R"({"prompt":"x","echo":true,"max_tokens":0,"logprobs":1})").max_tokens == 0);
    refused(R"({"prompt":"x","max_tokens":0})", false, "max_tokens");
    refused(R"({"prompt":"x","echo":false,"max_completion_tokens":0})", false, "max_completion_tokens");
    refused(R"({"prompt":"x","echo":"yes"})", false, "echo");
    refused("{" + kUser + R"(,"echo":true})", true, "echo");  // a chat reply does not echo its messages
    refused(R"({"prompt":"x","suffix":"y"})", false, "suffix");
    refused(R"({"prompt":"x","best_of":2})", false, "best_of");
    CHECK(completion_ok(R"({"prompt":"x","echo":false,"best_of":1})").prompt == "x");
}

TEST_CASE("server request: logprobs, as each API asks for them") {
    // Chat: "logprobs": true, with "top_logprobs" alternatives (0 without).
    CHECK(chat_ok("{" + kUser + "}").logprobs == -1);
    CHECK(chat_ok("{" + kUser + R"(,"logprobs":false})").logprobs == -1);
    CHECK(chat_ok("{" + kUser + R"(,"logprobs":0})").logprobs == -1);  // the other API's "off"
    CHECK(chat_ok("{" + kUser + R"(,"logprobs":true})").logprobs == 0);
    CHECK(chat_ok("{" + kUser + R"(,"logprobs":true,"top_logprobs":5})").logprobs == 5);
    CHECK(chat_ok("{" + kUser + R"(,"logprobs":true,"top_logprobs":null})").logprobs == 0);
    const std::string most = std::to_string(limits::kServerTopLogprobs), over = std::to_string(limits::kServerTopLogprobs + 1);
    CHECK(chat_ok("{" + kUser + R"(,"logprobs":true,"top_logprobs":)" + most + "}").logprobs == limits::kServerTopLogprobs);
    refused("{" + kUser + R"(,"logprobs":true,"top_logprobs":)" + over + "}", true, "top_logprobs");
    refused("{" + kUser + R"(,"logprobs":true,"top_logprobs":-1})", true, "top_logprobs");
    refused("{" + kUser + R"(,"logprobs":true,"top_logprobs":"2"})", true, "top_logprobs");
    refused("{" + kUser + R"(,"top_logprobs":2})", true, "top_logprobs");  // without logprobs
    refused("{" + kUser + R"(,"logprobs":false,"top_logprobs":2})", true, "top_logprobs");
    refused("{" + kUser + R"(,"logprobs":"yes"})", true, "logprobs");
    refused("{" + kUser + R"(,"logprobs":2})", true, "logprobs");
    // Completions: "logprobs": N alternatives.
    CHECK(completion_ok(R"({"prompt":"x"})").logprobs == -1);
    CHECK(completion_ok(R"({"prompt":"x","logprobs":false})").logprobs == -1);  // the other API's "off"
    CHECK(completion_ok(R"({"prompt":"x","logprobs":0})").logprobs == 0);
    CHECK(completion_ok(R"({"prompt":"x","logprobs":3})").logprobs == 3);
    refused(R"({"prompt":"x","logprobs":true})", false, "logprobs");
    refused(R"({"prompt":"x","logprobs":-1})", false, "logprobs");
    refused(R"({"prompt":"x","logprobs":)" + over + "}", false, "logprobs");
    refused(R"({"prompt":"x","logprobs":1,"top_logprobs":1})", false, "top_logprobs");
}

TEST_CASE("server request: completions take a prompt of token ids, as OpenAI's API allows") {
    CompletionRequest r = completion_ok(R"({"prompt":[1, 450, 0, 2147483647]})");
    CHECK(r.prompt_is_ids);
    CHECK(r.prompt_ids == std::vector<int>{1, 450, 0, INT_MAX});
    CHECK(r.prompt.empty());
    CHECK(completion_ok(R"({"prompt":[[7, 8]]})").prompt_ids == std::vector<int>{7, 8});  // a list of one list of ids
    CHECK(!completion_ok(R"({"prompt":"x"})").prompt_is_ids);
    refused(R"({"prompt":[1, -1]})", false, "prompt");
    refused(R"({"prompt":[2147483648]})", false, "prompt");
    refused(R"({"prompt":[1e30]})", false, "prompt");
    refused(R"({"prompt":[1.5]})", false, "prompt");
    refused(R"({"prompt":[1, "a"]})", false, "prompt");
    refused(R"({"prompt":[1, [2]]})", false, "prompt");
    refused(R"({"prompt":[[1], [2]]})", false, "prompt");  // a batch of prompts
    refused(R"({"prompt":[]})", false, "prompt");
    refused(R"({"prompt":[[]]})", false, "prompt");
    std::string many = R"({"prompt":[)";
    for (size_t i = 0; i <= limits::kServerTokenIds; i++) many += i ? ",1" : "1";
    refused(many + "]}", false, "prompt");
}

TEST_CASE("server request: wrong types and out-of-range values are 400 naming the field") {
    refused("{" + kUser + R"(,"temperature":"hot"})", true, "temperature");
    refused("{" + kUser + R"(,"temperature":2.5})", true, "temperature");  // OpenAI: 0 to 2
    refused("{" + kUser + R"(,"temperature":-0.1})", true, "temperature");
    refused("{" + kUser + R"(,"top_p":1.5})", true, "top_p");
    refused("{" + kUser + R"(,"top_k":-1})", true, "top_k");
    refused("{" + kUser + R"(,"top_k":2.5})", true, "top_k");
    refused("{" + kUser + R"(,"max_tokens":0})", true, "max_tokens");
    refused("{" + kUser + R"(,"max_tokens":-5})", true, "max_tokens");
    refused("{" + kUser + R"(,"max_tokens":"10"})", true, "max_tokens");
    refused("{" + kUser + R"(,"max_completion_tokens":1.5})", true, "max_completion_tokens");
    refused("{" + kUser + R"(,"stream":"yes"})", true, "stream");
    refused("{" + kUser + R"(,"stream_options":{"include_usage":true}})", true, "stream_options");  // without stream
    refused("{" + kUser + R"(,"seed":"1"})", true, "seed");
    {
        // 2^70 does not fit 64 bits, so the JSON parser reads it as a float: the message shows
        // the value, not "must be an integer, not a number".
        CompletionRequest r;
        const ApiError e =
            parse_completion_request("{" + kUser + R"(,"seed":1180591620717411303424})", true, server_defaults(), &r);
        INFO(e.message);
        CHECK(e.param == "seed");
        CHECK(e.message.find("1.1805916207174113e+21") != std::string::npos);
    }
    refused("{" + kUser + R"(,"model":5})", true, "model");
    refused("{" + kUser + R"(,"stop":5})", true, "stop");
    refused("{" + kUser + R"(,"stop":["a",1]})", true, "stop");
    refused("{" + kUser + R"(,"stop":["a","b","c","d","e"]})", true, "stop");  // OpenAI: up to 4
    refused("{" + kUser + R"(,"stop":")" + std::string(limits::kServerStopBytes + 1, 'x') + "\"}", true, "stop");
}

TEST_CASE("server request: presence_penalty and frequency_penalty, OpenAI's range") {
    const CompletionRequest r = chat_ok("{" + kUser + R"(,"presence_penalty":0.5,"frequency_penalty":-1})");
    CHECK(r.sampler.presence_penalty == 0.5f);
    CHECK(r.sampler.frequency_penalty == -1.0f);
    CHECK(completion_ok(R"({"prompt":"x","frequency_penalty":2})").sampler.frequency_penalty == 2.0f);
    refused("{" + kUser + R"(,"presence_penalty":2.5})", true, "presence_penalty");
    refused("{" + kUser + R"(,"frequency_penalty":"1"})", true, "frequency_penalty");
}

TEST_CASE("server request: parameters hearth does not implement are refused by name") {
    refused("{" + kUser + R"(,"n":2})", true, "n");
    refused("{" + kUser + R"(,"n":0})", true, "n");
    CHECK(chat_ok("{" + kUser + R"(,"n":1})").messages.size() == 1);
    refused("{" + kUser + R"(,"tools":[{"type":"function","function":{"name":"f"}}]})", true, "tools");
    refused("{" + kUser + R"(,"tool_choice":"auto"})", true, "tool_choice");
    refused("{" + kUser + R"(,"functions":[{"name":"f"}]})", true, "functions");
    refused("{" + kUser + R"(,"response_format":{"type":"json_object"}})", true, "response_format");
    refused("{" + kUser + R"(,"logit_bias":{"50256":-100}})", true, "logit_bias");
    refused("{" + kUser + R"(,"modalities":["text","audio"]})", true, "modalities");
    refused("{" + kUser + R"(,"modalities":"text"})", true, "modalities");
    refused("{" + kUser + R"(,"modalities":["image"]})", true, "modalities");
    // llama-server's own ones, as its clients send them.
    refused("{" + kUser + R"(,"grammar":"root ::= \"yes\""})", true, "grammar");
    refused("{" + kUser + R"(,"json_schema":{}})", true, "json_schema");
    refused("{" + kUser + R"(,"mirostat":2})", true, "mirostat");
    refused("{" + kUser + R"(,"typical_p":0.5})", true, "typical_p");
    refused("{" + kUser + R"(,"n_probs":3})", true, "n_probs");
    refused("{" + kUser + R"(,"chat_template_kwargs":{"enable_thinking":true}})", true, "chat_template_kwargs");
    refused("{" + kUser + R"(,"reasoning_effort":"low"})", true, "reasoning_effort");
    refused("{" + kUser + R"(,"top_n_sigma":1.5})", true, "top_n_sigma");
    refused("{" + kUser + R"(,"add_generation_prompt":false})", true, "add_generation_prompt");
    CHECK(chat_ok("{" + kUser +
                  R"(,"grammar":"","mirostat":0,"typical_p":1,"tfs_z":1.0,"dry_multiplier":0,"n_probs":0,"top_n_sigma":-1,
                                     "chat_template_kwargs":{"enable_thinking":false},"cache_prompt":true,"id_slot":-1,"add_generation_prompt":true,
                                     "samplers":["dry","top_k","typ_p","top_p","min_p","xtc","temperature"]})")
              .messages.size() == 1);
    // The neutral values of the same parameters change nothing and are accepted.
    CHECK(chat_ok("{" + kUser + R"(,"tool_choice":"none","tools":[],"response_format":{"type":"text"},
                                     "logit_bias":{},"modalities":["text"],"presence_penalty":0,"frequency_penalty":0,"user":"u","store":false})")
              .messages.size() == 1);
}

TEST_CASE("server request: a refused field is named as OpenAI's or llama-server's as it is") {
    // reasoning_effort and web_search_options are fields of OpenAI's Chat Completions API (its
    // reference; llama.cpp's server-common.cpp parses "the OAI reasoning_effort field"), grammar
    // and mirostat llama-server's. The first two were called llama-server's extension.
    for (const char* body : {R"(,"reasoning_effort":"low"})", R"(,"web_search_options":{}})"}) {
        CompletionRequest r;
        const ApiError e = parse_completion_request("{" + kUser + body, true, server_defaults(), &r);
        INFO(e.message);
        CHECK(e.status == 400);
        CHECK(e.message.find("OpenAI's") != std::string::npos);
        CHECK(e.message.find("llama-server") == std::string::npos);
    }
    CompletionRequest r;
    const ApiError e = parse_completion_request("{" + kUser + R"(,"grammar":"root ::= \"yes\""})", true, server_defaults(), &r);
    CHECK(e.message.find("llama-server's extension") != std::string::npos);
}

TEST_CASE("server request: a body that is not a JSON object is 400") {
    CompletionRequest r;
    for (const std::string& body :
         std::vector<std::string>{"", "{", "[1,2]", "\"text\"", "null", "{\"messages\": [}", std::string(100, '[')}) {
        ApiError e = parse_completion_request(body, true, server_defaults(), &r);
        INFO(body);
        CHECK(e.status == 400);
        CHECK(e.param.empty());
    }
    // Invalid UTF-8 inside a string (a lone continuation byte, an overlong form) is not JSON.
    for (const std::string bad : {"\x80", "\xc0\xaf", "\xff"}) {
        ApiError e =
            parse_completion_request(R"({"messages":[{"role":"user","content":")" + bad + "\"}]}", true, server_defaults(), &r);
        CHECK(e.status == 400);
    }
    // Nesting beyond the JSON depth limit is refused while parsing.
    std::string deep = R"({"messages":[{"role":"user","content":"x"}],"metadata":)";
    for (int i = 0; i < limits::kJsonDepth + 5; i++) deep += "[";
    ApiError e = parse_completion_request(deep, true, server_defaults(), &r);
    CHECK(e.status == 400);
    CHECK(e.message.find("nested") != std::string::npos);
}

TEST_CASE("server request: /tokenize and /detokenize bodies") {
    // llama-server's defaults (tools/server/server-context.cpp, post_tokenize): add_special
    // false, parse_special true, with_pieces false.
    TokenizeRequest t;
    t.add_special = true, t.parse_special = false, t.with_pieces = true;
    CHECK(!parse_tokenize_request(R"({"content":"Hello"})", &t));
    REQUIRE(t.content.size() == 1);
    CHECK(t.content[0].text == "Hello");
    CHECK(t.content[0].id == -1);
    CHECK(!t.add_special);
    CHECK(t.parse_special);
    CHECK(!t.with_pieces);
    CHECK(!parse_tokenize_request(R"({"content":"x","add_special":true,"parse_special":false,"with_pieces":true})", &t));
    CHECK(t.add_special);
    CHECK(!t.parse_special);
    CHECK(t.with_pieces);
    CHECK(parse_tokenize_request(R"({"content":5})", &t).param == "content");
    CHECK(parse_tokenize_request(R"({})", &t).status == 400);
    CHECK(parse_tokenize_request(R"({"content":"x","with_pieces":1})", &t).param == "with_pieces");
    CHECK(parse_tokenize_request(R"({"content":"x","parse_special":"no"})", &t).param == "parse_special");
    // llama-server's mixed content: texts and token ids in order.
    CHECK(!parse_tokenize_request(R"({"content":["Hi",5,"yo"]})", &t));
    REQUIRE(t.content.size() == 3);
    CHECK(t.content[1].id == 5);
    CHECK(t.content[2].text == "yo");
    CHECK(parse_tokenize_request(R"({"content":["Hi",-1]})", &t).param == "content");
    CHECK(parse_tokenize_request(R"({"content":[1.5]})", &t).param == "content");
    CHECK(parse_tokenize_request(R"({"content":[[1]]})", &t).param == "content");

    std::vector<int> ids;
    CHECK(!parse_detokenize_request(R"({"tokens":[1,2,3]})", 1024, &ids));
    CHECK(ids == std::vector<int>{1, 2, 3});
    CHECK(parse_detokenize_request(R"({"tokens":[1024]})", 1024, &ids).param == "tokens");
    CHECK(parse_detokenize_request(R"({"tokens":[-1]})", 1024, &ids).param == "tokens");
    CHECK(parse_detokenize_request(R"({"tokens":[1.5]})", 1024, &ids).param == "tokens");
    CHECK(parse_detokenize_request(R"({"tokens":[18446744073709551615]})", 1024, &ids).param == "tokens");
    CHECK(parse_detokenize_request(R"({"tokens":"1,2"})", 1024, &ids).param == "tokens");
}

TEST_CASE("server request: the error body is OpenAI's shape") {
    ApiError e = bad_request("'n' is not supported", "n", "unsupported_parameter");
    const nlohmann::json j = nlohmann::json::parse(error_body(e));
    CHECK(j["error"]["message"] == "'n' is not supported");
    CHECK(j["error"]["type"] == "invalid_request_error");
    CHECK(j["error"]["param"] == "n");
    CHECK(j["error"]["code"] == "unsupported_parameter");
    const nlohmann::json k = nlohmann::json::parse(error_body(bad_request("bad")));
    CHECK(k["error"]["param"].is_null());
    CHECK(k["error"]["code"].is_null());
    // A message carrying bytes that are not UTF-8 still makes valid JSON.
    // (The parse is kept in a variable: g++ warns of a discarded result even through a cast to void.)
    CHECK_NOTHROW([] {
        const auto j = nlohmann::json::parse(error_body(bad_request("x\xff")));
        return j.is_object();
    }());
}

// An origin is scheme://host[:port] (RFC 6454), its scheme and host without regard to case;
// "localhost" stands for pages on this machine's loopback names (RFC 6761: localhost and the
// names under .localhost; 127.0.0.1; [::1]).
TEST_CASE("server request: which origins --cors-origins lets in") {
    // The loopback addresses are 127.0.0.0/8 and ::1 (RFC 6890); a browser writes ::1 as [::1].
    for (const char* o : {"http://localhost", "http://localhost:5173", "https://LOCALHOST:8443", "http://127.0.0.1:3000",
                          "http://[::1]:8000", "https://app.localhost", "http://a.b.localhost:1", "http://127.0.0.2",
                          "http://127.255.0.1:80", "http://[0:0:0:0:0:0:0:1]"}) {
        INFO(o);
        CHECK(origin_allowed(o, "localhost"));
        CHECK(origin_allowed(o, "https://x.example, localhost"));
        CHECK(origin_allowed(o, "*"));
    }
    for (const char* o :
         {"http://evil.example", "http://localhost.evil.example", "http://127.0.0.1.evil.example:80", "http://localhost:80/path",
          "http://localhost:", "http://localhost:abc", "ftp://localhost", "null", "http://[::1", "http://128.0.0.1", ""}) {
        INFO(o);
        CHECK(!origin_allowed(o, "localhost"));
    }
    CHECK(origin_allowed("https://chat.example.com", "https://chat.example.com"));
    CHECK(origin_allowed("https://Chat.Example.com", "http://localhost:5173, https://chat.example.com"));
    CHECK(!origin_allowed("http://chat.example.com", "https://chat.example.com"));
    CHECK(!origin_allowed("https://chat.example.com:444", "https://chat.example.com"));
    CHECK(!origin_allowed("https://chat.example.com", ""));
    CHECK(origin_allowed("null", "null"));  // a file:// page, when asked for by name
    CHECK(!origin_allowed("", "*"));        // no Origin: not a cross-origin browser request
    // An origin let in is echoed in a header line: never one with a control character in it.
    CHECK(!origin_allowed("http://localhost\r:5173", "*"));
    CHECK(!origin_allowed(std::string("http://localhost\x7f"), "*"));
    CHECK(!origin_allowed("http://a.localhost\t", "localhost"));
}

// The Host check against DNS rebinding: Host is HOST[:PORT] (RFC 9110 7.2, RFC 3986 3.2.2); the
// loopback names are localhost and the names under .localhost (RFC 6761 6.3), 127.0.0.0/8 and
// ::1 (RFC 6890), as --allowed-hosts's help says; the ".NAME" items as Vite's allowedHosts.
TEST_CASE("server request: the Host names let in, and the lists --allowed-hosts takes") {
    for (const char* h : {"localhost", "localhost:8080", "LocalHost:8080", "app.localhost:5173", "a.b.localhost", "127.0.0.1",
                          "127.0.0.1:8080", "127.1.2.3:80", "[::1]", "[::1]:8080", "[0:0:0:0:0:0:0:1]:8080"}) {
        INFO(h);
        CHECK(host_allowed(h, ""));
        CHECK(host_allowed(h, "my.lan"));
    }
    for (const char* h : {"evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.evil.example", "localhost.",
                          "128.0.0.1", "192.168.1.5:8080", "[::2]", "[::1", "localhost:abc", "localhost:", "localhost:80:80", "",
                          ":8080", "local host", "localhost\r", "0x7f.0.0.1", "127.1", "127.000.0.1"}) {
        INFO(h);
        CHECK(!host_allowed(h, ""));
        CHECK(!host_allowed(h, "my.lan,.example.com"));
    }
    CHECK(host_allowed("my.lan", "my.lan"));
    CHECK(host_allowed("MY.LAN:8080", "other.lan, my.lan"));
    CHECK(host_allowed("192.168.1.5:8080", "192.168.1.5"));
    CHECK(host_allowed("[fe80::1]:8080", "[FE80::1]"));
    CHECK(!host_allowed("a.my.lan", "my.lan"));
    CHECK(host_allowed("example.com", ".example.com"));
    CHECK(host_allowed("a.b.example.com:443", ".example.com"));
    CHECK(!host_allowed("badexample.com", ".example.com"));
    CHECK(host_allowed("evil.example:8080", "*"));
    CHECK(host_allowed("evil.example", "my.lan, *"));

    CHECK(check_allowed_hosts("my.lan") == "");
    CHECK(check_allowed_hosts("my.lan, .example.com,192.168.1.5,[fe80::1],*") == "");
    CHECK(check_allowed_hosts("my.lan:8080").find("without its port") != std::string::npos);
    CHECK(check_allowed_hosts("[::1]:80").find("without its port") != std::string::npos);
    CHECK(check_allowed_hosts("a,,b").find("empty") != std::string::npos);
    CHECK(check_allowed_hosts("a,").find("empty") != std::string::npos);
    CHECK(check_allowed_hosts("*.example.com").find("not a host name") != std::string::npos);
    CHECK(check_allowed_hosts("http://my.lan").find("not a host name") != std::string::npos);
}

// RFC 6750 2.1: credentials = "Bearer" 1*SP b64token; the scheme's name is case-insensitive
// (RFC 9110 11.1).
TEST_CASE("server request: the token of a Bearer Authorization header") {
    CHECK(bearer_token("Bearer sesame") == "sesame");
    CHECK(bearer_token("bearer sesame") == "sesame");
    CHECK(bearer_token("BeArEr sesame") == "sesame");
    CHECK(bearer_token("Bearer   sesame") == "sesame");
    CHECK(bearer_token("Bearer sk-abc.def_ghi~+/=") == "sk-abc.def_ghi~+/=");
    CHECK(bearer_token("Basic c2VzYW1l") == "");
    CHECK(bearer_token("Bearersesame") == "");
    CHECK(bearer_token("Bearer ") == "");
    CHECK(bearer_token("Bearer") == "");
    CHECK(bearer_token("") == "");
}
