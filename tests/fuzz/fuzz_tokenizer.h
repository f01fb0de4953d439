// What every fuzz target that builds a tokenizer does with it: encode a variety of texts, decode
// the ids and stream them, as run does with a prompt and with generated ids. One fixed text
// (the targets once encoded "Hello, world" only) never reached what breaks a tokenizer from a
// stranger: its own added tokens inside text, bytes that end inside a character, regexes that
// backtrack on long runs. So the texts are:
//   - texts taken from the fuzz input itself (each target says where), which the fuzzer mutates;
//   - a fixed list of hard texts (whitespace runs, digits, CJK, emoji, combining marks and NFD,
//     invalid UTF-8, chat markup, empty, and for one input in four two texts of 4 KB);
//   - texts made of the vocabulary's own tokens: every added token (control and user-defined)
//     alone, glued to its neighbours, and cut short by a byte.
// Encoding may fail on a costly text (the vocabulary's regexes ran out of budget): that is
// allowed; a crash, a hang or a blow-up is not. For byte-level BPE, decoding what was encoded
// must give the text back (control tokens and NFC aside): a mismatch aborts, as it is a bug.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utf8proc.h>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_report.h"

using namespace hearth;

namespace fuzz {

// GPT-2's byte-level spelling of bytes (tokenizer/bpe.h): printable Latin-1 bytes stand for
// themselves, the others become U+0100, U+0101, ... in byte order.
inline std::string byte_level_spelling(const std::string& bytes) {
    std::string out;
    for (unsigned char b : bytes) {
        uint32_t cp = b, next = 256;
        auto printable = [](int c) { return (c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || (c >= 0xae && c <= 0xff); };
        if (!printable(b)) {
            for (int c = 0; c < b; c++) next += !printable(c);
            cp = next;
        }
        if (cp < 0x80) {
            out += char(cp);
        } else {
            out += char(0xc0 | (cp >> 6));
            out += char(0x80 | (cp & 0x3f));
        }
    }
    return out;
}

// Longest text taken from an input, and most texts: beyond these a slow execution says nothing new.
constexpr size_t kMaxInputText = 16 * 1024;
constexpr size_t kMaxInputTexts = 16;

// The bytes split at NUL bytes into texts (at most kMaxInputTexts, each cut to kMaxInputText),
// plus, when there was a NUL, the whole run as one text (NUL is text too).
inline void add_texts_from_bytes(const uint8_t* p, size_t n, std::vector<std::string>* out) {
    const char* s = reinterpret_cast<const char*>(p);
    size_t start = 0, count = 0;
    for (size_t i = 0; i <= n && count < kMaxInputTexts; i++)
        if (i == n || s[i] == '\0') {
            out->emplace_back(s + start, std::min(i - start, kMaxInputText));
            start = i + 1;
            count++;
        }
    if (count > 1) out->emplace_back(s, std::min(n, kMaxInputText));
}

inline const std::vector<std::string>& fixed_texts() {
    static const std::vector<std::string> texts = {
        "",
        "Hello, world",
        "Hello,  wörld\t1234 \xe2\x96\x81 <s> \xf0\x9f\x98\x80",
        "It's, don't, WE'LL, they'RE, I'd've 's 't 're 've 'm 'll 'd",
        "   \t\t  \n\n\n\r\n \x0b\x0c  x   \n ",
        "1 12 123 1234 12345 3.14159 1,000,000 0x7fff -42 \xd9\xa3\xd9\xa4 \xe2\x85\xa8",  // ASCII, Arabic-Indic, Roman digits
        "\xe4\xb8\xad\xe6\x96\x87\xe6\xb5\x8b\xe8\xaf\x95\xef\xbc\x8c\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae"
        "\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88 \xed\x95\x9c\xea\xb5\xad\xec\x96\xb4",  // 中文测试，日本語のテキスト 한국어
        "\xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd \xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7"
        " \xf0\x9f\x87\xab\xf0\x9f\x87\xb7 \xe2\x9d\xa4\xef\xb8\x8f",  // emoji, skin tone, ZWJ family, flag, VS16
        "e\xcc\x81 e\xcc\x81\xcc\x81 a\xcc\x8a\xcc\x81 \xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8 A\xcc\x8astro\xcc\x88m "
        "\xcc\x81\xcc\x81 \xe1\xba\xbf",  // NFD accents, stacked marks, Hangul jamo, lone marks, NFC
        "\xff\xfe a\xc3 \xe4\xb8 \xf0\x9f\x98 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 abc\x80\xbf \xe4",  // invalid UTF-8
        std::string("a\0b\0\0c", 6),
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nok<|im_end|>",
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><s>[INST] x [/INST]</s>",
        "<|im_end|<|im_end|>>><<think>think></think <|endoftext|><|end_of_text|><|eot_id|",  // partial, nested
        "\xc4\xa0\xc4\xa0the \xc4\x8a \xe2\x96\x81\xe2\x96\x81x <0x0A> [PAD5]",              // the tokenizers' own spellings
        "\xef\xbf\xbd\xef\xbb\xbf\xe2\x80\x8b\xe2\x80\xae\xe2\x80\xa8\xc2\xa0\xc2\xad\x7f\x01\x1b[0m",  // U+FFFD, BOM, ZW, bidi, NBSP
    };
    return texts;
}

// 4 KB texts: one of everything fixed_texts() has (short pieces, mostly cached), and one of long
// runs of a letter, spaces, a digit and a CJK character (long pieces: regex backtracking,
// merging). They cost more than all the others together, so use_tokenizer encodes them for one
// input in four.
inline const std::vector<std::string>& long_texts() {
    static const std::vector<std::string> texts = [] {
        const std::vector<std::string>& t = fixed_texts();
        std::string mixed;
        for (size_t i = 2; mixed.size() < 4096; i = (i + 1) % t.size()) mixed += t[i];
        std::string runs = std::string(1000, 'a') + std::string(1000, ' ') + std::string(1000, '7');
        while (runs.size() < 4096) runs += "\xe4\xb8\xad";  // 中
        return std::vector<std::string>{mixed.substr(0, 4096), runs};
    }();
    return texts;
}

// Texts of the vocabulary's own added tokens (SentencePiece: its control and unknown pieces and
// its first pieces): the first 16 each alone and between words, glued to the next and to half
// of it, and cut short by a byte; then as many as kMaxInputText holds in a row.
inline void add_vocabulary_texts(const Tokenizer& tok, std::vector<std::string>* out) {
    std::vector<std::string> added;
    size_t bytes = 0;
    auto add = [&](const std::string& t) {
        added.push_back(t);
        bytes += t.size();
    };
    if (const BpeTokenizer* bpe = tok.bpe()) {
        for (int id = 0; id < bpe->vocab_size() && bytes < kMaxInputText; id++)
            if (bpe->type(id) == BpeVocab::kControl || bpe->type(id) == BpeVocab::kUserDefined) add(bpe->token(id));
    } else {
        for (int id = 0; id < tok.vocab_size() && bytes < kMaxInputText; id++)
            if (tok.is_control(id) || tok.is_unknown(id)) add(tok.piece(id));
        for (int id = 0; id < tok.vocab_size() && id < 32; id++) add(tok.piece(id));
    }
    std::string all;
    for (size_t i = 0; i < added.size(); i++) {
        const std::string& a = added[i];
        const std::string& next = added[(i + 1) % added.size()];
        all += a;
        if (i < 16) {
            out->push_back(a);
            out->push_back("x " + a + "y" + next + next.substr(0, next.size() / 2) + " \xe4\xb8\xad" + a.substr(0, a.size() - 1));
        }
    }
    if (!all.empty()) out->push_back(all.substr(0, kMaxInputText));
}

inline bool is_valid_utf8(const std::string& s) {
    for (size_t at = 0; at < s.size();) {
        const int len = utf8_char_length(s, at);
        if (len <= 0) return false;
        at += size_t(len);
    }
    return true;
}

inline bool is_nfc(const std::string& s) {
    utf8proc_uint8_t* nfc = nullptr;
    const utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), utf8proc_ssize_t(s.size()),
                                              &nfc, utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    const bool same = len >= 0 && std::string(reinterpret_cast<const char*>(nfc), size_t(len)) == s;
    std::free(nfc);
    return same;
}

// For messages: the first 160 bytes, printable ASCII as it is and every other byte as \xNN.
inline std::string escaped(const std::string& s) {
    std::string out;
    char buf[8];
    for (size_t i = 0; i < s.size() && i < 160; i++) {
        const unsigned char c = s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += char(c);
        } else {
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    return out + (s.size() > 160 ? "..." : "");
}

// What encode_one needs besides the text: the tokenizer and, for BPE, its control tokens.
struct Use {
    const Tokenizer& tok;
    std::vector<std::string> control;  // BPE: the control tokens' texts
    explicit Use(const Tokenizer& t) : tok(t) {
        if (const BpeTokenizer* bpe = t.bpe())
            for (int id = 0; id < bpe->vocab_size(); id++)
                if (bpe->type(id) == BpeVocab::kControl) control.push_back(bpe->token(id));
    }
};

// Byte-level BPE must decode what it encoded back to the text: checked when the text is valid
// UTF-8 (the encoder replaces invalid bytes), holds no control token that was allowed to match
// (those decode to nothing), and is its own NFC when the vocabulary normalizes. BOS, which may
// be any token, is left out. `decoded` is the decoding of all the ids.
inline void check_round_trip(const Use& use, const std::string& text, bool add_bos, bool allow_control,
                             const std::vector<int>& ids, const std::string& decoded) {
    const BpeTokenizer* bpe = use.tok.bpe();
    for (int id : ids)
        if (id < 0 || id >= bpe->vocab_size()) {
            std::fprintf(stderr, "fuzz: encode produced id %d outside the vocabulary of %d\n", id, bpe->vocab_size());
            std::abort();
        }
    if (!is_valid_utf8(text)) return;
    if (allow_control)
        for (const std::string& c : use.control)
            if (text.find(c) != std::string::npos) return;
    if (bpe->vocab().normalizer == "nfc" && !is_nfc(text)) return;
    const bool bos = add_bos && bpe->bos_id() >= 0;
    if (bos && (ids.empty() || ids[0] != bpe->bos_id())) {
        std::fprintf(stderr, "fuzz: encode was asked for BOS and did not start with it\n");
        std::abort();
    }
    const std::string back = bos ? use.tok.decode(std::vector<int>(ids.begin() + 1, ids.end())) : decoded;
    if (back != text) {
        std::fprintf(
            stderr,
            "fuzz: decode(encode(text)) != text (%zu bytes in, %zu out, %zu ids, allow_control %d)\n  text: %s\n  back: %s\n",
            text.size(), back.size(), ids.size(), int(allow_control), escaped(text).c_str(), escaped(back).c_str());
        std::abort();
    }
}

// Encodes one text as asked, then decodes the ids and streams them.
inline void encode_one(const Use& use, const std::string& text, bool add_bos, bool allow_control) {
    const Tokenizer& tok = use.tok;
    std::vector<int> ids;
    std::string err;
    // Tokenizer::encode is what run calls (control tokens never come from text); SentencePiece
    // has no such switch.
    if (tok.bpe() && allow_control)
        err = tok.bpe()->encode(text, add_bos, true, &ids);
    else
        err = tok.encode(text, add_bos, &ids);
    if (!err.empty()) {
        if (!ids.empty()) std::abort();  // a failed encode leaves nothing behind (tokenizer.h)
        return;
    }
    const std::string decoded = tok.decode(ids);
    // For BPE, decode is the streaming decoder (tokenizer.cpp): streaming again adds nothing.
    if (tok.bpe()) return check_round_trip(use, text, add_bos, allow_control, ids, decoded);
    TextStreamer stream(tok);
    for (int id : ids) stream.push(id);
    stream.finish();
}

// Everything: the input's texts with BOS on and off and (BPE) control tokens allowed and not;
// the fixed and vocabulary texts each with one of those four settings in turn, which keeps an
// execution fast; the 4 KB texts when the input's size is a multiple of 4 (the size, not a
// random choice, so that an input always does the same). Then the first ids (and -1 and two
// past the end) through the streaming decoder.
inline void use_tokenizer(const Tokenizer& tok, const std::vector<std::string>& input_texts, size_t input_size) {
    const Use use(tok);
    for (const std::string& text : input_texts)
        for (int how = 0; how < (tok.bpe() ? 4 : 2); how++) encode_one(use, text, how & 1, how & 2);
    std::vector<std::string> texts = fixed_texts();
    add_vocabulary_texts(tok, &texts);
    if (input_size % 4 == 0) texts.insert(texts.end(), long_texts().begin(), long_texts().end());
    for (size_t i = 0; i < texts.size(); i++) encode_one(use, texts[i], i & 1, (i >> 1) & 1);
    TextStreamer stream(tok);
    for (int id = -1; id <= tok.vocab_size() + 1 && id < 600; id++) stream.push(id);
    stream.finish();
}

}  // namespace fuzz
