#include "tokenizer_metadata.h"

static const char* const kModel = "tokenizer.ggml.model";
static const char* const kSentencePieceBytes = "hearth.tokenizer.sentencepiece_model";

std::string tokenizer_from_metadata(const Metadata& m, TokenizerSpec* out) {
    *out = TokenizerSpec{};
    std::string model, err;
    if (m.has(kModel) && !(err = m.get_string(kModel, &model)).empty()) return err;
    if (model.empty() || model == "none" || model == "no_vocab") return "";
    if (model != "llama")
        return "tokenizer '" + model + "' is not supported (this build reads SentencePiece vocabularies, 'llama')";
    out->kind = TokenizerKind::sentencepiece;
    return m.get_bytes(kSentencePieceBytes, &out->sentencepiece);
}

void tokenizer_to_metadata(const TokenizerSpec& t, Metadata* m) {
    switch (t.kind) {
        case TokenizerKind::none: m->set_string(kModel, "none"); break;
        case TokenizerKind::sentencepiece:
            m->set_string(kModel, "llama");
            m->set_bytes(kSentencePieceBytes, t.sentencepiece);
            break;
    }
}
