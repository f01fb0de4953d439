// libFuzzer target: the server's request parser (server/request.h), the JSON body of every
// POST a client sends. The first byte picks the endpoint (chat, completions, tokenize,
// detokenize); the rest is the body. Besides crashes and sanitizer reports, a body the parser
// accepts must hold what the server relies on: no two messages in a row from one side, the
// user first (but for a reply continued right after the system message), stop strings within
// their limits, token-id prompts non-empty and not negative, a max_tokens that is positive or
// "none", sampling values in their ranges; a refused one must say why with status 400.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/limits.h"
#include "server/request.h"
#include "tests/fuzz/fuzz_json_depth.h"
#include "tests/fuzz/fuzz_report.h"

using namespace hearth;

namespace {

void require(bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "fuzz_server_request: accepted a request that breaks: %s\n", what);
    std::abort();
}

void check_completion(const CompletionRequest& r) {
    require(r.max_tokens == -1 || r.max_tokens >= 1, "max_tokens is -1 or positive");
    require(r.stop.size() <= limits::kServerStopStrings, "at most kServerStopStrings stop strings");
    for (const std::string& s : r.stop)
        require(!s.empty() && s.size() <= limits::kServerStopBytes, "stop strings non-empty, bounded");
    require(r.sampler.temperature >= 0 && r.sampler.temperature <= 2, "temperature in 0..2");
    require(r.sampler.top_p >= 0 && r.sampler.top_p <= 1, "top_p in 0..1");
    require(r.sampler.min_p >= 0 && r.sampler.min_p <= 1, "min_p in 0..1");
    require(r.sampler.top_k >= 0 && r.sampler.repeat_last_n >= 0, "top_k, repeat_last_n not negative");
    require(!r.include_usage || r.stream, "include_usage only when streaming");
    require(r.prompt_is_ids || r.prompt_ids.empty(), "prompt ids only when the prompt is ids");
    if (r.prompt_is_ids) {
        require(!r.chat && r.prompt.empty(), "prompt ids only for completions, and no text with them");
        require(!r.prompt_ids.empty() && r.prompt_ids.size() <= limits::kServerTokenIds, "1..kServerTokenIds prompt ids");
        for (int id : r.prompt_ids) require(id >= 0, "prompt ids not negative");
    }
    if (!r.chat) return;
    require(!r.messages.empty() && r.messages.size() <= limits::kServerMessages, "1..kServerMessages messages");
    // Messages from one side in a row are joined; system messages may stand between turns (the
    // chat template decides where); a last assistant message is a reply to continue, or with
    // continue_final_message false a finished one.
    size_t first_spoken = r.messages.size();
    for (size_t i = 0; i < r.messages.size(); i++) {
        const std::string& role = r.messages[i].role;
        require(role == "system" || role == "user" || role == "assistant", "roles are system, user and assistant");
        require(i == 0 || r.messages[i - 1].role != role, "no two messages in a row from one side");
        if (role != "system" && first_spoken == r.messages.size()) first_spoken = i;
    }
    require(first_spoken < r.messages.size(), "a user or assistant message");
    const bool continued_after_system =
        r.continue_last && first_spoken > 0 && first_spoken + 1 == r.messages.size();  // [system, assistant]
    require(r.messages[first_spoken].role == "user" || continued_after_system,
            "the user speaks first, but for a reply continued right after the system message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
    ApiError e;
    switch (data[0] % 4) {
        case 0:
        case 1: {
            CompletionRequest r;
            e = parse_completion_request(body, data[0] % 4 == 0, SamplerParams{}, &r);
            if (!e) check_completion(r);
            break;
        }
        case 2: {
            TokenizeRequest t;
            e = parse_tokenize_request(body, &t);
            break;
        }
        case 3: {
            std::vector<int> ids;
            e = parse_detokenize_request(body, 1024, &ids);
            if (!e)
                for (int id : ids) require(id >= 0 && id < 1024, "ids inside the vocabulary");
            break;
        }
    }
    if (e) {
        require(e.status == 400 && !e.message.empty(), "a refusal is 400 with a message");
        (void)error_body(e);
    }
    fuzz::report("server request", e.message);
    return 0;
}

// JSON nested beyond what byte mutations reach (fuzz_json_depth.h).
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    return fuzz::mutate_json(data, size, max_size, seed);
}
