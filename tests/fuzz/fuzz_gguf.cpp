// libFuzzer target: a GGUF file as run loads it: parsed, checked and bound to the model's
// tensors, then its tokenizer (built from the vocabulary arrays) loaded and used on many texts
// (fuzz_tokenizer.h), some taken from the file's last bytes.
#include "formats/gguf.h"
#include "tests/fuzz/fuzz_model.h"

using namespace hearth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ParsedCheckpoint parsed;
    const std::string err = parse_gguf(data, size, &parsed);
    fuzz::report("parse", err);
    if (err.empty()) use_model(parsed, data, size);
    return 0;
}
