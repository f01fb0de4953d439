// Chat templates against their published definitions. The expected ids are built here
// from each recipe — Meta's chat_completion for llama2, the text that Hugging Face's
// apply_chat_template renders for the others, split at special tokens as its tokenizer
// splits it — with SentencePiece encoding the literal text pieces, independently of
// model/chat_template.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "model/config.h"
#include "tokenizer/tokenizer.h"
#include "tests/test_helpers.h"

using namespace hearth;

namespace {

const int BOS = 1, EOS = 2;  // the Llama-2 vocabulary's <s> and </s>

std::vector<int> enc(const Tokenizer& tok, const std::string& text) { return encoded(tok, text, false); }

std::vector<int> cat(std::initializer_list<std::vector<int>> parts) {
    std::vector<int> v;
    for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
    return v;
}

// What a Hugging Face tokenizer makes of a rendered chat: BOS, then the text split at
// the special tokens, each special token its id and each piece between encoded alone.
std::vector<int> tokenize_rendered(const Tokenizer& tok, const std::string& text,
                                   const std::vector<std::pair<std::string, int>>& specials) {
    std::vector<int> ids = {BOS};
    size_t at = 0;
    while (at < text.size()) {
        size_t best = std::string::npos;
        int best_id = -1;
        size_t best_len = 0;
        for (auto& [s, id] : specials) {
            size_t f = text.find(s, at);
            if (f < best) best = f, best_id = id, best_len = s.size();
        }
        std::vector<int> piece = enc(tok, text.substr(at, best == std::string::npos ? std::string::npos : best - at));
        ids.insert(ids.end(), piece.begin(), piece.end());
        if (best == std::string::npos) break;
        ids.push_back(best_id);
        at = best + best_len;
    }
    return ids;
}

// The 3-turn dialog every template formats: a system prompt, three user messages, the
// two replies between them, and the generation prompt for the third reply.
std::vector<ChatMessage> three_turns() {
    return {{"system", "You are a pirate.", {}},   {"user", "Hello!", {}},
            {"assistant", "Ahoy there.", {}},      {"user", "What is your ship?", {}},
            {"assistant", "The Black Pearl.", {}}, {"user", "Where is it?", {}}};
}

std::vector<int> format(const std::string& name, const Tokenizer& tok, const std::vector<ChatMessage>& d, bool gen = true) {
    std::vector<int> ids;
    REQUIRE(format_chat(name, tok, d, gen, &ids) == "");
    return ids;
}

// A copy of the Llama-2 tokenizer with extra CONTROL pieces appended (ids 32000, ...),
// as a model extended with ChatML's special tokens has: the pieces are appended to the
// serialized ModelProto's repeated field 1, which protobuf merges into the list.
std::string with_control_pieces(std::string model, const std::vector<std::string>& pieces) {
    for (const std::string& p : pieces) {
        std::string inner;
        inner += char(0x0a), inner += char(p.size()), inner += p;  // piece
        inner += char(0x15), inner.append(4, '\0');                // score 0.0f
        inner += char(0x18), inner += char(3);                     // type CONTROL
        model += char(0x0a), model += char(inner.size()), model += inner;
    }
    return model;
}

struct Llama2Tokenizer {
    Tokenizer tok;
    Llama2Tokenizer() { REQUIRE(tok.load_file("tests/data/llama2-tokenizer.model") == ""); }
};

}  // namespace

TEST_CASE("chat template: the Llama-2 vocabulary's ids anchor the expected values") {
    Llama2Tokenizer t;
    // Published ids of Llama-2's chat markers (as in Meta's and Hugging Face's examples).
    CHECK(enc(t.tok, "[INST]") == std::vector<int>{518, 25580, 29962});
    CHECK(enc(t.tok, "[/INST]") == std::vector<int>{518, 29914, 25580, 29962});
    CHECK(t.tok.bos_id() == BOS);
    CHECK(t.tok.eos_id() == EOS);
    CHECK(marker_token(t.tok, "</s>") == EOS);
    CHECK(marker_token(t.tok, "<|im_end|>") == -1);
}

TEST_CASE("chat template: llama2 is Meta's chat_completion formatting") {
    Llama2Tokenizer t;
    // B_INST, E_INST = "[INST]", "[/INST]"; B_SYS, E_SYS = "<<SYS>>\n", "\n<</SYS>>\n\n".
    // The system prompt is folded into the first user message; each (user, answer) pair
    // is BOS + encode(f"{B_INST} {user.strip()} {E_INST} {answer.strip()} ") + EOS, the
    // last user message BOS + encode(f"{B_INST} {user.strip()} {E_INST}").
    const std::string first_user = "<<SYS>>\nYou are a pirate.\n<</SYS>>\n\nHello!";
    std::vector<int> expected = cat({{BOS},
                                     enc(t.tok, "[INST] " + first_user + " [/INST] Ahoy there. "),
                                     {EOS},
                                     {BOS},
                                     enc(t.tok, "[INST] What is your ship? [/INST] The Black Pearl. "),
                                     {EOS},
                                     {BOS},
                                     enc(t.tok, "[INST] Where is it? [/INST]")});
    CHECK(format("llama2", t.tok, three_turns()) == expected);

    // Meta strips every message; without a system message there is no <<SYS>> block.
    std::vector<ChatMessage> d = {{"user", "  Hello!\n", {}}, {"assistant", " Ahoy. ", {}}, {"user", "Bye", {}}};
    CHECK(format("llama2", t.tok, d) ==
          cat({{BOS}, enc(t.tok, "[INST] Hello! [/INST] Ahoy. "), {EOS}, {BOS}, enc(t.tok, "[INST] Bye [/INST]")}));
    // An empty system message still opens the first user message with its (empty) <<SYS>> block:
    // llama-server's rendering of Llama-2-chat's Jinja, whose test is `system_message != false` (the
    // whole text is stripped, so the space before "Hi" stays).
    const std::vector<ChatMessage> empty_system = {{"system", "", {}}, {"user", " Hi ", {}}};
    CHECK(format("llama2", t.tok, empty_system) == cat({{BOS}, enc(t.tok, "[INST] <<SYS>>\n\n<</SYS>>\n\n Hi [/INST]")}));
}

TEST_CASE("chat template: zephyr is TinyLlama-Chat's chat_template") {
    Llama2Tokenizer t;
    // TinyLlama/TinyLlama-1.1B-Chat-v1.0 renders (transformers' Jinja, trim_blocks) each
    // message as "<|role|>\n" + content + eos_token + "\n", then "<|assistant|>\n".
    const std::string rendered =
        "<|system|>\nYou are a pirate.</s>\n<|user|>\nHello!</s>\n<|assistant|>\nAhoy there.</s>\n"
        "<|user|>\nWhat is your ship?</s>\n<|assistant|>\nThe Black Pearl.</s>\n<|user|>\nWhere is it?</s>\n<|assistant|>\n";
    std::vector<int> expected = tokenize_rendered(t.tok, rendered, {{"</s>", EOS}});
    CHECK(format("zephyr", t.tok, three_turns()) == expected);
    // "</s>" is EOS, never the text "</s>" (which SentencePiece would split into pieces).
    CHECK(std::count(expected.begin(), expected.end(), EOS) == 6);
}

TEST_CASE("chat template: chatml, with its markers as text or as single tokens") {
    const std::string rendered =
        "<|im_start|>system\nYou are a pirate.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
        "<|im_start|>assistant\nAhoy there.<|im_end|>\n<|im_start|>user\nWhat is your ship?<|im_end|>\n"
        "<|im_start|>assistant\nThe Black Pearl.<|im_end|>\n<|im_start|>user\nWhere is it?<|im_end|>\n"
        "<|im_start|>assistant\n";
    {
        // The Llama-2 vocabulary has no <|im_start|>: the whole text is encoded.
        Llama2Tokenizer t;
        CHECK(format("chatml", t.tok, three_turns()) == tokenize_rendered(t.tok, rendered, {}));
    }
    {
        // A vocabulary extended with both markers: they are ids 32000 and 32001.
        std::string bytes = with_control_pieces(read_text("tests/data/llama2-tokenizer.model"), {"<|im_start|>", "<|im_end|>"});
        Tokenizer tok;
        REQUIRE(tok.load(bytes.data(), bytes.size()) == "");
        REQUIRE(tok.vocab_size() == 32002);
        REQUIRE(marker_token(tok, "<|im_start|>") == 32000);
        std::vector<int> expected = tokenize_rendered(tok, rendered, {{"<|im_start|>", 32000}, {"<|im_end|>", 32001}});
        CHECK(format("chatml", tok, three_turns()) == expected);
        CHECK(std::count(expected.begin(), expected.end(), 32001) == 6);
        // The reply ends at <|im_end|> as well as at EOS.
        std::vector<int> ends = chat_end_of_turn_ids("chatml", tok, -1);
        CHECK(std::find(ends.begin(), ends.end(), 32001) != ends.end());
        CHECK(std::find(ends.begin(), ends.end(), EOS) != ends.end());
    }
}

TEST_CASE("chat template: vicuna is FastChat's vicuna_v1.1") {
    Llama2Tokenizer t;
    // SeparatorStyle.ADD_COLON_TWO, sep " ", sep2 "</s>", roles USER and ASSISTANT:
    // system + sep, then role + ": " + message + sep / sep2, ending with "ASSISTANT:".
    const std::string rendered =
        "You are a pirate. USER: Hello! ASSISTANT: Ahoy there.</s>USER: What is your ship? ASSISTANT: The Black Pearl.</s>"
        "USER: Where is it? ASSISTANT:";
    CHECK(format("vicuna", t.tok, three_turns()) == tokenize_rendered(t.tok, rendered, {{"</s>", EOS}}));
    // Without a system prompt, vicuna_v1.1's own system message.
    std::vector<ChatMessage> d = {{"user", "Hi", {}}};
    CHECK(format("vicuna", t.tok, d) == tokenize_rendered(t.tok, std::string(kVicunaDefaultSystem) + " USER: Hi ASSISTANT:", {}));
}

TEST_CASE("chat template: raw is the texts one after another") {
    Llama2Tokenizer t;
    std::vector<int> expected = cat({{BOS},
                                     enc(t.tok, "You are a pirate."),
                                     enc(t.tok, "Hello!"),
                                     enc(t.tok, "Ahoy there."),
                                     enc(t.tok, "What is your ship?"),
                                     enc(t.tok, "The Black Pearl."),
                                     enc(t.tok, "Where is it?")});
    CHECK(format("raw", t.tok, three_turns()) == expected);
}

TEST_CASE("chat template: a reply given as generated ids extends the previous turn's prompt exactly") {
    // What lets a chat keep its KV cache: the prompt of turn N, followed by the reply's
    // own ids, is a prefix of the prompt of turn N+1.
    Llama2Tokenizer t;
    const std::vector<int> reply_ids = enc(t.tok, "Ahoy there, matey.");
    for (const std::string& name : chat_template_names()) {
        INFO(name);
        // Qwen3's template shows earlier replies without the (empty) think block that the
        // generation prompt ended with: each turn re-evaluates the previous reply.
        if (name == "qwen3") continue;
        std::vector<ChatMessage> d = {{"system", "You are a pirate.", {}}, {"user", "Hello!", {}}};
        std::vector<int> turn1 = format(name, t.tok, d);
        d.push_back({"assistant", t.tok.decode(reply_ids), reply_ids});
        d.push_back({"user", "Where is your ship?", {}});
        std::vector<int> turn2 = format(name, t.tok, d);
        std::vector<int> prefix = cat({turn1, reply_ids});
        REQUIRE(turn2.size() > prefix.size());
        CHECK(std::vector<int>(turn2.begin(), turn2.begin() + prefix.size()) == prefix);
    }
}

TEST_CASE("chat template: dialogs out of order are refused") {
    Llama2Tokenizer t;
    std::vector<int> ids;
    CHECK(format_chat("nope", t.tok, {{"user", "x", {}}}, true, &ids) != "");
    CHECK(format_chat("llama2", t.tok, {{"assistant", "x", {}}}, true, &ids) != "");
    CHECK(format_chat("llama2", t.tok, {{"user", "x", {}}, {"user", "y", {}}}, true, &ids) != "");
    // A last assistant message with the generation prompt is a reply begun (below); two are not.
    CHECK(format_chat("chatml", t.tok, {{"user", "x", {}}, {"assistant", "y", {}}, {"assistant", "z", {}}}, true, &ids) != "");
    CHECK(format_chat("chatml", t.tok, {{"user", "x", {}}, {"assistant", "y", {}}}, false, &ids) == "");
    CHECK(format_chat("chatml", t.tok, {{"system", "s", {}}, {"assistant", "y", {}}, {"user", "x", {}}}, true, &ids) != "");
}

// The expected texts below are llama-server's (llama.cpp b10587, its Jinja engine) renderings of
// each template's published Jinja (Llama-2-chat's, Mistral-7B-Instruct-v0.2's,
// Meta-Llama-3-8B-Instruct's, a plain ChatML one, Qwen3's with enable_thinking false,
// TinyLlama-Chat's), asked of its /apply-template endpoint; its prompt is that text, BOS first,
// split at the special tokens as tokenize_rendered splits it.
TEST_CASE("chat template: a last assistant message is the start of the reply, continued as llama-server prefills it") {
    Llama2Tokenizer t;
    // The dialog before it with the generation prompt, then its text as it is (not stripped,
    // not closed), encoded with the text the prompt ends with.
    const std::vector<ChatMessage> d = {
        {"user", "Hello!", {}}, {"assistant", "Ahoy there.", {}}, {"user", "Where is it?", {}}, {"assistant", " It lies", {}}};
    const std::pair<const char*, const char*> rendered[] = {
        {"llama2", "[INST] Hello! [/INST] Ahoy there. </s><s>[INST] Where is it? [/INST] It lies"},
        {"mistral", "[INST] Hello! [/INST]Ahoy there.</s>[INST] Where is it? [/INST] It lies"},
        {"llama3",
         "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nAhoy "
         "there.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhere is "
         "it?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n It lies"},
        {"chatml",
         "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nAhoy there.<|im_end|>\n<|im_start|>user\nWhere is "
         "it?<|im_end|>\n<|im_start|>assistant\n It lies"},
        {"qwen3",
         "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nAhoy there.<|im_end|>\n<|im_start|>user\nWhere is "
         "it?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n It lies"},
        {"zephyr", "<|user|>\nHello!</s>\n<|assistant|>\nAhoy there.</s>\n<|user|>\nWhere is it?</s>\n<|assistant|>\n It lies"},
    };
    for (const auto& [name, text] : rendered) {
        INFO(name);
        CHECK(format(name, t.tok, d) == tokenize_rendered(t.tok, text, {{"<s>", BOS}, {"</s>", EOS}}));
    }
    // After the system message alone (no user message): its turn, the generation prompt, the text.
    const std::vector<ChatMessage> after_system = {{"system", "Be brief.", {}}, {"assistant", " It lies", {}}};
    const std::pair<const char*, const char*> after_system_rendered[] = {
        {"llama3",
         "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n It "
         "lies"},
        {"chatml", "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>assistant\n It lies"},
        {"qwen3", "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n It lies"},
        {"zephyr", "<|system|>\nBe brief.</s>\n<|assistant|>\n It lies"},
    };
    for (const auto& [name, text] : after_system_rendered) {
        INFO(name);
        CHECK(format(name, t.tok, after_system) == tokenize_rendered(t.tok, text, {{"<s>", BOS}, {"</s>", EOS}}));
    }
    // Llama-2-chat's Jinja writes the system message into the first user message, and without one
    // drops it (llama-server renders " It lies" alone); Mistral's likewise: refused, not dropped.
    for (const char* name : {"llama2", "mistral"}) {
        std::vector<int> ids;
        const std::string err = format_chat(name, t.tok, after_system, true, &ids);
        INFO(name << ": " << err);
        CHECK(err.find("puts the system message into the first user message") != std::string::npos);
    }
    // Not continued (continue_final_message false): a finished turn, then the generation prompt,
    // as llama-server --no-prefill-assistant renders the same Jinja (and vLLM's false).
    const std::vector<ChatMessage> closed = {{"user", "Hello!", {}}, {"assistant", "Ahoy there.", {}}};
    const std::pair<const char*, const char*> closed_rendered[] = {
        {"llama3",
         "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nAhoy "
         "there.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
        {"chatml", "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nAhoy there.<|im_end|>\n<|im_start|>assistant\n"},
        {"qwen3",
         "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nAhoy "
         "there.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
        {"zephyr", "<|user|>\nHello!</s>\n<|assistant|>\nAhoy there.</s>\n<|assistant|>\n"},
    };
    for (const auto& [name, text] : closed_rendered) {
        INFO(name);
        std::vector<int> ids;
        REQUIRE(format_chat(name, t.tok, closed, true, &ids, false) == "");
        CHECK(ids == tokenize_rendered(t.tok, text, {{"<s>", BOS}, {"</s>", EOS}}));
    }
    // Llama-2-chat's and Mistral's Jinja have no generation prompt (the reply follows [/INST]),
    // vicuna's none after a reply: no turn to open.
    for (const char* name : {"llama2", "mistral", "vicuna"}) {
        std::vector<int> ids;
        const std::string err = format_chat(name, t.tok, closed, true, &ids, false);
        INFO(name << ": " << err);
        CHECK(err.find("no assistant turn after the assistant's") != std::string::npos);
    }
    // Two assistant messages at the end: llama-server refuses them too.
    std::vector<ChatMessage> two = d;
    two.insert(two.end() - 1, {"assistant", "x", {}});
    std::vector<int> ids;
    CHECK(format_chat("chatml", t.tok, two, true, &ids) != "");
}

TEST_CASE("chat template: a system message after the first is a turn of its own where the template's Jinja renders it so") {
    Llama2Tokenizer t;
    const std::vector<ChatMessage> d = {{"system", "You are a pirate.", {}},
                                        {"user", "Hello!", {}},
                                        {"assistant", "Ahoy there.", {}},
                                        {"system", "Be brief.", {}},
                                        {"user", "Where is it?", {}}};
    const std::pair<const char*, const char*> rendered[] = {
        {"llama3",
         "<|start_header_id|>system<|end_header_id|>\n\nYou are a "
         "pirate.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_"
         "header_id|>\n\nAhoy there.<|eot_id|><|start_header_id|>system<|end_header_id|>\n\nBe "
         "brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhere is "
         "it?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
        {"chatml",
         "<|im_start|>system\nYou are a pirate.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nAhoy "
         "there.<|im_end|>\n<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhere is "
         "it?<|im_end|>\n<|im_start|>assistant\n"},
        {"qwen3",
         "<|im_start|>system\nYou are a pirate.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nAhoy "
         "there.<|im_end|>\n<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhere is "
         "it?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
        {"zephyr",
         "<|system|>\nYou are a pirate.</s>\n<|user|>\nHello!</s>\n<|assistant|>\nAhoy there.</s>\n<|system|>\nBe "
         "brief.</s>\n<|user|>\nWhere is it?</s>\n<|assistant|>\n"},
    };
    for (const auto& [name, text] : rendered) {
        INFO(name);
        CHECK(format(name, t.tok, d) == tokenize_rendered(t.tok, text, {{"</s>", EOS}}));
    }
    // Llama-2-chat's and Mistral's Jinja raise an error for it (or, Llama-2's at an odd place,
    // drop the message); FastChat's vicuna has one system message: a clear refusal.
    for (const char* name : {"llama2", "mistral", "vicuna"}) {
        std::vector<int> ids;
        const std::string err = format_chat(name, t.tok, d, true, &ids);
        INFO(name << ": " << err);
        CHECK(err.find("system message only as the first message") != std::string::npos);
    }
    // Qwen3 shows the reasoning of a reply after the last user message, here one a system
    // message follows (llama-server's rendering, enable_thinking false).
    const std::vector<ChatMessage> q = {
        {"user", "Who?", {}}, {"assistant", "<think>\nhm\n</think>\n\nSir", {}}, {"system", "Be brief.", {}}};
    CHECK(format("qwen3", t.tok, q) ==
          tokenize_rendered(t.tok,
                            "<|im_start|>user\nWho?<|im_end|>\n<|im_start|>assistant\n<think>\nhm\n</think>\n\nSir<|im_end|>\n<|"
                            "im_start|>system\nBe brief.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
                            {}));
}

TEST_CASE("chat template: detection from Hugging Face chat_template strings") {
    // meta-llama/Llama-2-7b-chat-hf
    const std::string llama2 =
        "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}"
        "{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
        "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
        "user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = "
        "'<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}"
        "{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif "
        "message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
    // TinyLlama/TinyLlama-1.1B-Chat-v1.0
    const std::string zephyr =
        "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n"
        "{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == "
        "'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and "
        "add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}";
    // teknium/OpenHermes-2.5-Mistral-7B
    const std::string chatml =
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
    // Vicuna's own repositories ship no chat_template; this is one written to its format.
    const std::string vicuna =
        "{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] + ' ' }}{% endif %}{% for message in messages %}"
        "{% if message['role'] == 'user' %}{{ 'USER: ' + message['content'] + ' ' }}{% elif message['role'] == 'assistant' %}"
        "{{ 'ASSISTANT: ' + message['content'] + '</s>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}";
    // mistralai/Mistral-7B-Instruct-v0.1: [INST] without <<SYS>>: the mistral template (which
    // follows v0.2's, without v0.1's space after </s>).
    const std::string mistral =
        "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
        "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token + ' ' }}{% endif %}{% endfor %}";
    // microsoft/Phi-3-mini-4k-instruct: <|user|> and <|assistant|>, but turns end in <|end|>.
    const std::string phi3 =
        "{% for message in messages %}{% if message['role'] == 'user' %}{{'<|user|>' + '\n' + message['content'] + '<|end|>' + '\n' + "
        "'<|assistant|>' + '\n'}}{% elif message['role'] == 'assistant' %}{{message['content'] + '<|end|>' + '\n'}}{% endif %}{% endfor %}";
    CHECK(detect_chat_template(llama2) == "llama2");
    CHECK(detect_chat_template(zephyr) == "zephyr");
    CHECK(detect_chat_template(chatml) == "chatml");
    CHECK(detect_chat_template(vicuna) == "vicuna");
    CHECK(detect_chat_template(mistral) == "mistral");
    CHECK(detect_chat_template(phi3) == "");
    CHECK(detect_chat_template("chatml") == "chatml");
    CHECK(detect_chat_template("") == "");

    nlohmann::json cfg = {{"add_bos_token", true}, {"chat_template", zephyr}};
    CHECK(detect_chat_template(chat_template_jinja(cfg.dump())) == "zephyr");
    nlohmann::json list = {
        {"chat_template", {{{"name", "tool_use"}, {"template", chatml}}, {{"name", "default"}, {"template", llama2}}}}};
    CHECK(detect_chat_template(chat_template_jinja(list.dump())) == "llama2");
    CHECK(chat_template_jinja("{\"add_bos_token\": true}") == "");
    CHECK(chat_template_jinja("{not json") == "");
}

// Llama-3.2-Instruct's Jinja (llama.cpp's models/templates copy, tests/data/chat) sets date_string
// to strftime_now("%d %b %Y"), which transformers and llama-server define as today's local date;
// Llama-3.1's sets "26 Jul 2024" when none is given. The expected date here is C's strftime of
// the same format (C locale: English months), around the call so that a midnight between the
// two cannot fail it.
TEST_CASE("chat template: llama3.2 writes today's date where llama3.1 writes its own") {
    CHECK(detect_chat_template(read_text("tests/data/chat/Llama-3.2-3B-Instruct.jinja")) == "llama3.2");
    CHECK(detect_chat_template(read_text("tests/data/chat/Llama-3.1-8B-Instruct.jinja")) == "llama3.1");
    auto today = [] {
        const std::time_t now = std::time(nullptr);
        std::tm local{};
        localtime_r(&now, &local);
        char text[32];
        std::strftime(text, sizeof text, "%d %b %Y", &local);
        return std::string(text);
    };
    Llama2Tokenizer t;  // the markers as text: the decoded ids show the whole rendering
    const std::vector<ChatMessage> d = {{"system", " Be brief. ", {}}, {"user", "Hi", {}}};
    const std::string before = today();
    const std::string text32 = t.tok.decode(format("llama3.2", t.tok, d));
    const std::string after = today();
    INFO(text32);
    CHECK((text32.find("Cutting Knowledge Date: December 2023\nToday Date: " + before + "\n\nBe brief.<|eot_id|>") !=
               std::string::npos ||
           text32.find("Today Date: " + after + "\n\n") != std::string::npos));
    const std::string text31 = t.tok.decode(format("llama3.1", t.tok, d));
    CHECK(text31.find("Today Date: 26 Jul 2024\n\nBe brief.<|eot_id|>") != std::string::npos);
    // Both continue as llama3's turns after that system turn.
    CHECK(text32.substr(text32.find("<|eot_id|>")) == text31.substr(text31.find("<|eot_id|>")));
    // A file converted when hearth named llama3 for this Jinja: the Jinja decides.
    ModelConfig c;
    c.chat_template = "llama3";
    c.chat_template_jinja = read_text("tests/data/chat/Llama-3.2-3B-Instruct.jinja");
    std::string why;
    CHECK(resolve_chat_template(c, t.tok, "", &why) == "llama3.2");
}

TEST_CASE("chat template: a chat chooses --template, then the stored name, then the Jinja text, then ChatML's tokens") {
    // TinyLlama/TinyLlama-1.1B-Chat-v1.0's chat_template, as llama.cpp's GGUF files carry it
    // (tokenizer.chat_template, with no name of hearth's).
    const std::string zephyr_jinja =
        "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n"
        "{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == "
        "'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and "
        "add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}";
    Llama2Tokenizer llama2;
    std::string bytes = with_control_pieces(read_text("tests/data/llama2-tokenizer.model"), {"<|im_start|>", "<|im_end|>"});
    Tokenizer chatml_vocab;
    REQUIRE(chatml_vocab.load(bytes.data(), bytes.size()) == "");
    std::string why;
    ModelConfig c;
    CHECK(resolve_chat_template(c, llama2.tok, "", &why) == "raw");
    CHECK(why.find("names no chat template") != std::string::npos);
    CHECK(resolve_chat_template(c, chatml_vocab, "", &why) == "chatml");
    c.chat_template_jinja = zephyr_jinja;
    CHECK(resolve_chat_template(c, chatml_vocab, "", &why) == "zephyr");
    c.chat_template = "vicuna";
    CHECK(resolve_chat_template(c, chatml_vocab, "", &why) == "vicuna");
    CHECK(why == "stored in the checkpoint");
    c.chat_template = "no-such-template";  // a name from a newer build: the Jinja text decides
    CHECK(resolve_chat_template(c, llama2.tok, "", &why) == "zephyr");
    c.chat_template_jinja = "{{ messages }}";
    CHECK(resolve_chat_template(c, llama2.tok, "", &why) == "raw");
    CHECK(why.find("no-such-template") != std::string::npos);
    CHECK(resolve_chat_template(c, llama2.tok, "llama3", &why) == "llama3");
    CHECK(why == "--template");
    // A file converted before llama3.1 was built in names llama3 for Llama-3.1's Jinja: the Jinja
    // decides; Llama-3's own stays llama3.
    ModelConfig l31;
    l31.chat_template = "llama3";
    l31.chat_template_jinja = read_text("tests/data/chat/Llama-3.1-8B-Instruct.jinja");
    CHECK(resolve_chat_template(l31, llama2.tok, "", &why) == "llama3.1");
    CHECK(why.find("llama3.1") != std::string::npos);
    CHECK(resolve_chat_template(l31, llama2.tok, "llama3", &why) == "llama3");
    l31.chat_template_jinja = chat_template_jinja(read_text("tests/data/bpe/llama3-tokenizer_config.json"));
    CHECK(resolve_chat_template(l31, llama2.tok, "", &why) == "llama3");
    CHECK(why == "stored in the checkpoint");
}

// The system message a ChatML template renders when the dialog has none. Expected values: the
// literals of the published templates, as Jinja renders them.
TEST_CASE("chat template: a ChatML Jinja template's default system message") {
    const std::string qwen25 = read_text("tests/data/chat/Qwen2.5-7B-Instruct.jinja");
    // Its first system literal is followed by the dialog's own content; the default is the one
    // in the else branch (the tools branch's has no <|im_end|> of its own).
    CHECK(chatml_default_system(qwen25) == "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
    // Qwen2-Instruct's template (the same default in another form, double quotes elsewhere).
    const std::string qwen2 =
        "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou "
        "are a helpful assistant.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' "
        "}}{% endif %}";
    CHECK(chatml_default_system(qwen2) == "You are a helpful assistant.");
    // Jinja's escapes inside the text, and double quotes.
    CHECK(chatml_default_system("{{ \"<|im_start|>system\\nSay \\\"hi\\\"\\tthen\\\\stop.<|im_end|>\\n\" }}") ==
          "Say \"hi\"\tthen\\stop.");
    // None: Qwen3's template, plain ChatML that only copies the dialog's system message, a system
    // turn followed by more text, and an unterminated literal.
    const nlohmann::json qwen3 = nlohmann::json::parse(read_text("tests/data/bpe/qwen3-tokenizer_config.json"));
    CHECK(chatml_default_system(qwen3["chat_template"].get<std::string>()) == "");
    CHECK(chatml_default_system("{{ '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}") == "");
    CHECK(chatml_default_system("{{ '<|im_start|>system\\nA<|im_end|>\\n<|im_start|>user\\n' }}") == "");
    CHECK(chatml_default_system("{{ '<|im_start|>system\\nA<|im_end|>") == "");
    // A crafted template: a million markers inside one literal whose quotes are escaped. Each
    // literal is read once, so this takes milliseconds, not hours.
    std::string crafted = "{{ '";
    for (int i = 0; i < 1000000; i++) crafted += "\\'<|im_start|>system\\nX";
    CHECK(chatml_default_system(crafted) == "");
    // A chat uses it only with chatml, and only when the Jinja template is ChatML.
    ModelConfig c;
    c.chat_template_jinja = qwen25;
    CHECK(default_system_message(c, "chatml") == "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
    CHECK(default_system_message(c, "qwen3") == "");
    c.chat_template_jinja = qwen3["chat_template"].get<std::string>();
    CHECK(default_system_message(c, "chatml") == "");
}

TEST_CASE("chat template: run --chat starts with the template's default system message unless --system is given") {
    REQUIRE(
        run_command("rm -rf build/tests/chat-qwen25-hf && cp -r tests/data/parity/gqa build/tests/chat-qwen25-hf").exit_code ==
        0);
    {
        std::ofstream f("build/tests/chat-qwen25-hf/tokenizer_config.json");
        f << nlohmann::json{{"chat_template", read_text("tests/data/chat/Qwen2.5-7B-Instruct.jinja")}}.dump();
    }
    REQUIRE(run_command("./quantize build/tests/chat-qwen25-hf build/tests/chat-qwen25.hearth -q").exit_code == 0);
    CommandResult r = run_command("printf '/system\\n' | ./run build/tests/chat-qwen25.hearth --chat -n 2 --verbose");
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("chat template: chatml") != std::string::npos);
    CHECK(r.err.find("with its default system prompt") != std::string::npos);
    CHECK(r.out.find("system prompt: You are Qwen, created by Alibaba Cloud. You are a helpful assistant.") != std::string::npos);
    r = run_command("printf '/system\\n' | ./run build/tests/chat-qwen25.hearth --chat -n 2 --verbose --system 'Be brief.'");
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("default system prompt") == std::string::npos);
    CHECK(r.out.find("system prompt: Be brief.") != std::string::npos);
}

TEST_CASE("chat template: quantize stores the template it detects, and run --chat uses it") {
    REQUIRE(run_command("rm -rf build/tests/chat-hf && cp -r tests/data/parity/gqa build/tests/chat-hf").exit_code == 0);
    nlohmann::json cfg = {
        {"chat_template",
         "{% for message in messages %}{{ bos_token + '[INST] <<SYS>>' + message['content'] + ' [/INST]' }}{% endfor %}"}};
    {
        std::ofstream f("build/tests/chat-hf/tokenizer_config.json");
        f << cfg.dump();
    }
    const CommandResult q = run_command("./quantize build/tests/chat-hf build/tests/chat-llama2.hearth");
    REQUIRE(q.exit_code == 0);
    CHECK(q.err.substr(0, q.err.find('\n')).find("chat template llama2") != std::string::npos);  // said on its first line
    CommandResult r = run_command("echo hi | ./run build/tests/chat-llama2.hearth --chat -n 2 --verbose");
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("chat template: llama2 (stored in the checkpoint)") != std::string::npos);
    CommandResult o = run_command("echo hi | ./run build/tests/chat-llama2.hearth --chat -n 2 --verbose --template zephyr");
    CHECK(o.err.find("chat template: zephyr (--template)") != std::string::npos);
    CommandResult bad = run_command("echo hi | ./run build/tests/chat-llama2.hearth --chat --template nope");
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.find("unknown chat template") != std::string::npos);
}
