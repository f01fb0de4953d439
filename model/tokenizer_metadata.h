// The tokenizer as metadata keys. A hearth v2 checkpoint keeps a SentencePiece model's own
// bytes (hearth.tokenizer.sentencepiece_model); a GGUF file keeps the vocabulary as arrays
// (tokenizer.ggml.tokens / scores / token_type and the special ids), from which an equivalent
// SentencePiece model is built. Both say which tokenizer it is in tokenizer.ggml.model.
#pragma once
#include <string>

#include "../tokenizer/tokenizer.h"
#include "metadata.h"

std::string tokenizer_from_metadata(const Metadata& m, TokenizerSpec* out);

// For a hearth v2 checkpoint: the tokenizer as it is.
void tokenizer_to_metadata(const TokenizerSpec& t, Metadata* m);
