// What run does with a model file that parsed: bind its tensors, read every tensor's bytes (so
// a view past the input is caught by AddressSanitizer), load its tokenizer and use it.
#pragma once
#include <cstdint>

#include "model/model.h"
#include "tests/fuzz/fuzz_tokenizer.h"

using namespace hearth;

// The texts a model file gives: its last bytes, split at NUL bytes. In a file that parses they
// are the last tensor's data, which the fuzzer can change without breaking the parse (the
// seeds put texts there: tools/make_fuzz_seeds.py).
constexpr size_t kModelTextBytes = 1024;

inline void use_model(const ParsedCheckpoint& parsed, const uint8_t* data, size_t size) {
    Model m;
    std::string err = bind_model(parsed, &m);
    fuzz::report("bind", err);
    if (err.empty()) {
        volatile uint8_t sink = 0;
        for (const TensorView& t : m.all_tensors) {
            const uint8_t* p = static_cast<const uint8_t*>(t.data);
            if (t.bytes) sink = sink + p[0] + p[t.bytes - 1];
        }
    }
    // The tokenizer was checked while parsing: it must load and work whatever the tensors are
    // (run only reaches it with tensors that bind, but a fuzzer reaches it sooner this way).
    Tokenizer tok;
    err = tok.load(parsed.tokenizer);
    fuzz::report("tokenizer", err);
    if (!err.empty()) return;
    std::vector<std::string> texts;
    const size_t n = size < kModelTextBytes ? size : kModelTextBytes;
    fuzz::add_texts_from_bytes(data + size - n, n, &texts);
    fuzz::use_tokenizer(tok, texts, size);
}
