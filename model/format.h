// The hearth checkpoint format, version 1. docs/format.md is the specification;
// this header is its C++ spelling. Everything is little-endian.
//
//   [header: 256 bytes][tokenizer: SentencePiece model bytes][tensor table: n × 128 bytes]
//   [padding to 64][tensor data, each tensor starting on a 64-byte boundary]
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config.h"

static constexpr char kCheckpointMagic[8] = {'H', 'E', 'A', 'R', 'T', 'H', 'C', 'K'};
static constexpr uint32_t kCheckpointVersion = 1;
static constexpr uint64_t kTensorAlignment = 64;
static constexpr int kMaxDims = 4;
static constexpr int kTensorNameBytes = 64;

#pragma pack(push, 1)
struct FileHeader {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;  // sizeof(FileHeader); lets a reader skip fields it does not know
    uint32_t dim;
    uint32_t hidden_dim;
    uint32_t n_layers;
    uint32_t n_heads;
    uint32_t n_kv_heads;
    uint32_t head_dim;
    uint32_t vocab_size;
    uint32_t max_seq_len;
    uint32_t bos_id;
    uint32_t eos_id;
    uint32_t flags;  // bit 0: output projection shares token_embd.weight
    float rope_theta;
    float rms_eps;
    uint32_t n_tensors;
    uint64_t tokenizer_offset;
    uint64_t tokenizer_bytes;
    uint64_t tensor_table_offset;
    uint64_t data_offset;
    uint64_t file_bytes;  // total file size: a truncated copy is caught at once
    char arch[32];           // "llama"
    char chat_template[32];  // name of a built-in chat template, "" when unknown
    uint8_t reserved[80];
};
struct TensorEntry {
    char name[kTensorNameBytes];  // NUL-padded
    uint32_t type;                // TensorType (ggml's numbering)
    uint32_t n_dims;
    uint64_t shape[kMaxDims];     // outermost first, as in PyTorch: a matrix is [rows, cols]
    uint64_t offset;              // from the start of the file
    uint64_t bytes;
    uint64_t reserved;
};
#pragma pack(pop)
static_assert(sizeof(FileHeader) == 256, "header layout");
static_assert(sizeof(TensorEntry) == 128, "tensor entry layout");

static constexpr uint32_t kFlagTiedEmbeddings = 1;

// A tensor as the loader hands it out: a view into the mapped file.
struct TensorView {
    std::string name;
    uint32_t type = 0;
    int n_dims = 0;
    uint64_t shape[kMaxDims] = {1, 1, 1, 1};
    const void* data = nullptr;
    uint64_t bytes = 0;
    uint64_t rows() const;  // product of all dims but the last
    uint64_t cols() const { return n_dims ? shape[n_dims - 1] : 1; }
};

// Parses and checks a whole checkpoint held in memory (normally a memory map).
// Every offset and size is checked against `size` before use. Returns "" on success,
// else a one-line description of what is wrong.
struct ParsedCheckpoint {
    ModelConfig config;
    const void* tokenizer = nullptr;
    size_t tokenizer_bytes = 0;
    std::vector<TensorView> tensors;
};
std::string parse_checkpoint(const void* data, size_t size, ParsedCheckpoint* out);

// Bytes needed to store a tensor of this type and shape, or 0 when the shape does not
// fit the type (e.g. a row length that is not a multiple of the block size).
uint64_t tensor_bytes(uint32_t type, int n_dims, const uint64_t* shape);
