// Reads the checkpoints people have into one in-memory description that quantize
// converts: a configuration, the tokenizer bytes, and source tensors under hearth names.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "format.h"
#include "mapped_file.h"
#include "safetensors.h"

struct SourceTensor {
    std::string name;  // hearth name, e.g. "blk.0.attn_q.weight"
    uint32_t type = 0; // element type of `data` (TensorType)
    int n_dims = 0;
    uint64_t shape[kMaxDims] = {1, 1, 1, 1};
    const uint8_t* data = nullptr;
    // > 0: the rows are in Hugging Face's rotate-half order for this many heads and are
    // reordered into hearth's adjacent-pair order as they are read (see docs/format.md).
    int hf_rope_heads = 0;
    uint64_t rows() const;
    uint64_t cols() const { return shape[n_dims - 1]; }
};

struct ImportedCheckpoint {
    ModelConfig config;
    TokenizerSpec tokenizer;
    std::vector<SourceTensor> tensors;
    // Every file read (weights, tokenizer), so that quantize never writes over one of them.
    std::vector<std::string> files;
    // Owners of the memory `data` points into.
    std::vector<std::unique_ptr<SafetensorsFile>> safetensors;
    std::unique_ptr<MappedFile> mapped;
};

// A Hugging Face folder: config.json (LlamaForCausalLM), model.safetensors or shards
// listed in model.safetensors.index.json, tokenizer.model. "" on success.
std::string import_hf_folder(const std::string& dir, ImportedCheckpoint* out);

// A hearth checkpoint or a GGUF file (to convert it to another type or format).
std::string import_model_file(const std::string& path, ImportedCheckpoint* out);

// The tensors of a parsed checkpoint (hearth or GGUF) as sources, in hearth's file order,
// checked against the configuration as bind_model does. The caller keeps the mapping.
std::string import_parsed(const ParsedCheckpoint& parsed, ImportedCheckpoint* out);

// Row `row` of the tensor as it belongs in the hearth file, converted to fp32.
void read_source_row(const SourceTensor& t, uint64_t row, float* out);
