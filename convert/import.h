// Reads the checkpoints people have into one in-memory description that quantize
// converts: a configuration, the tokenizer bytes, and source tensors under hearth names.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "formats/hearth.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "formats/mapped_file.h"
#include "formats/safetensors.h"

namespace hearth {

struct SourceTensor {
    std::string name;   // hearth name, e.g. "blk.0.attn_q.weight"
    uint32_t type = 0;  // element type of `data` (TensorType)
    Layout layout = Layout::rows;
    int n_dims = 0;
    uint64_t shape[kMaxDims] = {1, 1, 1, 1};
    const uint8_t* data = nullptr;
    // > 0: the rows are in Hugging Face's rotate-half order for this many heads and are
    // reordered into hearth's adjacent-pair order as they are read (see docs/format.md).
    int hf_rope_heads = 0;
    // > 0: llama2.c's int8 groups (import_llama2c). `data` holds the tensor's int8 values and
    // element i of the flattened tensor is data[i] times the little-endian fp32 at
    // group_scales + 4 * (i / group_size). Groups may span rows.
    uint64_t group_size = 0;
    const uint8_t* group_scales = nullptr;
    uint64_t rows() const;
    uint64_t cols() const { return shape[n_dims - 1]; }
};

struct ImportedCheckpoint {
    std::string source;  // the folder or file it was read from, as given
    ModelConfig config;
    TokenizerSpec tokenizer;
    std::vector<SourceTensor> tensors;
    // Every file read (weights, configuration, tokenizer, index), by identity (device and
    // inode, whatever path reached it), so that quantize never writes over one of them.
    struct Input {
        std::string path;
        FileId id;
    };
    std::vector<Input> inputs;
    // Owners of the memory `data` points into.
    std::vector<std::unique_ptr<SafetensorsFile>> safetensors;
    std::unique_ptr<MappedFile> mapped;
};

// A Hugging Face folder: config.json (LlamaForCausalLM, MistralForCausalLM, Qwen3ForCausalLM), model.safetensors or shards
// listed in model.safetensors.index.json, tokenizer.model. "" on success.
std::string import_hf_folder(const std::string& dir, ImportedCheckpoint* out);

// The configuration a Hugging Face config.json describes. "" or why it is not one hearth runs.
std::string config_from_hf_json(const std::string& text, ModelConfig* c);

// A hearth checkpoint or a GGUF file (to convert it to another type or format).
std::string import_model_file(const std::string& path, ImportedCheckpoint* out);

// The tensors of a parsed checkpoint (hearth or GGUF) as sources, in hearth's file order,
// checked against the configuration as bind_model does. The caller keeps the mapping.
std::string import_parsed(const ParsedCheckpoint& parsed, ImportedCheckpoint* out);

// A karpathy/llama2.c checkpoint: the legacy file, or "ak42" version 1 (fp32) or 2 (int8 in
// groups, each with an fp32 scale). `tokenizer_path`: its SentencePiece tokenizer.model, whose
// piece count must equal the vocabulary size; "" for none (the checkpoint then runs on ids
// only). Every size in the header is checked against the file's before anything is read.
std::string import_llama2c(const std::string& path, const std::string& tokenizer_path, ImportedCheckpoint* out);
// The same for a file's bytes in memory (the sources point into them), without a tokenizer.
std::string parse_llama2c(const uint8_t* data, uint64_t size, ImportedCheckpoint* out);

// Which llama2.c format a file is in: `ak42` by its magic; `legacy` (which has none) when its
// first 28 bytes are a configuration hearth accepts whose tensors fill the file exactly. For a
// file that is neither but whose first bytes read as a sane legacy header, `why_not` says why.
enum class Llama2cFormat { none, legacy, ak42 };
Llama2cFormat detect_llama2c(const std::string& path, std::string* why_not = nullptr);

// Row `row` of the tensor as it belongs in the hearth file, converted to fp32.
void read_source_row(const SourceTensor& t, uint64_t row, float* out);

}  // namespace hearth
