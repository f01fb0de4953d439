// Byte-level BPE (GPT-2's scheme, as Llama-3 and Qwen3 use it): a Hugging Face
// tokenizer.json's "BPE" model with a ByteLevel pre-tokenizer, read into a BpeVocab (the
// form GGUF and hearth checkpoints store), and the tokenizer that encodes and decodes with it.
//
// Encoding a text, as Hugging Face's tokenizers does:
//   1. added tokens are found in the text (leftmost, longest first) and become their ids:
//      user-defined ones (Qwen3's <think>) always, control ones (<|eot_id|>, <|im_end|>)
//      only when the caller allows it: text a user typed never produces a control id;
//   2. each stretch between them is normalized (NFC when declared, through utf8proc),
//   3. split into pieces by the pre-tokenizer's regexes (PCRE2, Unicode properties),
//   4. each piece's bytes are merged by rank, lowest first and leftmost among equals.
// Decoding maps every id back to its bytes; control tokens decode to nothing.
//
// The vocabulary may come from a stranger's file, so an encode's cost is bounded by the text
// whatever the file holds: added tokens are found by an automaton (AddedTokenMatcher), in
// time linear in the text; the regexes share one budget of PCRE2 match-limit units per
// encode, and a time limit, both in proportion to the text (base/limits.h). An encode that
// exceeds them fails with a one-line message rather than running on.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

// A token's bytes may end inside a character that the next token completes: decoders tell
// whole characters with base/printable.h's utf8_char_length.
#include "base/printable.h"

namespace hearth {

// The vocabulary as stored (GGUF's keys, docs/format.md), one entry per id.
struct BpeVocab {
    // GGUF's token types.
    enum TokenType { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5 };

    // Normal tokens spelled with GPT-2's byte-to-character mapping ("Ġthe"); added tokens
    // (control, user-defined) as their text ("<|eot_id|>"); unused ids hold placeholders.
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    std::vector<std::string> merges;  // "left right" in byte-level spelling, by rank (first = merged first)
    std::string pre;                  // llama.cpp's name of the pre-tokenizer: "llama-bpe", "qwen2", or "" when unknown
    std::vector<std::string> pre_split_regexes;  // applied in order, each splitting the pieces of the one before
    std::string normalizer;                      // "" (none) or "nfc"
    bool ignore_merges = false;                  // a piece that is a whole token is that token (Llama-3's tokenizer.json says so)
    int bos_id = -1, eos_id = -1;
    bool add_bos = false;  // prompts start with BOS
};
bool operator==(const BpeVocab& a, const BpeVocab& b);
inline bool operator!=(const BpeVocab& a, const BpeVocab& b) { return !(a == b); }

// The pre-tokenizer regexes as tokenizer.json files state them (and llama.cpp names them).
extern const char* const kLlama3SplitRegex;  // "llama-bpe": digits in runs of 1 to 3
extern const char* const kQwen2SplitRegex;   // "qwen2": single digits
extern const char* const kGpt2SplitRegex;    // ByteLevel's own (use_regex: true)

// Reads a tokenizer.json (and, when not empty, the tokenizer_config.json beside it, for
// add_bos_token and the BOS/EOS tokens) into *out. Refuses, in one line, what it does not
// implement exactly: other models than BPE, other pre-tokenizers than Split + ByteLevel or
// ByteLevel, other normalizers than NFC, byte fallback, dropout, added tokens that strip
// spaces. "" on success; then *built, when given, gets the tokenizer built to check it.
class BpeTokenizer;
std::string bpe_from_tokenizer_json(const std::string& tokenizer_json, const std::string& tokenizer_config_json, BpeVocab* out,
                                    std::shared_ptr<const BpeTokenizer>* built = nullptr);

// string -> id for strings held in a vector, by their index: open addressing with linear
// probing over one array of ids, which loads a 128k-token vocabulary several times faster
// than std::unordered_map's nodes (loading is on run's path to the first token).
class StringIds {
public:
    // The table for up to n strings of *keys (which must outlive it and not move).
    void reset(const std::vector<std::string>* keys, size_t n);
    // Adds keys[id]; false if an equal string is already there.
    bool insert(int id) { return insert(id, hash((*keys_)[size_t(id)])); }
    // Adds every keys[id] in order (an equal string already there keeps its id), each slot
    // fetched some insertions ahead; the first id that was not added, or -1.
    int insert_all(const std::vector<int>& ids);
    // The id of s, or -1.
    int find(std::string_view s) const { return find(s, hash(s)); }
    // The same with s's hash already computed; and for loops of many lookups, whose table and
    // keys are megabytes (a cache miss each), hints that fetch what the find of a hash reads,
    // issued some lookups ahead: the slot, then (once the slot is in cache) the key it names.
    static size_t hash(std::string_view s) { return std::hash<std::string_view>()(s); }
    int find(std::string_view s, size_t hash) const;
    bool insert(int id, size_t hash);
    void prefetch_slot(size_t hash) const {
        if (!slots_.empty()) __builtin_prefetch(&slots_[hash & mask_]);
    }
    void prefetch_key(size_t hash) const {
        if (!slots_.empty() && slots_[hash & mask_] >= 0) __builtin_prefetch(&(*keys_)[size_t(slots_[hash & mask_])]);
    }

private:
    const std::vector<std::string>* keys_ = nullptr;
    std::vector<int32_t> slots_;  // an id, or -1 when empty
    size_t mask_ = 0;
};

// Finds added tokens in a text in time linear in the text, however many tokens there are,
// with Hugging Face's rule (its aho-corasick crate, MatchKind::LeftmostLongest): at the
// leftmost position where a token matches, the longest one, then on from its end. An
// Aho-Corasick automaton over the reversed tokens, run over the text from its end, gives at
// each position the longest token starting there; one pass from the start then picks.
class AddedTokenMatcher {
public:
    struct Token {
        std::string_view text;  // not empty, at most 65535 bytes; only needed during build()
        int id;
        bool control;  // matched only when the caller allows control tokens
    };
    struct Match {
        size_t at;      // where in the text it starts
        uint32_t size;  // its bytes
        int id;
    };
    // Among tokens of the same text, the first given wins (the lowest id, as given in order).
    void build(const std::vector<Token>& tokens);
    // The matches in text order, in *out (cleared first).
    void find(std::string_view text, bool allow_control, std::vector<Match>* out) const;

private:
    uint32_t next(uint32_t node, uint8_t byte) const;
    // The trie of the reversed tokens, nodes numbered breadth first from the root (0), a
    // node's children consecutively by byte: those of v are first_child_[v] to
    // first_child_[v + 1] - 1. A node stands for the text read so far (from the end), and
    // for the tokens that the text at the current position starts with.
    std::vector<uint32_t> first_child_;
    std::vector<uint8_t> byte_;   // node -> the byte of the edge into it
    std::vector<uint32_t> fail_;  // node -> the node of its longest proper suffix
    // node -> the longest token the text at the current position starts with (its reversal a
    // suffix of the node's string), as an index into id_, or -1; and the same among
    // user-defined tokens only.
    std::vector<int32_t> longest_, longest_user_;
    uint32_t root_next_[256] = {};  // the root's children by byte (0: none), the busiest lookup
    std::vector<int32_t> id_;       // token index -> its id
    std::vector<uint16_t> size_;    // token index -> its bytes
    bool has_user_ = false;
};

class BpeTokenizer {
public:
    BpeTokenizer();
    ~BpeTokenizer();
    // Checks the vocabulary (it may come from an untrusted file) and builds the tables.
    // "" on success, else a one-line reason.
    std::string load(const BpeVocab& v);

    // The text's ids appended to *ids; added control tokens are matched only with
    // allow_control. "" on success, else a one-line reason (the vocabulary's regexes
    // exceeded their budget or time on this text); *ids is then unchanged. Encodes may run
    // at once.
    std::string encode(const std::string& text, bool add_bos, bool allow_control, std::vector<int>* ids) const;
    // The bytes a token stands for ("" for control and unused tokens).
    const std::string& token_bytes(int id) const { return bytes_[size_t(id)]; }

    int vocab_size() const { return int(vocab_.tokens.size()); }
    int bos_id() const { return vocab_.add_bos ? vocab_.bos_id : -1; }
    int eos_id() const { return vocab_.eos_id; }
    const std::string& token(int id) const { return vocab_.tokens[size_t(id)]; }
    // The token's type as used: the vocabulary's, except that user-defined tokens llama.cpp
    // makes control (fill-in-the-middle and end markers: bpe.cpp) are control.
    int type(int id) const { return types_[size_t(id)]; }
    const BpeVocab& vocab() const { return vocab_; }

private:
    struct Regex;
    class RegexRun;
    std::string encode_segment(std::string_view segment, RegexRun* run, std::vector<int>* ids) const;
    void encode_piece(const char* p, size_t n, std::vector<int>* ids) const;
    void merge_piece(const char* p, size_t n, std::vector<int>* ids) const;

    BpeVocab vocab_;
    std::vector<int32_t> types_;      // id -> its type as used (type())
    std::vector<std::string> bytes_;  // id -> the bytes it decodes to
    StringIds by_bytes_;              // normal token's bytes (bytes_) -> id
    int byte_id_[256];                // the token of each single byte
    // (left id, right id) -> rank and merged id, open addressing as StringIds.
    struct Merge {
        uint64_t pair = ~uint64_t(0);  // left << 32 | right; all ones: empty
        int rank = 0, result = 0;
    };
    std::vector<Merge> merges_;
    size_t merges_mask_ = 0;
    const Merge* find_merge(int left, int right) const;
    std::vector<std::unique_ptr<Regex>> regexes_;
    bool jit_ = false;  // some regex is JIT-compiled: encodes need a JIT stack
    AddedTokenMatcher added_;

    // Pieces recur (" the", "\n"): their ids are kept. Bounded: cleared when full.
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int>> cache_;
};

}  // namespace hearth
