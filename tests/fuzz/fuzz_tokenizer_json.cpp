// libFuzzer target: a Hugging Face tokenizer.json, read into a byte-level BPE vocabulary and,
// when accepted, loaded and used: encoding (control tokens allowed and not), decoding and
// streaming. What the reader lets through must never crash the tokenizer.
#include <string>

#include "../../tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string config = R"({"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>", "add_bos_token": true})";
    TokenizerSpec spec;
    spec.kind = TokenizerKind::bpe;
    if (!bpe_from_tokenizer_json(std::string(reinterpret_cast<const char*>(data), size), config, &spec.bpe).empty()) return 0;
    Tokenizer tok;
    if (!tok.load(spec).empty()) return 0;
    const std::string text = "Hello,  wörld\t1234 e\xcc\x81 <|im_end|><think> \xf0\x9f\x98\x80\xff\n\n ";
    std::vector<int> ids;
    if (tok.encode(text, true, &ids).empty()) tok.decode(ids);
    ids.clear();
    tok.bpe()->encode(text, false, true, &ids);
    TextStreamer stream(tok);
    for (int id = 0; id < tok.vocab_size() && id < 300; id++) stream.push(id);
    stream.finish();
    return 0;
}
