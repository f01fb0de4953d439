#include "tokenizer_metadata.h"

#include "../tokenizer/sentencepiece_model.h"

static const char* const kModel = "tokenizer.ggml.model";
static const char* const kSentencePieceBytes = "hearth.tokenizer.sentencepiece_model";

// A GGUF SentencePiece vocabulary: the arrays and special ids, into a tokenizer.model.
static std::string sentencepiece_from_vocab(const Metadata& m, std::string* out) {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    std::string err;
    if (!(err = m.get_strings("tokenizer.ggml.tokens", &tokens)).empty()) return err;
    if (!(err = m.get_f32s("tokenizer.ggml.scores", &scores)).empty()) return err;
    if (!(err = m.get_i32s("tokenizer.ggml.token_type", &types)).empty()) return err;
    // llama.cpp's defaults for a SentencePiece vocabulary, when a key is absent.
    int32_t ids[4] = {0, 1, 2, -1};  // unk, bos, eos, pad
    const char* const keys[4] = {"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                 "tokenizer.ggml.padding_token_id"};
    for (int i = 0; i < 4; i++) {
        uint32_t v = 0;
        if (!m.has(keys[i])) continue;
        if (!(err = m.get_u32(keys[i], &v)).empty()) return err;
        if (v >= tokens.size()) return "metadata " + std::string(keys[i]) + " is " + std::to_string(v) + ", outside the vocabulary";
        ids[i] = int32_t(v);
    }
    bool add_space_prefix = true, remove_extra_whitespaces = false;
    if (m.has("tokenizer.ggml.add_space_prefix") && !(err = m.get_bool("tokenizer.ggml.add_space_prefix", &add_space_prefix)).empty())
        return err;
    if (m.has("tokenizer.ggml.remove_extra_whitespaces") &&
        !(err = m.get_bool("tokenizer.ggml.remove_extra_whitespaces", &remove_extra_whitespaces)).empty())
        return err;
    err = sentencepiece_model_from_vocab(tokens, scores, types, ids[0], ids[1], ids[2], ids[3], add_space_prefix,
                                         remove_extra_whitespaces, out);
    return err.empty() ? "" : "the SentencePiece vocabulary: " + err;
}

std::string tokenizer_from_metadata(const Metadata& m, TokenizerSpec* out) {
    *out = TokenizerSpec{};
    std::string model, err;
    if (m.has(kModel) && !(err = m.get_string(kModel, &model)).empty()) return err;
    if (model.empty() || model == "none" || model == "no_vocab") return "";
    if (model != "llama")
        return "tokenizer '" + model + "' is not supported (this build reads SentencePiece vocabularies, 'llama')";
    out->kind = TokenizerKind::sentencepiece;
    if (m.has(kSentencePieceBytes)) return m.get_bytes(kSentencePieceBytes, &out->sentencepiece);
    return sentencepiece_from_vocab(m, &out->sentencepiece);
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
