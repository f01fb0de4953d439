// Typed key/value metadata (GGUF's encoding): round trips, typed getters, and damaged input.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "formats/metadata.h"

using namespace hearth;

static Metadata sample() {
    Metadata m;
    m.set_string("general.architecture", "llama");
    m.set_u32("llama.block_count", 22);
    m.set_i32("some.signed", -5);
    m.set_f32("llama.rope.freq_base", 500000.0f);
    m.set_bool("tokenizer.ggml.add_bos_token", true);
    m.set_strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "", "\xe2\x96\x81the"});
    m.set_f32s("tokenizer.ggml.scores", {0.0f, -1.5f, 2.25f, -3.0f});
    m.set_i32s("tokenizer.ggml.token_type", {2, 3, 1, 1});
    m.set_bytes("blob", std::string("\0\1\2\xff", 4));
    return m;
}

// The encoding of a sample, written out by hand from GGUF's specification.
TEST_CASE("metadata: the encoding is GGUF's, byte for byte") {
    Metadata m;
    m.set_u32("a.b", 7);
    m.set_strings("s", {"xy"});
    const std::string want = std::string("\3\0\0\0\0\0\0\0a.b", 11) + std::string("\4\0\0\0", 4) + std::string("\7\0\0\0", 4) +
                             std::string("\1\0\0\0\0\0\0\0s", 9) + std::string("\x09\0\0\0", 4) + std::string("\x08\0\0\0", 4) +
                             std::string("\1\0\0\0\0\0\0\0", 8) + std::string("\2\0\0\0\0\0\0\0xy", 10);
    CHECK(m.serialize() == want);
}

TEST_CASE("metadata: what is set reads back after serializing and parsing") {
    const std::string bytes = sample().serialize();
    Metadata m;
    uint64_t used = 0;
    REQUIRE(m.parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 9, &used) == "");
    CHECK(used == bytes.size());
    std::string s;
    uint32_t u = 0;
    int32_t i = 0;
    float f = 0;
    bool b = false;
    CHECK(m.get_string("general.architecture", &s) == "");
    CHECK(s == "llama");
    CHECK(m.get_u32("llama.block_count", &u) == "");
    CHECK(u == 22);
    CHECK(m.get_i32("some.signed", &i) == "");
    CHECK(i == -5);
    CHECK(m.get_f32("llama.rope.freq_base", &f) == "");
    CHECK(f == 500000.0f);
    CHECK(m.get_bool("tokenizer.ggml.add_bos_token", &b) == "");
    CHECK(b);
    std::vector<std::string> strs;
    CHECK(m.get_strings("tokenizer.ggml.tokens", &strs) == "");
    CHECK(strs == std::vector<std::string>{"<unk>", "<s>", "", "\xe2\x96\x81the"});
    std::vector<float> fs;
    CHECK(m.get_f32s("tokenizer.ggml.scores", &fs) == "");
    CHECK(fs == std::vector<float>{0.0f, -1.5f, 2.25f, -3.0f});
    std::vector<int32_t> is;
    CHECK(m.get_i32s("tokenizer.ggml.token_type", &is) == "");
    CHECK(is == std::vector<int32_t>{2, 3, 1, 1});
    CHECK(m.get_bytes("blob", &s) == "");
    CHECK(s == std::string("\0\1\2\xff", 4));
}

TEST_CASE("metadata: getters refuse the wrong type, a missing key and values out of range") {
    Metadata m = sample();
    uint32_t u = 0;
    int32_t i = 0;
    std::string s;
    CHECK(m.get_u32("general.architecture", &u).find("not an integer") != std::string::npos);
    CHECK(m.get_u32("some.signed", &u).find("out of range") != std::string::npos);
    CHECK(m.get_u32("no.such.key", &u).find("missing") != std::string::npos);
    CHECK(m.get_string("llama.block_count", &s).find("not a string") != std::string::npos);
    m.set_u32("big", 0xffffffffu);
    CHECK(m.get_i32("big", &i).find("out of range") != std::string::npos);
    CHECK(m.get_u32("big", &u) == "");
    CHECK(u == 0xffffffffu);
    float f = 0;
    m.set_f32("nan", std::nanf(""));
    CHECK(m.get_f32("nan", &f).find("finite") != std::string::npos);
}

static std::string parse_error(const std::string& bytes, uint64_t n) {
    Metadata m;
    uint64_t used = 0;
    return m.parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), n, &used);
}

TEST_CASE("metadata: every truncation is refused, never read past") {
    const std::string bytes = sample().serialize();
    for (size_t len = 0; len < bytes.size(); len++) {
        // A copy of exactly len bytes, so that a read past it is caught by the sanitizers.
        std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + long(len));
        Metadata m;
        uint64_t used = 0;
        CHECK_MESSAGE(m.parse(cut.data(), cut.size(), 9, &used) != "", "length " << len);
    }
}

TEST_CASE("metadata: absurd lengths and counts, unknown types and duplicate keys are refused") {
    auto entry = [](const std::string& key, uint32_t type, const std::string& value) {
        const uint64_t n = key.size();
        return std::string(reinterpret_cast<const char*>(&n), 8) + key + std::string(reinterpret_cast<const char*>(&type), 4) +
               value;
    };
    auto u64 = [](uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
    auto u32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
    CHECK(parse_error(u64(~uint64_t(0)), 1).find("key") != std::string::npos);
    CHECK(parse_error(entry("k", META_STRING, u64(~uint64_t(0)) + "x"), 1).find("string") != std::string::npos);
    CHECK(parse_error(entry("k", META_ARRAY, u32(META_U32) + u64(uint64_t(1) << 40)), 1).find("array") != std::string::npos);
    CHECK(parse_error(entry("k", META_ARRAY, u32(META_U32) + u64(1000) + "abcd"), 1).find("past the end") != std::string::npos);
    CHECK(parse_error(entry("k", 13, u32(0)), 1).find("unknown type") != std::string::npos);
    CHECK(parse_error(entry("k", META_U32, u32(1)) + entry("k", META_U32, u32(2)), 2).find("twice") != std::string::npos);
    CHECK(parse_error(entry("k\n2", META_U32, u32(1)), 1).find("control") != std::string::npos);
    CHECK(parse_error("", uint64_t(1) << 40).find("entries") != std::string::npos);
    // An array of arrays is skipped over correctly (GGUF allows it) but no getter reads it.
    const std::string nested =
        entry("n", META_ARRAY, u32(META_ARRAY) + u64(2) + u32(META_U8) + u64(1) + "a" + u32(META_U8) + u64(0)) +
        entry("after", META_U32, u32(9));
    Metadata m;
    uint64_t used = 0;
    REQUIRE(m.parse(reinterpret_cast<const uint8_t*>(nested.data()), nested.size(), 2, &used) == "");
    uint32_t v = 0;
    CHECK(m.get_u32("after", &v) == "");
    CHECK(v == 9);
    std::string s;
    CHECK(m.get_bytes("n", &s) != "");
}

TEST_CASE("metadata: random corruption never crashes the parser") {
    const std::string good = sample().serialize();
    std::mt19937 rng(3);
    int accepted = 0;
    for (int trial = 0; trial < 20000; trial++) {
        std::string bytes = good;
        for (int f = 0, n = 1 + int(rng() % 4); f < n; f++) bytes[rng() % bytes.size()] = char(rng());
        std::vector<uint8_t> copy(bytes.begin(), bytes.end());
        Metadata m;
        uint64_t used = 0;
        if (m.parse(copy.data(), copy.size(), 9, &used) == "") {
            accepted++;
            CHECK(used <= copy.size());
            std::vector<std::string> strs;
            m.get_strings("tokenizer.ggml.tokens", &strs);  // must not read out of bounds either
        }
    }
    MESSAGE("corruptions that still parsed: " << accepted);
}
