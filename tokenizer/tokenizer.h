// Text <-> token ids: through the SentencePiece library (loaded from the bytes embedded in
// the checkpoint) or hearth's byte-level BPE (tokenizer/bpe.h), plus a streaming decoder
// for printing tokens as they come.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "base/limits.h"
#include "tokenizer/bpe.h"
namespace sentencepiece {
class SentencePieceProcessor;
}

namespace hearth {

// What a checkpoint holds of its tokenizer.
enum class TokenizerKind {
    none,           // no tokenizer (a llama2.c model converted without one): ids in, ids out
    sentencepiece,  // a SentencePiece model (Llama-2, Mistral, TinyLlama, ...)
    bpe,            // a byte-level BPE from a tokenizer.json (Llama-3, Qwen3, ...)
};
struct TokenizerSpec {
    TokenizerKind kind = TokenizerKind::none;
    std::string sentencepiece;  // the serialized SentencePiece ModelProto (tokenizer.model's bytes)
    BpeVocab bpe;               // for kind bpe
    // The tokenizer built from `bpe` when the vocabulary was checked (reading a checkpoint or
    // a tokenizer.json builds it to check it), or null. Tokenizer::load uses it rather than
    // building the same tables again, while its vocabulary still equals `bpe`.
    std::shared_ptr<const BpeTokenizer> bpe_built;
    // sentencepiece: whether a prompt starts with its BOS (GGUF's tokenizer.ggml.add_bos_token,
    // tokenizer_config.json's add_bos_token: false for Yi). A BPE vocabulary says it in bpe.add_bos.
    // Last, so that the aggregate initializations written before it ({kind, model, bpe, built}) keep their meaning.
    bool sentencepiece_add_bos = true;
};

class Tokenizer {
public:
    Tokenizer();
    ~Tokenizer();
    // "" on success, else why the spec is not a tokenizer this build can use.
    std::string load(const TokenizerSpec& spec);
    // "" on success, else why the bytes are not a SentencePiece model.
    std::string load(const void* data, size_t bytes);
    std::string load_file(const std::string& path);
    // The text's ids, BOS (when the tokenizer adds one) first if asked, appended to *ids.
    // Text never becomes a control token's id: chat templates insert those as ids. "" on
    // success, else a one-line reason (a vocabulary from an untrusted file may make a text
    // too costly to encode: tokenizer/bpe.h); *ids is then unchanged.
    std::string encode(const std::string& text, bool add_bos, std::vector<int>* ids) const;
    // As encode, but the texts of control tokens (<s>, <|eot_id|>; and SentencePiece's unknown
    // piece, <unk>) that occur in `text` become those tokens' ids, as llama.cpp's tokenizer
    // does with parse_special (llama-server's /tokenize by default): the leftmost first, the
    // longest there; the text between them is encoded as encode() encodes it.
    std::string encode_special(const std::string& text, bool add_bos, std::vector<int>* ids) const;
    // The text of a whole sequence (control tokens print nothing).
    std::string decode(const std::vector<int>& ids) const;
    int vocab_size() const;  // 0 when nothing is loaded (a model without a tokenizer)
    int bos_id() const;
    int eos_id() const;
    const std::string& piece(int id) const;
    bool is_byte(int id) const;
    bool is_control(int id) const;
    bool is_unknown(int id) const;
    // One token's bytes as a text shows them: a SentencePiece piece with its spaces (U+2581)
    // as ' ', the leading one too; a byte piece's byte; a BPE token's bytes; " \u2047 " for the
    // unknown piece; nothing for a control token or an id outside the vocabulary. May end
    // inside a UTF-8 character (the server's logprobs give these bytes with each token).
    std::string token_bytes(int id) const;
    // The byte-level BPE, or null for SentencePiece.
    const BpeTokenizer* bpe() const { return bpe_.get(); }

private:
    std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
    bool sp_loaded_ = false;                   // a SentencePiece model is loaded (else, without bpe_, nothing is)
    bool sp_add_bos_ = true;                   // encode's add_bos puts the SentencePiece model's BOS first
    std::shared_ptr<const BpeTokenizer> bpe_;  // shared with the TokenizerSpec it was built for
    AddedTokenMatcher sp_specials_;            // SentencePiece's control and unknown pieces, for encode_special
};

// The ids that end a generation, as llama.cpp marks them (src/llama-vocab.cpp,
// special_eog_ids): `eos_id` (the model's EOS, when >= 0) and the vocabulary's, and every token
// spelled as one of the end markers of tokenizer/special_markers.h (Llama-3's <|eot_id|>,
// <|eom_id|> and <|end_of_text|>, Qwen's <|im_end|>, <|endoftext|>, <|fim_pad|>, <|repo_name|>
// and <|file_sep|>, </s>, ...). A Llama-3-Instruct file names <|eot_id|> its EOS, and its
// replies may end at the others too. Each id once, in vocabulary order after EOS.
std::vector<int> end_of_generation_ids(const Tokenizer& tok, int eos_id);

// "" when a prompt of `bytes` (its text, or its messages' texts together) may be tokenized for a
// context of n_ctx tokens, else why not, for the caller to put after what the prompt is: over
// base/limits.h's kPromptBytesPerContextToken bytes per token of the context, it is refused first.
inline std::string check_text_for_context(size_t bytes, int n_ctx) {
    if (bytes <= size_t(n_ctx > 0 ? n_ctx : 1) * limits::kPromptBytesPerContextToken) return "";
    return std::to_string(bytes) + " bytes, more than " + std::to_string(limits::kPromptBytesPerContextToken) +
           " per token of a context of " + std::to_string(n_ctx) + ": too long to be tokenized";
}

// How a decoder writes bytes that are no UTF-8: each byte as U+FFFD, as SentencePiece decodes
// them (the default); or each maximal subpart as one U+FFFD (a character cut short is one), as
// Python and JSON writers replace them: nlohmann-json's, with which llama-server writes a reply.
enum class InvalidUtf8 { per_byte, per_subpart };

// Turns ids into text one at a time, so output can stream. Bytes (SentencePiece's
// byte-fallback pieces, a BPE token's bytes) are held until they form whole UTF-8
// characters; invalid bytes become U+FFFD. The concatenated output equals
// Tokenizer::decode() of the whole sequence (with InvalidUtf8::per_byte).
class TextStreamer {
public:
    explicit TextStreamer(const Tokenizer& tok, InvalidUtf8 invalid = InvalidUtf8::per_byte) : tok_(tok), invalid_(invalid) {}
    void set_invalid_utf8(InvalidUtf8 invalid) { invalid_ = invalid; }
    // Text that can be printed now (possibly empty).
    std::string push(int id);
    // Whatever is still held back, at the end of the stream.
    std::string finish();

private:
    std::string drain_bytes(bool at_end);
    const Tokenizer& tok_;
    InvalidUtf8 invalid_;
    std::string pending_bytes_;
    bool at_start_ = true;  // SentencePiece drops the space of the first piece
};

}  // namespace hearth
