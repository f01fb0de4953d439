// The hearth checkpoint format. docs/format.md is the specification; this header is its C++
// spelling. Everything is little-endian.
//
// Version 2 (written since the GGUF importer):
//   [header: 64 bytes][metadata: typed key/values, GGUF's encoding (formats/metadata.h)]
//   [tensor table: n × 128 bytes][padding to 64][tensor data, each tensor on a 64-byte boundary]
// Version 1 (still read):
//   [header: 256 bytes with the hyperparameters][tokenizer: SentencePiece model bytes]
//   [tensor table: n × 128 bytes][padding to 64][tensor data]
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "formats/metadata.h"
#include "kernels/quant_types.h"

namespace hearth {

static constexpr char kCheckpointMagic[8] = {'H', 'E', 'A', 'R', 'T', 'H', 'C', 'K'};
static constexpr uint32_t kCheckpointVersion = 2;  // what the writer writes
static constexpr uint64_t kTensorAlignment = 64;
static constexpr int kMaxDims = 4;
static constexpr int kTensorNameBytes = 64;

#pragma pack(push, 1)
struct FileHeaderV2 {
    char magic[8];
    uint32_t version;       // 2
    uint32_t header_bytes;  // sizeof(FileHeaderV2)
    uint64_t n_metadata;    // key/value entries
    uint64_t metadata_offset;
    uint64_t n_tensors;
    uint64_t tensor_table_offset;  // the metadata ends here
    uint64_t data_offset;          // start of tensor data, a multiple of 64
    uint64_t file_bytes;           // total file size: a truncated copy is caught at once
};
struct FileHeaderV1 {
    char magic[8];
    uint32_t version;  // 1
    uint32_t header_bytes;
    uint32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, head_dim, vocab_size, max_seq_len;
    uint32_t bos_id, eos_id;  // 0xffffffff: none
    uint32_t flags;           // bit 0: output projection shares token_embd.weight
    float rope_theta, rms_eps;
    uint32_t n_tensors;
    uint64_t tokenizer_offset, tokenizer_bytes, tensor_table_offset, data_offset, file_bytes;
    char arch[32];
    char chat_template[32];
    uint8_t reserved[80];
};
struct TensorEntry {
    char name[kTensorNameBytes];  // NUL-padded
    uint32_t type;                // TensorType (ggml's numbering)
    uint32_t n_dims;
    uint64_t shape[kMaxDims];  // outermost first, as in PyTorch: a matrix is [rows, cols]
    uint64_t offset;           // from the start of the file
    uint64_t bytes;
    uint64_t reserved;
};
#pragma pack(pop)
static_assert(sizeof(FileHeaderV2) == 64, "v2 header layout");
static_assert(sizeof(FileHeaderV1) == 256, "v1 header layout");
static_assert(sizeof(TensorEntry) == 128, "tensor entry layout");

// A tensor as the loader hands it out: a view into the mapped file.
struct TensorView {
    std::string name;
    uint32_t type = 0;             // the element type (TensorType), never an interleaved id
    Layout layout = Layout::rows;  // rows_x8: a matrix whose rows are interleaved by 8
    int n_dims = 0;
    uint64_t shape[kMaxDims] = {1, 1, 1, 1};
    const void* data = nullptr;
    uint64_t bytes = 0;
    uint64_t rows() const;  // product of all dims but the last
    uint64_t cols() const { return n_dims ? shape[n_dims - 1] : 1; }
};

// A model file as its format's reader hands it out (hearth here, GGUF in formats/gguf.h): the
// key/values and the tensors, every offset and size checked against the file, nothing
// interpreted. What the keys mean, the configuration and the tokenizer, is model/'s to say
// (model/checkpoint.h).
struct ModelFile {
    std::string format;  // "hearth v1", "hearth v2", "GGUF v3", ...
    Metadata meta;       // hearth v2 and GGUF: hyperparameters and tokenizer as typed key/values
    std::vector<TensorView> tensors;
    // hearth v1 only: the fixed header with the hyperparameters, and the SentencePiece model.
    std::optional<FileHeaderV1> v1_header;
    std::string v1_sentencepiece;
};

// A fixed-size char field of a header, as a string, without trusting a NUL to be there.
std::string header_string(const char* field, size_t n);

// A hearth file stores a matrix whose rows are interleaved by 8 under a type id of its own,
// 1000 + its type (q4_0x8 1002, q8_0x8 1008, q4_Kx8 1012: docs/format.md); in memory the type
// is the plain one and TensorView::layout says rows_x8. These two are the only translation.
// The file's id of (type, layout) in *id; false when a hearth file cannot hold that pair.
bool hearth_type_id(uint32_t type, Layout layout, uint32_t* id);
// The (type, layout) of a file's id; false for an id a hearth file may not hold.
bool hearth_type_from_id(uint32_t id, uint32_t* type, Layout* layout);

// A hearth checkpoint, version 1 or 2. Every offset and size is checked against `size` before
// use. Returns "" on success, else a one-line description of what is wrong.
std::string read_hearth_file(const void* data, size_t size, ModelFile* out);

// Bytes needed to store a tensor of this type and shape, or 0 when the type is unknown or
// the shape does not fit it (a zero or absurd dimension, a row length that is not a
// multiple of the block size, a total beyond 1 TiB). Never overflows.
uint64_t tensor_bytes(uint32_t type, int n_dims, const uint64_t* shape);

// "[a, b]"
std::string shape_string(int n_dims, const uint64_t* shape);

}  // namespace hearth
