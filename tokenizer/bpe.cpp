#include "tokenizer/bpe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <pcre2.h>
#include <queue>
#include <utf8proc.h>

#include "base/json_input.h"
#include "base/limits.h"
#include "base/printable.h"
#include "tokenizer/special_markers.h"

namespace hearth {

using json = nlohmann::json;

const char* const kLlama3SplitRegex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen2SplitRegex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kGpt2SplitRegex = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// ---------------------------------------------------------------------------------------
// GPT-2's byte-level mapping: every byte is a printable character, so that a vocabulary of
// strings can hold any bytes. Printable Latin-1 bytes stand for themselves; the others
// (controls, space, 0x7f-0xa0, 0xad) become U+0100, U+0101, ... in byte order.

namespace {

struct ByteLevel {
    std::string char_of[256];                       // byte -> the character's UTF-8
    std::unordered_map<uint32_t, uint8_t> byte_of;  // code point -> byte
    ByteLevel() {
        uint32_t next = 256;
        for (int b = 0; b < 256; b++) {
            const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
            const uint32_t cp = printable ? uint32_t(b) : next++;
            char buf[4];
            const utf8proc_ssize_t len = utf8proc_encode_char(utf8proc_int32_t(cp), reinterpret_cast<utf8proc_uint8_t*>(buf));
            char_of[b].assign(buf, size_t(len));
            byte_of[cp] = uint8_t(b);
        }
    }
};

const ByteLevel& byte_level() {
    static const ByteLevel m;
    return m;
}

// A byte-level spelled token back to its bytes; false if a character is not one of the 256.
bool bytes_from_spelling(const std::string& s, std::string* out) {
    out->clear();
    const ByteLevel& m = byte_level();
    for (size_t at = 0; at < s.size();) {
        utf8proc_int32_t cp;
        const utf8proc_ssize_t len =
            utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + at), utf8proc_ssize_t(s.size() - at), &cp);
        if (len <= 0) return false;
        auto it = m.byte_of.find(uint32_t(cp));
        if (it == m.byte_of.end()) return false;
        out->push_back(char(it->second));
        at += size_t(len);
    }
    return true;
}

// Invalid UTF-8 in the text becomes U+FFFD, byte by byte (as the streaming decoder does):
// the regexes and the normalizer need valid text.
std::string valid_utf8(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (size_t at = 0; at < s.size();) {
        const int len = utf8_char_length(s, at);
        if (len <= 0) {
            out += "\xEF\xBF\xBD";
            at++;
        } else {
            out.append(s, at, size_t(len));
            at += size_t(len);
        }
    }
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// tokenizer.json

namespace {

std::string type_of(const json& j) {
    return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
}

bool is_false_or_absent(const json& j, const char* key) { return !j.contains(key) || j[key].is_null() || j[key] == false; }

// The pre-tokenizer: Split(regex, Isolated)* then ByteLevel without its own regex, or
// ByteLevel alone with GPT-2's regex. Fills the regexes.
std::string read_pre_tokenizer(const json& pre, BpeVocab* out) {
    std::vector<json> steps;
    if (type_of(pre) == "Sequence") {
        if (!pre.contains("pretokenizers") || !pre["pretokenizers"].is_array())
            return "pre_tokenizer: a Sequence without pretokenizers";
        for (const json& s : pre["pretokenizers"]) steps.push_back(s);
    } else {
        steps.push_back(pre);
    }
    if (steps.empty() || type_of(steps.back()) != "ByteLevel")
        return "pre_tokenizer: not byte-level (this build reads byte-level BPE: Split then ByteLevel)";
    const json& bl = steps.back();
    if (!is_false_or_absent(bl, "add_prefix_space")) return "pre_tokenizer: ByteLevel with add_prefix_space is not supported";
    for (size_t i = 0; i + 1 < steps.size(); i++) {
        const json& s = steps[i];
        const std::string t = type_of(s);
        if (t != "Split") return "pre_tokenizer type '" + t.substr(0, 40) + "' is not supported (only Split and ByteLevel)";
        if (!s.contains("pattern") || !s["pattern"].is_object() || !s["pattern"].contains("Regex") ||
            !s["pattern"]["Regex"].is_string())
            return "pre_tokenizer: a Split without a Regex pattern is not supported";
        if (s.value("behavior", json()) != "Isolated" || !is_false_or_absent(s, "invert"))
            return "pre_tokenizer: only Split with behavior Isolated and invert false is supported";
        out->pre_split_regexes.push_back(s["pattern"]["Regex"].get<std::string>());
    }
    const bool use_regex = !bl.contains("use_regex") || bl["use_regex"] == true;
    if (use_regex) out->pre_split_regexes.push_back(kGpt2SplitRegex);
    if (out->pre_split_regexes.empty()) return "pre_tokenizer: no regex splits the text";
    // llama.cpp's names, so that a GGUF file written from this can be read by it.
    if (out->pre_split_regexes.size() == 1 && out->pre_split_regexes[0] == kLlama3SplitRegex)
        out->pre = "llama-bpe";
    else if (out->pre_split_regexes.size() == 1 && out->pre_split_regexes[0] == kQwen2SplitRegex)
        out->pre = "qwen2";
    else if (out->pre_split_regexes.size() == 1 && out->pre_split_regexes[0] == kGpt2SplitRegex)
        out->pre = "gpt-2";
    return "";
}

std::string read_normalizer(const json& n, BpeVocab* out) {
    if (n.is_null()) return "";
    std::vector<json> steps;
    if (type_of(n) == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array())
        for (const json& s : n["normalizers"]) steps.push_back(s);
    else
        steps.push_back(n);
    for (const json& s : steps) {
        if (type_of(s) != "NFC") return "normalizer '" + type_of(s).substr(0, 40) + "' is not supported (only NFC)";
        out->normalizer = "nfc";
    }
    return "";
}

// The content of a tokenizer_config.json token entry: "text" or {"content": "text", ...}.
std::string token_text(const json& j) {
    if (j.is_string()) return j.get<std::string>();
    if (j.is_object() && j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
    return "";
}

std::string from_json(const json& j, const json& config, BpeVocab* out) {
    if (!j.is_object()) return "tokenizer.json is not a JSON object";
    if (!j.contains("model") || !j["model"].is_object()) return "tokenizer.json has no model";
    const json& model = j["model"];
    if (type_of(model) != "BPE")
        return "tokenizer model '" + (type_of(model).empty() ? std::string("?") : type_of(model).substr(0, 40)) +
               "' is not supported (only byte-level BPE)";
    // transformers' LlamaConverter writes a SentencePiece model so (Llama-2's, Mistral's, TinyLlama's
    // tokenizer.json); hearth reads such a tokenizer from the tokenizer.model it came from.
    if (!is_false_or_absent(model, "byte_fallback"))
        return "BPE with byte_fallback (a SentencePiece tokenizer saved as tokenizer.json) is not supported: put the model's "
               "tokenizer.model beside it";
    if (model.contains("dropout") && !model["dropout"].is_null()) return "BPE with dropout is not supported";
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
        if (model.contains(key) && !model[key].is_null() && model[key] != "")
            return std::string("BPE with ") + key + " is not supported";
    if (model.contains("ignore_merges") && !model["ignore_merges"].is_boolean())
        return "model.ignore_merges is not true or false";
    out->ignore_merges = model.value("ignore_merges", false);

    std::string err;
    if (!(err = read_pre_tokenizer(j.value("pre_tokenizer", json()), out)).empty()) return err;
    if (!(err = read_normalizer(j.value("normalizer", json()), out)).empty()) return err;
    const json dec = j.value("decoder", json());
    if (!dec.is_null() && type_of(dec) != "ByteLevel")
        return "decoder '" + type_of(dec).substr(0, 40) + "' is not supported (only ByteLevel)";

    // The vocabulary: model.vocab, then the added tokens (which may reuse its ids).
    if (!model.contains("vocab") || !model["vocab"].is_object()) return "model.vocab is not an object";
    const json& vocab = model["vocab"];
    if (vocab.size() > limits::kBpeTokens) return "model.vocab has " + std::to_string(vocab.size()) + " tokens, too many";
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    auto place = [&](const json& id_json, const std::string& text, int32_t type) -> std::string {
        if (!id_json.is_number_unsigned() || id_json.get<uint64_t>() >= limits::kBpeTokens)
            return "token " + in_quotes(text) + " has id " + id_json.dump().substr(0, 40) + ", not an id below " +
                   std::to_string(limits::kBpeTokens);
        if (text.empty() || text.size() > limits::kBpeTokenBytes) return "a token of " + std::to_string(text.size()) + " bytes";
        const size_t id = id_json.get<size_t>();
        if (id >= tokens.size()) {
            tokens.resize(id + 1);
            types.resize(id + 1, 0);
        }
        if (types[id] != 0 && type == BpeVocab::kNormal) return "two tokens have id " + std::to_string(id);
        tokens[id] = text;
        types[id] = type;
        return "";
    };
    for (auto& [text, id] : vocab.items())
        if (!(err = place(id, text, BpeVocab::kNormal)).empty()) return "model.vocab: " + err;
    if (j.contains("added_tokens")) {
        if (!j["added_tokens"].is_array() || j["added_tokens"].size() > limits::kBpeTokens) return "added_tokens is not a list";
        for (const json& t : j["added_tokens"]) {
            if (!t.is_object() || !t.contains("content") || !t["content"].is_string() || !t.contains("id"))
                return "added_tokens: an entry without content or id";
            for (const char* key : {"lstrip", "rstrip", "single_word"})
                if (!is_false_or_absent(t, key))
                    return "added token " + in_quotes(t["content"].get<std::string>()) + ": " + key + " is not supported";
            const bool special = t.value("special", json(false)) == true;
            if (!(err = place(t["id"], t["content"].get<std::string>(), special ? BpeVocab::kControl : BpeVocab::kUserDefined))
                     .empty())
                return "added_tokens: " + err;
        }
    }
    for (size_t id = 0; id < tokens.size(); id++)
        if (types[id] == 0) {  // a gap in the ids: no token has it
            tokens[id] = "[PAD" + std::to_string(id) + "]";
            types[id] = BpeVocab::kUnused;
        }
    out->tokens = std::move(tokens);
    out->types = std::move(types);

    // Merges: "a b" strings (older files) or ["a", "b"] pairs (newer ones).
    if (!model.contains("merges") || !model["merges"].is_array()) return "model.merges is not a list";
    const json& merges = model["merges"];
    if (merges.size() > limits::kBpeMerges) return "model.merges has " + std::to_string(merges.size()) + " entries, too many";
    out->merges.reserve(merges.size());
    for (const json& m : merges) {
        if (m.is_string()) {
            const std::string s = m.get<std::string>();
            const size_t space = s.find(' ');
            if (space == std::string::npos || space == 0 || space + 1 == s.size() || s.find(' ', space + 1) != std::string::npos)
                return "merge " + in_quotes(s) + " is not two tokens separated by a space";
            out->merges.push_back(s);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            const std::string a = m[0].get<std::string>(), b = m[1].get<std::string>();
            // GGUF stores merges as "a b": a token holding a space cannot be written so
            // (byte-level tokens never do: the space is spelled 'Ġ').
            if (a.empty() || b.empty() || a.find(' ') != std::string::npos || b.find(' ') != std::string::npos)
                return "merge [" + in_quotes(a) + ", " + in_quotes(b) + "] has an empty token or one holding a space";
            out->merges.push_back(a + " " + b);
        } else {
            return "model.merges: an entry is neither \"a b\" nor [\"a\", \"b\"]";
        }
    }

    // BOS and EOS: tokenizer_config.json's tokens, looked up among the added tokens.
    auto id_of = [&](const std::string& text) {
        if (text.empty()) return -1;
        for (size_t id = 0; id < out->tokens.size(); id++)
            if (out->types[id] != BpeVocab::kNormal && out->tokens[id] == text) return int(id);
        return -1;
    };
    if (config.is_object()) {
        out->bos_id = id_of(token_text(config.value("bos_token", json())));
        out->eos_id = id_of(token_text(config.value("eos_token", json())));
    }
    // BOS is added when tokenizer_config.json says so, else when the post-processor's
    // template starts with it (Llama-3's own tokenizer.json), else when a BOS is declared.
    const json post = j.value("post_processor", json());
    std::vector<json> posts;
    if (type_of(post) == "Sequence" && post.contains("processors") && post["processors"].is_array())
        for (const json& p : post["processors"]) posts.push_back(p);
    else if (!post.is_null())
        posts.push_back(post);
    int template_bos = -1;
    bool has_template = false;
    for (const json& p : posts) {
        const std::string t = type_of(p);
        if (t == "ByteLevel") continue;
        if (t != "TemplateProcessing")
            return "post_processor '" + t.substr(0, 40) + "' is not supported (ByteLevel, TemplateProcessing)";
        has_template = true;
        const json single = p.value("single", json());
        if (single.is_array() && !single.empty() && single[0].is_object() && single[0].contains("SpecialToken")) {
            const json& st = single[0]["SpecialToken"];
            if (st.is_object() && st.contains("id") && st["id"].is_string()) template_bos = id_of(st["id"].get<std::string>());
        }
    }
    if (config.is_object() && config.contains("add_bos_token") && config["add_bos_token"].is_boolean()) {
        out->add_bos = config["add_bos_token"].get<bool>() && out->bos_id >= 0;
    } else if (has_template) {
        out->add_bos = template_bos >= 0;
        if (template_bos >= 0) out->bos_id = template_bos;
    } else {
        out->add_bos = out->bos_id >= 0;
    }
    return "";
}

}  // namespace

bool operator==(const BpeVocab& a, const BpeVocab& b) {
    return a.tokens == b.tokens && a.types == b.types && a.merges == b.merges && a.pre == b.pre &&
           a.pre_split_regexes == b.pre_split_regexes && a.normalizer == b.normalizer && a.ignore_merges == b.ignore_merges &&
           a.bos_id == b.bos_id && a.eos_id == b.eos_id && a.add_bos == b.add_bos;
}

std::string bpe_from_tokenizer_json(const std::string& tokenizer_json, const std::string& tokenizer_config_json, BpeVocab* out,
                                    std::shared_ptr<const BpeTokenizer>* built) {
    *out = BpeVocab{};
    json tokenizer, config;
    std::string err = parse_json(tokenizer_json, &tokenizer);
    if (!err.empty()) return err;
    // Named, so that the caller blames the right file.
    if (!tokenizer_config_json.empty() && !(err = parse_json(tokenizer_config_json, &config)).empty())
        return "tokenizer_config.json: " + err;
    try {
        err = from_json(tokenizer, config, out);
    } catch (const json::exception& e) {
        // from_json checks each value's type before it reads it; this only turns a check
        // it lacks into a message rather than a crash.
        return "an unexpected JSON value (" + printable(e.what(), 200) + ")";
    }
    if (!err.empty()) return err;
    // What the file declares must also make a working tokenizer.
    std::shared_ptr<BpeTokenizer> check(new BpeTokenizer);
    err = check->load(*out);
    if (err.empty() && built) *built = std::move(check);
    return err;
}

// ---------------------------------------------------------------------------------------
// Added tokens

void AddedTokenMatcher::build(const std::vector<Token>& tokens) {
    const uint32_t count = uint32_t(tokens.size());
    id_.resize(count);
    size_.resize(count);
    has_user_ = false;
    for (uint32_t t = 0; t < count; t++) {
        id_[t] = tokens[t].id;
        size_[t] = uint16_t(tokens[t].text.size());
        has_user_ |= !tokens[t].control;
    }
    first_child_.clear();
    byte_.assign(1, 0);
    fail_.assign(1, 0);
    longest_.assign(1, -1);
    longest_user_.assign(1, -1);
    std::fill(std::begin(root_next_), std::end(root_next_), 0);
    if (count == 0) {
        first_child_.assign(2, 1);
        return;
    }

    // The trie is built breadth first: each node holds the tokens whose reversal starts with
    // its string, as a range of `order`; grouping a node's tokens by their next byte makes
    // its children. Each token is grouped once per byte, so building takes time in
    // proportion to the tokens' bytes, whatever they are.
    auto byte_at = [&](uint32_t t, uint32_t depth) -> int {  // from the token's end; -1: past its start
        const std::string_view s = tokens[t].text;
        return depth < s.size() ? uint8_t(s[s.size() - 1 - depth]) : -1;
    };
    std::vector<uint32_t> order(count), sorted(count);
    for (uint32_t t = 0; t < count; t++) order[t] = t;
    struct Range {
        uint32_t begin, end;
    };
    std::vector<Range> ranges = {{0, count}};  // node -> its tokens in order
    uint32_t depth = 0, depth_end = 1;         // the nodes before depth_end have this depth
    for (uint32_t node = 0; node < ranges.size(); node++) {
        if (node == depth_end) {
            depth++;
            depth_end = uint32_t(ranges.size());
        }
        first_child_.push_back(uint32_t(ranges.size()));
        const Range r = ranges[node];
        // Tokens that end here first, then by their next byte: a counting sort for the many
        // (the root holds every token), a comparison sort for the few.
        auto key = [&](uint32_t t) { return byte_at(t, depth) + 1; };
        if (r.end - r.begin > 256) {
            uint32_t starts[258] = {};
            for (uint32_t i = r.begin; i < r.end; i++) starts[key(order[i]) + 1]++;
            for (int k = 1; k < 258; k++) starts[k] += starts[k - 1];
            for (uint32_t i = r.begin; i < r.end; i++) sorted[r.begin + starts[key(order[i])]++] = order[i];
            std::copy(sorted.begin() + r.begin, sorted.begin() + r.end, order.begin() + r.begin);
        } else if (r.end - r.begin > 1) {
            std::sort(order.begin() + r.begin, order.begin() + r.end, [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
        }
        uint32_t at = r.begin;
        int32_t own = -1, own_user = -1;  // the first token given of this text, of any type and user-defined
        for (; at < r.end && key(order[at]) == 0; at++) {
            const int32_t t = int32_t(order[at]);
            if (own < 0 || t < own) own = t;
            if (!tokens[size_t(t)].control && (own_user < 0 || t < own_user)) own_user = t;
        }
        // A token ending here is longer than any ending at a suffix (fail_ is shallower, so done).
        longest_[node] = own >= 0 ? own : longest_[fail_[node]];
        longest_user_[node] = own_user >= 0 ? own_user : longest_user_[fail_[node]];
        while (at < r.end) {
            const int byte = key(order[at]) - 1;
            uint32_t end = at + 1;
            while (end < r.end && key(order[end]) - 1 == byte) end++;
            ranges.push_back({at, end});
            byte_.push_back(uint8_t(byte));
            // The nodes of smaller depth have all their children already: next() can run.
            fail_.push_back(node == 0 ? 0 : next(fail_[node], uint8_t(byte)));
            longest_.push_back(-1);
            longest_user_.push_back(-1);
            at = end;
        }
        if (node == 0)
            for (uint32_t child = 1; child < ranges.size(); child++) root_next_[byte_[child]] = child;
    }
    first_child_.push_back(uint32_t(ranges.size()));
    for (auto* v : {&first_child_, &fail_}) v->shrink_to_fit();
    for (auto* v : {&longest_, &longest_user_}) v->shrink_to_fit();
    byte_.shrink_to_fit();
}

uint32_t AddedTokenMatcher::next(uint32_t node, uint8_t byte) const {
    for (;;) {
        if (node == 0) return root_next_[byte];
        const uint8_t* begin = byte_.data() + first_child_[node];
        const uint8_t* end = byte_.data() + first_child_[node + 1];
        const uint8_t* child = std::lower_bound(begin, end, byte);
        if (child != end && *child == byte) return uint32_t(child - byte_.data());
        node = fail_[node];
    }
}

void AddedTokenMatcher::find(std::string_view text, bool allow_control, std::vector<Match>* out) const {
    out->clear();
    if (id_.empty() || (!allow_control && !has_user_)) return;
    const std::vector<int32_t>& longest = allow_control ? longest_ : longest_user_;
    // From the end: the longest token starting at each position (the automaton's walk down
    // fail links is paid for by the bytes read, so this is linear in the text).
    uint32_t node = 0;
    for (size_t at = text.size(); at-- > 0;) {
        node = next(node, uint8_t(text[at]));
        const int32_t t = longest[node];
        if (t >= 0) out->push_back({at, size_[size_t(t)], id_[size_t(t)]});
    }
    // From the start: the leftmost, then on from its end.
    std::reverse(out->begin(), out->end());
    size_t kept = 0, free_from = 0;
    for (size_t i = 0; i < out->size(); i++) {
        const Match m = (*out)[i];
        if (m.at < free_from) continue;
        (*out)[kept++] = m;
        free_from = m.at + m.size;
    }
    out->resize(kept);
}

// ---------------------------------------------------------------------------------------
// The tokenizer

// The pattern with \s and \S meaning Unicode's White_Space, as in Hugging Face's tokenizers
// (Oniguruma) and llama.cpp (unicode.cpp): PCRE2's \s also matches U+180E MONGOLIAN VOWEL
// SEPARATOR, a format character since Unicode 6.3, so " \u180e" would split as whitespace.
// Written as code point ranges (not \p{White_Space}, which PCRE2 before 10.40 lacks), inside a
// character class without its brackets. \\s (an escaped backslash), \Q...\E and \s inside
// them are left as they are.
static std::string with_unicode_white_space(const std::string& pattern) {
    static const char* const kSpace =
        "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
    static const char* const kNotSpace =
        "\\x{0}-\\x{8}\\x{E}-\\x{1F}\\x{21}-\\x{84}\\x{86}-\\x{9F}\\x{A1}-\\x{167F}\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}"
        "\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}\\x{3001}-\\x{10FFFF}";
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < pattern.size(); i++) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[i + 1];
            if (e == 's' || e == 'S') {
                const char* set = e == 's' ? kSpace : kNotSpace;
                out += in_class ? std::string(set) : "[" + std::string(set) + "]";
            } else if (e == 'Q') {  // quoted up to \E (or the end)
                const size_t end = pattern.find("\\E", i + 2);
                const size_t stop = end == std::string::npos ? pattern.size() : end + 2;
                out.append(pattern, i, stop - i);
                i = stop - 1;
                continue;
            } else {
                out += c;
                out += e;
            }
            i++;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            out += c;
            // A ']' first in a class (after '^') is a literal.
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
            if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
            continue;
        }
        if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {  // [:alpha:]
            const size_t end = pattern.find(":]", i + 2);
            if (end != std::string::npos) {
                out.append(pattern, i, end + 2 - i);
                i = end + 1;
                continue;
            }
        }
        if (in_class && c == ']') in_class = false;
        out += c;
    }
    return out;
}

// A pre-tokenizer regex, compiled anchored: each match is tried at one position, and the
// search moves on one character at a time outside PCRE2. PCRE2's match limit counts anew at
// each start position of an unanchored search, so one unanchored call could do the limit's
// work at every position of the text; anchored, the units charged bound the work done.
struct BpeTokenizer::Regex {
    pcre2_code* code = nullptr;     // for a first attempt at each position
    pcre2_code* guarded = nullptr;  // the same with a callout before each item: for longer attempts, which the deadline can stop
    ~Regex() {
        if (code) pcre2_code_free(code);
        if (guarded) pcre2_code_free(guarded);
    }
};

// What the pcre2_match calls of one encode share: the budget and the deadline, and PCRE2's
// match context, JIT stack and match data. They are made per encode, not per regex: each
// call sets its own match limit, and a JIT stack serves one thread at a time, so encodes
// running at once must not share them.
class BpeTokenizer::RegexRun {
public:
    RegexRun(size_t n_regexes, size_t text_bytes)
        : left_(uint64_t(n_regexes) * (limits::kBpeRegexBudgetBase + limits::kBpeRegexBudgetPerByte * uint64_t(text_bytes))),
          allowed_(std::chrono::milliseconds(limits::kBpeRegexTimeBaseMs) +
                   std::chrono::microseconds(limits::kBpeRegexTimePerKiBMs * uint64_t(text_bytes) * 1000 / 1024)),
          text_bytes_(text_bytes) {}
    ~RegexRun() {
        if (data_) pcre2_match_data_free(data_);
        if (context_) pcre2_match_context_free(context_);
        if (jit_stack_) pcre2_jit_stack_free(jit_stack_);
    }
    RegexRun(const RegexRun&) = delete;
    RegexRun& operator=(const RegexRun&) = delete;

    // "" or why PCRE2 could not be set up.
    std::string start(bool jit) {
        context_ = pcre2_match_context_create(nullptr);
        data_ = pcre2_match_data_create(limits::kBpeRegexCaptureGroups + 1, nullptr);
        if (!context_ || !data_) return "out of memory";
        // The heap holds the interpreter's backtracking (frames as large as the capture
        // groups); the JIT backtracks on its stack. Both are bounded, and so is the depth.
        pcre2_set_heap_limit(context_, limits::kBpeRegexHeapKiB);
        pcre2_set_depth_limit(context_, limits::kBpeRegexDepth);
        pcre2_set_callout(context_, &RegexRun::callout, this);
        if (jit) {
            jit_stack_ = pcre2_jit_stack_create(32 * 1024, limits::kBpeJitStackBytes, nullptr);
            if (!jit_stack_) return "out of memory";
            pcre2_jit_stack_assign(context_, nullptr, jit_stack_);
        }
        return "";
    }

    // The time the regexes take is counted between begin_timing() and end_timing().
    void begin_timing() { since_ = std::chrono::steady_clock::now(); }
    void end_timing() { spent_ += std::chrono::steady_clock::now() - since_; }

    // pcre2_match's result for the regex anchored at subject[from], the subject being
    // subject[0, size); kOverBudget or kTooLong when the budget or the time is spent.
    //
    // PCRE2 cannot tell how much of its match limit a call used, so each attempt gets a
    // limit, kFirstLimit first and 4 times more after each PCRE2_ERROR_MATCHLIMIT, never more
    // than the budget has left, and is charged its whole limit: the total charged bounds the
    // backtracking done (the failed attempts add at most a third to the last one).
    //
    // A unit of the limit may scan up to the whole subject, though (a lookahead over the rest
    // of the text, tried at every position), which the budget cannot see; the time limit
    // stops that. The first attempt (all that real text needs, but on long runs of spaces) is
    // short: its time is checked after it. The longer ones run the guarded code, whose
    // callouts check the time as it goes.
    static constexpr int kOverBudget = PCRE2_ERROR_MATCHLIMIT, kTooLong = PCRE2_ERROR_CALLOUT;
    int match(const Regex& r, const char* subject, size_t size, size_t from) {
        static constexpr uint64_t kFirstLimit = 256;
        for (uint64_t limit = kFirstLimit;; limit = std::min<uint64_t>(4 * limit, UINT32_MAX)) {
            if (left_ == 0) return kOverBudget;
            const uint64_t granted = std::min(limit, left_);
            left_ -= granted;
            pcre2_set_match_limit(context_, uint32_t(granted));
            const int rc = pcre2_match(limit == kFirstLimit ? r.code : r.guarded, reinterpret_cast<PCRE2_SPTR>(subject), size,
                                       from, PCRE2_NO_UTF_CHECK, data_, context_);
            if (rc == kTooLong || out_of_time()) return kTooLong;
            if (rc != PCRE2_ERROR_MATCHLIMIT) return rc;
        }
    }
    const PCRE2_SIZE* ovector() const { return pcre2_get_ovector_pointer(data_); }

    // The one-line message for a failed match of the regex.
    std::string error(int rc, const std::string& pattern) const {
        const std::string text = "this text (" + std::to_string(text_bytes_) + " bytes)";
        if (rc == kOverBudget)
            return "the vocabulary's pre-tokenizer regexes exceed their budget on " + text + ": they backtrack too much";
        if (rc == kTooLong)
            return "the vocabulary's pre-tokenizer regexes take longer than " +
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(allowed_).count()) + " ms on " + text +
                   ": they scan it over and over";
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof msg);
        return "the vocabulary's pre-tokenizer regex " + in_quotes(pattern) + " failed on " + text + ": " +
               reinterpret_cast<const char*>(msg);
    }

    std::vector<std::pair<size_t, size_t>> pieces, next;  // encode_segment's, kept to reuse their memory

private:
    bool out_of_time() const { return spent_ + (std::chrono::steady_clock::now() - since_) > allowed_; }
    // Called before each item of the guarded code: looks at the clock every 64th time (the
    // items between may each scan the subject once).
    static int callout(pcre2_callout_block*, void* data) {
        RegexRun* run = static_cast<RegexRun*>(data);
        return ++run->callouts_ % 64 == 0 && run->out_of_time() ? kTooLong : 0;
    }

    uint64_t left_;  // of the budget, in match-limit units
    const std::chrono::steady_clock::duration allowed_;
    std::chrono::steady_clock::duration spent_{};
    std::chrono::steady_clock::time_point since_;
    uint64_t callouts_ = 0;
    size_t text_bytes_;
    pcre2_match_context* context_ = nullptr;
    pcre2_jit_stack* jit_stack_ = nullptr;
    pcre2_match_data* data_ = nullptr;
};

void StringIds::reset(const std::vector<std::string>* keys, size_t n) {
    keys_ = keys;
    size_t capacity = 16;
    while (capacity < 2 * n) capacity *= 2;  // at most half full: short probes
    slots_.assign(capacity, -1);
    mask_ = capacity - 1;
}

int StringIds::insert_all(const std::vector<int>& ids) {
    constexpr size_t kAhead = 16;
    size_t ring[kAhead];
    int first_not_added = -1;
    for (size_t i = 0; i < ids.size() + kAhead; i++) {
        if (i >= kAhead && !insert(ids[i - kAhead], ring[i % kAhead]) && first_not_added < 0) first_not_added = ids[i - kAhead];
        if (i < ids.size()) {
            ring[i % kAhead] = hash((*keys_)[size_t(ids[i])]);
            prefetch_slot(ring[i % kAhead]);
        }
    }
    return first_not_added;
}

bool StringIds::insert(int id, size_t hash) {
    const std::string& key = (*keys_)[size_t(id)];
    for (size_t at = hash & mask_;; at = (at + 1) & mask_) {
        if (slots_[at] < 0) {
            slots_[at] = id;
            return true;
        }
        if ((*keys_)[size_t(slots_[at])] == key) return false;
    }
}

int StringIds::find(std::string_view s, size_t hash) const {
    if (slots_.empty()) return -1;
    for (size_t at = hash & mask_;; at = (at + 1) & mask_) {
        if (slots_[at] < 0) return -1;
        if ((*keys_)[size_t(slots_[at])] == s) return slots_[at];
    }
}

static size_t pair_hash(uint64_t pair) { return size_t((pair * 0x9E3779B97F4A7C15ull) >> 20); }

const BpeTokenizer::Merge* BpeTokenizer::find_merge(int left, int right) const {
    const uint64_t pair = uint64_t(uint32_t(left)) << 32 | uint32_t(right);
    for (size_t at = pair_hash(pair) & merges_mask_;; at = (at + 1) & merges_mask_) {
        const Merge& m = merges_[at];
        if (m.pair == pair) return &m;
        if (m.pair == ~uint64_t(0)) return nullptr;
    }
}

BpeTokenizer::BpeTokenizer() = default;
BpeTokenizer::~BpeTokenizer() = default;

std::string BpeTokenizer::load(const BpeVocab& v) {
    const size_t n = v.tokens.size();
    if (n == 0 || n > limits::kBpeTokens) return "the vocabulary has " + std::to_string(n) + " tokens";
    if (v.types.size() != n)
        return "the vocabulary has " + std::to_string(n) + " tokens but " + std::to_string(v.types.size()) + " token types";
    if (v.merges.size() > limits::kBpeMerges)
        return "the vocabulary has " + std::to_string(v.merges.size()) + " merges, too many";
    for (int id : {v.bos_id, v.eos_id})
        if (id < -1 || id >= int(n)) return "special token id " + std::to_string(id) + " is outside the vocabulary";
    if (v.normalizer != "" && v.normalizer != "nfc")
        return "normalizer " + in_quotes(v.normalizer) + " is not supported (only nfc)";
    if (v.pre_split_regexes.empty() || v.pre_split_regexes.size() > limits::kBpeRegexes)
        return "the pre-tokenizer has " + std::to_string(v.pre_split_regexes.size()) + " regexes";

    bytes_.assign(n, "");
    types_ = v.types;
    by_bytes_.reset(&bytes_, n);
    std::vector<AddedTokenMatcher::Token> added;
    size_t added_bytes = 0;
    StringIds by_spelling;
    by_spelling.reset(&v.tokens, n);
    std::string raw;
    std::vector<int> normal, spelled_bytes;  // ids, for the tables after the loop
    for (size_t id = 0; id < n; id++) {
        const std::string& t = v.tokens[id];
        if (t.size() > limits::kBpeTokenBytes)
            return "token " + std::to_string(id) + " is " + std::to_string(t.size()) + " bytes long";
        switch (v.types[id]) {
            case BpeVocab::kNormal:
                // A token spelled with other characters than the 256 can never be produced;
                // it decodes to its own text.
                bytes_[id] = bytes_from_spelling(t, &raw) ? raw : t;
                normal.push_back(int(id));
                // A normal token spelled as a marker llama.cpp makes control (Qwen3's "</s>",
                // 128247) is one for it: matched in text only with control tokens allowed, and
                // decoded to nothing. The pre-tokenizer splits such a text, so merges never make it.
                if (bytes_[id] == t && find_special_marker(t)) {
                    types_[id] = BpeVocab::kControl;
                    bytes_[id].clear();
                    added.push_back({t, int(id), true});
                    break;
                }
                if (!raw.empty()) spelled_bytes.push_back(int(id));
                break;
            case BpeVocab::kControl:
            case BpeVocab::kUserDefined:
                if (find_special_marker(t)) types_[id] = BpeVocab::kControl;
                if (t.empty()) return "added token " + std::to_string(id) + " is empty";
                // Hugging Face's added tokens are strings: never invalid UTF-8. Valid ones match
                // only whole characters of the (valid) text, so that every stretch between them,
                // which the regexes get, is valid too.
                if (!is_valid_utf8(t)) return "added token " + std::to_string(id) + " is not valid UTF-8";
                if ((added_bytes += t.size()) > limits::kBpeAddedTokenBytes)
                    return "the added tokens hold more than " + std::to_string(limits::kBpeAddedTokenBytes) + " bytes together";
                bytes_[id] = types_[id] == BpeVocab::kControl ? "" : t;
                added.push_back({t, int(id), types_[id] == BpeVocab::kControl});
                break;
            case BpeVocab::kUnused: break;
            default:
                return "token " + std::to_string(id) + " has type " + std::to_string(v.types[id]) + " (1, 3, 4 or 5 expected)";
        }
    }
    const int twice = by_spelling.insert_all(normal);
    if (twice >= 0) return "token " + in_quotes(v.tokens[size_t(twice)]) + " appears twice";
    by_bytes_.insert_all(spelled_bytes);  // a second spelling of the same bytes: the first wins
    added_.build(added);
    for (int b = 0; b < 256; b++) {
        const char byte = char(b);
        byte_id_[b] = by_bytes_.find(std::string_view(&byte, 1));
        if (byte_id_[b] < 0) return "the vocabulary has no token for the byte " + std::to_string(b) + " (not byte-level BPE?)";
    }

    size_t capacity = 16;
    while (capacity < 2 * v.merges.size()) capacity *= 2;
    merges_.assign(capacity, Merge{});
    merges_mask_ = capacity - 1;
    // Three lookups a merge (its two tokens and their join), 280k merges for Llama-3, and one
    // insertion: each a cache miss or two in tables of megabytes. So each merge is split, joined
    // and hashed kAhead merges ahead, into a ring, its slots fetched then and its keys kAhead / 2
    // ahead; and it goes into its table kAhead merges after that slot was fetched.
    constexpr size_t kAhead = 16;
    struct Ahead {
        size_t space;  // npos: none
        std::string joined;
        size_t hash[3];  // of left, right, joined
    };
    Ahead ring[kAhead];
    Merge pending[kAhead];
    auto look_ahead = [&](size_t rank) {
        Ahead& e = ring[rank % kAhead];
        const std::string& m = v.merges[rank];
        if ((e.space = m.find(' ')) == std::string::npos) return;
        e.joined.assign(m, 0, e.space);
        e.joined.append(m, e.space + 1, std::string::npos);
        e.hash[0] = StringIds::hash(std::string_view(m).substr(0, e.space));
        e.hash[1] = StringIds::hash(std::string_view(m).substr(e.space + 1));
        e.hash[2] = StringIds::hash(e.joined);
        for (size_t h : e.hash) by_spelling.prefetch_slot(h);
    };
    // As Hugging Face's tokenizers builds its table, a repeated pair takes the later rank.
    auto add_merge = [&](const Merge& m) {
        for (size_t at = pair_hash(m.pair) & merges_mask_;; at = (at + 1) & merges_mask_)
            if (merges_[at].pair == m.pair || merges_[at].pair == ~uint64_t(0)) {
                merges_[at] = m;
                break;
            }
    };
    for (size_t rank = 0; rank < std::min(kAhead, v.merges.size()); rank++) look_ahead(rank);
    for (size_t rank = 0; rank < v.merges.size(); rank++) {
        const std::string& m = v.merges[rank];
        const Ahead& e = ring[rank % kAhead];
        if (e.space == std::string::npos || m.find(' ', e.space + 1) != std::string::npos)
            return "merge " + std::to_string(rank) + " is not two tokens separated by a space";
        if (rank + kAhead / 2 < v.merges.size() && ring[(rank + kAhead / 2) % kAhead].space != std::string::npos)
            for (size_t h : ring[(rank + kAhead / 2) % kAhead].hash) by_spelling.prefetch_key(h);
        const int a = by_spelling.find(std::string_view(m).substr(0, e.space), e.hash[0]),
                  b = by_spelling.find(std::string_view(m).substr(e.space + 1), e.hash[1]),
                  result = by_spelling.find(e.joined, e.hash[2]);
        if (a < 0 || b < 0 || result < 0)
            return "merge " + std::to_string(rank) + " " + in_quotes(m) + " names a token the vocabulary lacks";
        // Into the table kAhead merges later, in order, its slot fetched meanwhile.
        const uint64_t pair = uint64_t(uint32_t(a)) << 32 | uint32_t(b);
        __builtin_prefetch(&merges_[pair_hash(pair) & merges_mask_]);
        if (rank >= kAhead) add_merge(pending[rank % kAhead]);
        pending[rank % kAhead] = {pair, int(rank), result};
        if (rank + kAhead < v.merges.size()) look_ahead(rank + kAhead);  // into e's place, now used
    }
    for (size_t rank = v.merges.size() > kAhead ? v.merges.size() - kAhead : 0; rank < v.merges.size(); rank++)
        add_merge(pending[rank % kAhead]);

    regexes_.clear();
    jit_ = false;
    for (const std::string& pattern : v.pre_split_regexes) {
        if (pattern.empty() || pattern.size() > limits::kBpeRegexBytes)
            return "a pre-tokenizer regex of " + std::to_string(pattern.size()) + " bytes";
        // PCRE2 reads option verbs at the very start of a pattern, as many as are stacked there:
        // (*NO_JIT), (*LIMIT_MATCH=n), (*LIMIT_HEAP=n), (*UTF), (*CR), (*NO_START_OPT), ...
        // They turn off the JIT and the optimizations the limits were measured with, or change
        // what the pattern means; no real pre-tokenizer regex starts with one.
        if (pattern.compare(0, 2, "(*") == 0)
            return "pre-tokenizer regex " + in_quotes(pattern) +
                   " starts with a PCRE2 verb such as (*NO_JIT) or (*LIMIT_MATCH=n): refused";
        std::unique_ptr<Regex> r(new Regex);
        int code;
        PCRE2_SIZE offset;
        // \C (one byte, even inside a character) is refused: the next match would start
        // inside a character, which PCRE2 does not allow without its UTF check.
        const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C | PCRE2_ANCHORED;
        const std::string compiled = with_unicode_white_space(pattern);
        r->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(compiled.data()), compiled.size(), options, &code, &offset, nullptr);
        if (r->code)
            r->guarded = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(compiled.data()), compiled.size(),
                                       options | PCRE2_AUTO_CALLOUT, &code, &offset, nullptr);
        if (!r->code || !r->guarded) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(code, msg, sizeof msg);
            return "pre-tokenizer regex " + in_quotes(pattern) + ": " + reinterpret_cast<const char*>(msg) + " at offset " +
                   std::to_string(offset);
        }
        // The interpreter's backtracking frames each hold every capture group: thousands of
        // groups make gigabytes of a short text. Real pre-tokenizer regexes have none.
        uint32_t groups = 0;
        pcre2_pattern_info(r->code, PCRE2_INFO_CAPTURECOUNT, &groups);
        if (groups > limits::kBpeRegexCaptureGroups)
            return "pre-tokenizer regex " + in_quotes(pattern) + " has " + std::to_string(groups) + " capture groups (at most " +
                   std::to_string(limits::kBpeRegexCaptureGroups) + ")";
        // JIT where the platform has it (10x faster); the interpreter otherwise. Its limits
        // are set per encode (RegexRun).
        if (pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE) == 0) jit_ = true;
        if (pcre2_jit_compile(r->guarded, PCRE2_JIT_COMPLETE) == 0) jit_ = true;
        regexes_.push_back(std::move(r));
    }
    vocab_ = v;
    std::lock_guard<std::mutex> lock(cache_mutex_);
    cache_.clear();
    return "";
}

std::string BpeTokenizer::encode(const std::string& raw_text, bool add_bos, bool allow_control, std::vector<int>* out) const {
    std::vector<int> ids;
    if (add_bos && bos_id() >= 0) ids.push_back(bos_id());
    const std::string text = valid_utf8(raw_text);
    if (!text.empty()) {
        RegexRun run(regexes_.size(), text.size());  // the regexes' budget and time for this text
        std::string err = run.start(jit_);
        if (!err.empty()) return err;
        std::vector<AddedTokenMatcher::Match> found;
        added_.find(text, allow_control, &found);
        size_t from = 0;  // of the text not yet encoded
        for (const AddedTokenMatcher::Match& m : found) {
            if (!(err = encode_segment(std::string_view(text).substr(from, m.at - from), &run, &ids)).empty()) return err;
            ids.push_back(m.id);
            from = m.at + m.size;
        }
        if (!(err = encode_segment(std::string_view(text).substr(from), &run, &ids)).empty()) return err;
    }
    out->insert(out->end(), ids.begin(), ids.end());
    return "";
}

std::string BpeTokenizer::encode_segment(std::string_view segment, RegexRun* run, std::vector<int>* ids) const {
    if (segment.empty()) return "";
    std::string normalized;
    std::string_view text = segment;
    if (vocab_.normalizer == "nfc") {
        utf8proc_uint8_t* nfc = nullptr;
        const utf8proc_ssize_t len =
            utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(segment.data()), utf8proc_ssize_t(segment.size()), &nfc,
                         utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
        if (len < 0) return std::string("cannot normalize the text: ") + utf8proc_errmsg(len);
        normalized.assign(reinterpret_cast<const char*>(nfc), size_t(len));
        std::free(nfc);
        text = normalized;
    }
    // PCRE2 runs without its UTF check (a pass over the subject per call), so it must only
    // ever see valid UTF-8: in a cut character it reads past the end. The text is repaired and
    // added tokens are whole characters, so this holds; checked all the same, as it is cheap.
    if (!is_valid_utf8(text)) return "a stretch of the text between added tokens is not valid UTF-8: " + in_quotes(text);
    // Each regex splits the pieces of the one before; the text between matches is a piece too
    // (Split's "Isolated" behaviour). A match is tried at each character in turn (the regexes
    // are anchored, Regex), which finds the leftmost match as an unanchored search would.
    auto& pieces = run->pieces;
    auto& next = run->next;
    pieces.assign(1, {0, text.size()});
    run->begin_timing();
    for (size_t r = 0; r < regexes_.size(); r++) {
        next.clear();
        for (auto [begin, end] : pieces) {
            size_t at = begin;  // the end of the last match
            for (size_t from = begin; from < end;) {
                const int rc = run->match(*regexes_[r], text.data() + begin, end - begin, from - begin);
                if (rc == PCRE2_ERROR_NOMATCH) {
                    from += size_t(utf8_char_length(text, from));  // the text is valid: 1 to 4
                    continue;
                }
                if (rc < 0) {
                    run->end_timing();
                    return run->error(rc, vocab_.pre_split_regexes[r]);
                }
                const PCRE2_SIZE* ov = run->ovector();
                // Anchored, a match starts at `from` (or later, after \K) and ends no earlier.
                const size_t m0 = std::max(from, begin + ov[0]);
                size_t m1 = std::max(m0, begin + ov[1]);
                if (m0 == m1) {  // an empty match: the character there is a piece of its own
                    if (m0 == end) break;
                    m1 = m0 + size_t(utf8_char_length(text, m0));
                }
                if (m0 > at) next.push_back({at, m0});
                next.push_back({m0, m1});
                at = from = m1;
            }
            if (at < end) next.push_back({at, end});
        }
        pieces.swap(next);
    }
    run->end_timing();
    for (auto [begin, end] : pieces) encode_piece(text.data() + begin, end - begin, ids);
    return "";
}

void BpeTokenizer::encode_piece(const char* p, size_t n, std::vector<int>* ids) const {
    if (n == 0) return;
    const std::string key(p, n);
    if (vocab_.ignore_merges) {
        const int id = by_bytes_.find(key);
        if (id >= 0) {
            ids->push_back(id);
            return;
        }
    }
    {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        auto it = cache_.find(key);
        if (it != cache_.end()) {
            ids->insert(ids->end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<int> piece_ids;
    merge_piece(p, n, &piece_ids);
    ids->insert(ids->end(), piece_ids.begin(), piece_ids.end());
    if (n > 256) return;  // long runs (of spaces, say) rarely recur
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= 65536) cache_.clear();
    cache_.emplace(key, std::move(piece_ids));
}

// Merges the bytes of one piece: the pair of adjacent symbols with the lowest merge rank
// first (the leftmost among equals), until no adjacent pair has a merge. The symbols form a
// linked list; a heap holds the candidate pairs, and entries whose symbols have changed
// since are skipped when they come up.
void BpeTokenizer::merge_piece(const char* p, size_t n, std::vector<int>* ids) const {
    struct Symbol {
        int id, prev, next;
    };
    std::vector<Symbol> sym(n);
    for (size_t i = 0; i < n; i++) sym[i] = {byte_id_[uint8_t(p[i])], int(i) - 1, i + 1 < n ? int(i) + 1 : -1};
    struct Candidate {
        int rank, pos, left, right, result;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto consider = [&](int pos) {
        if (pos < 0 || sym[pos].next < 0) return;
        const int right = sym[pos].next;
        if (const Merge* m = find_merge(sym[pos].id, sym[right].id))
            heap.push({m->rank, pos, sym[pos].id, sym[right].id, m->result});
    };
    for (int i = 0; i + 1 < int(n); i++) consider(i);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        Symbol& left = sym[c.pos];
        if (left.id != c.left || left.next < 0 || sym[left.next].id != c.right) continue;  // stale
        const int right = left.next;
        left.id = c.result;
        left.next = sym[right].next;
        if (left.next >= 0) sym[left.next].prev = c.pos;
        sym[right].id = -1;  // merged away
        consider(left.prev);
        consider(c.pos);
    }
    for (int i = 0; i >= 0 && i < int(n); i = sym[i].next) ids->push_back(sym[i].id);
}

}  // namespace hearth
