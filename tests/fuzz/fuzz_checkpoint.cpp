// libFuzzer target: a hearth checkpoint (version 1 or 2) as run loads it: parsed, checked and
// bound to the model's tensors, then its tokenizer loaded and used.
#include "fuzz_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ParsedCheckpoint parsed;
    if (parse_checkpoint(data, size, &parsed).empty()) use_model(parsed);
    return 0;
}
