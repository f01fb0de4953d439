#include "model/tokenizer_metadata.h"

#include "base/printable.h"
#include "tokenizer/sentencepiece_model.h"

namespace hearth {

static const char* const kModel = "tokenizer.ggml.model";
static const char* const kSentencePieceBytes = "hearth.tokenizer.sentencepiece_model";
static const char* const kAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
static const char* const kRemoveExtraWhitespaces = "tokenizer.ggml.remove_extra_whitespaces";
// Byte-level BPE: GGUF's keys, and hearth's for what GGUF leaves to llama.cpp's code (which
// knows the pre-tokenizer by its name only).
static const char* const kTokens = "tokenizer.ggml.tokens";
static const char* const kTokenTypes = "tokenizer.ggml.token_type";
static const char* const kScores = "tokenizer.ggml.scores";  // SentencePiece only
static const char* const kMerges = "tokenizer.ggml.merges";
static const char* const kPre = "tokenizer.ggml.pre";
static const char* const kPreSplitRegex = "hearth.tokenizer.pre_split_regex";
static const char* const kNormalizer = "hearth.tokenizer.normalizer";
static const char* const kIgnoreMerges = "hearth.tokenizer.ignore_merges";
static const char* const kBosId = "tokenizer.ggml.bos_token_id";
static const char* const kEosId = "tokenizer.ggml.eos_token_id";
static const char* const kAddBos = "tokenizer.ggml.add_bos_token";
// llama.cpp's defaults for a SentencePiece ("llama") vocabulary when a key is absent
// (src/llama-vocab.cpp, llama_vocab::impl::load); the reader and the writer both use them.
static constexpr bool kDefaultAddSpacePrefix = true, kDefaultRemoveExtraWhitespaces = false;

// A GGUF SentencePiece vocabulary: the arrays and special ids, into a tokenizer.model.
static std::string sentencepiece_from_vocab(const Metadata& m, std::string* out) {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    std::string err;
    if (!(err = m.get_strings(kTokens, &tokens)).empty()) return err;
    // llama.cpp's defaults for a SentencePiece vocabulary, when a key is absent.
    int32_t ids[4] = {0, 1, 2, -1};  // unk, bos, eos, pad
    const char* const keys[4] = {"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                 "tokenizer.ggml.padding_token_id"};
    for (int i = 0; i < 4; i++) {
        uint32_t v = 0;
        if (!m.has(keys[i])) continue;
        if (!(err = m.get_u32(keys[i], &v)).empty()) return err;
        if (v == kNoTokenId) continue;  // llama.cpp's "none": the default stays
        if (v >= tokens.size())
            return "metadata " + std::string(keys[i]) + " is " + std::to_string(v) + ", outside the vocabulary";
        ids[i] = int32_t(v);
    }
    // llama.cpp reads a vocabulary without scores as scores of 0 (ties merge leftmost first) and
    // one without token types as types "normal" (llama_vocab::impl::load). Its tokenizer still
    // falls back to the <0xXX> pieces by their text and keeps BOS and EOS special; SentencePiece
    // does so by type, so the types given here are those: the unknown id unknown, BOS, EOS and
    // a padding id other than it control, and the 256 <0xXX> pieces bytes when all are there.
    // llama.cpp also takes scores stored as i32 (as floats), and arrays longer than the tokens
    // (it reads the first entries); so does this reader.
    const MetaEntry* score_entry = m.find(kScores);
    if (score_entry && score_entry->type == META_ARRAY && score_entry->elem_type == META_I32) {
        std::vector<int32_t> integers;
        if (!(err = m.get_i32s(kScores, &integers)).empty()) return err;
        scores.assign(integers.begin(), integers.end());
    } else if (score_entry) {
        if (!(err = m.get_f32s(kScores, &scores)).empty()) return err;
    } else {
        scores.assign(tokens.size(), 0.0f);
    }
    if (scores.size() > tokens.size()) scores.resize(tokens.size());
    if (m.has(kTokenTypes)) {
        if (!(err = m.get_i32s(kTokenTypes, &types)).empty()) return err;
        if (types.size() > tokens.size()) types.resize(tokens.size());
    } else {
        types.assign(tokens.size(), SentencePieceModel::kNormal);
        std::vector<size_t> byte_pieces;
        for (size_t i = 0; i < tokens.size(); i++)
            if (byte_piece_value(tokens[i]) >= 0) byte_pieces.push_back(i);
        if (byte_pieces.size() == 256)
            for (size_t i : byte_pieces) types[i] = SentencePieceModel::kByte;
        // (The default ids may lie past a tiny vocabulary: sentencepiece_model_from_vocab says so.)
        const int n = int(tokens.size());
        for (int i = 1; i < 4; i++)
            if (ids[i] >= 0 && ids[i] < n && ids[i] != ids[0]) types[size_t(ids[i])] = SentencePieceModel::kControl;
        if (ids[0] < n) types[size_t(ids[0])] = SentencePieceModel::kUnknown;
    }
    bool add_space_prefix = kDefaultAddSpacePrefix, remove_extra_whitespaces = kDefaultRemoveExtraWhitespaces;
    if (m.has(kAddSpacePrefix) && !(err = m.get_bool(kAddSpacePrefix, &add_space_prefix)).empty()) return err;
    if (m.has(kRemoveExtraWhitespaces) && !(err = m.get_bool(kRemoveExtraWhitespaces, &remove_extra_whitespaces)).empty())
        return err;
    err = sentencepiece_model_from_vocab(tokens, scores, types, ids[0], ids[1], ids[2], ids[3], add_space_prefix,
                                         remove_extra_whitespaces, out);
    return err.empty() ? "" : "the SentencePiece vocabulary: " + err;
}

// The names llama.cpp's vocabulary loader (src/llama-vocab.cpp) gives the pre-tokenizer of
// llama-bpe and of qwen2: a file names whichever its converter found (DeepSeek-R1-Distill-Qwen's
// say deepseek-r1-qwen, Falcon3's falcon3), and llama.cpp splits them all alike.
static bool is_llama3_pre(const std::string& pre) {
    for (const char* name :
         {"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"})
        if (pre == name) return true;
    return false;
}
static bool is_qwen2_pre(const std::string& pre) {
    for (const char* name : {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"})
        if (pre == name) return true;
    return false;
}

// A byte-level BPE vocabulary. A file hearth wrote has its regexes and normalizer; one
// llama.cpp wrote names the pre-tokenizer, which is mapped to the regex llama.cpp's code uses
// for that name (and to what the model's tokenizer.json declares besides: Llama-3 ignores
// merges for whole tokens, Qwen2/3 normalize to NFC).
static std::string bpe_from_metadata(const Metadata& m, TokenizerSpec* spec) {
    BpeVocab* out = &spec->bpe;
    std::string err;
    if (!(err = m.get_strings(kTokens, &out->tokens)).empty()) return err;
    if (!(err = m.get_i32s(kTokenTypes, &out->types)).empty()) return err;
    if (!(err = m.get_strings(kMerges, &out->merges)).empty()) return err;
    if (m.has(kPre) && !(err = m.get_string(kPre, &out->pre)).empty()) return err;
    if (m.has(kPreSplitRegex)) {
        if (!(err = m.get_strings(kPreSplitRegex, &out->pre_split_regexes)).empty()) return err;
        if (m.has(kNormalizer) && !(err = m.get_string(kNormalizer, &out->normalizer)).empty()) return err;
        if (m.has(kIgnoreMerges) && !(err = m.get_bool(kIgnoreMerges, &out->ignore_merges)).empty()) return err;
    } else if (is_llama3_pre(out->pre)) {
        out->pre_split_regexes = {kLlama3SplitRegex};
        out->ignore_merges = true;
    } else if (is_qwen2_pre(out->pre)) {
        out->pre_split_regexes = {kQwen2SplitRegex};
        out->normalizer = "nfc";
    } else if (out->pre == "gpt-2") {
        out->pre_split_regexes = {kGpt2SplitRegex};
    } else {
        return "BPE pre-tokenizer " + (out->pre.empty() ? std::string("'default'") : in_quotes(out->pre)) +
               " is not supported (this build knows llama-bpe and the names llama.cpp gives its regex, such as llama3 and falcon3; "
               "qwen2 and deepseek-r1-qwen; and gpt-2)";
    }
    for (auto [key, field] : {std::pair{kBosId, &BpeVocab::bos_id}, std::pair{kEosId, &BpeVocab::eos_id}}) {
        uint32_t v = 0;
        if (!m.has(key)) continue;
        if (!(err = m.get_u32(key, &v)).empty()) return err;
        if (v == kNoTokenId) continue;  // llama.cpp's "none"
        if (v >= out->tokens.size())
            return "metadata " + std::string(key) + " is " + std::to_string(v) + ", outside the vocabulary";
        out->*field = int(v);
    }
    out->add_bos = out->bos_id >= 0;
    if (m.has(kAddBos) && !(err = m.get_bool(kAddBos, &out->add_bos)).empty()) return err;
    out->add_bos = out->add_bos && out->bos_id >= 0;
    // What the keys say must make a tokenizer; checked here so that a damaged file is refused
    // when it is read, not when run first encodes. The tokenizer built to check them is kept:
    // Tokenizer::load uses it rather than building it again.
    std::shared_ptr<BpeTokenizer> check(new BpeTokenizer);
    if (!(err = check->load(*out)).empty()) return "the BPE vocabulary: " + err;
    spec->bpe_built = std::move(check);
    return "";
}

// The BPE keys both formats share.
static void bpe_to_metadata(const BpeVocab& v, const std::vector<std::string>& tokens, const std::vector<int32_t>& types,
                            Metadata* m) {
    m->set_string(kModel, "gpt2");
    m->set_string(kPre, v.pre.empty() ? "hearth" : v.pre);
    m->set_strings(kTokens, tokens);
    m->set_i32s(kTokenTypes, types);
    m->set_strings(kMerges, v.merges);
    m->set_strings(kPreSplitRegex, v.pre_split_regexes);
    if (!v.normalizer.empty()) m->set_string(kNormalizer, v.normalizer);
    m->set_bool(kIgnoreMerges, v.ignore_merges);
}

std::string tokenizer_from_metadata(const Metadata& m, TokenizerSpec* out) {
    *out = TokenizerSpec{};
    std::string model, err;
    if (m.has(kModel) && !(err = m.get_string(kModel, &model)).empty()) return err;
    if (model.empty() || model == "none" || model == "no_vocab") return "";
    if (model == "gpt2") {
        out->kind = TokenizerKind::bpe;
        return bpe_from_metadata(m, out);
    }
    if (model != "llama")
        return "tokenizer " + in_quotes(model) +
               " is not supported (this build reads SentencePiece ('llama') and byte-level BPE ('gpt2') vocabularies)";
    out->kind = TokenizerKind::sentencepiece;
    // llama.cpp adds BOS to a SentencePiece vocabulary's prompts unless the file says not to.
    if (m.has(kAddBos) && !(err = m.get_bool(kAddBos, &out->sentencepiece_add_bos)).empty()) return err;
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
        case TokenizerKind::bpe: bpe_to_metadata(t.bpe, t.bpe.tokens, t.bpe.types, m); break;
    }
}

std::string tokenizer_to_gguf_metadata(const TokenizerSpec& t, int n_vocab, Metadata* m, std::string* caveat) {
    caveat->clear();
    if (t.kind == TokenizerKind::none) {
        // gguf-py's spelling (llama.cpp also reads "none"); llama.cpp then makes n_vocab
        // placeholder tokens from llama.vocab_size.
        m->set_string(kModel, "no_vocab");
        return "";
    }
    if (t.kind == TokenizerKind::bpe) {
        // One token per embedding row, as llama.cpp wants; the rows past the tokenizer's get
        // placeholders, as llama.cpp's convert script writes them.
        const BpeVocab& v = t.bpe;
        if (v.tokens.size() > size_t(n_vocab))
            return "the tokenizer has " + std::to_string(v.tokens.size()) + " tokens, more than the model's " +
                   std::to_string(n_vocab) + " embedding rows";
        std::vector<std::string> tokens = v.tokens;
        std::vector<int32_t> types = v.types;
        for (size_t i = tokens.size(); i < size_t(n_vocab); i++) {
            tokens.push_back("[PAD" + std::to_string(i) + "]");
            types.push_back(BpeVocab::kUnused);
        }
        bpe_to_metadata(v, tokens, types, m);
        if (!is_llama3_pre(v.pre) && !is_qwen2_pre(v.pre) && v.pre != "gpt-2")
            *caveat = "llama.cpp does not know this pre-tokenizer (tokenizer.ggml.pre = '" + (v.pre.empty() ? "hearth" : v.pre) +
                      "') and will refuse the file's vocabulary";
        else if (is_qwen2_pre(v.pre))
            *caveat =
                "llama.cpp does not normalize to NFC as Qwen's tokenizer.json does: texts with decomposed accents may tokenize differently";
        return "";
    }
    SentencePieceModel sp;
    std::string err = parse_sentencepiece_model(t.sentencepiece, &sp);
    if (!err.empty()) return "the tokenizer: " + err;
    if (sp.pieces.size() > size_t(n_vocab))
        return "the tokenizer has " + std::to_string(sp.pieces.size()) + " pieces, more than the model's " +
               std::to_string(n_vocab) + " embedding rows";
    std::vector<std::string> tokens(static_cast<size_t>(n_vocab));
    std::vector<float> scores(size_t(n_vocab), -10000.0f);
    std::vector<int32_t> types(size_t(n_vocab), SentencePieceModel::kUnused);
    for (size_t i = 0; i < tokens.size(); i++) {
        if (i < sp.pieces.size()) {
            tokens[i] = sp.pieces[i].piece;
            scores[i] = sp.pieces[i].score;
            types[i] = sp.pieces[i].type;  // SentencePiece's numbers are GGUF's token types
        } else {
            tokens[i] = "[PAD" + std::to_string(i) + "]";
        }
    }
    m->set_string(kModel, "llama");
    m->set_strings(kTokens, tokens);
    m->set_f32s(kScores, scores);
    m->set_i32s(kTokenTypes, types);
    m->set_u32("tokenizer.ggml.unknown_token_id", uint32_t(sp.unk_id));
    if (sp.pad_id >= 0) m->set_u32("tokenizer.ggml.padding_token_id", uint32_t(sp.pad_id));
    if (sp.normalizer.add_dummy_prefix != kDefaultAddSpacePrefix) m->set_bool(kAddSpacePrefix, sp.normalizer.add_dummy_prefix);
    if (sp.normalizer.remove_extra_whitespaces != kDefaultRemoveExtraWhitespaces)
        m->set_bool(kRemoveExtraWhitespaces, sp.normalizer.remove_extra_whitespaces);
    m->set_bytes(kSentencePieceBytes, t.sentencepiece);

    // What GGUF's SentencePiece vocabulary has no key for: llama.cpp merges pieces by score
    // (as BPE does), applies no normalization table, and puts the space before a word.
    std::vector<std::string> lost;
    if (sp.model_type != SentencePieceModel::kBpe)
        lost.push_back("it is a unigram model (llama.cpp merges by score, as for BPE)");
    if (!sp.normalizer.precompiled_charsmap.empty())
        lost.push_back("its normalizer " + in_quotes(sp.normalizer.name) + " (llama.cpp does not normalize)");
    if (sp.treat_whitespace_as_suffix) lost.push_back("treat_whitespace_as_suffix");
    for (size_t i = 0; i < lost.size(); i++) *caveat += (i ? "; " : "") + lost[i];
    if (!caveat->empty()) *caveat = "llama.cpp may tokenize some texts differently from hearth: " + *caveat;
    return "";
}

}  // namespace hearth
