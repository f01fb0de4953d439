// The tokenizer as metadata keys. A hearth v2 checkpoint keeps a SentencePiece model's own
// bytes (hearth.tokenizer.sentencepiece_model); a GGUF file keeps the vocabulary as arrays
// (tokenizer.ggml.tokens / scores / token_type and the special ids), from which an equivalent
// SentencePiece model is built. Both say which tokenizer it is in tokenizer.ggml.model.
// A byte-level BPE ("gpt2") is stored the same way in both formats: GGUF's
// tokenizer.ggml.tokens / token_type / merges / pre, and hearth.tokenizer.pre_split_regex /
// normalizer / ignore_merges for what llama.cpp derives from the pre-tokenizer's name. BOS,
// EOS and add_bos are the configuration's keys (model/config.h), read here too.
#pragma once
#include <string>

#include "tokenizer/tokenizer.h"
#include "formats/metadata.h"

namespace hearth {

std::string tokenizer_from_metadata(const Metadata& m, TokenizerSpec* out);

// For a hearth v2 checkpoint: the tokenizer as it is.
void tokenizer_to_metadata(const TokenizerSpec& t, Metadata* m);

// For a GGUF file: the vocabulary as llama.cpp reads it — tokenizer.ggml.model "llama", the
// tokens / scores / token_type arrays, the unknown and padding ids, add_space_prefix and
// remove_extra_whitespaces where they differ from llama.cpp's defaults for a SentencePiece
// vocabulary — with n_vocab entries (the embedding's rows): ids past the tokenizer's pieces
// get placeholders, as llama.cpp's convert script writes them ("[PAD{id}]", score -10000,
// UNUSED), since llama.cpp wants one token per row. The SentencePiece model's own bytes are
// kept too (hearth.tokenizer.sentencepiece_model), so that hearth reads back exactly the
// tokenizer it wrote; llama.cpp ignores keys it does not know. No tokenizer: "no_vocab".
// *caveat gets "" or a one-line note on what llama.cpp's tokenizer will not reproduce.
// "" or why the tokenizer cannot be written.
std::string tokenizer_to_gguf_metadata(const TokenizerSpec& t, int n_vocab, Metadata* m, std::string* caveat);

}  // namespace hearth
