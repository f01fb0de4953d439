// The built-in chat templates against llama-server's rendering of each model family's own Jinja
// template (llama-server --jinja: POST /apply-template, then /tokenize of that text with special
// tokens parsed, the prompt /v1/chat/completions evaluates). tests/data/chat_goldens.json holds
// a seeded set of dialogs per family and llama-server's ids; tests/reference/make_chat_goldens.py
// makes it. Nothing here comes from hearth's own output. On the byte-level BPE vocabularies the
// rendered text is compared too.
//
// One difference is deliberate: llama-server parses special tokens in the whole rendered prompt,
// so a user who types "<|eot_id|>" ends the turn there; hearth encodes a message's text as text.
// For those dialogs the golden's `ids_text_markers` are llama-server's ids of the same rendering
// with the markers inside the contents tokenized as text.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "model/config.h"
#include "model/tokenizer_metadata.h"
#include "tokenizer/tokenizer.h"
#include "tests/test_helpers.h"

using namespace hearth;

namespace {

// The vocabulary a family's golden was made with: Llama-2's SentencePiece model, or Llama-3's or
// Qwen3's tokenizer.json (kept xz-compressed in tests/data/bpe/).
const Tokenizer& golden_tokenizer(const std::string& vocab) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
    std::unique_ptr<Tokenizer>& tok = loaded[vocab];
    if (tok) return *tok;
    tok.reset(new Tokenizer);
    if (vocab == "llama2") {
        REQUIRE(tok->load_file("tests/data/llama2-tokenizer.model") == "");
        return *tok;
    }
    const std::string json_path = "build/tests/chat-goldens-" + vocab + "-tokenizer.json";
    REQUIRE(
        run_command("mkdir -p build/tests && xz -dc tests/data/bpe/" + vocab + "-tokenizer.json.xz > " + json_path).exit_code ==
        0);
    TokenizerSpec spec;
    spec.kind = TokenizerKind::bpe;
    REQUIRE(bpe_from_tokenizer_json(read_text(json_path), read_text("tests/data/bpe/" + vocab + "-tokenizer_config.json"),
                                    &spec.bpe) == "");
    REQUIRE(tok->load(spec) == "");
    return *tok;
}

std::string golden_jinja(const std::string& file) {
    const std::string text = read_text("tests/data/" + file);
    if (file.size() > 5 && file.substr(file.size() - 5) == ".json") return chat_template_jinja(text);
    return text;
}

// The ids as the vocabulary's pieces, "|" between, for a failure's message.
std::string pieces(const Tokenizer& tok, const std::vector<int>& ids) {
    std::string s;
    for (int id : ids) s += (s.empty() ? "" : "|") + tok.piece(id);
    return nlohmann::json(s).dump();
}

}  // namespace

TEST_CASE("chat goldens: each family's Jinja is recognised, and every dialog gives llama-server's prompt ids and text") {
    const nlohmann::json g = nlohmann::json::parse(read_text("tests/data/chat_goldens.json"));
    int compared = 0, with_markers = 0;
    for (const auto& item : g.at("families").items()) {
        const std::string family = item.key();
        const nlohmann::json& f = item.value();
        const std::string name = f.at("template").get<std::string>();
        const Tokenizer& tok = golden_tokenizer(f.at("vocab").get<std::string>());
        INFO(family);
        ModelConfig config;
        config.chat_template_jinja = golden_jinja(f.at("jinja").get<std::string>());
        CHECK(detect_chat_template(config.chat_template_jinja) == name);
        // A dialog without a system message starts with the template's default one, as the server
        // and run --chat start it (Qwen2.5's "You are Qwen, ...").
        const std::string default_system = default_system_message(config, name);
        for (const nlohmann::json& c : f.at("cases")) {
            std::vector<ChatMessage> dialog;
            for (const nlohmann::json& m : c.at("dialog")) dialog.push_back({m.at("role"), m.at("content"), {}});
            if (!default_system.empty() && dialog[0].role != "system")
                dialog.insert(dialog.begin(), {"system", default_system, {}});
            INFO(c.at("dialog").dump());
            INFO("llama-server: " << nlohmann::json(c.at("text")).dump());
            std::vector<int> ids;
            REQUIRE(format_chat(name, tok, dialog, true, &ids) == "");
            const std::vector<int> want =
                c.at(c.contains("ids_text_markers") ? "ids_text_markers" : "ids").get<std::vector<int>>();
            INFO("hearth:       " << pieces(tok, ids));
            INFO("llama-server: " << pieces(tok, want));
            CHECK(ids == want);
            // The rendered text, where each token's bytes are its text (byte-level BPE; a control
            // token's text is its piece): llama-server's /apply-template text, after the BOS that
            // llama.cpp leaves out of it and adds as an id. The markers a user typed are in both.
            if (tok.bpe()) {
                std::string text;
                for (size_t i = 0; i < ids.size(); i++)
                    if (i > 0 || ids[0] != tok.bos_id())
                        text += tok.is_control(ids[i]) ? tok.piece(ids[i]) : tok.token_bytes(ids[i]);
                CHECK(text == c.at("text").get<std::string>());
            }
            if (c.contains("ids_text_markers")) {
                CHECK(ids != c.at("ids").get<std::vector<int>>());  // llama-server's has the injected tokens
                with_markers++;
            }
            compared++;
        }
    }
    CHECK(compared >= 300);
    CHECK(with_markers >= 30);
}
