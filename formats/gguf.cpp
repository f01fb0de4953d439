#include "formats/gguf.h"

#include <cstring>
#include <unordered_set>

#include "base/limits.h"
#include "kernels/quant_types.h"
#include "formats/metadata.h"

namespace hearth {

bool is_gguf(const void* data, size_t size) { return size >= 4 && std::memcmp(data, kGgufMagic, 4) == 0; }

std::string read_gguf_file(const void* data, size_t size, ModelFile* out) {
    const uint8_t* base = static_cast<const uint8_t*>(data);
    if (!is_gguf(data, size)) return "not a GGUF file (wrong magic)";
    if (size < 24) return "file is truncated (shorter than the GGUF header)";
    uint32_t version;
    uint64_t n_tensors, n_kv;
    std::memcpy(&version, base + 4, 4);
    std::memcpy(&n_tensors, base + 8, 8);
    std::memcpy(&n_kv, base + 16, 8);
    if (version != 2 && version != 3)
        return "GGUF version " + std::to_string(version) + " is not supported (this build reads versions 2 and 3" +
               (version > 0xffff ? "; a big-endian file?)" : ")");
    out->format = "GGUF v" + std::to_string(version);
    if (n_tensors == 0 || n_tensors > limits::kMaxTensors) return "tensor count " + std::to_string(n_tensors) + " is absurd";

    Metadata& meta = out->meta;
    uint64_t at = 24, used = 0;
    std::string err = meta.parse(base + at, size - at, n_kv, &used);
    if (!err.empty()) return err;
    at += used;

    uint32_t alignment = kGgufDefaultAlignment;
    if (meta.has("general.alignment")) {
        if (!(err = meta.get_u32("general.alignment", &alignment)).empty()) return err;
        if (alignment < 8 || alignment > (1u << 20) || (alignment & (alignment - 1)) != 0)
            return "general.alignment " + std::to_string(alignment) + " is not a power of two from 8 to 1 MiB";
    }

    // Tensor infos: read and checked in full before any offset is trusted.
    struct Info {
        TensorView view;
        uint64_t offset;
    };
    std::vector<Info> infos;
    infos.reserve(size_t(n_tensors));
    std::unordered_set<std::string> seen;
    for (uint64_t i = 0; i < n_tensors; i++) {
        const std::string where = "tensor info " + std::to_string(i);
        uint64_t len;
        if (size - at < 8) return where + " runs past the end of the file";
        std::memcpy(&len, base + at, 8);
        at += 8;
        if (len == 0 || len >= uint64_t(kTensorNameBytes)) return where + " has a name of " + std::to_string(len) + " bytes";
        if (size - at < len) return where + " runs past the end of the file";
        Info info;
        TensorView& t = info.view;
        t.name.assign(reinterpret_cast<const char*>(base + at), size_t(len));
        at += len;
        for (unsigned char ch : t.name)
            if (ch < 0x20 || ch >= 0x7f) return where + " has a name with unprintable bytes";
        const std::string named = "tensor " + t.name;
        if (!seen.insert(t.name).second) return named + " appears twice";
        uint32_t n_dims;
        if (size - at < 4) return named + " runs past the end of the file";
        std::memcpy(&n_dims, base + at, 4);
        at += 4;
        if (n_dims < 1 || n_dims > uint32_t(kMaxDims)) return named + " has " + std::to_string(n_dims) + " dimensions";
        uint64_t ne[kMaxDims];
        if ((size - at) / 8 < n_dims + 2) return named + " runs past the end of the file";  // ne, then type and offset
        std::memcpy(ne, base + at, 8 * size_t(n_dims));
        at += 8 * uint64_t(n_dims);
        std::memcpy(&t.type, base + at, 4);
        std::memcpy(&info.offset, base + at + 4, 8);
        at += 12;
        t.n_dims = int(n_dims);
        for (int d = 0; d < t.n_dims; d++) t.shape[d] = ne[t.n_dims - 1 - d];  // GGUF lists the innermost first
        if (!type_is_known(t.type)) return named + " has unknown type " + std::to_string(t.type);
        if (type_traits(t.type)->use == USE_ACT) return named + " has type " + type_name(t.type) + ", which no file holds";
        t.bytes = tensor_bytes(t.type, t.n_dims, t.shape);
        if (t.bytes == 0)
            return named + " has shape " + shape_string(t.n_dims, t.shape) + ", which does not fit type " + type_name(t.type);
        if (info.offset % alignment != 0) return named + " is not aligned to " + std::to_string(alignment) + " bytes";
        infos.push_back(std::move(info));
    }
    const uint64_t data_start = (at + alignment - 1) / alignment * alignment;
    if (data_start > size) return "tensor data lies outside the file";
    out->tensors.clear();
    for (Info& info : infos) {
        TensorView& t = info.view;
        if (info.offset > size - data_start || t.bytes > size - data_start - info.offset)
            return "tensor " + t.name + " lies outside the file (the file is truncated?)";
        t.data = base + data_start + info.offset;
        out->tensors.push_back(std::move(t));
    }
    return "";
}

}  // namespace hearth
