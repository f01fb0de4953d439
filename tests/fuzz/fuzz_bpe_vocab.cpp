// libFuzzer target: a byte-level BPE vocabulary made directly from the input, loaded
// (BpeTokenizer::load) and used on many texts (fuzz_tokenizer.h), with decode(encode(text))
// checked against the text. No file format stands between the fuzzer and the tokenizer: every
// vocabulary has its 256 byte tokens, so most inputs load and the fuzzer spends its time on
// what tokenizer.json and GGUF files can declare — added tokens of any bytes, merges, regexes —
// meeting texts.
//
// The input is records separated by NUL bytes; a record's first byte says what it is:
//   A<bytes>    a user-defined added token (type 4): found in any text
//   C<bytes>    a control added token (type 3): found only when the caller allows it
//   W<bytes>    a word: a normal token for its bytes, and the merges that build it left to right
//   N<text>     a normal token spelled as given (GPT-2's byte-level spelling, or not)
//   M<a b>      a merge as given, naming tokens by their spelling (may name a missing one)
//   R<regex>    a pre-tokenizer regex (PCRE2)
//   r<n>        a real pre-tokenizer regex, n % 3 ('0', '1', '2'): Llama-3's, Qwen2's, GPT-2's
//   F<f><b><e>  flags f: bit 0 ignore merges, bit 1 NFC ('0' to '3'); b and e: BOS and EOS,
//               the added token of index b - '0' (none when out of range); BOS is added when
//               there is one
//   T<text>     a text to encode; a record of any other kind is a text too
// The first one to three regexes are used (Llama-3's when there is none). tools/make_fuzz_seeds.py
// writes seeds in this form.
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_tokenizer.h"

using namespace hearth;

namespace {

// Bounds that keep one execution fast; real vocabularies are larger, but what breaks a
// tokenizer needs few tokens.
constexpr size_t kMaxAdded = 256, kMaxWords = 256, kMaxWordBytes = 64, kMaxMerges = 1024, kMaxRegexes = 3, kMaxTokenBytes = 1024;

struct Builder {
    BpeVocab v;
    std::unordered_set<std::string> spelled;  // normal tokens, by spelling: no duplicates (load refuses them)
    std::vector<int> added;                   // ids of the added tokens, in order
    size_t words = 0;

    void normal(const std::string& spelling) {
        if (spelling.empty() || spelling.size() > kMaxTokenBytes || !spelled.insert(spelling).second) return;
        v.tokens.push_back(spelling);
        v.types.push_back(BpeVocab::kNormal);
    }
    void added_token(const std::string& text, int type) {
        if (text.empty() || text.size() > kMaxTokenBytes || added.size() >= kMaxAdded) return;
        added.push_back(int(v.tokens.size()));
        v.tokens.push_back(text);
        v.types.push_back(type);
    }
    void word(const std::string& bytes) {
        if (bytes.empty() || words++ >= kMaxWords) return;
        const std::string w = bytes.substr(0, kMaxWordBytes);
        for (size_t k = 1; k < w.size() && v.merges.size() < kMaxMerges; k++) {
            const std::string left = fuzz::byte_level_spelling(w.substr(0, k)), right = fuzz::byte_level_spelling(w.substr(k, 1));
            normal(left + right);
            v.merges.push_back(left + " " + right);
        }
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Builder b;
    for (int byte = 0; byte < 256; byte++) b.normal(fuzz::byte_level_spelling(std::string(1, char(byte))));
    std::vector<std::string> texts;
    int bos_index = -1, eos_index = -1;
    const char* s = reinterpret_cast<const char*>(data);
    for (size_t start = 0; start <= size;) {
        const char* nul = static_cast<const char*>(std::memchr(s + start, 0, size - start));
        const size_t end = nul ? size_t(nul - s) : size;
        const std::string record(s + start, end - start);
        start = end + 1;
        if (record.empty()) continue;
        const char kind = record[0];
        const std::string value = record.substr(1);
        switch (kind) {
            case 'A': b.added_token(value, BpeVocab::kUserDefined); break;
            case 'C': b.added_token(value, BpeVocab::kControl); break;
            case 'W': b.word(value); break;
            case 'N': b.normal(value); break;
            case 'M':
                if (b.v.merges.size() < kMaxMerges) b.v.merges.push_back(value);
                break;
            case 'R':
                if (b.v.pre_split_regexes.size() < kMaxRegexes) b.v.pre_split_regexes.push_back(value);
                break;
            case 'r':
                if (b.v.pre_split_regexes.size() < kMaxRegexes) {
                    const char* const real[3] = {kLlama3SplitRegex, kQwen2SplitRegex, kGpt2SplitRegex};
                    b.v.pre_split_regexes.push_back(real[value.empty() ? 0 : uint8_t(value[0]) % 3]);
                }
                break;
            case 'F':
                if (value.size() > 0) {
                    b.v.ignore_merges = value[0] & 1;
                    b.v.normalizer = value[0] & 2 ? "nfc" : "";
                }
                if (value.size() > 1) bos_index = int(uint8_t(value[1])) - '0';
                if (value.size() > 2) eos_index = int(uint8_t(value[2])) - '0';
                break;
            default:
                if (texts.size() < fuzz::kMaxInputTexts) texts.push_back(kind == 'T' ? value : record);
        }
    }
    if (b.v.pre_split_regexes.empty()) b.v.pre_split_regexes.push_back(kLlama3SplitRegex);
    if (bos_index >= 0 && size_t(bos_index) < b.added.size()) b.v.bos_id = b.added[size_t(bos_index)];
    if (eos_index >= 0 && size_t(eos_index) < b.added.size()) b.v.eos_id = b.added[size_t(eos_index)];
    b.v.add_bos = b.v.bos_id >= 0;
    for (std::string& t : texts) t.resize(std::min(t.size(), fuzz::kMaxInputText));

    TokenizerSpec spec;
    spec.kind = TokenizerKind::bpe;
    spec.bpe = std::move(b.v);
    Tokenizer tok;
    const std::string err = tok.load(spec);
    fuzz::report("load", err);
    if (!err.empty()) return 0;
    fuzz::use_tokenizer(tok, texts, size);
    return 0;
}
