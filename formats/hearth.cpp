#include "formats/hearth.h"

#include <cmath>
#include <cstring>
#include <unordered_set>

#include "base/limits.h"
#include "base/printable.h"
#include "formats/metadata.h"
#include "kernels/quant_types.h"

namespace hearth {

uint64_t TensorView::rows() const {
    uint64_t r = 1;
    for (int i = 0; i + 1 < n_dims; i++) r *= shape[i];
    return r;
}

uint64_t tensor_bytes(uint32_t type, int n_dims, const uint64_t* shape) {
    if (n_dims < 1 || n_dims > kMaxDims || !type_is_known(type)) return 0;
    const uint64_t limit = limits::kTensorBytes;
    uint64_t rows = 1;
    for (int i = 0; i + 1 < n_dims; i++) {
        if (shape[i] == 0 || shape[i] > limit / rows) return 0;  // divided, not multiplied: no overflow
        rows *= shape[i];
    }
    const uint64_t cols = shape[n_dims - 1];
    if (cols == 0 || cols > limit || cols % uint64_t(type_block_size(type)) != 0) return 0;
    const uint64_t row_bytes = cols / uint64_t(type_block_size(type)) * type_block_bytes(type);
    if (row_bytes > limit / rows) return 0;
    return row_bytes * rows;
}

std::string shape_string(int n_dims, const uint64_t* shape) {
    std::string s = "[";
    for (int i = 0; i < n_dims; i++) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::string header_string(const char* p, size_t n) {
    size_t len = 0;
    while (len < n && p[len]) len++;
    return std::string(p, len);
}

// The interleaved ids of hearth files (docs/format.md).
static const struct {
    uint32_t id, type;
} kInterleavedIds[] = {{1002, TYPE_Q4_0}, {1008, TYPE_Q8_0}, {1012, TYPE_Q4_K}, {1013, TYPE_Q5_K}};

bool hearth_type_id(uint32_t type, Layout layout, uint32_t* id) {
    if (layout == Layout::rows) {
        *id = type;
        return type_is_storage(type);
    }
    for (const auto& i : kInterleavedIds)
        if (i.type == type) return *id = i.id, true;
    return false;
}

bool hearth_type_from_id(uint32_t id, uint32_t* type, Layout* layout) {
    for (const auto& i : kInterleavedIds)
        if (i.id == id) return *type = i.type, *layout = Layout::rows_x8, true;
    *type = id;
    *layout = Layout::rows;
    uint32_t same;
    return hearth_type_id(id, Layout::rows, &same);
}

// The tensor table of either version: n entries at table_offset, data at or after data_offset.
static std::string parse_tensor_table(const uint8_t* base, size_t size, uint64_t n, uint64_t table_offset, uint64_t data_offset,
                                      std::vector<TensorView>* out) {
    if (n == 0 || n > limits::kMaxTensors) return "tensor count " + std::to_string(n) + " is absurd";
    if (table_offset > size || n * sizeof(TensorEntry) > size - table_offset) return "tensor table lies outside the file";
    if (data_offset % kTensorAlignment != 0 || data_offset > size || data_offset < table_offset + n * sizeof(TensorEntry))
        return "tensor data offset is invalid";
    std::unordered_set<std::string> seen;
    out->clear();
    for (uint64_t i = 0; i < n; i++) {
        TensorEntry e;
        std::memcpy(&e, base + table_offset + i * sizeof(TensorEntry), sizeof e);
        TensorView t;
        t.name = header_string(e.name, sizeof e.name);
        bool printable = !t.name.empty() && t.name.size() < sizeof e.name;
        for (unsigned char ch : t.name) printable = printable && ch >= 0x20 && ch < 0x7f;
        if (!printable) return "tensor " + std::to_string(i) + " has no valid name";
        const std::string where = "tensor " + std::to_string(i) + " (" + in_quotes(t.name) + ")";
        if (!seen.insert(t.name).second) return where + " appears twice";
        if (!hearth_type_from_id(e.type, &t.type, &t.layout))
            return where + " has element type " + std::to_string(e.type) + ", not one a checkpoint may hold";
        if (e.n_dims < 1 || e.n_dims > kMaxDims) return where + " has " + std::to_string(e.n_dims) + " dimensions";
        if (t.layout == Layout::rows_x8 && e.n_dims != 2) return where + " has interleaved rows but is not a matrix";
        t.n_dims = int(e.n_dims);
        for (int d = 0; d < kMaxDims; d++) t.shape[d] = d < t.n_dims ? e.shape[d] : 1;
        const uint64_t expect = tensor_bytes(t.type, t.n_dims, t.shape);
        if (expect == 0) return where + " has a shape that does not fit its type";
        if (e.bytes != expect)
            return where + " says " + std::to_string(e.bytes) + " bytes, its shape needs " + std::to_string(expect);
        if (e.offset % kTensorAlignment != 0) return where + " is not 64-byte aligned";
        if (e.offset < data_offset || e.offset > size || e.bytes > size - e.offset)
            return where + " lies outside the tensor data";
        t.data = base + e.offset;
        t.bytes = e.bytes;
        out->push_back(std::move(t));
    }
    return "";
}

static std::string read_v1(const uint8_t* base, size_t size, ModelFile* out) {
    if (size < sizeof(FileHeaderV1)) return "file is truncated (shorter than the header)";
    FileHeaderV1 h;
    std::memcpy(&h, base, sizeof h);
    if (h.header_bytes != sizeof(FileHeaderV1)) return "header size field is wrong";
    if (h.file_bytes != size)
        return "file is " + std::to_string(size) + " bytes but its header says " + std::to_string(h.file_bytes) +
               (size < h.file_bytes ? " (truncated)" : "");
    out->v1_header = h;
    // Offsets are compared by subtraction from `size` so that no sum can overflow.
    if (h.tokenizer_offset < sizeof(FileHeaderV1) || h.tokenizer_offset > size || h.tokenizer_bytes > size - h.tokenizer_offset ||
        h.tokenizer_bytes == 0)
        return "tokenizer section lies outside the file";
    out->v1_sentencepiece.assign(reinterpret_cast<const char*>(base + h.tokenizer_offset), h.tokenizer_bytes);
    if (h.tensor_table_offset < sizeof(FileHeaderV1)) return "tensor table lies outside the file";
    return parse_tensor_table(base, size, h.n_tensors, h.tensor_table_offset, h.data_offset, &out->tensors);
}

static std::string read_v2(const uint8_t* base, size_t size, ModelFile* out) {
    if (size < sizeof(FileHeaderV2)) return "file is truncated (shorter than the header)";
    FileHeaderV2 h;
    std::memcpy(&h, base, sizeof h);
    if (h.header_bytes != sizeof(FileHeaderV2)) return "header size field is wrong";
    if (h.file_bytes != size)
        return "file is " + std::to_string(size) + " bytes but its header says " + std::to_string(h.file_bytes) +
               (size < h.file_bytes ? " (truncated)" : "");
    if (h.metadata_offset != sizeof(FileHeaderV2) || h.tensor_table_offset < h.metadata_offset || h.tensor_table_offset > size)
        return "metadata section lies outside the file";
    uint64_t used = 0;
    const uint64_t meta_bytes = h.tensor_table_offset - h.metadata_offset;
    std::string err = out->meta.parse(base + h.metadata_offset, meta_bytes, h.n_metadata, &used);
    if (!err.empty()) return err;
    if (used != meta_bytes) return "metadata section has " + std::to_string(meta_bytes - used) + " bytes its entries do not use";
    return parse_tensor_table(base, size, h.n_tensors, h.tensor_table_offset, h.data_offset, &out->tensors);
}

std::string read_hearth_file(const void* data, size_t size, ModelFile* out) {
    const uint8_t* base = static_cast<const uint8_t*>(data);
    if (size < sizeof(kCheckpointMagic) + 4 || std::memcmp(base, kCheckpointMagic, sizeof(kCheckpointMagic)) != 0)
        return "not a hearth checkpoint (wrong magic)";
    uint32_t version;
    std::memcpy(&version, base + sizeof(kCheckpointMagic), 4);
    out->format = "hearth v" + std::to_string(version);
    if (version == 1) return read_v1(base, size, out);
    if (version == 2) return read_v2(base, size, out);
    return "checkpoint version " + std::to_string(version) + " is not supported (this build reads versions 1 and 2)";
}

}  // namespace hearth
