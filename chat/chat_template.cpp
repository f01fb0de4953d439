#include "chat/chat_template.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>

#include "base/json_input.h"
#include "base/printable.h"
#include "model/config.h"
#include "tokenizer/tokenizer.h"

namespace hearth {

const char* const kVicunaDefaultSystem =
    "A chat between a curious user and an artificial intelligence assistant. "
    "The assistant gives helpful, detailed, and polite answers to the user's questions.";

std::string detect_chat_template(const std::string& t) {
    if (is_chat_template(t)) return t;
    auto has = [&](const char* s) { return t.find(s) != std::string::npos; };
    // Llama-3.1's (and 3.2's, 3.3's) opens every dialog with a system turn that holds the dates.
    if (has("<|start_header_id|>") && has("<|end_header_id|>") && has("<|eot_id|>"))
        return !has("Cutting Knowledge Date") ? "llama3" : has("strftime_now") ? "llama3.2" : "llama3.1";
    // Qwen3's ChatML has a thinking switch; plain ChatML (Qwen2, ...) has not.
    if (has("<|im_start|>") && has("<|im_end|>") && (has("enable_thinking") || has("<think>"))) return "qwen3";
    if (has("<|im_start|>") && has("<|im_end|>")) return "chatml";
    // Llama-2-chat's template; Mistral's [INST] without <<SYS>> formats differently.
    if (has("[INST]") && has("[/INST]") && has("<<SYS>>")) return "llama2";
    if (has("[INST]") && has("[/INST]")) return "mistral";
    // TinyLlama-Chat (Zephyr's recipe): the turn ends with eos_token. Phi-3 (<|end|>) and
    // StableLM-Zephyr (<|endoftext|>) use the same role markers with other ends.
    if (has("<|user|>") && has("<|assistant|>") && (has("eos_token") || has("</s>")) && !has("<|end|>") && !has("<|endoftext|>"))
        return "zephyr";
    if (has("USER: ") && has("ASSISTANT:") && !has("SYSTEM: ")) return "vicuna";
    return "";
}

std::string chat_template_jinja(const std::string& json_text) {
    nlohmann::json j;
    if (!parse_json(json_text, &j).empty()) return "";  // the importer has reported a damaged file already
    try {
        if (!j.is_object() || !j.contains("chat_template")) return "";
        const nlohmann::json& t = j["chat_template"];
        if (t.is_string()) return t.get<std::string>();
        if (t.is_array())
            for (const nlohmann::json& e : t)
                if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
                    return e["template"].get<std::string>();
    } catch (const std::exception&) {
        // An oddly typed entry only costs the template: `run --template` can name it.
    }
    return "";
}

int marker_token(const Tokenizer& tok, const std::string& marker) {
    for (int id = 0; id < tok.vocab_size(); id++)
        if (!tok.is_byte(id) && tok.piece(id) == marker) return id;
    return -1;
}

namespace {

// Python's str.strip(), which Meta's code applies to every message.
std::string strip(const std::string& s) {
    const char* ws = " \t\n\r\v\f";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// Collects ids: text accumulates into one piece that SentencePiece encodes when an id
// (a special token or a generated reply) interrupts it, so that text between two
// special tokens is encoded as one string, as a Hugging Face tokenizer does.
struct IdBuilder {
    const Tokenizer& tok;
    std::vector<int>* ids;
    std::string text;
    std::map<std::string, int> markers;  // marker_token scans the vocabulary: once per marker
    std::string error;                   // the first text the tokenizer could not encode

    void add_text(const std::string& s) { text += s; }
    void flush() {
        if (text.empty()) return;
        if (error.empty()) error = tok.encode(text, false, ids);
        text.clear();
    }
    void add_id(int id) {
        flush();
        if (id >= 0) ids->push_back(id);
    }
    void add_ids(const std::vector<int>& v) {
        flush();
        ids->insert(ids->end(), v.begin(), v.end());
    }
    // A marker is its token when the vocabulary has it as one piece, else plain text.
    void add_marker(const std::string& marker) {
        auto it = markers.find(marker);
        if (it == markers.end()) it = markers.emplace(marker, marker_token(tok, marker)).first;
        if (it->second >= 0)
            add_id(it->second);
        else
            add_text(marker);
    }
};

// Meta's chat_completion: the system prompt is folded into the first user message; each
// (user, answer) pair is BOS + encode("[INST] {user} [/INST] {answer} ") + EOS; the last
// user message is BOS + encode("[INST] {user} [/INST]").
// A dialog as every formatter takes it: the messages, where the turns start (after the system
// message, if any), the system message's text, and whether to end with the generation prompt.
struct Dialog {
    const std::vector<ChatMessage>& messages;
    size_t first;
    const std::string& system;
    bool gen;
};

void format_llama2(IdBuilder& b, const Dialog& dialog) {
    const auto& [d, first, system, gen] = dialog;
    (void)gen;
    const int bos = b.tok.bos_id(), eos = b.tok.eos_id();
    for (size_t i = first; i < d.size(); i += 2) {
        std::string user = d[i].content;
        // Any system message, an empty one too: the Jinja tests `system_message != false`, and Meta's
        // code folds dialog[0] whatever its content.
        if (i == first && first == 1) user = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + user;
        b.add_id(bos);
        if (i + 1 < d.size()) {
            const ChatMessage& a = d[i + 1];
            if (a.ids.empty()) {
                b.add_text("[INST] " + strip(user) + " [/INST] " + strip(a.content) + " ");
            } else {
                // The model's own tokens follow "[/INST]" (their first piece carries the space).
                b.add_text("[INST] " + strip(user) + " [/INST]");
                b.add_ids(a.ids);
            }
            b.add_id(eos);
        } else {
            b.add_text("[INST] " + strip(user) + " [/INST]");
        }
    }
}

// Llama-3-Instruct's Jinja: BOS, then each message as
// <|start_header_id|>role<|end_header_id|>\n\n{content | trim}<|eot_id|>; the generation
// prompt is the assistant's header. (Llama-3.1's and later ones open with a dated system turn:
// llama3.1 below.)
void llama3_turns(IdBuilder& b, const std::vector<ChatMessage>& d, size_t from, bool gen) {
    for (size_t i = from; i < d.size(); i++) {
        const ChatMessage& m = d[i];
        b.add_marker("<|start_header_id|>");
        b.add_text(m.role);
        b.add_marker("<|end_header_id|>");
        b.add_text("\n\n");
        if (m.ids.empty())
            b.add_text(strip(m.content));
        else
            b.add_ids(m.ids);
        b.add_marker("<|eot_id|>");
    }
    if (gen) {
        b.add_marker("<|start_header_id|>");
        b.add_text("assistant");
        b.add_marker("<|end_header_id|>");
        b.add_text("\n\n");
    }
}

void format_llama3(IdBuilder& b, const Dialog& dialog) { llama3_turns(b, dialog.messages, 0, dialog.gen); }

// Llama-3.1-Instruct's Jinja without tools (3.3's is the same): a system turn always comes first,
// "Cutting Knowledge Date: December 2023\nToday Date: {date_string}\n\n" then the system message's
// text, trimmed (none: nothing); then llama3's turns.
void llama31_turns(IdBuilder& b, const Dialog& dialog, const std::string& date_string) {
    b.add_marker("<|start_header_id|>");
    b.add_text("system");
    b.add_marker("<|end_header_id|>");
    b.add_text("\n\nCutting Knowledge Date: December 2023\nToday Date: " + date_string + "\n\n" + strip(dialog.system));
    b.add_marker("<|eot_id|>");
    llama3_turns(b, dialog.messages, dialog.first, dialog.gen);
}

// Llama-3.1's date_string is "26 Jul 2024", the template's own, as transformers renders it when
// the caller gives none (llama-server gives today's date).
void format_llama31(IdBuilder& b, const Dialog& dialog) { llama31_turns(b, dialog, "26 Jul 2024"); }

// Llama-3.2's Jinja sets date_string to strftime_now("%d %b %Y"), today's date, which transformers
// and llama-server (minja) both define: the local date, its month in English ("05 Mar 2026").
std::string today_as_day_month_year() {
    static const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char text[32];
    std::snprintf(text, sizeof text, "%02d %s %d", local.tm_mday, kMonths[local.tm_mon % 12], local.tm_year + 1900);
    return text;
}

void format_llama32(IdBuilder& b, const Dialog& dialog) { llama31_turns(b, dialog, today_as_day_month_year()); }

// Qwen3's Jinja without tools, thinking off (enable_thinking=false, as chat runs it):
// ChatML, with an empty <think>\n\n</think>\n\n after the generation prompt. Earlier
// replies are shown without their reasoning: the text after </think>, as the template cuts
// it. Replies after the last user message keep a think block: the last message (a reply
// given without a generation prompt), and those with reasoning.
void format_qwen3(IdBuilder& b, const Dialog& dialog) {
    const auto& [d, first, system, gen] = dialog;
    const std::string think_end = "</think>";
    size_t last_user = 0;
    for (size_t i = 0; i < d.size(); i++)
        if (d[i].role == "user") last_user = i;
    for (size_t i = 0; i < d.size(); i++) {
        const ChatMessage& m = d[i];
        b.add_marker("<|im_start|>");
        b.add_text(m.role + "\n");
        if (m.role == "assistant" && m.ids.empty()) {
            std::string content = m.content, reasoning;
            const size_t end = content.rfind(think_end);
            if (end != std::string::npos) {
                reasoning = content.substr(0, content.find(think_end));
                const size_t open = reasoning.rfind("<think>");
                if (open != std::string::npos) reasoning.erase(0, open + 7);
                content.erase(0, end + think_end.size());
                content.erase(
                    0, content.find_first_not_of('\n') == std::string::npos ? content.size() : content.find_first_not_of('\n'));
            }
            reasoning.erase(0, std::min(reasoning.size(), reasoning.find_first_not_of('\n')));
            reasoning.erase(reasoning.find_last_not_of('\n') + 1);
            // After the last user message the template shows the think block of the last
            // message, and of any other that has reasoning (a system message may follow one).
            if (i > last_user && (i + 1 == d.size() || !reasoning.empty()))
                b.add_text("<think>\n" + reasoning + "\n</think>\n\n");
            b.add_text(content);
        } else if (m.ids.empty()) {
            b.add_text(m.content);
        } else {
            b.add_ids(m.ids);
        }
        b.add_marker("<|im_end|>");
        b.add_text("\n");
    }
    if (gen) {
        b.add_marker("<|im_start|>");
        b.add_text("assistant\n<think>\n\n</think>\n\n");
    }
}

// Mistral-7B-Instruct's Jinja (v0.2's; v0.1's adds a space after EOS): BOS,
// "[INST] {user} [/INST]", then the reply and EOS, and so on. The templates differ in where a system prompt goes; here it opens the first user
// message, followed by a blank line (as v0.1's community templates and llama.cpp's
// "mistral-v1" do). [INST] and [/INST] are ids where the vocabulary has them (v0.3).
void format_mistral(IdBuilder& b, const Dialog& dialog) {
    const auto& [d, first, system, gen] = dialog;
    for (size_t i = first; i < d.size(); i++) {
        const ChatMessage& m = d[i];
        if (m.role == "user") {
            b.add_marker("[INST]");
            b.add_text(" " + (i == first && !system.empty() ? system + "\n\n" : std::string()) + m.content + " ");
            b.add_marker("[/INST]");
        } else {
            if (m.ids.empty())
                b.add_text(m.content);
            else
                b.add_ids(m.ids);
            b.add_id(b.tok.eos_id());
        }
    }
    (void)gen;  // the prompt already ends where the reply begins
}

// TinyLlama-Chat's Jinja (rendered with trim_blocks, as transformers does): each message
// is "<|role|>\n" + content + eos_token + "\n"; the generation prompt "<|assistant|>\n".
void format_zephyr(IdBuilder& b, const Dialog& dialog) {
    const auto& [d, first, system, gen] = dialog;
    const int eos = b.tok.eos_id();
    for (const ChatMessage& m : d) {
        b.add_text("<|" + m.role + "|>\n");
        if (m.ids.empty())
            b.add_text(m.content);
        else
            b.add_ids(m.ids);
        b.add_id(eos);
        b.add_text("\n");
    }
    if (gen) b.add_text("<|assistant|>\n");
}

void format_chatml(IdBuilder& b, const Dialog& dialog) {
    const auto& [d, first, system, gen] = dialog;
    for (const ChatMessage& m : d) {
        b.add_marker("<|im_start|>");
        b.add_text(m.role + "\n");
        if (m.ids.empty())
            b.add_text(m.content);
        else
            b.add_ids(m.ids);
        b.add_marker("<|im_end|>");
        b.add_text("\n");
    }
    if (gen) {
        b.add_marker("<|im_start|>");
        b.add_text("assistant\n");
    }
}

// FastChat's SeparatorStyle.ADD_COLON_TWO with sep " " and sep2 "</s>":
// system + " " + "USER: " + msg + " " + "ASSISTANT: " + reply + "</s>" ..., ending "ASSISTANT:".
void format_vicuna(IdBuilder& b, const Dialog& dialog) {
    const auto& [d, first, system, gen] = dialog;
    b.add_text((system.empty() ? std::string(kVicunaDefaultSystem) : system) + " ");
    for (size_t i = first; i < d.size(); i++) {
        const ChatMessage& m = d[i];
        if (m.role == "user") {
            b.add_text("USER: " + m.content + " ");
        } else if (m.ids.empty()) {
            b.add_text("ASSISTANT: " + m.content);
            b.add_marker("</s>");
        } else {
            b.add_text("ASSISTANT:");  // the reply's first piece carries the space
            b.add_ids(m.ids);
            b.add_marker("</s>");
        }
    }
    if (gen) b.add_text("ASSISTANT:");
}

// No template: each message's text on its own, so that what the user types continues
// the text exactly as `run -p` would.
void format_raw(IdBuilder& b, const Dialog& dialog) {
    const std::vector<ChatMessage>& d = dialog.messages;
    for (const ChatMessage& m : d) {
        if (m.ids.empty())
            b.add_text(m.content);
        else
            b.add_ids(m.ids);
        b.flush();
    }
}

// The built-in templates, in the order --help lists them: the formatter, whether BOS comes first
// (Hugging Face's tokenizer adds it in front of the formatted text; llama2 places its own), and
// the marker that ends an assistant's turn besides EOS, when the vocabulary has it as one token.
// `turns`: the template renders each message as a turn of its role, so that a system message
// may come anywhere (as these templates' Jinja renders it where it stands); the others take one
// system message, first, and then user and assistant in turn. `system_in_user`: the system
// message is written into the first user message, so it needs one.
struct ChatTemplateRow {
    const char* name;
    void (*format)(IdBuilder&, const Dialog&);
    bool bos_first;
    const char* end_marker;
    bool turns;
    bool system_in_user;
};
// A row per template (clang-format would pack two to a line).
// clang-format off
const ChatTemplateRow kChatTemplates[] = {
    {"llama2", format_llama2, false, nullptr, false, true},
    {"zephyr", format_zephyr, true, nullptr, true, false},
    {"chatml", format_chatml, true, "<|im_end|>", true, false},
    {"vicuna", format_vicuna, true, nullptr, false, false},
    {"llama3", format_llama3, true, "<|eot_id|>", true, false},
    {"llama3.1", format_llama31, true, "<|eot_id|>", true, false},
    {"llama3.2", format_llama32, true, "<|eot_id|>", true, false},
    {"qwen3", format_qwen3, true, "<|im_end|>", true, false},
    {"mistral", format_mistral, true, nullptr, false, true},
    {"raw", format_raw, true, nullptr, true, false},
};
// clang-format on

const ChatTemplateRow* find_template(const std::string& name) {
    for (const ChatTemplateRow& t : kChatTemplates)
        if (name == t.name) return &t;
    return nullptr;
}

}  // namespace

const std::vector<std::string>& chat_template_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const ChatTemplateRow& t : kChatTemplates) v.push_back(t.name);
        return v;
    }();
    return names;
}

bool is_chat_template(const std::string& name) { return find_template(name) != nullptr; }

std::string format_chat(const std::string& name, const Tokenizer& tok, const std::vector<ChatMessage>& dialog,
                        bool add_generation_prompt, std::vector<int>* ids, bool continue_last) {
    const ChatTemplateRow* t = find_template(name);
    if (!t) return "unknown chat template " + in_quotes(name);
    // A reply begun (a prefill): the dialog before it is formatted with the generation prompt,
    // and its text follows, as llama-server continues a last assistant message.
    const bool last_assistant = !dialog.empty() && dialog.back().role == "assistant";
    const bool prefill = add_generation_prompt && continue_last && last_assistant;
    const std::vector<ChatMessage> before(dialog.begin(), dialog.end() - (prefill ? 1 : 0));
    const std::vector<ChatMessage>& d = prefill ? before : dialog;
    size_t first = 0;
    std::string system;
    if (!d.empty() && d[0].role == "system") {
        system = d[0].content;
        first = 1;
    }
    if (t->turns) {
        // System messages anywhere; the first other message is the user's.
        for (size_t i = first; i < d.size(); i++) {
            if (d[i].role == "system") continue;
            if (d[i].role != "user") return "the dialog must start with a user message after the system message";
            break;
        }
    } else {
        for (size_t i = first; i < d.size(); i++) {
            if (d[i].role == "system") return "the " + name + " chat template takes a system message only as the first message";
            const char* want = (i - first) % 2 == 0 ? "user" : "assistant";
            if (d[i].role != want)
                return "the dialog must alternate user and assistant messages after an optional system message";
        }
    }
    if (prefill && !d.empty() && d.back().role == "assistant") return "the dialog ends with two assistant messages";
    // A reply begun after the system message alone: its turn stands on its own in the templates
    // of turns and in vicuna's, as llama-server renders their Jinja; llama2's and mistral's put
    // it into the first user message, and without one their Jinja drops it (llama-server then
    // continues the reply's text alone).
    const bool after_system = prefill && first == 1 && d.size() == 1;
    if (after_system && t->system_in_user)
        return "the " + name +
               " chat template puts the system message into the first user message: a reply to continue needs a user "
               "message before it";
    // A finished reply last, and a new turn after it: the templates of turns render it, turn after turn.
    const bool reply_after_reply = add_generation_prompt && !continue_last && last_assistant;
    if (reply_after_reply && !t->turns)
        return "the " + name +
               " chat template has no assistant turn after the assistant's: the last message must be the user's, or a "
               "reply to continue";
    if (add_generation_prompt && !after_system && !reply_after_reply &&
        (d.size() == first || d.back().role == "assistant" || (!t->turns && d.back().role != "user")))
        return "a generation prompt needs the dialog to end with a user message";

    ids->clear();
    IdBuilder b{tok, ids, "", {}, ""};
    if (t->bos_first) b.add_id(tok.bos_id());
    t->format(b, Dialog{d, first, system, add_generation_prompt});
    if (prefill) {
        // Encoded with the text the generation prompt ends with, as llama-server tokenizes the
        // rendered prompt (between special tokens, one string).
        if (dialog.back().ids.empty())
            b.add_text(dialog.back().content);
        else
            b.add_ids(dialog.back().ids);
    }
    b.flush();
    if (!b.error.empty()) ids->clear();
    return b.error;
}

std::vector<int> chat_end_of_turn_ids(const std::string& name, const Tokenizer& tok, int eos_id) {
    std::vector<int> ids = end_of_generation_ids(tok, eos_id);
    const ChatTemplateRow* t = find_template(name);
    if (t && t->end_marker) {
        int id = marker_token(tok, t->end_marker);
        if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    return ids;
}

std::string chatml_default_system(const std::string& jinja) {
    static const std::string kOpen = "<|im_start|>system\\n", kClose = "<|im_end|>";
    // Each literal is read once: the search goes on after its end (a file crafted with markers
    // inside one long literal costs linear time).
    for (size_t at = jinja.find(kOpen), next; at != std::string::npos; at = jinja.find(kOpen, next)) {
        next = at + 1;
        if (at == 0 || (jinja[at - 1] != '\'' && jinja[at - 1] != '"')) continue;  // not a literal's start
        const char quote = jinja[at - 1];
        std::string text;  // the literal's value after the opening marker
        size_t i = at + kOpen.size();
        for (; i < jinja.size() && jinja[i] != quote; i++) {
            if (jinja[i] != '\\' || i + 1 == jinja.size()) {
                text += jinja[i];
                continue;
            }
            const char e = jinja[++i];
            text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        }
        if (i == jinja.size()) break;  // unterminated
        next = i + 1;
        // A whole system turn: the text, then the end marker (and the newline after it).
        const size_t end = text.find(kClose);
        if (end == std::string::npos || end == 0) continue;
        const std::string rest = text.substr(end + kClose.size());
        if (rest.empty() || rest == "\n") return text.substr(0, end);
    }
    return "";
}

std::string default_system_message(const ModelConfig& c, const std::string& template_name) {
    if (template_name != "chatml" || detect_chat_template(c.chat_template_jinja) != "chatml") return "";
    return chatml_default_system(c.chat_template_jinja);
}

std::string resolve_chat_template(const ModelConfig& c, const Tokenizer& tok, const std::string& asked, std::string* why) {
    if (!asked.empty()) {
        *why = "--template";
        return asked;
    }
    // Files converted before llama3.1 and llama3.2 were built in name llama3 for Llama-3.1's and
    // 3.2's templates: the Jinja, stored beside the name, says which it is.
    if (c.chat_template == "llama3") {
        const std::string jinja = detect_chat_template(c.chat_template_jinja);
        if (jinja == "llama3.1" || jinja == "llama3.2") {
            *why = "the checkpoint's Jinja template is " + jinja + "'s (the checkpoint names llama3, as hearth did before)";
            return jinja;
        }
    }
    if (is_chat_template(c.chat_template)) {
        *why = "stored in the checkpoint";
        return c.chat_template;
    }
    if (const std::string detected = detect_chat_template(c.chat_template_jinja); !detected.empty()) {
        *why = "the checkpoint's Jinja template is " + detected + "'s";
        return detected;
    }
    if (marker_token(tok, "<|im_start|>") >= 0 && marker_token(tok, "<|im_end|>") >= 0) {
        *why = "the vocabulary has ChatML's tokens";
        return "chatml";
    }
    if (!c.chat_template.empty())
        *why = "the checkpoint's template " + in_quotes(c.chat_template) + " is unknown here; --template chooses one";
    else if (!c.chat_template_jinja.empty())
        *why = "the checkpoint's Jinja template is none this build knows; --template chooses one";
    else
        *why = "the checkpoint names no chat template; --template chooses one";
    return "raw";
}

}  // namespace hearth
