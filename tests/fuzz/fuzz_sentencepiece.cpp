// libFuzzer target: a SentencePiece model (tokenizer.model), checked as hearth checks it and,
// when accepted, handed to the SentencePiece library and used: what the check lets through
// must never crash the library.
#include <string>

#include "../../tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Tokenizer tok;
    if (!tok.load(data, size).empty()) return 0;
    std::vector<int> ids;
    if (tok.encode("Hello,  wörld\t1234 \xe2\x96\x81 <s> \xf0\x9f\x98\x80", true, &ids).empty()) tok.decode(ids);
    TextStreamer stream(tok);
    for (int id = 0; id < tok.vocab_size() && id < 300; id++) stream.push(id);
    stream.finish();
    return 0;
}
