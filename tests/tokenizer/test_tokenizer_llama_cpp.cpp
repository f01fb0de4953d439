// hearth's tokenizers against llama.cpp's on real vocabularies (Llama-3, Qwen3, Llama-2): the ids in
// tests/data/tokenizer_diff_goldens.json.xz are llama-tokenize's (--no-bos --no-parse-special) of
// varied texts (tests/reference/make_tokenizer_diff_texts.py, make_tokenizer_diff_goldens.py),
// never hearth's. For Qwen3 they are of the text in NFC: llama.cpp does not apply the NFC
// normalizer Qwen3's tokenizer.json declares, hearth does (as Hugging Face's tokenizers does).
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "tests/test_helpers.h"

using namespace hearth;

static const nlohmann::json& diff_goldens() {
    static nlohmann::json goldens;
    if (goldens.is_null()) {
        const CommandResult r = run_command("xz -dc tests/data/tokenizer_diff_goldens.json.xz");
        REQUIRE(r.exit_code == 0);
        goldens = nlohmann::json::parse(r.out);
    }
    return goldens;
}

// The vocabulary of `name` as hearth reads it: Llama-3's and Qwen3's tokenizer.json (as quantize
// converts a Hugging Face folder), Llama-2's tokenizer.model.
static const Tokenizer& real_tokenizer(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
    auto& tok = loaded[name];
    if (!tok) {
        tok.reset(new Tokenizer);
        if (name == "llama2") {
            REQUIRE(tok->load_file("tests/data/llama2-tokenizer.model") == "");
        } else {
            const CommandResult j = run_command("xz -dc tests/data/bpe/" + name + "-tokenizer.json.xz");
            REQUIRE(j.exit_code == 0);
            TokenizerSpec spec;
            spec.kind = TokenizerKind::bpe;
            REQUIRE(bpe_from_tokenizer_json(j.out, read_text("tests/data/bpe/" + name + "-tokenizer_config.json"), &spec.bpe) ==
                    "");
            REQUIRE(tok->load(spec) == "");
        }
    }
    return *tok;
}

TEST_CASE("tokenizer: encode equals llama.cpp's llama-tokenize on varied texts (Llama-3, Qwen3, Llama-2)") {
    for (const char* name : {"llama3", "qwen3", "llama2"}) {
        const auto& cases = diff_goldens().at(name);
        REQUIRE(cases.size() > 400);
        const Tokenizer& tok = real_tokenizer(name);
        int mismatches = 0;
        for (const auto& c : cases) {
            const std::string text = c.at("text").get<std::string>();
            const std::vector<int> want = c.at("ids").get<std::vector<int>>();
            const std::vector<int> got = encoded(tok, text, false);
            if (got == want) continue;
            if (++mismatches > 10) continue;  // the first few are enough to see what differs
            INFO(name << ": '" << text << "'");
            CHECK(got == want);
        }
        INFO(name);
        CHECK(mismatches == 0);
    }
}
