// A model file interpreted: the configuration and the tokenizer its keys (or, for hearth v1,
// its fixed header) describe, and its tensors. The format readers (formats/hearth.h,
// formats/gguf.h) check the bytes; this says what they mean, and checks that too.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "formats/hearth.h"
#include "model/config.h"
#include "tokenizer/tokenizer.h"

namespace hearth {

struct ParsedCheckpoint {
    std::string format;  // "hearth v1", "hearth v2", "GGUF v3", ...
    ModelConfig config;
    TokenizerSpec tokenizer;
    std::vector<TensorView> tensors;  // views into the caller's bytes
};

// A hearth checkpoint (version 1 or 2), a GGUF file, or either (told apart by the magic),
// read and interpreted. "" on success, else a one-line description of what is wrong.
std::string parse_checkpoint(const void* data, size_t size, ParsedCheckpoint* out);
std::string parse_gguf(const void* data, size_t size, ParsedCheckpoint* out);
std::string parse_model_file(const void* data, size_t size, ParsedCheckpoint* out);
// parse_model_file's reason for a file of neither magic (load_model adds what to do with it).
inline constexpr char kNotAModelFile[] = "neither a hearth checkpoint nor a GGUF file (wrong magic)";

// What both hearth v2 and GGUF leave to the tensors: the vocabulary size (the embedding's
// rows) when no key gave it, and tied embeddings when there is no output.weight; then the
// whole configuration is validated.
std::string finish_config(ParsedCheckpoint* p);

}  // namespace hearth
