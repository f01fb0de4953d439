// What run does with a model file that parsed: bind its tensors, load its tokenizer, read
// every tensor's bytes (so a view past the input is caught by AddressSanitizer).
#pragma once
#include <cstdint>

#include "../../model/model.h"

inline void use_model(const ParsedCheckpoint& parsed) {
    Model m;
    if (!bind_model(parsed, &m).empty()) return;
    volatile uint8_t sink = 0;
    for (const TensorView& t : m.all_tensors) {
        const uint8_t* p = static_cast<const uint8_t*>(t.data);
        if (t.bytes) sink = sink + p[0] + p[t.bytes - 1];
    }
    Tokenizer tok;
    std::vector<int> ids;
    if (tok.load(m.tokenizer).empty() && tok.encode("Hello, world", true, &ids).empty()) tok.decode(ids);
}
