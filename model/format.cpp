#include "format.h"

#include <cmath>
#include <cstring>
#include <set>

#include "../kernels/quant_types.h"

uint64_t TensorView::rows() const {
    uint64_t r = 1;
    for (int i = 0; i + 1 < n_dims; i++) r *= shape[i];
    return r;
}

uint64_t tensor_bytes(uint32_t type, int n_dims, const uint64_t* shape) {
    if (n_dims < 1 || n_dims > kMaxDims || !type_is_storage(type)) return 0;
    const uint64_t limit = uint64_t(1) << 40;  // 1 TiB: no real tensor is larger
    uint64_t rows = 1;
    for (int i = 0; i + 1 < n_dims; i++) {
        if (shape[i] == 0 || shape[i] > limit) return 0;
        rows *= shape[i];
        if (rows > limit) return 0;
    }
    uint64_t cols = shape[n_dims - 1];
    if (cols == 0 || cols > limit || cols % type_block_size(type) != 0) return 0;
    uint64_t row_bytes = cols / type_block_size(type) * type_block_bytes(type);
    if (row_bytes > limit / rows) return 0;
    return row_bytes * rows;
}

std::string validate_config(const ModelConfig& c) {
    auto in = [](long v, long lo, long hi) { return v >= lo && v <= hi; };
    if (!in(c.dim, 1, 1 << 16)) return "dim " + std::to_string(c.dim) + " is out of range";
    if (!in(c.hidden_dim, 1, 1 << 18)) return "hidden dim " + std::to_string(c.hidden_dim) + " is out of range";
    if (!in(c.n_layers, 1, 1024)) return "layer count " + std::to_string(c.n_layers) + " is out of range";
    if (!in(c.n_heads, 1, 1024)) return "head count " + std::to_string(c.n_heads) + " is out of range";
    if (!in(c.n_kv_heads, 1, c.n_heads) || c.n_heads % c.n_kv_heads != 0)
        return "kv head count " + std::to_string(c.n_kv_heads) + " does not divide head count " +
               std::to_string(c.n_heads);
    if (!in(c.head_dim, 2, 1024) || c.head_dim % 2 != 0)
        return "head dim " + std::to_string(c.head_dim) + " is not an even number in range";
    if (!in(c.vocab_size, 1, 1 << 22)) return "vocab size " + std::to_string(c.vocab_size) + " is out of range";
    if (!in(c.max_seq_len, 1, 1 << 24)) return "context length " + std::to_string(c.max_seq_len) + " is out of range";
    if (!in(c.bos_id, -1, c.vocab_size - 1) || !in(c.eos_id, -1, c.vocab_size - 1))
        return "BOS/EOS ids are outside the vocabulary";
    if (!std::isfinite(c.rope_theta) || c.rope_theta <= 1.0f) return "rope theta is not a number > 1";
    if (!std::isfinite(c.rms_eps) || c.rms_eps <= 0.0f || c.rms_eps > 1.0f) return "rms eps is not in (0, 1]";
    if (c.arch != "llama") return "architecture '" + c.arch + "' is not supported (only llama)";
    return "";
}

// A fixed-size char field from the file, as a string, without trusting a NUL to be there.
static std::string field_string(const char* p, size_t n) {
    size_t len = 0;
    while (len < n && p[len]) len++;
    return std::string(p, len);
}

std::string parse_checkpoint(const void* data, size_t size, ParsedCheckpoint* out) {
    const uint8_t* base = static_cast<const uint8_t*>(data);
    if (size < sizeof(kCheckpointMagic) || std::memcmp(base, kCheckpointMagic, sizeof(kCheckpointMagic)) != 0)
        return "not a hearth checkpoint (wrong magic)";
    if (size < sizeof(FileHeader)) return "file is truncated (shorter than the header)";
    FileHeader h;
    std::memcpy(&h, base, sizeof h);
    if (h.version != kCheckpointVersion)
        return "checkpoint version " + std::to_string(h.version) + " is not supported (this build reads version " +
               std::to_string(kCheckpointVersion) + ")";
    if (h.header_bytes != sizeof(FileHeader)) return "header size field is wrong";
    if (h.file_bytes != size)
        return "file is " + std::to_string(size) + " bytes but its header says " + std::to_string(h.file_bytes) +
               (size < h.file_bytes ? " (truncated)" : "");

    ModelConfig& c = out->config;
    auto u = [](uint32_t v) { return v > (1u << 30) ? -1 : int(v); };  // absurd values fail validation
    c.dim = u(h.dim);
    c.hidden_dim = u(h.hidden_dim);
    c.n_layers = u(h.n_layers);
    c.n_heads = u(h.n_heads);
    c.n_kv_heads = u(h.n_kv_heads);
    c.head_dim = u(h.head_dim);
    c.vocab_size = u(h.vocab_size);
    c.max_seq_len = u(h.max_seq_len);
    c.bos_id = h.bos_id == 0xffffffffu ? -1 : u(h.bos_id);
    c.eos_id = h.eos_id == 0xffffffffu ? -1 : u(h.eos_id);
    c.tied_embeddings = (h.flags & kFlagTiedEmbeddings) != 0;
    c.rope_theta = h.rope_theta;
    c.rms_eps = h.rms_eps;
    c.arch = field_string(h.arch, sizeof h.arch);
    c.chat_template = field_string(h.chat_template, sizeof h.chat_template);
    std::string err = validate_config(c);
    if (!err.empty()) return "bad model configuration: " + err;

    // Offsets are compared by subtraction from `size` so that no sum can overflow.
    if (h.tokenizer_offset < sizeof(FileHeader) || h.tokenizer_offset > size ||
        h.tokenizer_bytes > size - h.tokenizer_offset || h.tokenizer_bytes == 0)
        return "tokenizer section lies outside the file";
    out->tokenizer = base + h.tokenizer_offset;
    out->tokenizer_bytes = h.tokenizer_bytes;

    if (h.n_tensors == 0 || h.n_tensors > 100000) return "tensor count " + std::to_string(h.n_tensors) + " is absurd";
    uint64_t table_bytes = uint64_t(h.n_tensors) * sizeof(TensorEntry);
    if (h.tensor_table_offset < sizeof(FileHeader) || h.tensor_table_offset > size ||
        table_bytes > size - h.tensor_table_offset)
        return "tensor table lies outside the file";
    if (h.data_offset % kTensorAlignment != 0 || h.data_offset > size) return "tensor data offset is invalid";

    std::set<std::string> seen;
    out->tensors.clear();
    for (uint32_t i = 0; i < h.n_tensors; i++) {
        TensorEntry e;
        std::memcpy(&e, base + h.tensor_table_offset + uint64_t(i) * sizeof(TensorEntry), sizeof e);
        TensorView t;
        t.name = field_string(e.name, sizeof e.name);
        std::string where = "tensor " + std::to_string(i) + " ('" + t.name + "')";
        if (t.name.empty() || t.name.size() == sizeof e.name) return where + " has no valid name";
        if (!seen.insert(t.name).second) return where + " appears twice";
        if (!type_is_storage(e.type)) return where + " has unknown element type " + std::to_string(e.type);
        if (e.n_dims < 1 || e.n_dims > kMaxDims) return where + " has " + std::to_string(e.n_dims) + " dimensions";
        t.type = e.type;
        t.n_dims = int(e.n_dims);
        for (int d = 0; d < kMaxDims; d++) t.shape[d] = d < t.n_dims ? e.shape[d] : 1;
        uint64_t expect = tensor_bytes(t.type, t.n_dims, t.shape);
        if (expect == 0) return where + " has a shape that does not fit its type";
        if (e.bytes != expect) return where + " says " + std::to_string(e.bytes) + " bytes, its shape needs " + std::to_string(expect);
        if (e.offset % kTensorAlignment != 0) return where + " is not 64-byte aligned";
        if (e.offset < h.data_offset || e.offset > size || e.bytes > size - e.offset)
            return where + " runs past the end of the file";
        t.data = base + e.offset;
        t.bytes = e.bytes;
        out->tensors.push_back(std::move(t));
    }
    return "";
}
