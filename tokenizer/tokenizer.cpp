#include "tokenizer/tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>

#include "base/input_file.h"
#include "base/printable.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/special_markers.h"

namespace hearth {

Tokenizer::Tokenizer() : sp_(new sentencepiece::SentencePieceProcessor) {}
Tokenizer::~Tokenizer() = default;

std::string Tokenizer::load(const TokenizerSpec& spec) {
    switch (spec.kind) {
        case TokenizerKind::sentencepiece: {
            std::string err = load(spec.sentencepiece.data(), spec.sentencepiece.size());
            sp_add_bos_ = spec.sentencepiece_add_bos;
            return err;
        }
        case TokenizerKind::bpe: {
            // Built already when the vocabulary was checked: the same tables, not built twice.
            if (spec.bpe_built && spec.bpe_built->vocab() == spec.bpe) {
                bpe_ = spec.bpe_built;
                return "";
            }
            std::shared_ptr<BpeTokenizer> bpe(new BpeTokenizer);
            std::string err = bpe->load(spec.bpe);
            if (!err.empty()) return "not a usable BPE tokenizer: " + err;
            bpe_ = std::move(bpe);
            return "";
        }
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
    sp_loaded_ = false;
    auto status = sp_->LoadFromSerializedProto(serialize_sentencepiece_model(model));
    if (!status.ok()) return "not a SentencePiece model: " + printable(status.ToString());
    sp_loaded_ = true;
    sp_add_bos_ = true;  // load(TokenizerSpec) sets what the checkpoint says
    bpe_.reset();
    std::vector<AddedTokenMatcher::Token> specials;
    for (int id = 0; id < sp_->GetPieceSize(); id++) {
        const std::string& p = sp_->IdToPiece(id);
        if ((sp_->IsControl(id) || sp_->IsUnknown(id)) && !p.empty() && p.size() <= 65535) specials.push_back({p, id, true});
    }
    sp_specials_.build(specials);
    return "";
}

std::string Tokenizer::load_file(const std::string& path) {
    std::string bytes;
    std::string err = read_input_file(path, InputKind::sentencepiece_model, &bytes);
    if (!err.empty()) return err;
    err = load(bytes.data(), bytes.size());
    return err.empty() ? "" : shown_path(path) + ": " + err;
}

std::string Tokenizer::encode(const std::string& text, bool add_bos, std::vector<int>* out) const {
    if (bpe_) return bpe_->encode(text, add_bos, false, out);
    if (!sp_loaded_) return "the model has no tokenizer";
    std::vector<int> ids;
    const auto status = sp_->Encode(text, &ids);
    if (!status.ok()) return "cannot encode the text: " + status.ToString();
    if (add_bos && sp_add_bos_ && sp_->bos_id() >= 0) out->push_back(sp_->bos_id());
    out->insert(out->end(), ids.begin(), ids.end());
    return "";
}

std::string Tokenizer::encode_special(const std::string& text, bool add_bos, std::vector<int>* out) const {
    if (bpe_) return bpe_->encode(text, add_bos, true, out);
    if (!sp_loaded_) return "the model has no tokenizer";
    std::vector<AddedTokenMatcher::Match> found;
    sp_specials_.find(text, true, &found);
    std::vector<int> ids;
    if (add_bos && sp_add_bos_ && sp_->bos_id() >= 0) ids.push_back(sp_->bos_id());
    size_t at = 0;
    for (size_t i = 0; i <= found.size(); i++) {
        const size_t end = i < found.size() ? found[i].at : text.size();
        // Each stretch on its own, as llama.cpp encodes the text between special tokens (each
        // with SentencePiece's leading space).
        if (end > at) {
            std::string err = encode(text.substr(at, end - at), false, &ids);
            if (!err.empty()) return err;
        }
        if (i == found.size()) break;
        ids.push_back(found[i].id);
        at = end + found[i].size;
    }
    out->insert(out->end(), ids.begin(), ids.end());
    return "";
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
    if (!bpe_ && !sp_loaded_) return "";
    if (!bpe_) return sp_->DecodeIds(ids);
    // The streaming decoder's rules, so that streaming and decoding agree by construction.
    TextStreamer streamer(*this);
    std::string text;
    for (int id : ids) text += streamer.push(id);
    return text + streamer.finish();
}
// Without a tokenizer (ids in, ids out) there is no vocabulary: the SentencePiece library is
// not asked, as it would print an error for every question.
int Tokenizer::vocab_size() const { return bpe_ ? bpe_->vocab_size() : sp_loaded_ ? sp_->GetPieceSize() : 0; }
int Tokenizer::bos_id() const { return bpe_ ? bpe_->bos_id() : sp_loaded_ ? sp_->bos_id() : -1; }
int Tokenizer::eos_id() const { return bpe_ ? bpe_->eos_id() : sp_loaded_ ? sp_->eos_id() : -1; }
const std::string& Tokenizer::piece(int id) const { return bpe_ ? bpe_->token(id) : sp_->IdToPiece(id); }
bool Tokenizer::is_byte(int id) const { return bpe_ ? false : sp_->IsByte(id); }
bool Tokenizer::is_control(int id) const { return bpe_ ? bpe_->type(id) == BpeVocab::kControl : sp_->IsControl(id); }
bool Tokenizer::is_unknown(int id) const { return bpe_ ? false : sp_->IsUnknown(id); }

static const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string Tokenizer::token_bytes(int id) const {
    if (id < 0 || id >= vocab_size() || is_control(id)) return "";
    if (bpe_) return bpe_->token_bytes(id);
    if (is_byte(id)) return std::string(1, char(byte_piece_value(piece(id))));
    if (is_unknown(id)) return " \xE2\x81\x87 ";
    std::string text = piece(id);
    for (size_t at; (at = text.find(kSpace)) != std::string::npos;) text.replace(at, kSpace.size(), " ");
    return text;
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
            at += invalid_ == InvalidUtf8::per_subpart ? utf8_invalid_length(pending_bytes_, at) : 1;
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
    if (const BpeTokenizer* bpe = tok_.bpe()) {
        // A BPE token is bytes, which may end inside a character that the next completes.
        // A control token has none and, like an invalid id, ends any character left open.
        if (bpe->type(id) == BpeVocab::kControl) return drain_bytes(true);
        pending_bytes_ += bpe->token_bytes(id);
        return drain_bytes(false);
    }
    if (tok_.is_byte(id)) {
        pending_bytes_ += tok_.token_bytes(id);
        at_start_ = false;
        return drain_bytes(false);
    }
    std::string out = drain_bytes(true);
    if (tok_.is_control(id)) return out;
    std::string text = tok_.token_bytes(id);
    // Only the very first piece loses its leading space, even if that leaves it empty.
    if (at_start_ && !tok_.is_unknown(id) && tok_.piece(id).compare(0, kSpace.size(), kSpace) == 0) text.erase(0, 1);
    at_start_ = false;
    return out + text;
}

std::string TextStreamer::finish() { return drain_bytes(true); }

std::vector<int> end_of_generation_ids(const Tokenizer& tok, int eos_id) {
    std::vector<int> ids;
    for (int e : {eos_id, tok.eos_id()})
        if (e >= 0 && std::find(ids.begin(), ids.end(), e) == ids.end()) ids.push_back(e);
    for (int id = 0; id < tok.vocab_size(); id++) {
        if (std::find(ids.begin(), ids.end(), id) != ids.end() || tok.is_byte(id)) continue;
        const SpecialMarker* m = find_special_marker(tok.piece(id));
        if (m && m->ends_generation) ids.push_back(id);
    }
    return ids;
}

}  // namespace hearth
