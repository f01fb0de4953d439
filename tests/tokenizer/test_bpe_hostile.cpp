// The byte-level BPE tokenizer against vocabularies built to hurt it (issue 20): pre-tokenizer
// regexes that backtrack or rescan without end, PCRE2 verbs that lift the limits, capture
// groups by the thousand, a million added tokens, added tokens that cut characters. Every
// case must end quickly with a one-line error or work correctly, also under AddressSanitizer.
// The vocabularies are generated here: the 256 bytes in GPT-2's spelling, merges learned from
// Shakespeare, and generated added tokens.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sys/resource.h>
#include <thread>

#include "base/limits.h"
#include "formats/metadata.h"
#include "model/tokenizer_metadata.h"
#include "tokenizer/tokenizer.h"
#include "tests/safetensors_crafted.h"
#include "tests/test_helpers.h"

using namespace hearth;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// ---------------------------------------------------------------------------------------
// Vocabularies

// GPT-2's spelling of byte b, written independently of bpe.cpp: printable Latin-1 bytes stand
// for themselves, the others become U+0100, U+0101, ... in byte order.
std::string spelled_byte(int b) {
    auto printable = [](int c) { return (c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || (c >= 0xae && c <= 0xff); };
    int cp = b;
    if (!printable(b)) {
        cp = 256;
        for (int c = 0; c < b; c++) cp += !printable(c);
    }
    if (cp < 0x80) return std::string(1, char(cp));
    return std::string{char(0xc0 | (cp >> 6)), char(0x80 | (cp & 0x3f))};
}

std::string spelled(const std::string& bytes) {
    std::string out;
    for (unsigned char c : bytes) out += spelled_byte(c);
    return out;
}

struct Added {
    std::string text;
    bool control;
};

// Merges learned from the start of Shakespeare as BPE training learns them: the most
// frequent adjacent pair of symbols within words (a word keeps the space before it), merged
// everywhere, again and again. Returns (left, right) byte strings in rank order.
std::vector<std::pair<std::string, std::string>> learned_merges(int count) {
    static std::map<int, std::vector<std::pair<std::string, std::string>>> cache;
    auto& merges = cache[count];
    if (!merges.empty() || count == 0) return merges;
    const std::string corpus = read_text("tests/data/tinyshakespeare-valid.txt").substr(0, 6000);
    REQUIRE(!corpus.empty());
    std::vector<std::vector<std::string>> words;
    for (size_t at = 0; at < corpus.size();) {
        size_t end = at + 1;
        while (end < corpus.size() && corpus[end] != ' ' && corpus[end] != '\n') end++;
        std::vector<std::string> word;
        for (size_t i = at; i < end; i++) word.push_back(corpus.substr(i, 1));
        words.push_back(word);
        at = end;
    }
    for (int m = 0; m < count; m++) {
        std::map<std::pair<std::string, std::string>, int> pairs;
        for (const auto& w : words)
            for (size_t i = 0; i + 1 < w.size(); i++) pairs[{w[i], w[i + 1]}]++;
        if (pairs.empty()) break;
        auto best = pairs.begin();
        for (auto it = pairs.begin(); it != pairs.end(); ++it)
            if (it->second > best->second) best = it;
        merges.push_back(best->first);
        for (auto& w : words) {
            std::vector<std::string> merged;
            for (size_t i = 0; i < w.size(); i++) {
                if (i + 1 < w.size() && w[i] == best->first.first && w[i + 1] == best->first.second) {
                    merged.push_back(w[i] + w[i + 1]);
                    i++;
                } else {
                    merged.push_back(w[i]);
                }
            }
            w = merged;
        }
    }
    return merges;
}

// A byte-level vocabulary: the 256 bytes as ids 0-255, then the tokens `n_merges` learned
// merges make, then the added tokens.
BpeVocab make_vocab(const std::vector<std::string>& regexes, const std::vector<Added>& added = {}, int n_merges = 100) {
    BpeVocab v;
    for (int b = 0; b < 256; b++) {
        v.tokens.push_back(spelled_byte(b));
        v.types.push_back(BpeVocab::kNormal);
    }
    std::map<std::string, int> known;
    for (int b = 0; b < 256; b++) known[v.tokens[size_t(b)]] = b;
    for (const auto& [left, right] : learned_merges(n_merges)) {
        v.merges.push_back(spelled(left) + " " + spelled(right));
        if (known.emplace(spelled(left + right), int(v.tokens.size())).second) {
            v.tokens.push_back(spelled(left + right));
            v.types.push_back(BpeVocab::kNormal);
        }
    }
    for (const Added& a : added) {
        v.tokens.push_back(a.text);
        v.types.push_back(a.control ? BpeVocab::kControl : BpeVocab::kUserDefined);
    }
    v.pre_split_regexes = regexes;
    return v;
}

// The same vocabulary as a Hugging Face tokenizer.json: a Split for each regex, then ByteLevel.
std::string tokenizer_json(const BpeVocab& v) {
    nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array(), splits = nlohmann::json::array();
    for (size_t id = 0; id < v.tokens.size(); id++) {
        if (v.types[id] == BpeVocab::kNormal)
            vocab[v.tokens[id]] = id;
        else
            added.push_back({{"id", id}, {"content", v.tokens[id]}, {"special", v.types[id] == BpeVocab::kControl}});
    }
    for (const std::string& r : v.pre_split_regexes)
        splits.push_back({{"type", "Split"}, {"pattern", {{"Regex", r}}}, {"behavior", "Isolated"}, {"invert", false}});
    splits.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}});
    const nlohmann::json j = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", v.merges}}},
                              {"added_tokens", added},
                              {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", splits}}},
                              {"decoder", {{"type", "ByteLevel"}}}};
    return j.dump();
}

std::string decoded(const BpeTokenizer& bpe, const std::vector<int>& ids) {
    std::string out;
    for (int id : ids) out += bpe.token_bytes(id);
    return out;
}

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos && s.find('\r') == std::string::npos; }

// ---------------------------------------------------------------------------------------
// A guard against hangs: not a speed claim (the machine may be busy, or running the
// sanitizers), only a bound that a hang would break. If the code under test never returns,
// the watchdog ends the process after a minute, naming what hung.
constexpr double kGuardSeconds = 10;

class Watchdog {
public:
    explicit Watchdog(std::string what)
        : what_(std::move(what)), thread_([this] {
              std::unique_lock<std::mutex> lock(mutex_);
              if (!done_cv_.wait_for(lock, std::chrono::seconds(60), [this] { return done_; })) {
                  std::fprintf(stderr, "test_bpe_hostile: hung for a minute: %s\n", what_.c_str());
                  std::abort();
              }
          }) {}
    ~Watchdog() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            done_ = true;
        }
        done_cv_.notify_one();
        thread_.join();
    }

private:
    std::string what_;
    std::mutex mutex_;
    std::condition_variable done_cv_;
    bool done_ = false;
    std::thread thread_;
};

struct Outcome {
    std::string err;  // "" when the text encoded
    std::vector<int> ids;
    double seconds;
};

// Encodes under the guard; checks what every outcome must satisfy: either ids that decode
// to the text, or a one-line error with the ids left as they were.
Outcome guarded_encode(const BpeTokenizer& bpe, const std::string& text, bool allow_control, const std::string& what) {
    Outcome o;
    o.ids = {-7};  // must stay alone on failure
    const auto start = std::chrono::steady_clock::now();
    {
        Watchdog dog(what);
        o.err = bpe.encode(text, false, allow_control, &o.ids);
    }
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(what << ": " << o.err);
    CHECK(o.seconds < kGuardSeconds);
    if (o.err.empty()) {
        REQUIRE(!o.ids.empty());
        CHECK(o.ids[0] == -7);
        o.ids.erase(o.ids.begin());
    } else {
        CHECK(one_line(o.err));
        CHECK(o.ids == std::vector<int>{-7});
        o.ids.clear();
    }
    return o;
}

std::string outcome_word(const Outcome& o) {
    if (o.err.empty()) return "ids";
    if (o.err.find("budget") != std::string::npos) return "budget";
    if (o.err.find("longer than") != std::string::npos) return "time";
    return "error (" + o.err.substr(o.err.rfind(": ") + 2) + ")";
}

const char* const kChatLine = "Could you tell me, in a few words, why the sky looks blue in the day and red at sunset? Thanks!!";

// 10 KB of text: the attack repeated between lines of ordinary text (or the attack itself,
// when it is that long already).
std::string ten_kb_of(const std::string& attack) {
    const size_t bytes = 10 * 1024;
    if (attack.size() >= bytes) return attack;
    std::string text;
    while (text.size() < bytes) text += attack + " " + kChatLine + "\n";
    text.resize(bytes);
    return text;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Regexes refused at load

TEST_CASE("bpe hostile: PCRE2 start-of-pattern verbs are refused at load, alone, stacked, among others, from any file") {
    const std::vector<std::string> verbs = {"(*NO_JIT)",
                                            "(*LIMIT_MATCH=4294967295)",
                                            "(*LIMIT_HEAP=4294967295)",
                                            "(*LIMIT_DEPTH=4294967295)",
                                            "(*LIMIT_RECURSION=4294967295)",
                                            "(*UTF)",
                                            "(*UCP)",
                                            "(*CR)",
                                            "(*LF)",
                                            "(*CRLF)",
                                            "(*ANYCRLF)",
                                            "(*ANY)",
                                            "(*NUL)",
                                            "(*BSR_ANYCRLF)",
                                            "(*BSR_UNICODE)",
                                            "(*NO_START_OPT)",
                                            "(*NO_AUTO_POSSESS)",
                                            "(*NO_DOTSTAR_ANCHOR)",
                                            "(*NOTEMPTY)",
                                            "(*NOTEMPTY_ATSTART)",
                                            "(*UTF)(*UCP)(*NO_JIT)(*LIMIT_MATCH=100000000)",
                                            "(*NO_JIT)(*NO_START_OPT)(*NO_AUTO_POSSESS)"};
    BpeTokenizer bpe;
    REQUIRE(bpe.load(make_vocab({kLlama3SplitRegex})) == "");
    for (const std::string& verb : verbs) {
        for (const std::vector<std::string>& regexes : {std::vector<std::string>{verb + kLlama3SplitRegex},
                                                        std::vector<std::string>{"\\s+", verb + "(a+)+$", kGpt2SplitRegex}}) {
            CAPTURE(regexes.back());
            const std::string err = bpe.load(make_vocab(regexes));
            CHECK(err.find("PCRE2 verb") != std::string::npos);
            CHECK(one_line(err));
        }
    }
    // Not at the start, PCRE2 itself does not know them.
    CHECK(bpe.load(make_vocab({"a(*NO_JIT)"})).find("not recognized") != std::string::npos);

    // Through a tokenizer.json's Split sequence, and through a GGUF or hearth file's key.
    BpeVocab v;
    CHECK(bpe_from_tokenizer_json(tokenizer_json(make_vocab({"(*NO_JIT)(a+)+$"})), "", &v).find("PCRE2 verb") !=
          std::string::npos);
    REQUIRE(bpe_from_tokenizer_json(tokenizer_json(make_vocab({kLlama3SplitRegex})), "", &v) == "");
    TokenizerSpec spec;
    spec.kind = TokenizerKind::bpe;
    spec.bpe = v;
    Metadata m;
    tokenizer_to_metadata(spec, &m);
    TokenizerSpec back;
    REQUIRE(tokenizer_from_metadata(m, &back) == "");
    m.set_strings("hearth.tokenizer.pre_split_regex", {"(*LIMIT_MATCH=4294967295)(*NO_JIT)(\\w|\\w)*!"});
    CHECK(tokenizer_from_metadata(m, &back).find("PCRE2 verb") != std::string::npos);
}

TEST_CASE("bpe hostile: more capture groups than the limit are refused at load") {
    auto groups = [](size_t n) {
        std::string r;
        for (size_t i = 0; i < n; i++) r += "(a)";
        return r + "|\\s+|\\S+";
    };
    BpeTokenizer bpe;
    CHECK(bpe.load(make_vocab({groups(limits::kBpeRegexCaptureGroups)})) == "");
    for (size_t n : {size_t(limits::kBpeRegexCaptureGroups) + 1, size_t(1300)}) {  // 1300: the most 4 KiB can hold
        const std::string err = bpe.load(make_vocab({groups(n)}));
        CHECK(err.find(std::to_string(n) + " capture groups") != std::string::npos);
        CHECK(one_line(err));
    }
    // The groups at the limit still work.
    REQUIRE(bpe.load(make_vocab({groups(limits::kBpeRegexCaptureGroups)})) == "");
    std::vector<int> ids;
    CHECK(bpe.encode("aaaa hi", false, false, &ids) == "");
    CHECK(decoded(bpe, ids) == "aaaa hi");
}

TEST_CASE(
    "bpe hostile: a token twice and broken merges are refused at load, wherever they are; a repeated merge takes the later rank") {
    // The 256 bytes (ids 0-255), then 90 filler merges of two digits ("0 1" -> "01", ...),
    // with "a b" after the 20th and "b c" after the 60th: far more than the lookahead of the
    // loading loop (tokenizer/bpe.cpp), so that its ring wraps and its last entries are flushed.
    BpeVocab v = make_vocab({kGpt2SplitRegex}, {}, 0);
    auto add_merge = [&](const std::string& left, const std::string& right) {
        v.merges.push_back(left + " " + right);
        if (std::find(v.tokens.begin(), v.tokens.end(), left + right) == v.tokens.end()) {
            v.tokens.push_back(left + right);
            v.types.push_back(BpeVocab::kNormal);
        }
    };
    for (int i = 0; i < 90; i++) {
        add_merge(std::string(1, char('0' + i / 10)), std::string(1, char('0' + i % 10)));
        if (i == 20) add_merge("a", "b");
        if (i == 60) add_merge("b", "c");
    }
    const int ab = int(std::find(v.tokens.begin(), v.tokens.end(), "ab") - v.tokens.begin()),
              bc = int(std::find(v.tokens.begin(), v.tokens.end(), "bc") - v.tokens.begin());
    BpeTokenizer bpe;
    REQUIRE(bpe.load(v) == "");
    // "a b" ranks before "b c": abc is ab + c. Every filler merge is in the table: 0123 is 01 + 23.
    CHECK(bpe_encoded(bpe, "abc", false, false) == std::vector<int>{ab, 'c'});
    const int t01 = int(std::find(v.tokens.begin(), v.tokens.end(), "01") - v.tokens.begin()),
              t23 = int(std::find(v.tokens.begin(), v.tokens.end(), "23") - v.tokens.begin()),
              t89 = int(std::find(v.tokens.begin(), v.tokens.end(), "89") - v.tokens.begin());
    CHECK(bpe_encoded(bpe, "0123", false, false) == std::vector<int>{t01, t23});
    CHECK(bpe_encoded(bpe, "89", false, false) == std::vector<int>{t89});  // the last merge

    // Hugging Face's tokenizers keeps a repeated pair's later rank: "a b" again at the very end
    // ranks after "b c", and abc becomes a + bc.
    BpeVocab repeated = v;
    repeated.merges.push_back("a b");
    REQUIRE(bpe.load(repeated) == "");
    CHECK(bpe_encoded(bpe, "abc", false, false) == std::vector<int>{'a', bc});

    // A normal token spelled twice, early or late in the vocabulary.
    for (size_t copy_of : {size_t(5), size_t('z'), v.tokens.size() - 1}) {
        BpeVocab twice = v;
        twice.tokens.push_back(v.tokens[copy_of]);
        twice.types.push_back(BpeVocab::kNormal);
        const std::string err = bpe.load(twice);
        CAPTURE(copy_of);
        CHECK(err.find("appears twice") != std::string::npos);
        CHECK(one_line(err));
    }
    // A merge without a space, or naming a token the vocabulary lacks: first, in the middle, last.
    for (const std::string bad : {"ab", "a q", "q a"}) {
        for (size_t at : {size_t(0), size_t(40), v.merges.size()}) {
            BpeVocab broken = v;
            broken.merges.insert(broken.merges.begin() + long(at), bad);
            const std::string err = bpe.load(broken);
            CAPTURE(bad);
            CAPTURE(at);
            CHECK(err.find("merge " + std::to_string(at) + " ") == 0);
            CHECK(err.find(bad == "ab" ? "not two tokens" : "names a token the vocabulary lacks") != std::string::npos);
            CHECK(one_line(err));
        }
    }
}

TEST_CASE("bpe hostile: tokenizer.json and tokenizer_config.json are parsed depth-bounded, and errors name the config") {
    const std::string json = tokenizer_json(make_vocab({kLlama3SplitRegex}));
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    BpeVocab v;
    REQUIRE(bpe_from_tokenizer_json(json, "{\"add_bos_token\": false}", &v) == "");
    // The caller prefixes the path of tokenizer.json, unless the error names tokenizer_config.json.
    for (const std::string& config : {std::string("{\"bos_token\": "), deep, std::string("\"\xff\"")}) {
        const std::string err = bpe_from_tokenizer_json(json, config, &v);
        CHECK(err.rfind("tokenizer_config.json: ", 0) == 0);
        CHECK(one_line(err));
    }
    CHECK(bpe_from_tokenizer_json(json, deep, &v).find("nested more than") != std::string::npos);
    for (const std::string& bad : {json.substr(0, json.size() / 2), deep, "{\"model\": " + deep + "}"}) {
        const std::string err = bpe_from_tokenizer_json(bad, "", &v);
        CHECK(err != "");
        CHECK(err.rfind("tokenizer_config.json", 0) == std::string::npos);
        CHECK(one_line(err));
    }
}

// ---------------------------------------------------------------------------------------
// Regexes that backtrack or rescan: each ends with ids or a one-line error, quickly

namespace {

struct Family {
    const char* name;
    std::string regex;
    std::string attack;          // a short text it is slow on
    bool attack_fails;           // the attack alone exceeds the budget or the time (checked: the attack is real)
    bool sixteen_times = false;  // tried 16 times over too (the worst case: each takes up to the time limit)
};

std::vector<Family> hostile_families() {
    const std::string a40(40, 'a'), word(10 * 1024, 'w');
    return {
        {"nested quantifiers", "(a+)+$", a40 + "!", true, true},
        {"nested quantifiers in a lookahead", "(?=(a+)+$)", a40 + "!", true},
        {"alternatives that match the same", "(\\w|\\w)*!", a40 + " !", true},
        {"repeated greedy dots", "(.*a){25}", std::string(24, 'a') + "b", true},
        {"a loop of empty-matching groups", "(?:\\s*)*x", std::string(40, ' ') + "y x", true},
        {"overlapping words under a star", "(?:the|th|t|he|h|e)*!", "thethethethethethethethethethethethethethe x!", true},
        {"overlapping alternatives", "(?:a|ab|aba|abab|b|ba|bab)*c", "abababababababababababababababababababab x c", true},
        {"quantified optionals", "(?:a?){40}a{40}", a40, true},
        {"a lookahead loop", "(?:(?=\\w*!)\\w)*\\d", word + "!", true, true},
        {"a lookahead at every position", "\\w(?=\\w*!)", word + "!", false},
        {"a possessive scan at every position", "\\p{L}++\\d", word, false},
        {"a scan with alternatives at every position", "(?:[a-z]|[A-Z])+\\d", word, true},
    };
}

}  // namespace

TEST_CASE("bpe hostile: regexes that backtrack or rescan end with ids or a one-line error, alone or among 16") {
    const std::vector<std::string> benign = {kLlama3SplitRegex,
                                             kQwen2SplitRegex,
                                             kGpt2SplitRegex,
                                             "\\s+|\\S+",
                                             "\\p{N}|\\D+",
                                             "[\\p{L}\\p{M}]+|[^\\p{L}\\p{M}]+",
                                             "\\s*[\\r\\n]+|[^\\r\\n]+",
                                             "'s|'t|[^']+|'"};
    std::string summary;
    for (const Family& f : hostile_families()) {
        // Alone; as one of 16 (the others ordinary); and for some, 16 times over.
        std::vector<std::string> among = {f.regex};
        while (among.size() < limits::kBpeRegexes) among.insert(among.begin(), benign[among.size() % benign.size()]);
        std::vector<std::pair<const char*, std::vector<std::string>>> placements = {{"alone", {f.regex}}, {"among 16", among}};
        if (f.sixteen_times) placements.push_back({"16 times", std::vector<std::string>(limits::kBpeRegexes, f.regex)});
        summary += std::string("\n  ") + f.name + " " + f.regex + ":";
        for (const auto& [placement, regexes] : placements) {
            BpeTokenizer bpe;
            REQUIRE(bpe.load(make_vocab(regexes)) == "");
            summary += std::string("\n    ") + placement + ":";
            std::vector<std::string> texts = {"Hi!", kChatLine, f.attack};
            std::string ten_kb = ten_kb_of(f.attack);
            if (ten_kb != f.attack) texts.push_back(std::move(ten_kb));  // a 10 KB attack is its own
            for (const std::string& text : texts) {
                const std::string what = std::string(f.name) + " " + placement + " on " + std::to_string(text.size()) + " bytes";
                const Outcome o = guarded_encode(bpe, text, false, what);
                if (o.err.empty())
                    CHECK(decoded(bpe, o.ids) == text);
                else
                    CHECK((o.err.find("budget") != std::string::npos || o.err.find("longer than") != std::string::npos));
                if (text == f.attack && f.attack_fails && std::string(placement) == "alone") CHECK(!o.err.empty());
                char line[160];
                std::snprintf(line, sizeof line, " %zu B %s %.3f s;", text.size(), outcome_word(o).c_str(), o.seconds);
                summary += line;
            }
        }
    }
    MESSAGE("how each family ends:" << summary);
}

TEST_CASE("bpe hostile: regexes that need much backtracking memory fail cleanly, in bounded memory") {
    const std::string text = std::string(1 << 20, 'a') + " !c";
    rusage before{};
    getrusage(RUSAGE_SELF, &before);
    for (const char* regex : {"(\\w|\\s)*!", "(?:(a)|b)*!", "((a)|(b))*c", "(?:(?:a|b)(?:a|b))*!", "(a|b)+$"}) {
        BpeTokenizer bpe;
        REQUIRE(bpe.load(make_vocab({regex})) == "");
        const Outcome o = guarded_encode(bpe, text, false, regex);
        CAPTURE(std::string(regex));
        CHECK(o.err.find("JIT stack limit") != std::string::npos);
    }
    rusage after{};
    getrusage(RUSAGE_SELF, &after);
    CHECK(after.ru_maxrss - before.ru_maxrss < 256 * 1024);  // KiB: far less than the gigabytes of issue 20
}

// ---------------------------------------------------------------------------------------
// Added tokens

namespace {

// The reference: at each position from the left, the longest allowed added token starting
// there (the first in id order among equal texts), else the next byte. O(text x tokens).
std::vector<AddedTokenMatcher::Match> naive_matches(const std::vector<Added>& added, int first_id, const std::string& text,
                                                    bool allow_control) {
    std::vector<AddedTokenMatcher::Match> out;
    for (size_t at = 0; at < text.size();) {
        int best = -1;
        for (size_t i = 0; i < added.size(); i++)
            if ((allow_control || !added[i].control) && text.compare(at, added[i].text.size(), added[i].text) == 0 &&
                (best < 0 || added[i].text.size() > added[size_t(best)].text.size()))
                best = int(i);
        if (best < 0) {
            at++;
            continue;
        }
        out.push_back({at, uint32_t(added[size_t(best)].text.size()), first_id + best});
        at += added[size_t(best)].text.size();
    }
    return out;
}

// Characters of 1 to 4 bytes, few of them, so that tokens share prefixes and suffixes and
// overlap in the texts.
const std::vector<std::string> kPieces = {
    "a", "b", "<", ">", "|", "\xc3\xa9" /* é */, "\xe2\x82\xac" /* € */, "\xf0\x9f\x98\x80" /* 😀 */, "\xe4\xb8\xad" /* 中 */};

std::string random_chars(std::mt19937& rng, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; i++) s += kPieces[rng() % kPieces.size()];
    return s;
}

std::vector<Added> random_added(std::mt19937& rng) {
    std::vector<Added> added;
    const size_t n = 1 + rng() % 12;
    while (added.size() < n) {
        std::string t;
        const int how = int(rng() % 4);
        if (added.empty() || how == 0)
            t = random_chars(rng, 1 + rng() % 4);
        else {
            const std::string& other = added[rng() % added.size()].text;
            if (how == 1)
                t = other + random_chars(rng, 1 + rng() % 2);  // a longer token with its prefix
            else if (how == 2)
                t = random_chars(rng, 1 + rng() % 2) + other;  // ... with its suffix
            else
                t = other;  // the same text again
        }
        added.push_back({t, rng() % 3 == 0});
    }
    return added;
}

}  // namespace

TEST_CASE("bpe hostile: added tokens are found as a naive leftmost-longest search finds them") {
    std::mt19937 rng(20);
    const int trials = kSanitized ? 400 : 2000;
    for (int trial = 0; trial < trials; trial++) {
        const std::vector<Added> added = random_added(rng);
        std::vector<AddedTokenMatcher::Token> tokens;
        for (size_t i = 0; i < added.size(); i++) tokens.push_back({added[i].text, 1000 + int(i), added[i].control});
        AddedTokenMatcher matcher;
        matcher.build(tokens);
        // A vocabulary with them, and no merges: each byte between added tokens is its own id.
        const BpeVocab v = make_vocab({kGpt2SplitRegex}, added, 0);
        BpeTokenizer bpe;
        REQUIRE(bpe.load(v) == "");
        for (int t = 0; t < 10; t++) {
            std::string text;
            const size_t parts = rng() % 8;
            for (size_t p = 0; p < parts; p++)
                text += rng() % 2 ? added[rng() % added.size()].text : random_chars(rng, rng() % 3);
            for (bool allow_control : {false, true}) {
                CAPTURE(trial);
                CAPTURE(text);
                CAPTURE(allow_control);
                const std::vector<AddedTokenMatcher::Match> want = naive_matches(added, 1000, text, allow_control);
                std::vector<AddedTokenMatcher::Match> got;
                matcher.find(text, allow_control, &got);
                REQUIRE(got.size() == want.size());
                for (size_t i = 0; i < want.size(); i++) {
                    CHECK(got[i].at == want[i].at);
                    CHECK(got[i].size == want[i].size);
                    CHECK(got[i].id == want[i].id);
                }
                // Through the tokenizer: the bytes between matches, each its own id, and the matches' ids.
                std::vector<int> expected;
                size_t at = 0;
                for (const auto& m : want) {
                    for (; at < m.at; at++) expected.push_back(uint8_t(text[at]));
                    expected.push_back(int(v.tokens.size() - added.size()) + (m.id - 1000));
                    at += m.size;
                }
                for (; at < text.size(); at++) expected.push_back(uint8_t(text[at]));
                CHECK(bpe_encoded(bpe, text, false, allow_control) == expected);
            }
        }
    }
}

TEST_CASE("bpe hostile: added tokens that are not valid UTF-8 are refused; multi-byte ones round-trip") {
    BpeTokenizer bpe;
    for (const std::string& bad :
         {std::string("\xe2\x82"), std::string("<\xff>"), std::string("a\x80"), std::string("\xc0\xaf"),
          std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"), std::string("\xe2\x82\xac\xe2")}) {
        for (bool control : {false, true}) {
            const BpeVocab v = make_vocab({kLlama3SplitRegex}, {{"<ok>", true}, {bad, control}});
            const std::string err = bpe.load(v);
            CHECK(err == "added token " + std::to_string(v.tokens.size() - 1) + " is not valid UTF-8");
        }
    }
    // Issue 20's case: a token of the first two bytes of €, in a text of €s, read past the
    // text's end. Refused now; the whole character as a token works.
    CHECK(bpe.load(make_vocab({kLlama3SplitRegex}, {{"\xe2\x82", false}})) != "");
    REQUIRE(bpe.load(make_vocab({kLlama3SplitRegex}, {{"\xe2\x82\xac", false}})) == "");
    CHECK(decoded(bpe, bpe_encoded(bpe, "\xe2\x82\xac\xe2\x82\xac x\xe2\x82\xac", false, false)) ==
          "\xe2\x82\xac\xe2\x82\xac x\xe2\x82\xac");

    // Random multi-byte texts around random multi-byte added tokens (user-defined: they decode
    // to their text; control ones are left as text, allow_control being off), with merges.
    std::mt19937 rng(5);
    const std::vector<std::string> chars = {"a",
                                            " ",
                                            "e",
                                            "th",
                                            "\n",
                                            "\xc3\xa9",
                                            "\xe2\x82\xac",
                                            "\xf0\x9f\x98\x80",
                                            "\xe4\xb8\xad\xe6\x96\x87",
                                            "\xe2\x80\x8b",
                                            "'s",
                                            "1",
                                            "\xef\xbf\xbd"};
    for (int trial = 0; trial < (kSanitized ? 40 : 200); trial++) {
        std::vector<Added> added;
        for (int i = 0; i < 6; i++) {
            std::string t;
            for (size_t k = 0, n = 1 + rng() % 3; k < n; k++) t += chars[rng() % chars.size()];
            added.push_back({t, rng() % 2 == 0});
        }
        REQUIRE(bpe.load(make_vocab({kLlama3SplitRegex, kGpt2SplitRegex}, added, 60)) == "");
        for (int t = 0; t < 20; t++) {
            std::string text;
            for (size_t k = 0, n = rng() % 30; k < n; k++)
                text += rng() % 4 ? chars[rng() % chars.size()] : added[rng() % added.size()].text;
            CAPTURE(text);
            CHECK(decoded(bpe, bpe_encoded(bpe, text, false, false)) == text);
        }
    }
}

TEST_CASE("bpe hostile: a million added tokens load quickly and 100 KB encode in time linear in the text") {
    // 1,000,000 tokens: every string of 1 to 3 of 36 characters, then 4-character ones, and a
    // few with é; about 3.95 MB together, under the 4 MiB allowed.
    const std::string alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::vector<Added> added;
    added.reserve(1000000);
    for (int len = 1; len <= 4 && added.size() < 1000000; len++) {
        std::vector<size_t> digit(size_t(len), 0);
        for (bool more = true; more && added.size() < 1000000;) {
            std::string t;
            for (size_t d : digit) t += alphabet[d];
            if (added.size() % 1000 == 999) t += "\xc3\xa9";
            added.push_back({t, added.size() % 7 == 0});
            more = false;
            for (size_t i = 0; i < digit.size() && !more; i++) {
                if (++digit[i] < alphabet.size())
                    more = true;
                else
                    digit[i] = 0;
            }
        }
    }
    REQUIRE(added.size() == 1000000);
    const BpeVocab v = make_vocab({kLlama3SplitRegex}, added, 50);
    BpeTokenizer bpe;
    auto start = std::chrono::steady_clock::now();
    {
        Watchdog dog("loading a million added tokens");
        REQUIRE(bpe.load(v) == "");
    }
    const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(load_seconds < kGuardSeconds);

    // 100 KB of the same characters (so that added tokens match nearly everywhere), spaces and é.
    std::mt19937 rng(1);
    std::string text;
    while (text.size() < 100 * 1024) {
        const int r = int(rng() % 10);
        text += r == 0 ? std::string(" ") : r == 1 ? std::string("\xc3\xa9") : std::string(1, alphabet[rng() % alphabet.size()]);
    }
    for (bool allow_control : {false, true}) {
        const Outcome o = guarded_encode(bpe, text, allow_control, "100 KB with a million added tokens");
        CHECK(o.err == "");
        CHECK(decoded(bpe, o.ids).size() <= text.size());
        if (!allow_control) CHECK(decoded(bpe, o.ids) == text);
        MESSAGE("a million added tokens: load " << load_seconds << " s; 100 KB encoded in " << o.seconds << " s (control tokens "
                                                << std::string(allow_control ? "allowed" : "not allowed") << ", " << o.ids.size()
                                                << " ids)");
    }

    // Added tokens of more than 4 MiB together are refused.
    std::vector<Added> big(4200, {std::string(1000, 'x'), false});
    for (size_t i = 0; i < big.size(); i++) big[i].text += std::to_string(i);
    const std::string err = bpe.load(make_vocab({kLlama3SplitRegex}, big, 0));
    CHECK(err.find("added tokens hold more than") != std::string::npos);
    CHECK(one_line(err));
}

// ---------------------------------------------------------------------------------------
// The same through run: the files issue 20 crafted

namespace {

// A one-layer Llama of zeros (F16: the values do not matter to the tokenizer) with `vocab`
// embedding rows, written as a Hugging Face folder with the given tokenizer.json.
void write_tiny_folder(const std::string& dir, int vocab, const std::string& tokenizer) {
    const uint64_t hidden = 32, inter = 64;
    REQUIRE(run_command("rm -rf " + dir + " && mkdir -p " + dir).exit_code == 0);
    write_f16_zeros_safetensors(dir + "/model.safetensors", one_layer_llama_tensors(uint64_t(vocab), hidden, inter));
    const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                                   {"model_type", "llama"},
                                   {"hidden_size", hidden},
                                   {"intermediate_size", inter},
                                   {"num_hidden_layers", 1},
                                   {"num_attention_heads", 1},
                                   {"vocab_size", vocab},
                                   {"max_position_embeddings", 256},
                                   {"tie_word_embeddings", true},
                                   {"bos_token_id", 1},
                                   {"eos_token_id", 2}};
    std::ofstream(dir + "/config.json") << config.dump(1);
    std::ofstream(dir + "/tokenizer.json") << tokenizer;
}

}  // namespace

TEST_CASE("bpe hostile: run --tokenize on hearth and GGUF files whose 16 regexes backtrack ends at once, in one line") {
    // On "Hi!" alone, (?:.?){200}\d needs 135M units at each position; 16 of them took the
    // half minute issue 20 reports.
    const std::string dir = "build/tests/bpe-hostile-hf";
    BpeVocab v = make_vocab(std::vector<std::string>(limits::kBpeRegexes, "(?:.?){200}\\d"));
    write_tiny_folder(dir, int(v.tokens.size()), tokenizer_json(v));
    for (const char* format : {"hearth", "gguf"}) {
        const std::string model = std::string("build/tests/bpe-hostile.") + format;
        const CommandResult q = run_command("./quantize " + dir + " " + model + " -q");
        INFO(q.err);
        REQUIRE(q.exit_code == 0);
        for (const std::string text : {"Hi!", kChatLine}) {
            INFO(format << ": " << text);
            const auto start = std::chrono::steady_clock::now();
            const CommandResult r = run_command("./run " + model + " --tokenize -p '" + text + "'");
            CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < kGuardSeconds);
            CHECK(r.exit_code != 0);
            CHECK(r.out == "");
            // Either guard may stop them first: the budget of backtracking steps, or (on a slow
            // or loaded machine) the time limit behind it (base/limits.h).
            INFO(r.err);
            CHECK((r.err.find("budget") != std::string::npos || r.err.find("take longer than") != std::string::npos));
            CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        }
    }
    // With a verb that lifts the limits, the folder does not convert.
    v.pre_split_regexes = {"(*NO_JIT)(*LIMIT_MATCH=4294967295)(?:.?){200}\\d"};
    write_tiny_folder(dir, int(v.tokens.size()), tokenizer_json(v));
    const CommandResult q = run_command("./quantize " + dir + " build/tests/bpe-hostile-verb.hearth -q");
    CHECK(q.exit_code != 0);
    CHECK(q.err.find("PCRE2 verb") != std::string::npos);
}

// ---------------------------------------------------------------------------------------
// Real vocabularies never meet the limits

namespace {

const BpeTokenizer& real_tokenizer(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
    auto& tok = loaded[name];
    if (!tok) {
        const std::string json_path = "build/tests/bpe/" + name + "-tokenizer.json";
        if (read_text(json_path).empty())
            REQUIRE(run_command("mkdir -p build/tests/bpe && xz -dc tests/data/bpe/" + name + "-tokenizer.json.xz > " + json_path)
                        .exit_code == 0);
        TokenizerSpec spec;
        spec.kind = TokenizerKind::bpe;
        REQUIRE(bpe_from_tokenizer_json(read_text(json_path), read_text("tests/data/bpe/" + name + "-tokenizer_config.json"),
                                        &spec.bpe) == "");
        tok.reset(new Tokenizer);
        REQUIRE(tok->load(spec) == "");
    }
    return *tok->bpe();
}

std::string repeated(const std::string& unit, size_t bytes) {
    std::string s;
    while (s.size() < bytes) s += unit;
    return s;
}

}  // namespace

TEST_CASE("bpe hostile: real text never meets the limits (Llama-3, Qwen3: Shakespeare, long runs, scripts, 1 MB)") {
    // 1 MB each; a quarter of that under the sanitizers, where the same checks take 8 times longer.
    const size_t mb = kSanitized ? 256 << 10 : 1 << 20;
    std::string shakespeare = read_text("tests/data/tinyshakespeare-valid.txt");
    REQUIRE(!shakespeare.empty());
    std::mt19937 rng(3);
    auto random_of = [&](const std::vector<std::string>& units, size_t bytes) {
        std::string s;
        while (s.size() < bytes) s += units[rng() % units.size()];
        return s;
    };
    const std::vector<std::string> cjk = {"\xe4\xb8\xad", "\xe6\x96\x87", "\xe5\xad\x97", "\xe3\x81\x82",
                                          "\xe3\x82\xab", "\xed\x95\x9c", "\xe3\x80\x82", "\xef\xbc\x8c"};
    const std::vector<std::string> emoji = {"\xf0\x9f\x98\x80", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", "\xe2\x9d\xa4\xef\xb8\x8f",
                                            "\xf0\x9f\x87\xab\xf0\x9f\x87\xb7", " "};
    const std::vector<std::string> mixed = {"Hello",
                                            " ",
                                            "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82",
                                            "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7",
                                            "\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87",
                                            "\xce\xb3\xce\xb5\xce\xb9\xce\xac",
                                            "123",
                                            "4",
                                            "\n",
                                            "\t",
                                            "'s",
                                            "'LL",
                                            "!!",
                                            "\xe4\xb8\xad\xe6\x96\x87",
                                            "\xf0\x9f\x98\x80",
                                            "  ",
                                            ".\n\n"};
    std::vector<std::pair<std::string, std::string>> texts = {
        {"Shakespeare", shakespeare},
        {"Shakespeare, repeated", repeated(shakespeare, mb)},
        {"spaces", std::string(mb, ' ')},
        {"spaces, then a word", std::string(mb, ' ') + "word"},
        {"newlines", std::string(mb, '\n')},
        {"spaces and newlines", repeated(" \n", mb)},
        {"tabs and spaces, then a word", repeated("\t ", mb) + "x"},
        {"digits", random_of({"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, mb)},
        {"one letter", std::string(mb, 'a')},
        {"punctuation", repeated("=-", mb)},
        {"CJK", random_of(cjk, mb)},
        {"emoji", random_of(emoji, mb)},
        {"mixed scripts", random_of(mixed, mb)},
        {"random bytes", random_of({"\xff", "\xe2\x82", "a", " ", "\x80", "\xc3\xa9", "\n"}, mb)},
        {"runs of 10,000 spaces between words", repeated(std::string(10000, ' ') + "word", mb / 4)},
    };
    for (const char* name : {"llama3", "qwen3"}) {
        const BpeTokenizer& bpe = real_tokenizer(name);
        for (const auto& [label, text] : texts) {
            const Outcome o = guarded_encode(bpe, text, false, std::string(name) + ": " + label);
            CHECK(o.err == "");
            // Qwen3 normalizes to NFC (these texts are NFC already, but the random bytes: each
            // invalid byte decodes as U+FFFD).
            if (label.find("random bytes") == std::string::npos) CHECK(decoded(bpe, o.ids) == text);
            MESSAGE(std::string(name) << ": " << label << " (" << text.size() << " bytes): " << o.ids.size() << " ids in "
                                      << o.seconds << " s");
        }
    }
}
