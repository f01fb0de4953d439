// Typed key/value metadata in GGUF's encoding. hearth v2 checkpoints and GGUF files both hold
// their hyperparameters and tokenizer this way, under the same keys where GGUF has one
// (docs/format.md), so one reader and one writer serve both formats.
//
// Encoding (little-endian), per entry: key as a string, u32 value type, the value.
//   string: u64 length, then the bytes (no NUL)
//   array:  u32 element type, u64 count, then the elements (strings as above; no nesting here)
//   scalars: their natural size (bool is one byte, 0 or 1)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hearth {

enum MetaType : uint32_t {
    META_U8 = 0,
    META_I8 = 1,
    META_U16 = 2,
    META_I16 = 3,
    META_U32 = 4,
    META_I32 = 5,
    META_F32 = 6,
    META_BOOL = 7,
    META_STRING = 8,
    META_ARRAY = 9,
    META_U64 = 10,
    META_I64 = 11,
    META_F64 = 12,
};

// A special token id of 0xFFFFFFFF is llama.cpp's LLAMA_TOKEN_NULL as a u32: no such token. Its
// model saver (llama_model_save_to_file, llama-finetune's output) writes every special id, these
// for the ones a model has none of, and its loader keeps the default for an id past the vocabulary.
constexpr uint32_t kNoTokenId = 0xFFFFFFFFu;
const char* meta_type_name(uint32_t type);

struct MetaEntry {
    std::string key;
    uint32_t type = 0;       // MetaType
    uint32_t elem_type = 0;  // arrays: the elements' type
    uint64_t count = 0;      // arrays: number of elements
    std::string value;       // the encoded value (for arrays: the elements only), checked when parsed
};

class Metadata {
public:
    // Parses n_kv entries from [p, p + size). Every length is checked against the bytes left and
    // against sane limits before it is used. *consumed gets the bytes read. "" or why not.
    std::string parse(const uint8_t* p, uint64_t size, uint64_t n_kv, uint64_t* consumed);
    // The entries, encoded (without their count), in the order they were set or parsed.
    std::string serialize() const;
    size_t size() const { return entries_.size(); }
    const std::vector<MetaEntry>& entries() const { return entries_; }

    bool has(const std::string& key) const { return find(key) != nullptr; }
    const MetaEntry* find(const std::string& key) const;

    // Getters: "" when the key holds a value of a fitting type (any integer type whose value
    // fits, for the integer getters; f32 or f64 for get_f32), else a one-line reason naming
    // the key. Absent keys are an error too: ask has() first for optional ones.
    std::string get_u32(const std::string& key, uint32_t* out) const;
    std::string get_i32(const std::string& key, int32_t* out) const;
    std::string get_f32(const std::string& key, float* out) const;
    std::string get_bool(const std::string& key, bool* out) const;
    std::string get_string(const std::string& key, std::string* out) const;
    std::string get_bytes(const std::string& key, std::string* out) const;  // an array of u8 or i8
    std::string get_strings(const std::string& key, std::vector<std::string>* out) const;
    std::string get_f32s(const std::string& key, std::vector<float>* out) const;
    std::string get_i32s(const std::string& key, std::vector<int32_t>* out) const;  // any integer elements that fit

    // Setters replace an entry of the same key.
    void set_u32(const std::string& key, uint32_t v);
    void set_i32(const std::string& key, int32_t v);
    void set_f32(const std::string& key, float v);
    void set_bool(const std::string& key, bool v);
    void set_string(const std::string& key, const std::string& v);
    void set_bytes(const std::string& key, const std::string& v);
    void set_strings(const std::string& key, const std::vector<std::string>& v);
    void set_f32s(const std::string& key, const std::vector<float>& v);
    void set_i32s(const std::string& key, const std::vector<int32_t>& v);
    void erase(const std::string& key);

private:
    void set(MetaEntry e);
    std::vector<MetaEntry> entries_;
};

}  // namespace hearth
