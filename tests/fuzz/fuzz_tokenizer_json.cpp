// libFuzzer target: a Hugging Face tokenizer.json and tokenizer_config.json, read into a
// byte-level BPE vocabulary and, when accepted, loaded and used on many texts
// (fuzz_tokenizer.h). What the reader lets through must never crash the tokenizer.
//
// The input: the tokenizer.json, then optionally a NUL byte and the tokenizer_config.json,
// then optionally NUL-separated texts to encode (JSON holds no raw NUL, so nothing is lost).
// Without a NUL the config is a fixed one naming Llama-3's and Qwen3's tokens.
#include <cstring>
#include <string>

#include "tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_json_depth.h"
#include "tests/fuzz/fuzz_tokenizer.h"

using namespace hearth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const char* s = reinterpret_cast<const char*>(data);
    const char* nul = static_cast<const char*>(std::memchr(s, 0, size));
    const std::string json(s, nul ? size_t(nul - s) : size);
    std::string config = R"({"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>", "add_bos_token": true})";
    std::vector<std::string> texts;
    if (nul) {
        const size_t rest = size - json.size() - 1;
        const char* next = static_cast<const char*>(std::memchr(nul + 1, 0, rest));
        config.assign(nul + 1, next ? size_t(next - nul - 1) : rest);
        if (next) fuzz::add_texts_from_bytes(reinterpret_cast<const uint8_t*>(next + 1), size_t(s + size - next - 1), &texts);
    }
    TokenizerSpec spec;
    spec.kind = TokenizerKind::bpe;
    std::string err = bpe_from_tokenizer_json(json, config, &spec.bpe, &spec.bpe_built);
    fuzz::report("tokenizer.json", err);
    if (!err.empty()) return 0;
    Tokenizer tok;
    if (!(err = tok.load(spec)).empty()) {
        // bpe_from_tokenizer_json built and checked this very vocabulary.
        std::fprintf(stderr, "fuzz: an accepted tokenizer.json does not load: %s\n", err.c_str());
        std::abort();
    }
    fuzz::use_tokenizer(tok, texts, size);
    return 0;
}

// JSON nested beyond what byte mutations reach (fuzz_json_depth.h).
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    return fuzz::mutate_json(data, size, max_size, seed);
}
