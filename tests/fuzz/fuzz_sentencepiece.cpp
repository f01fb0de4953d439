// libFuzzer target: a SentencePiece model (tokenizer.model), checked as hearth checks it and,
// when accepted, handed to the SentencePiece library and used on many texts (fuzz_tokenizer.h),
// some taken from the input's last bytes: what the check lets through must never crash the
// library.
#include <string>

#include "tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_tokenizer.h"

using namespace hearth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Tokenizer tok;
    const std::string err = tok.load(data, size);
    fuzz::report("tokenizer.model", err);
    if (!err.empty()) return 0;
    std::vector<std::string> texts;
    const size_t n = size < 256 ? size : 256;
    fuzz::add_texts_from_bytes(data + size - n, n, &texts);
    fuzz::use_tokenizer(tok, texts, size);
    return 0;
}
