#include "tokenizer/sentencepiece_model.h"

#include "base/limits.h"
#include "base/printable.h"

#include <cmath>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace hearth {

namespace {

// base/limits.h: beyond what any real tokenizer needs (Llama: 32000 pieces of at most a few
// dozen bytes, nmt_nfkc's charsmap 240 KB), small enough that checking stays fast on hostile input.
constexpr size_t kMaxPieces = limits::kSentencePiecePieces;
constexpr size_t kMaxPieceBytes = limits::kSentencePiecePieceBytes;
constexpr size_t kMaxStringBytes = limits::kSentencePieceStringBytes;
constexpr size_t kMaxCharsmapBytes = limits::kSentencePieceCharsmapBytes;
// SentencePiece's Normalizer::kMaxTrieResultsSize: the normalizer keeps this many prefix
// matches in a stack array but loops over every match the trie reports.
constexpr int kMaxCharsmapMatches = 32;

// ---------------------------------------------------------------- wire format reading

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

struct Field {
    uint32_t number = 0;
    int wire_type = 0;
    uint64_t varint = 0;     // kVarint
    uint32_t fixed32 = 0;    // kFixed32
    std::string_view bytes;  // kLengthDelimited
};

// Reads one message's fields in order; every read is checked against the end.
class WireReader {
public:
    WireReader(std::string_view in, const char* message)
        : begin_(in.data()), at_(in.data()), end_(in.data() + in.size()), message_(message) {}
    bool done() const { return at_ == end_; }

    // "" and the next field in *f, or why the bytes are not a field.
    std::string next(Field* f) {
        const size_t field_at = at_ - begin_;
        uint64_t tag;
        if (!read_varint(&tag)) return where(field_at) + ": truncated or overlong tag";
        if (tag > 0xFFFFFFFFu) return where(field_at) + ": tag does not fit 32 bits";
        f->number = uint32_t(tag >> 3);
        f->wire_type = int(tag & 7);
        // Field numbers are 1 .. 2^29 - 1; the tag is 32 bits, so only 0 can be out of range.
        if (f->number == 0) return where(field_at) + ": field number 0";
        switch (f->wire_type) {
            case kVarint:
                if (!read_varint(&f->varint))
                    return where(field_at) + ": truncated or overlong varint in field " + std::to_string(f->number);
                return "";
            case kFixed64:
                if (end_ - at_ < 8) return where(field_at) + ": truncated fixed64 in field " + std::to_string(f->number);
                at_ += 8;
                return "";
            case kFixed32:
                if (end_ - at_ < 4) return where(field_at) + ": truncated fixed32 in field " + std::to_string(f->number);
                f->fixed32 = uint32_t(uint8_t(at_[0])) | uint32_t(uint8_t(at_[1])) << 8 | uint32_t(uint8_t(at_[2])) << 16 |
                             uint32_t(uint8_t(at_[3])) << 24;
                at_ += 4;
                return "";
            case kLengthDelimited: {
                uint64_t length;
                if (!read_varint(&length)) return where(field_at) + ": truncated length of field " + std::to_string(f->number);
                if (length > uint64_t(end_ - at_))
                    return where(field_at) + ": field " + std::to_string(f->number) + " claims " + std::to_string(length) +
                           " bytes, " + std::to_string(end_ - at_) + " remain";
                f->bytes = std::string_view(at_, size_t(length));
                at_ += length;
                return "";
            }
            case kStartGroup:
            case kEndGroup:
                // Deprecated, never used by SentencePiece; skipping one would need its own nesting.
                return where(field_at) + ": field " + std::to_string(f->number) + " uses the deprecated group wire type";
            default:
                return where(field_at) + ": field " + std::to_string(f->number) + " has invalid wire type " +
                       std::to_string(f->wire_type);
        }
    }

private:
    // Base-128, at most 10 bytes; the tenth may only hold bit 63.
    bool read_varint(uint64_t* v) {
        uint64_t result = 0;
        for (int i = 0; i < 10; i++) {
            if (at_ == end_) return false;
            const uint8_t b = uint8_t(*at_++);
            if (i == 9 && b > 1) return false;
            result |= uint64_t(b & 0x7f) << (7 * i);
            if (b < 0x80) {
                *v = result;
                return true;
            }
        }
        return false;
    }
    std::string where(size_t offset) const { return std::string(message_) + " byte " + std::to_string(offset); }

    const char* begin_;
    const char* at_;
    const char* end_;
    const char* message_;
};

std::string wrong_wire_type(const char* message, const Field& f, int expected) {
    return std::string(message) + " field " + std::to_string(f.number) + " has wire type " + std::to_string(f.wire_type) +
           ", expected " + std::to_string(expected);
}

// int32 and enum fields: protobuf writes negative values sign-extended to 64 bits. Anything
// else that does not fit would be silently truncated by protobuf; refuse it instead.
bool varint_to_int32(uint64_t v, int* out) {
    if (v <= 0x7FFFFFFFu)
        *out = int(v);
    else if (v >= 0xFFFFFFFF80000000ull)
        *out = int(int64_t(v));
    else
        return false;
    return true;
}

float float_from_bits(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// Reads a field of a known kind into *out; "" or why not.
std::string read_string(const char* message, const Field& f, size_t max_bytes, std::string* out) {
    if (f.wire_type != kLengthDelimited) return wrong_wire_type(message, f, kLengthDelimited);
    if (f.bytes.size() > max_bytes)
        return std::string(message) + " field " + std::to_string(f.number) + " is " + std::to_string(f.bytes.size()) +
               " bytes, more than " + std::to_string(max_bytes);
    out->assign(f.bytes.data(), f.bytes.size());
    return "";
}
std::string read_int32(const char* message, const Field& f, int* out) {
    if (f.wire_type != kVarint) return wrong_wire_type(message, f, kVarint);
    if (!varint_to_int32(f.varint, out))
        return std::string(message) + " field " + std::to_string(f.number) + " is not a 32-bit integer";
    return "";
}
std::string read_bool(const char* message, const Field& f, bool* out) {
    if (f.wire_type != kVarint) return wrong_wire_type(message, f, kVarint);
    *out = f.varint != 0;  // as protobuf reads it
    return "";
}

std::string parse_piece(std::string_view in, SentencePieceModel::Piece* piece) {
    const char* kName = "SentencePiece";
    WireReader reader(in, kName);
    Field f;
    while (!reader.done()) {
        std::string err = reader.next(&f);
        if (err.empty()) {
            switch (f.number) {
                case 1: err = read_string(kName, f, kMaxPieceBytes, &piece->piece); break;
                case 2:
                    if (f.wire_type != kFixed32)
                        err = wrong_wire_type(kName, f, kFixed32);
                    else
                        piece->score = float_from_bits(f.fixed32);
                    break;
                case 3: err = read_int32(kName, f, &piece->type); break;
                default: break;  // extensions
            }
        }
        if (!err.empty()) return err;
    }
    return "";
}

std::string parse_trainer_spec(std::string_view in, SentencePieceModel* m) {
    const char* kName = "TrainerSpec";
    WireReader reader(in, kName);
    Field f;
    while (!reader.done()) {
        std::string err = reader.next(&f);
        if (err.empty()) {
            switch (f.number) {
                case 3: err = read_int32(kName, f, &m->model_type); break;
                case 4: err = read_int32(kName, f, &m->vocab_size); break;
                case 24: err = read_bool(kName, f, &m->treat_whitespace_as_suffix); break;
                case 35: err = read_bool(kName, f, &m->byte_fallback); break;
                case 40: err = read_int32(kName, f, &m->unk_id); break;
                case 41: err = read_int32(kName, f, &m->bos_id); break;
                case 42: err = read_int32(kName, f, &m->eos_id); break;
                case 43: err = read_int32(kName, f, &m->pad_id); break;
                case 44: err = read_string(kName, f, kMaxStringBytes, &m->unk_surface); break;
                case 45: err = read_string(kName, f, kMaxPieceBytes, &m->unk_piece); break;
                case 46: err = read_string(kName, f, kMaxPieceBytes, &m->bos_piece); break;
                case 47: err = read_string(kName, f, kMaxPieceBytes, &m->eos_piece); break;
                case 48: err = read_string(kName, f, kMaxPieceBytes, &m->pad_piece); break;
                default: break;  // training-only settings and extensions
            }
        }
        if (!err.empty()) return err;
    }
    return "";
}

std::string parse_normalizer_spec(std::string_view in, const char* name, SentencePieceModel::Normalizer* n) {
    WireReader reader(in, name);
    Field f;
    while (!reader.done()) {
        std::string err = reader.next(&f);
        if (err.empty()) {
            switch (f.number) {
                case 1: err = read_string(name, f, kMaxStringBytes, &n->name); break;
                case 2: err = read_string(name, f, kMaxCharsmapBytes, &n->precompiled_charsmap); break;
                case 3: err = read_bool(name, f, &n->add_dummy_prefix); break;
                case 4: err = read_bool(name, f, &n->remove_extra_whitespaces); break;
                case 5: err = read_bool(name, f, &n->escape_whitespaces); break;
                case 6: err = read_string(name, f, kMaxCharsmapBytes, &n->normalization_rule_tsv); break;
                default: break;  // extensions
            }
        }
        if (!err.empty()) return err;
    }
    return "";
}

// ---------------------------------------------------------------- wire format writing

void put_varint(std::string* out, uint64_t v) {
    while (v >= 0x80) {
        out->push_back(char(uint8_t(v) | 0x80));
        v >>= 7;
    }
    out->push_back(char(v));
}
void put_tag(std::string* out, int field, WireType wire_type) { put_varint(out, uint64_t(field) << 3 | wire_type); }
void put_bytes(std::string* out, int field, const std::string& s) {
    put_tag(out, field, kLengthDelimited);
    put_varint(out, s.size());
    out->append(s);
}
// int32 and enums: negative values as 10-byte sign-extended varints, as protobuf does.
void put_int32(std::string* out, int field, int v) {
    put_tag(out, field, kVarint);
    put_varint(out, uint64_t(int64_t(v)));
}
void put_bool(std::string* out, int field, bool v) {
    put_tag(out, field, kVarint);
    put_varint(out, v ? 1 : 0);
}
void put_float(std::string* out, int field, float v) {
    put_tag(out, field, kFixed32);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    for (int i = 0; i < 4; i++) out->push_back(char(uint8_t(bits >> (8 * i))));
}

std::string serialize_normalizer(const SentencePieceModel::Normalizer& n) {
    std::string out;
    put_bytes(&out, 1, n.name);
    if (!n.precompiled_charsmap.empty()) put_bytes(&out, 2, n.precompiled_charsmap);
    put_bool(&out, 3, n.add_dummy_prefix);
    put_bool(&out, 4, n.remove_extra_whitespaces);
    put_bool(&out, 5, n.escape_whitespaces);
    if (!n.normalization_rule_tsv.empty()) put_bytes(&out, 6, n.normalization_rule_tsv);
    return out;
}

// ---------------------------------------------------------------- checks

// The library's reading of an empty *_piece name.
const std::string& effective_name(const std::string& name, const std::string& default_name) {
    return name.empty() ? default_name : name;
}

// Unknown, control and byte pieces by text: where SentencePiece's PieceToId looks first.
using ReservedPieces = std::unordered_map<std::string_view, int>;

// SentencePiece does not read the special ids: bos_id() is PieceToId(bos_piece) if that is
// a control piece, else -1 (and likewise eos, pad; unk_id() wants the unknown piece). So
// the stated id must be what that finds, or the library and the model disagree.
std::string check_special_id(const SentencePieceModel& m, const ReservedPieces& reserved, const char* what, int id,
                             const std::string& name, const std::string& default_name, int type) {
    const std::string& spelled = effective_name(name, default_name);
    if (id < -1 || id >= int(m.pieces.size()))
        return std::string(what) + " " + std::to_string(id) + " is outside the " + std::to_string(m.pieces.size()) + " pieces";
    const auto it = reserved.find(spelled);
    const int found = it != reserved.end() && m.pieces[it->second].type == type ? it->second : -1;
    if (id == found) return "";
    const char* type_name = type == SentencePieceModel::kUnknown ? "unknown" : "control";
    if (id == -1)
        return std::string(what) + " is -1 but piece " + std::to_string(found) + " is the " + type_name + " piece " +
               in_quotes(spelled) + " SentencePiece would report";
    return std::string(what) + " " + std::to_string(id) + " (" + in_quotes(m.pieces[id].piece) + ") is not the " + type_name +
           " piece named " + in_quotes(spelled);
}

uint32_t load_u32_le(const std::string& s, size_t at) {
    return uint32_t(uint8_t(s[at])) | uint32_t(uint8_t(s[at + 1])) << 8 | uint32_t(uint8_t(s[at + 2])) << 16 |
           uint32_t(uint8_t(s[at + 3])) << 24;
}

}  // namespace

int byte_piece_value(const std::string& p) {
    if (p.size() != 6 || p.compare(0, 3, "<0x") != 0 || p[5] != '>') return -1;
    int value = 0;
    for (int i = 3; i < 5; i++) {
        const char c = p[i];
        int digit;
        if (c >= '0' && c <= '9')
            digit = c - '0';
        else if (c >= 'A' && c <= 'F')
            digit = c - 'A' + 10;
        else
            return -1;
        value = value * 16 + digit;
    }
    return value;
}

// The library's normalizer (normalizer.cc, DecodePrecompiledCharsMap) splits the blob into
// a little-endian u32 trie size, that many bytes of darts-clone double array (u32 units),
// and the replacement strings. For each input position it runs darts-clone's
// commonPrefixSearch, which does no bounds checks at all:
//     pos = offset(unit[0]);
//     for each input byte c: pos ^= c; u = unit[pos]; stop if label(u) != c;
//                            pos ^= offset(u); if has_leaf(u): match value(unit[pos]), len
// and then reads the replacement as a C string at strings + value. Its only own check is
// trie size < blob size, which forgets the 4 header bytes.
//
// This walks every state the search can reach (a base `pos` after some input prefix) and
// checks, for all 256 next bytes, everything those reads touch: each reachable base's whole
// 256-unit block lies inside the array (pos ^ c ranges over it), each reachable leaf value
// indexes the strings and a NUL follows it inside the blob, no path carries more than
// kMaxCharsmapMatches matches (the normalizer's stack array), and there are no cycles
// (which darts-clone never builds, and which would allow unbounded matches). Being a walk of
// exactly the states the search can be in, this is sound and complete for memory safety.
// Not checked: that replacements are valid UTF-8 or sensible text (harmless to the library).
// Cost: at most 256 unit reads per unit of array.
std::string check_precompiled_charsmap(const std::string& blob) {
    if (blob.empty()) return "";
    if (blob.size() < 4) return "precompiled_charsmap of " + std::to_string(blob.size()) + " bytes has no trie size";
    const uint32_t trie_bytes = load_u32_le(blob, 0);
    if (trie_bytes % 4 != 0) return "precompiled_charsmap trie size " + std::to_string(trie_bytes) + " is not a multiple of 4";
    if (trie_bytes == 0) return "precompiled_charsmap has an empty trie";
    if (trie_bytes > blob.size() - 4)
        return "precompiled_charsmap trie size " + std::to_string(trie_bytes) + " exceeds the " +
               std::to_string(blob.size() - 4) + " bytes after it";
    const size_t units = trie_bytes / 4;
    auto unit = [&](size_t i) { return load_u32_le(blob, 4 + 4 * i); };
    // darts-clone's DoubleArrayUnit accessors.
    auto offset = [](uint32_t u) { return size_t((u >> 10) << ((u & (1u << 9)) >> 6)); };
    auto label = [](uint32_t u) { return u & ((1u << 31) | 0xFF); };
    auto has_leaf = [](uint32_t u) { return ((u >> 8) & 1) == 1; };
    auto value = [](uint32_t u) { return size_t(u & ((1u << 31) - 1)); };

    const size_t strings_at = 4 + size_t(trie_bytes);
    const size_t strings_size = blob.size() - strings_at;
    // A value v reads a C string from strings_at + v: fine iff a NUL lies at or after it.
    const size_t last_nul = blob.rfind('\0');
    const bool any_nul = last_nul != std::string::npos && last_nul >= strings_at;

    // Depth-first over bases, with an explicit stack (a hostile trie can be deep). A frame
    // holds the most matches seen on paths through the bytes tried so far.
    enum : uint8_t { kUnseen = 0, kOnStack = 1, kDone = 2 };
    std::vector<uint8_t> state(units, kUnseen);
    std::vector<uint8_t> most_matches(units, 0);  // of a finished base, at most kMaxCharsmapMatches
    struct Frame {
        size_t base;
        int next_byte;
        int most;
    };
    std::vector<Frame> stack;
    auto enter = [&](size_t base) -> std::string {
        if ((base | 0xFF) >= units)
            return "precompiled_charsmap trie state " + std::to_string(base) + " reads past its " + std::to_string(units) +
                   " units";
        state[base] = kOnStack;
        stack.push_back({base, 0, 0});
        return "";
    };
    // A path through `child` (the unit a byte leads to) then on from the base it leads to.
    auto fold = [&](Frame* frame, uint32_t child_unit, size_t next) -> std::string {
        const int through = (has_leaf(child_unit) ? 1 : 0) + most_matches[next];
        if (through > kMaxCharsmapMatches)
            return "precompiled_charsmap trie has more than " + std::to_string(kMaxCharsmapMatches) + " matches along one input";
        if (through > frame->most) frame->most = through;
        return "";
    };
    std::string err = enter(offset(unit(0)));
    while (err.empty() && !stack.empty()) {
        Frame& frame = stack.back();
        if (frame.next_byte == 256) {
            state[frame.base] = kDone;
            most_matches[frame.base] = uint8_t(frame.most);
            const size_t finished = frame.base;
            stack.pop_back();
            if (!stack.empty()) {  // the parent descended here through its last byte tried
                Frame& parent = stack.back();
                err = fold(&parent, unit(parent.base ^ size_t(parent.next_byte - 1)), finished);
            }
            continue;
        }
        const int c = frame.next_byte++;
        const uint32_t u = unit(frame.base ^ size_t(c));
        if (label(u) != uint32_t(c)) continue;  // the search stops here
        const size_t next = (frame.base ^ size_t(c)) ^ offset(u);
        if ((next | 0xFF) >= units)
            return "precompiled_charsmap trie state " + std::to_string(next) + " reads past its " + std::to_string(units) +
                   " units";
        if (has_leaf(u)) {
            const size_t v = value(unit(next));
            if (v >= strings_size || !any_nul || strings_at + v > last_nul)
                return "precompiled_charsmap replacement at " + std::to_string(v) + " is not a NUL-terminated string in its " +
                       std::to_string(strings_size) + " bytes";
        }
        if (state[next] == kOnStack) return "precompiled_charsmap trie has a cycle";
        if (state[next] == kDone)
            err = fold(&frame, u, next);
        else
            err = enter(next);  // folded in when it is done; `frame` may dangle from here
    }
    return err;
}

std::string check_sentencepiece_model(const SentencePieceModel& m) {
    if (m.model_type != SentencePieceModel::kUnigram && m.model_type != SentencePieceModel::kBpe)
        return "model_type " + std::to_string(m.model_type) + " is neither UNIGRAM (1) nor BPE (2)";
    if (m.pieces.empty()) return "the model has no pieces";
    if (m.pieces.size() > kMaxPieces) return std::to_string(m.pieces.size()) + " pieces, more than " + std::to_string(kMaxPieces);

    // SentencePiece keeps normal, user-defined and unused pieces in one map and unknown,
    // control and byte pieces in another; a piece may appear once in each.
    std::unordered_set<std::string_view> normal_pieces;
    ReservedPieces reserved_pieces;
    int unknown_pieces = 0;
    bool byte_seen[256] = {};
    for (size_t i = 0; i < m.pieces.size(); i++) {
        const SentencePieceModel::Piece& p = m.pieces[i];
        const std::string at = "piece " + std::to_string(i);
        if (p.piece.empty()) return at + " is empty";
        if (p.piece.size() > kMaxPieceBytes) return at + " is longer than " + std::to_string(kMaxPieceBytes) + " bytes";
        // The library builds tries from pieces as C strings: a NUL would cut the key short.
        if (p.piece.find('\0') != std::string::npos) return at + " contains a NUL byte";
        if (p.type < SentencePieceModel::kNormal || p.type > SentencePieceModel::kByte)
            return at + " has type " + std::to_string(p.type) + ", not 1..6";
        // A NaN score breaks the ordering BPE's priority queue relies on.
        if (std::isnan(p.score)) return at + " has a NaN score";
        const bool normal = p.type == SentencePieceModel::kNormal || p.type == SentencePieceModel::kUserDefined ||
                            p.type == SentencePieceModel::kUnused;
        if (normal ? !normal_pieces.insert(p.piece).second : !reserved_pieces.emplace(p.piece, int(i)).second)
            return at + " " + in_quotes(p.piece) + " is defined twice";
        if (p.type == SentencePieceModel::kUnknown) unknown_pieces++;
        if (p.type == SentencePieceModel::kByte) {
            if (!m.byte_fallback) return at + " is a byte piece but byte_fallback is off";
            const int byte = byte_piece_value(p.piece);
            if (byte < 0) return at + " is a byte piece not spelled <0xXX>: " + in_quotes(p.piece);
            byte_seen[byte] = true;
        }
    }
    if (unknown_pieces != 1) return std::to_string(unknown_pieces) + " unknown pieces, expected exactly one";
    // Unigram builds its trie from these and fails on an empty one.
    if (m.model_type == SentencePieceModel::kUnigram && normal_pieces.empty())
        return "a unigram model needs a normal, user-defined or unused piece";
    if (m.byte_fallback) {
        for (int b = 0; b < 256; b++)
            if (!byte_seen[b]) return "byte_fallback is on but there is no piece for byte " + std::to_string(b);
    }

    using P = SentencePieceModel;
    if (m.unk_id == -1) return "unk_id is -1 but a model needs an unknown piece";
    std::string err = check_special_id(m, reserved_pieces, "unk_id", m.unk_id, m.unk_piece, "<unk>", P::kUnknown);
    if (err.empty()) err = check_special_id(m, reserved_pieces, "bos_id", m.bos_id, m.bos_piece, "<s>", P::kControl);
    if (err.empty()) err = check_special_id(m, reserved_pieces, "eos_id", m.eos_id, m.eos_piece, "</s>", P::kControl);
    // pad may be the unknown piece, as GGUF files often say; SentencePiece's pad_id() is -1 then.
    const bool pad_is_unknown = m.pad_id >= 0 && m.pad_id == m.unk_id && m.pad_piece == m.unk_piece;
    if (err.empty() && !pad_is_unknown)
        err = check_special_id(m, reserved_pieces, "pad_id", m.pad_id, m.pad_piece, "<pad>", P::kControl);
    if (!err.empty()) return err;

    err = check_precompiled_charsmap(m.normalizer.precompiled_charsmap);
    if (!err.empty()) return "normalizer: " + err;
    if (m.has_denormalizer) {
        err = check_precompiled_charsmap(m.denormalizer.precompiled_charsmap);
        if (!err.empty()) return "denormalizer: " + err;
    }
    return "";
}

std::string parse_sentencepiece_model(const std::string& bytes, SentencePieceModel* out) {
    *out = SentencePieceModel();
    const char* kName = "ModelProto";
    WireReader reader(bytes, kName);
    Field f;
    while (!reader.done()) {
        std::string err = reader.next(&f);
        if (!err.empty()) return err;
        // Every ModelProto field we know is a message; a repeated occurrence of a singular
        // one merges into it, as protobuf does.
        if (f.number >= 1 && f.number <= 5 && f.wire_type != kLengthDelimited) return wrong_wire_type(kName, f, kLengthDelimited);
        switch (f.number) {
            case 1:
                if (out->pieces.size() == kMaxPieces) return "more than " + std::to_string(kMaxPieces) + " pieces";
                out->pieces.emplace_back();
                err = parse_piece(f.bytes, &out->pieces.back());
                if (!err.empty()) err = "piece " + std::to_string(out->pieces.size() - 1) + ": " + err;
                break;
            case 2: err = parse_trainer_spec(f.bytes, out); break;
            case 3: err = parse_normalizer_spec(f.bytes, "NormalizerSpec", &out->normalizer); break;
            case 5:
                out->has_denormalizer = true;
                err = parse_normalizer_spec(f.bytes, "denormalizer NormalizerSpec", &out->denormalizer);
                break;
            default: break;  // 4 self_test_data (see the header), extensions
        }
        if (!err.empty()) return err;
    }
    if (out->unk_piece.empty()) out->unk_piece = "<unk>";
    if (out->bos_piece.empty()) out->bos_piece = "<s>";
    if (out->eos_piece.empty()) out->eos_piece = "</s>";
    if (out->pad_piece.empty()) out->pad_piece = "<pad>";
    return check_sentencepiece_model(*out);
}

std::string serialize_sentencepiece_model(const SentencePieceModel& m) {
    std::string out, message;
    // Field-number order within each message, as protobuf writes it.
    for (const SentencePieceModel::Piece& p : m.pieces) {
        message.clear();
        put_bytes(&message, 1, p.piece);
        put_float(&message, 2, p.score);
        if (p.type != SentencePieceModel::kNormal) put_int32(&message, 3, p.type);
        put_bytes(&out, 1, message);
    }

    message.clear();
    put_int32(&message, 3, m.model_type);
    put_int32(&message, 4, m.vocab_size);
    put_bool(&message, 24, m.treat_whitespace_as_suffix);
    put_bool(&message, 35, m.byte_fallback);
    put_int32(&message, 40, m.unk_id);
    put_int32(&message, 41, m.bos_id);
    put_int32(&message, 42, m.eos_id);
    put_int32(&message, 43, m.pad_id);
    put_bytes(&message, 44, m.unk_surface);
    put_bytes(&message, 45, m.unk_piece);
    put_bytes(&message, 46, m.bos_piece);
    put_bytes(&message, 47, m.eos_piece);
    put_bytes(&message, 48, m.pad_piece);
    put_bytes(&out, 2, message);

    put_bytes(&out, 3, serialize_normalizer(m.normalizer));
    if (m.has_denormalizer) put_bytes(&out, 5, serialize_normalizer(m.denormalizer));
    return out;
}

std::string sentencepiece_model_from_vocab(const std::vector<std::string>& pieces, const std::vector<float>& scores,
                                           const std::vector<int32_t>& types, int unk_id, int bos_id, int eos_id, int pad_id,
                                           bool add_dummy_prefix, bool remove_extra_whitespaces, SentencePieceModel* out) {
    *out = SentencePieceModel();
    if (pieces.empty()) return "the vocabulary has no tokens";
    if (scores.size() != pieces.size() || types.size() != pieces.size())
        return std::to_string(pieces.size()) + " tokens but " + std::to_string(scores.size()) + " scores and " +
               std::to_string(types.size()) + " token types";
    if (pieces.size() > kMaxPieces) return std::to_string(pieces.size()) + " tokens, more than " + std::to_string(kMaxPieces);
    const int n = int(pieces.size());
    for (int id : {unk_id, bos_id, eos_id, pad_id}) {
        if (id < -1 || id >= n)
            return "special token id " + std::to_string(id) + " is outside the " + std::to_string(n) + " tokens";
    }
    if (unk_id < 0) return "the vocabulary has no unknown token id";

    SentencePieceModel& m = *out;
    m.pieces.resize(pieces.size());
    for (size_t i = 0; i < pieces.size(); i++) {
        m.pieces[i] = {pieces[i], scores[i], types[i]};
        if (types[i] == SentencePieceModel::kByte) m.byte_fallback = true;
    }
    m.model_type = SentencePieceModel::kBpe;  // llama.cpp's "llama" vocabulary merges by score, as BPE does
    m.vocab_size = n;
    m.treat_whitespace_as_suffix = false;
    m.unk_id = unk_id;
    m.bos_id = bos_id;
    m.eos_id = eos_id;
    m.pad_id = pad_id;
    m.unk_piece = pieces[unk_id];
    if (bos_id >= 0) m.bos_piece = pieces[bos_id];
    if (eos_id >= 0) m.eos_piece = pieces[eos_id];
    if (pad_id >= 0) m.pad_piece = pieces[pad_id];
    m.normalizer.name = "identity";
    m.normalizer.add_dummy_prefix = add_dummy_prefix;
    m.normalizer.remove_extra_whitespaces = remove_extra_whitespaces;
    m.normalizer.escape_whitespaces = true;
    return check_sentencepiece_model(m);
}

std::string sentencepiece_model_from_vocab(const std::vector<std::string>& pieces, const std::vector<float>& scores,
                                           const std::vector<int32_t>& types, int unk_id, int bos_id, int eos_id, int pad_id,
                                           bool add_dummy_prefix, bool remove_extra_whitespaces, std::string* out) {
    SentencePieceModel m;
    std::string err = sentencepiece_model_from_vocab(pieces, scores, types, unk_id, bos_id, eos_id, pad_id, add_dummy_prefix,
                                                     remove_extra_whitespaces, &m);
    if (!err.empty()) return err;
    *out = serialize_sentencepiece_model(m);
    return "";
}

}  // namespace hearth
