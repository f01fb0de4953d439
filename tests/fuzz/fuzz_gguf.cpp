// libFuzzer target: a GGUF file as run loads it: parsed, checked and bound to the model's
// tensors, then its tokenizer (built from the vocabulary arrays) loaded and used.
#include "../../model/gguf.h"
#include "fuzz_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ParsedCheckpoint parsed;
    if (parse_gguf(data, size, &parsed).empty()) use_model(parsed);
    return 0;
}
