// Text <-> token ids through the SentencePiece library, loaded from the bytes embedded
// in the checkpoint, plus a streaming decoder for printing tokens as they come.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace sentencepiece { class SentencePieceProcessor; }

// What a checkpoint holds of its tokenizer.
enum class TokenizerKind {
    none,           // no tokenizer (a llama2.c model converted without one): ids in, ids out
    sentencepiece,  // a SentencePiece model (Llama-2, Mistral, TinyLlama, ...)
};
struct TokenizerSpec {
    TokenizerKind kind = TokenizerKind::none;
    std::string sentencepiece;  // the serialized SentencePiece ModelProto (tokenizer.model's bytes)
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
    // SentencePiece's own encoding; BOS (when the model has one) first if asked.
    std::vector<int> encode(const std::string& text, bool add_bos) const;
    // SentencePiece's own decoding of a whole sequence.
    std::string decode(const std::vector<int>& ids) const;
    int vocab_size() const;
    int bos_id() const;
    int eos_id() const;
    const std::string& piece(int id) const;
    bool is_byte(int id) const;
    bool is_control(int id) const;
    bool is_unknown(int id) const;

private:
    std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

// Turns ids into text one at a time, so output can stream. Byte-fallback pieces are held
// until they form whole UTF-8 characters; invalid bytes become U+FFFD. The concatenated
// output equals Tokenizer::decode() of the whole sequence.
class TextStreamer {
public:
    explicit TextStreamer(const Tokenizer& tok) : tok_(tok) {}
    // Text that can be printed now (possibly empty).
    std::string push(int id);
    // Whatever is still held back, at the end of the stream.
    std::string finish();

private:
    std::string drain_bytes(bool at_end);
    const Tokenizer& tok_;
    std::string pending_bytes_;
    bool at_start_ = true;  // SentencePiece drops the space of the first piece
};
