#include "formats/metadata.h"

#include <cmath>
#include <cstring>
#include <unordered_set>

#include "base/limits.h"
#include "base/printable.h"

namespace hearth {

const char* meta_type_name(uint32_t type) {
    static const char* const names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                        "bool", "string", "array", "u64", "i64", "f64"};
    return type < sizeof names / sizeof names[0] ? names[type] : "unknown";
}

// Bytes of one scalar of this type; 0 for strings, arrays and unknown types.
static uint64_t scalar_bytes(uint32_t type) {
    switch (type) {
        case META_U8:
        case META_I8:
        case META_BOOL: return 1;
        case META_U16:
        case META_I16: return 2;
        case META_U32:
        case META_I32:
        case META_F32: return 4;
        case META_U64:
        case META_I64:
        case META_F64: return 8;
    }
    return 0;
}

namespace {

// Reads from [p, end) and fails, with a reason, rather than read past end.
struct Cursor {
    const uint8_t* p;
    const uint8_t* end;
    uint64_t left() const { return uint64_t(end - p); }
    bool take(void* out, uint64_t n) {
        if (n > left()) return false;
        std::memcpy(out, p, n);
        p += n;
        return true;
    }
    bool skip(uint64_t n) {
        if (n > left()) return false;
        p += n;
        return true;
    }
};

// Skips one value of `type` (an array's elements when count is given), checking every length.
std::string skip_value(Cursor& c, uint32_t type, int depth) {
    if (const uint64_t n = scalar_bytes(type)) return c.skip(n) ? "" : "ends inside a value";
    if (type == META_STRING) {
        uint64_t len;
        if (!c.take(&len, 8)) return "ends inside a string length";
        if (len > limits::kMetaStringBytes) return "has a string of " + std::to_string(len) + " bytes";
        return c.skip(len) ? "" : "has a string that runs past the end";
    }
    if (type == META_ARRAY) {
        if (depth + 1 >= limits::kMetaArrayDepth) return "nests arrays too deeply";
        uint32_t elem;
        uint64_t count;
        if (!c.take(&elem, 4) || !c.take(&count, 8)) return "ends inside an array header";
        if (count > limits::kMetaArrayCount) return "has an array of " + std::to_string(count) + " elements";
        if (const uint64_t n = scalar_bytes(elem)) {
            if (count > c.left() / n) return "has an array that runs past the end";
            c.p += count * n;
            return "";
        }
        if (elem != META_STRING && elem != META_ARRAY) return "has an array of unknown type " + std::to_string(elem);
        for (uint64_t i = 0; i < count; i++) {
            std::string err = skip_value(c, elem, depth + 1);
            if (!err.empty()) return err;
        }
        return "";
    }
    return "has a value of unknown type " + std::to_string(type);
}

}  // namespace

std::string Metadata::parse(const uint8_t* p, uint64_t size, uint64_t n_kv, uint64_t* consumed) {
    entries_.clear();
    if (n_kv > limits::kMetaEntries) return "metadata has " + std::to_string(n_kv) + " entries";
    Cursor c{p, p + size};
    std::unordered_set<std::string> seen;
    for (uint64_t i = 0; i < n_kv; i++) {
        const std::string where = "metadata entry " + std::to_string(i);
        uint64_t key_len;
        if (!c.take(&key_len, 8)) return where + " runs past the end";
        if (key_len == 0 || key_len > limits::kMetaKeyBytes) return where + " has a key of " + std::to_string(key_len) + " bytes";
        if (key_len > c.left()) return where + " runs past the end";
        MetaEntry e;
        e.key.assign(reinterpret_cast<const char*>(c.p), key_len);
        c.p += key_len;
        for (unsigned char ch : e.key)  // keys are printed in messages: one line, no escapes
            if (ch < 0x20 || ch == 0x7f) return where + " has a key with control characters";
        if (!seen.insert(e.key).second) return "metadata key " + in_quotes(e.key) + " appears twice";
        if (!c.take(&e.type, 4)) return "metadata " + e.key + " runs past the end";
        const uint8_t* start = c.p;
        if (e.type == META_ARRAY) {
            if (!c.take(&e.elem_type, 4) || !c.take(&e.count, 8)) return "metadata " + e.key + " runs past the end";
            start = c.p;
            c.p -= 12;  // skip_value reads the array header again
        }
        std::string err = skip_value(c, e.type, 0);
        if (!err.empty()) return "metadata " + e.key + " " + err;
        e.value.assign(reinterpret_cast<const char*>(start), size_t(c.p - start));
        entries_.push_back(std::move(e));
    }
    *consumed = uint64_t(c.p - p);
    return "";
}

std::string Metadata::serialize() const {
    std::string out;
    auto put = [&](const void* v, size_t n) { out.append(static_cast<const char*>(v), n); };
    for (const MetaEntry& e : entries_) {
        const uint64_t key_len = e.key.size();
        put(&key_len, 8);
        out += e.key;
        put(&e.type, 4);
        if (e.type == META_ARRAY) {
            put(&e.elem_type, 4);
            put(&e.count, 8);
        }
        out += e.value;
    }
    return out;
}

const MetaEntry* Metadata::find(const std::string& key) const {
    for (const MetaEntry& e : entries_)
        if (e.key == key) return &e;
    return nullptr;
}

// ---- getters ----

static std::string missing(const std::string& key) { return "metadata " + key + " is missing"; }
static std::string wrong_type(const MetaEntry& e, const char* want) {
    std::string got = meta_type_name(e.type);
    if (e.type == META_ARRAY) got += std::string(" of ") + meta_type_name(e.elem_type);
    return "metadata " + e.key + " is " + got + ", not " + want;
}

// An integer of any integer type, widened; false for other types.
static bool read_integer(uint32_t type, const char* p, int64_t* s, uint64_t* u, bool* is_signed) {
    // A row per type:
    // clang-format off
    switch (type) {
        case META_U8: { uint8_t v; std::memcpy(&v, p, 1); *u = v; *is_signed = false; return true; }
        case META_U16: { uint16_t v; std::memcpy(&v, p, 2); *u = v; *is_signed = false; return true; }
        case META_U32: { uint32_t v; std::memcpy(&v, p, 4); *u = v; *is_signed = false; return true; }
        case META_U64: { uint64_t v; std::memcpy(&v, p, 8); *u = v; *is_signed = false; return true; }
        case META_I8: { int8_t v; std::memcpy(&v, p, 1); *s = v; *is_signed = true; return true; }
        case META_I16: { int16_t v; std::memcpy(&v, p, 2); *s = v; *is_signed = true; return true; }
        case META_I32: { int32_t v; std::memcpy(&v, p, 4); *s = v; *is_signed = true; return true; }
        case META_I64: { int64_t v; std::memcpy(&v, p, 8); *s = v; *is_signed = true; return true; }
    }
    // clang-format on
    return false;
}

// The integer at p as an int64 in [lo, hi]; false when it is not an integer or out of range.
static bool integer_in(uint32_t type, const char* p, int64_t lo, int64_t hi, int64_t* out) {
    int64_t s = 0;
    uint64_t u = 0;
    bool is_signed = false;
    if (!read_integer(type, p, &s, &u, &is_signed)) return false;
    if (!is_signed) {
        if (u > uint64_t(INT64_MAX)) return false;
        s = int64_t(u);
    }
    if (s < lo || s > hi) return false;
    *out = s;
    return true;
}

// The integer under key, in [lo, hi].
static std::string get_integer(const Metadata& m, const std::string& key, int64_t lo, int64_t hi, int64_t* out) {
    const MetaEntry* e = m.find(key);
    if (!e) return missing(key);
    int64_t s = 0;
    uint64_t u = 0;
    bool is_signed = false;
    if (!read_integer(e->type, e->value.data(), &s, &u, &is_signed)) return wrong_type(*e, "an integer");
    if (!integer_in(e->type, e->value.data(), lo, hi, out)) return "metadata " + key + " is out of range";
    return "";
}

std::string Metadata::get_u32(const std::string& key, uint32_t* out) const {
    int64_t v = 0;
    std::string err = get_integer(*this, key, 0, UINT32_MAX, &v);
    *out = err.empty() ? uint32_t(v) : *out;
    return err;
}

std::string Metadata::get_i32(const std::string& key, int32_t* out) const {
    int64_t v = 0;
    std::string err = get_integer(*this, key, INT32_MIN, INT32_MAX, &v);
    *out = err.empty() ? int32_t(v) : *out;
    return err;
}

std::string Metadata::get_f32(const std::string& key, float* out) const {
    const MetaEntry* e = find(key);
    if (!e) return missing(key);
    if (e->type == META_F32) {
        std::memcpy(out, e->value.data(), 4);
    } else if (e->type == META_F64) {
        double d;
        std::memcpy(&d, e->value.data(), 8);
        *out = float(d);
    } else {
        return wrong_type(*e, "a number");
    }
    if (!std::isfinite(*out)) return "metadata " + key + " is not a finite number";
    return "";
}

std::string Metadata::get_bool(const std::string& key, bool* out) const {
    const MetaEntry* e = find(key);
    if (!e) return missing(key);
    if (e->type != META_BOOL) return wrong_type(*e, "a bool");
    const uint8_t b = uint8_t(e->value[0]);
    if (b > 1) return "metadata " + key + " is a bool of value " + std::to_string(b);
    *out = b == 1;
    return "";
}

std::string Metadata::get_string(const std::string& key, std::string* out) const {
    const MetaEntry* e = find(key);
    if (!e) return missing(key);
    if (e->type != META_STRING) return wrong_type(*e, "a string");
    out->assign(e->value, 8, std::string::npos);
    return "";
}

std::string Metadata::get_bytes(const std::string& key, std::string* out) const {
    const MetaEntry* e = find(key);
    if (!e) return missing(key);
    if (e->type != META_ARRAY || (e->elem_type != META_U8 && e->elem_type != META_I8)) return wrong_type(*e, "an array of bytes");
    *out = e->value;
    return "";
}

std::string Metadata::get_strings(const std::string& key, std::vector<std::string>* out) const {
    const MetaEntry* e = find(key);
    if (!e) return missing(key);
    if (e->type != META_ARRAY || e->elem_type != META_STRING) return wrong_type(*e, "an array of strings");
    out->clear();
    out->reserve(size_t(e->count));
    const char* p = e->value.data();
    for (uint64_t i = 0; i < e->count; i++) {  // lengths were checked by parse()
        uint64_t len;
        std::memcpy(&len, p, 8);
        out->emplace_back(p + 8, size_t(len));
        p += 8 + len;
    }
    return "";
}

std::string Metadata::get_f32s(const std::string& key, std::vector<float>* out) const {
    const MetaEntry* e = find(key);
    if (!e) return missing(key);
    if (e->type != META_ARRAY || e->elem_type != META_F32) return wrong_type(*e, "an array of f32");
    out->resize(size_t(e->count));
    if (e->count) std::memcpy(out->data(), e->value.data(), size_t(e->count) * 4);
    return "";
}

std::string Metadata::get_i32s(const std::string& key, std::vector<int32_t>* out) const {
    const MetaEntry* e = find(key);
    if (!e) return missing(key);
    const uint64_t n = scalar_bytes(e->elem_type);
    if (e->type != META_ARRAY || n == 0 || e->elem_type == META_F32 || e->elem_type == META_F64 || e->elem_type == META_BOOL)
        return wrong_type(*e, "an array of integers");
    out->resize(size_t(e->count));
    for (uint64_t i = 0; i < e->count; i++) {
        int64_t v;
        if (!integer_in(e->elem_type, e->value.data() + i * n, INT32_MIN, INT32_MAX, &v))
            return "metadata " + key + " has an element out of range";
        (*out)[size_t(i)] = int32_t(v);
    }
    return "";
}

// ---- setters ----

void Metadata::set(MetaEntry e) {
    for (MetaEntry& old : entries_)
        if (old.key == e.key) {
            old = std::move(e);
            return;
        }
    entries_.push_back(std::move(e));
}

void Metadata::erase(const std::string& key) {
    for (size_t i = 0; i < entries_.size(); i++)
        if (entries_[i].key == key) {
            entries_.erase(entries_.begin() + long(i));
            return;
        }
}

template <typename T>
static MetaEntry scalar_entry(const std::string& key, uint32_t type, T v) {
    MetaEntry e;
    e.key = key;
    e.type = type;
    e.value.assign(reinterpret_cast<const char*>(&v), sizeof v);
    return e;
}

static std::string encode_string(const std::string& s) {
    const uint64_t len = s.size();
    return std::string(reinterpret_cast<const char*>(&len), 8) + s;
}

void Metadata::set_u32(const std::string& key, uint32_t v) { set(scalar_entry(key, META_U32, v)); }
void Metadata::set_i32(const std::string& key, int32_t v) { set(scalar_entry(key, META_I32, v)); }
void Metadata::set_f32(const std::string& key, float v) { set(scalar_entry(key, META_F32, v)); }
void Metadata::set_bool(const std::string& key, bool v) { set(scalar_entry(key, META_BOOL, uint8_t(v ? 1 : 0))); }

void Metadata::set_string(const std::string& key, const std::string& v) {
    MetaEntry e;
    e.key = key;
    e.type = META_STRING;
    e.value = encode_string(v);
    set(std::move(e));
}

static MetaEntry array_entry(const std::string& key, uint32_t elem_type, uint64_t count, std::string value) {
    MetaEntry e;
    e.key = key;
    e.type = META_ARRAY;
    e.elem_type = elem_type;
    e.count = count;
    e.value = std::move(value);
    return e;
}

void Metadata::set_bytes(const std::string& key, const std::string& v) { set(array_entry(key, META_U8, v.size(), v)); }

void Metadata::set_strings(const std::string& key, const std::vector<std::string>& v) {
    std::string value;
    for (const std::string& s : v) value += encode_string(s);
    set(array_entry(key, META_STRING, v.size(), std::move(value)));
}

void Metadata::set_f32s(const std::string& key, const std::vector<float>& v) {
    set(array_entry(key, META_F32, v.size(), std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4)));
}

void Metadata::set_i32s(const std::string& key, const std::vector<int32_t>& v) {
    set(array_entry(key, META_I32, v.size(), std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4)));
}

}  // namespace hearth
