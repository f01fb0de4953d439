// hearth's tokenizer wrapper against python sentencepiece's ids (tests/data/tokenizer_goldens.json),
// and the streaming decoder against SentencePiece's own decoding of whole sequences.
#include <doctest/doctest.h>
#include <sentencepiece_processor.h>

#include <nlohmann/json.hpp>
#include <random>

#include "base/printable.h"
#include "tokenizer/tokenizer.h"
#include "tests/test_helpers.h"

using namespace hearth;

TEST_CASE("tokenizer: encode and decode equal python sentencepiece on tricky strings") {
    auto goldens = nlohmann::json::parse(read_text("tests/data/tokenizer_goldens.json"));
    REQUIRE(goldens.size() >= 2);  // the Llama-2 vocabulary and the default model's
    for (auto& item : goldens.items()) {
        const std::string model_name = item.key();  // not a structured binding: INFO's lambda captures it
        auto& cases = item.value();
        Tokenizer tok;
        REQUIRE(tok.load_file("tests/data/" + model_name) == "");
        for (auto& c : cases) {
            std::string text = c.at("text").get<std::string>();
            std::vector<int> ids = c.at("ids").get<std::vector<int>>();
            INFO(model_name << ": '" << text << "'");
            CHECK(encoded(tok, text, false) == ids);
            CHECK(tok.decode(ids) == c.at("decoded").get<std::string>());
            std::vector<int> with_bos = encoded(tok, text, true);
            REQUIRE(!with_bos.empty());
            CHECK(with_bos[0] == 1);
            TextStreamer streamer(tok);
            std::string streamed;
            for (int id : ids) streamed += streamer.push(id);
            streamed += streamer.finish();
            CHECK(streamed == c.at("decoded").get<std::string>());
        }
    }
}

TEST_CASE("tokenizer: streaming random ids gives SentencePiece's decoding of the whole sequence") {
    for (const char* path : {"tests/data/llama2-tokenizer.model", "tests/data/parity/mha/tokenizer.model"}) {
        Tokenizer tok;
        REQUIRE(tok.load_file(path) == "");
        std::mt19937 rng(3);
        for (int trial = 0; trial < 2000; trial++) {
            std::vector<int> ids;
            int len = 1 + rng() % 12;
            for (int i = 0; i < len; i++) {
                // Mostly byte-fallback pieces (ids 3..258), so that partial and invalid
                // UTF-8 sequences are common, with normal pieces and BOS/EOS/UNK between.
                int kind = rng() % 10;
                if (kind < 6)
                    ids.push_back(3 + rng() % 256);
                else if (kind < 9)
                    ids.push_back(259 + rng() % (tok.vocab_size() - 259));
                else
                    ids.push_back(rng() % 3);
            }
            TextStreamer streamer(tok);
            std::string streamed;
            for (int id : ids) streamed += streamer.push(id);
            streamed += streamer.finish();
            INFO(path << " trial " << trial);
            CHECK(streamed == tok.decode(ids));
        }
    }
}

TEST_CASE("tokenizer: streaming holds back an incomplete UTF-8 character until it is complete") {
    Tokenizer tok;
    REQUIRE(tok.load_file("tests/data/llama2-tokenizer.model") == "");
    // "é" is 0xC3 0xA9: byte pieces <0xC3> and <0xA9> are ids 3 + byte.
    TextStreamer streamer(tok);
    CHECK(streamer.push(3 + 0xC3) == "");
    CHECK(streamer.push(3 + 0xA9) == "\xC3\xA9");
}

// The server's replies write a character cut short as one U+FFFD, as llama-server's do: asked
// for a chat reply of the byte pieces <0xE2> <0x82> (ids 229, 133, forced with logit_bias) on the
// default model as GGUF, llama-server (b10587) answered the content "\uFFFD", one; its
// /detokenize of [229, 133, 65] gave "\uFFFD>" and of [198, 65, 172] "\uFFFD>\uFFFD" (its JSON
// writer's replacement of the raw bytes, which a reply's content gets too). Byte pieces are ids
// 3 + byte in the Llama-2 vocabulary as in that one.
TEST_CASE("tokenizer: a streamer that replaces per maximal subpart writes a character cut short as one U+FFFD") {
    Tokenizer tok;
    REQUIRE(tok.load_file("tests/data/llama2-tokenizer.model") == "");
    const std::string fffd = "\xEF\xBF\xBD";
    auto streamed = [&](const std::vector<int>& ids, InvalidUtf8 mode) {
        TextStreamer streamer(tok, mode);
        std::string text;
        for (int id : ids) text += streamer.push(id);
        return text + streamer.finish();
    };
    CHECK(streamed({229, 133}, InvalidUtf8::per_subpart) == fffd);
    CHECK(streamed({229, 133, 65}, InvalidUtf8::per_subpart) == fffd + ">");
    CHECK(streamed({198, 65, 172}, InvalidUtf8::per_subpart) == fffd + ">" + fffd);
    // SentencePiece's own decoding, the default, writes each byte as one.
    CHECK(streamed({229, 133}, InvalidUtf8::per_byte) == fffd + fffd);
    CHECK(tok.decode({229, 133}) == fffd + fffd);
    // utf8_invalid_length: the longest start of a valid character, else one byte.
    CHECK(utf8_invalid_length("\xE2\x82", 0) == 2);
    CHECK(utf8_invalid_length("\xE2\x82>", 0) == 2);
    CHECK(utf8_invalid_length("\xF0\x9F\x98", 0) == 3);
    CHECK(utf8_invalid_length("\xE0\x80", 0) == 1);  // E0 80 starts no valid character (overlong)
    CHECK(utf8_invalid_length("\x82\x82", 0) == 1);
}

TEST_CASE("tokenizer: ids past the tokenizer's pieces (a padded vocabulary) decode to nothing") {
    Tokenizer tok;
    REQUIRE(tok.load_file("tests/data/parity/gqa/tokenizer.model") == "");
    REQUIRE(tok.vocab_size() == 512);
    TextStreamer streamer(tok);
    CHECK(streamer.push(3 + 0xC3) == "");
    CHECK(streamer.push(515) == "\xEF\xBF\xBD");  // the pending byte is flushed as invalid
    CHECK(streamer.push(519) == "");
}

TEST_CASE("tokenizer: bytes that are not a SentencePiece model are refused") {
    Tokenizer tok;
    std::string junk = "this is not a protobuf";
    CHECK(tok.load(junk.data(), junk.size()) != "");
    CHECK(tok.load_file("build/tests/no-such.model") != "");
}

TEST_CASE("tokenizer: token_bytes is each id's text as SentencePiece decodes it after another piece") {
    // The expected text of an id: the library's decoding of ("a", id) without the "a", which
    // keeps the id's leading space (a decoding that starts with the id drops it).
    sentencepiece::SentencePieceProcessor sp;
    REQUIRE(sp.Load("tests/data/llama2-tokenizer.model").ok());
    Tokenizer tok;
    REQUIRE(tok.load_file("tests/data/llama2-tokenizer.model") == "");
    const int a = sp.PieceToId("a");
    REQUIRE(sp.IdToPiece(a) == "a");
    for (int id = 0; id < sp.GetPieceSize(); id++) {
        INFO("id " << id << " " << sp.IdToPiece(id));
        if (sp.IsByte(id)) {
            CHECK(tok.token_bytes(id) == std::string(1, char(id - 3)));  // Llama-2's byte pieces: ids 3..258
        } else {
            std::string text;
            REQUIRE(sp.Decode(std::vector<int>{a, id}, &text).ok());
            CHECK(tok.token_bytes(id) == text.substr(1));
        }
    }
    CHECK(tok.token_bytes(-1) == "");
    CHECK(tok.token_bytes(sp.GetPieceSize()) == "");
}
