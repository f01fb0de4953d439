#include "tokenizer.h"

#include "sentencepiece_model.h"

#include <fstream>
#include <sentencepiece_processor.h>
#include <sstream>

Tokenizer::Tokenizer() : sp_(new sentencepiece::SentencePieceProcessor) {}
Tokenizer::~Tokenizer() = default;

std::string Tokenizer::load(const TokenizerSpec& spec) {
    switch (spec.kind) {
        case TokenizerKind::sentencepiece: return load(spec.sentencepiece.data(), spec.sentencepiece.size());
        case TokenizerKind::none: break;
    }
    return "the checkpoint has no tokenizer: give the prompt as ids (--prompt-ids) and print ids (--print-ids)";
}

// The SentencePiece library trusts its input (a damaged normalizer table crashes it), so the
// bytes are parsed and checked here first, and the library gets the checked model written
// out again: fields the check does not read never reach it.
std::string Tokenizer::load(const void* data, size_t bytes) {
    SentencePieceModel model;
    std::string err = parse_sentencepiece_model(std::string(static_cast<const char*>(data), bytes), &model);
    if (!err.empty()) return "not a usable SentencePiece model: " + err;
    auto status = sp_->LoadFromSerializedProto(serialize_sentencepiece_model(model));
    if (!status.ok()) return "not a SentencePiece model: " + status.ToString();
    return "";
}

std::string Tokenizer::load_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "cannot open " + path;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string bytes = ss.str();
    std::string err = load(bytes.data(), bytes.size());
    return err.empty() ? "" : path + ": " + err;
}

std::vector<int> Tokenizer::encode(const std::string& text, bool add_bos) const {
    std::vector<int> ids;
    sp_->Encode(text, &ids);
    if (add_bos && sp_->bos_id() >= 0) ids.insert(ids.begin(), sp_->bos_id());
    return ids;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const { return sp_->DecodeIds(ids); }
int Tokenizer::vocab_size() const { return sp_->GetPieceSize(); }
int Tokenizer::bos_id() const { return sp_->bos_id(); }
int Tokenizer::eos_id() const { return sp_->eos_id(); }
const std::string& Tokenizer::piece(int id) const { return sp_->IdToPiece(id); }
bool Tokenizer::is_byte(int id) const { return sp_->IsByte(id); }
bool Tokenizer::is_control(int id) const { return sp_->IsControl(id); }
bool Tokenizer::is_unknown(int id) const { return sp_->IsUnknown(id); }

// Length of the valid UTF-8 character at the start of s (1..4), 0 if s holds only the
// valid beginning of one, -1 if the first byte cannot start a valid character.
static int utf8_char_length(const std::string& s, size_t at) {
    const unsigned char c = s[at];
    int len;
    unsigned lo = 0x80, hi = 0xbf;  // allowed range of the second byte
    if (c < 0x80) return 1;
    else if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c == 0xe0) { len = 3; lo = 0xa0; }
    else if (c == 0xed) { len = 3; hi = 0x9f; }  // no surrogates
    else if (c >= 0xe1 && c <= 0xef) len = 3;
    else if (c == 0xf0) { len = 4; lo = 0x90; }
    else if (c >= 0xf1 && c <= 0xf3) len = 4;
    else if (c == 0xf4) { len = 4; hi = 0x8f; }
    else return -1;
    for (int i = 1; i < len; i++) {
        if (at + i >= s.size()) return 0;
        const unsigned char b = s[at + i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf)) return -1;
    }
    return len;
}

std::string TextStreamer::drain_bytes(bool at_end) {
    static const std::string kReplacement = "\xEF\xBF\xBD";
    std::string out;
    size_t at = 0;
    while (at < pending_bytes_.size()) {
        int len = utf8_char_length(pending_bytes_, at);
        if (len == 0 && !at_end) break;  // the rest may complete with the next byte piece
        if (len <= 0) {
            out += kReplacement;
            at += 1;
        } else {
            out.append(pending_bytes_, at, len);
            at += len;
        }
    }
    pending_bytes_.erase(0, at);
    return out;
}

std::string TextStreamer::push(int id) {
    // Models may pad their vocabulary past the tokenizer's pieces; such ids have no text.
    if (id < 0 || id >= tok_.vocab_size()) return drain_bytes(true);
    if (tok_.is_byte(id)) {
        const std::string& p = tok_.piece(id);  // "<0xAB>"
        pending_bytes_ += char(std::stoi(p.substr(3, 2), nullptr, 16));
        at_start_ = false;
        return drain_bytes(false);
    }
    std::string out = drain_bytes(true);
    if (tok_.is_control(id)) return out;
    if (tok_.is_unknown(id)) {
        at_start_ = false;
        return out + " \xE2\x81\x87 ";
    }
    std::string piece = tok_.piece(id);
    static const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space
    // Only the very first piece loses its leading space, even if that leaves it empty.
    if (at_start_ && piece.compare(0, kSpace.size(), kSpace) == 0) piece.erase(0, kSpace.size());
    at_start_ = false;
    for (size_t at; (at = piece.find(kSpace)) != std::string::npos;) piece.replace(at, kSpace.size(), " ");
    return out + piece;
}

std::string TextStreamer::finish() { return drain_bytes(true); }
