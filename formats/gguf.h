// GGUF, llama.cpp's file format (versions 2 and 3), read in place from a memory map:
//
//   "GGUF", u32 version, u64 tensor count, u64 metadata count
//   metadata: typed key/values (formats/metadata.h)
//   tensor infos: name (u64 length + bytes), u32 n_dims, u64 ne[n_dims] (innermost first),
//                 u32 type (ggml's), u64 offset (from the start of the data, aligned)
//   padding to general.alignment (default 32), then the tensor data
//
// The hyperparameters and tokenizer keys are the ones hearth v2 uses (model/config.h,
// model/tokenizer_metadata.h, which interpret them); the tensor names are hearth's. GGUF's llama q/k rows are in
// the adjacent-pair RoPE order hearth uses, so nothing is permuted.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "formats/hearth.h"

namespace hearth {

static constexpr char kGgufMagic[4] = {'G', 'G', 'U', 'F'};
static constexpr uint32_t kGgufDefaultAlignment = 32;

// True when the bytes start with GGUF's magic.
bool is_gguf(const void* data, size_t size);

// Reads and checks a whole GGUF file held in memory. Every count, length, offset and size
// is checked against the file and against sane limits before use. Tensors of any type GGUF
// defines are accepted here (binding then refuses what run cannot use). "" or a one-line reason.
std::string read_gguf_file(const void* data, size_t size, ModelFile* out);

}  // namespace hearth
