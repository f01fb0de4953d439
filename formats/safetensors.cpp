#include "formats/safetensors.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "base/json_input.h"
#include "base/limits.h"
#include "base/printable.h"

namespace hearth {

static uint64_t dtype_bytes(const std::string& dtype) {
    if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
    if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
    if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
    if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
    return 0;
}

std::string SafetensorsFile::open(const std::string& path) {
    std::string err = map_.open(path);
    if (!err.empty()) return err;
    err = parse_safetensors(static_cast<const uint8_t*>(map_.data()), map_.size(), &tensors_);
    return err.empty() ? "" : path + ": " + err;
}

std::string parse_safetensors(const uint8_t* base, uint64_t size, std::map<std::string, SafeTensor>* tensors) {
    tensors->clear();
    if (size < 8) return "too short for a safetensors file";
    uint64_t header_len;
    std::memcpy(&header_len, base, 8);
    if (header_len < 2 || header_len > size - 8 || header_len > limits::kSafetensorsHeaderBytes)
        return "safetensors header length " + std::to_string(header_len) + " does not fit the file";
    const uint8_t* data = base + 8 + header_len;
    const uint64_t data_size = size - 8 - header_len;
    nlohmann::json header;
    std::string err = parse_json(std::string_view(reinterpret_cast<const char*>(base) + 8, header_len), &header);
    if (!err.empty()) return "bad safetensors header: " + err;
    // Each tensor's byte range and its name as printed: checked together after the header.
    std::vector<std::tuple<uint64_t, uint64_t, std::string>> ranges;
    try {
        if (!header.is_object()) return "safetensors header is not a JSON object";
        for (auto& [key, info] : header.items()) {
            if (key == "__metadata__") continue;
            const std::string name = in_quotes(key);
            if (!info.is_object() || !info.contains("dtype") || !info["dtype"].is_string() || !info.contains("shape") ||
                !info["shape"].is_array() || info["shape"].size() > 8 || !info.contains("data_offsets") ||
                !info["data_offsets"].is_array() || info["data_offsets"].size() != 2)
                return "tensor " + name + " is not described by dtype, shape and data_offsets";
            SafeTensor t;
            t.dtype = info["dtype"].get<std::string>();
            uint64_t numel = 1;
            for (auto& d : info["shape"]) {
                if (!d.is_number_unsigned()) return "tensor " + name + " has a shape that is not whole numbers";
                uint64_t n = d.get<uint64_t>();
                if (n != 0 && numel > limits::kSafetensorsElements / n) return "tensor " + name + " has an absurd shape";
                numel *= n;
                t.shape.push_back(n);
            }
            auto offsets = info["data_offsets"];
            if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
                return "tensor " + name + " has data_offsets that are not whole numbers";
            uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
            if (begin > end || end > data_size) return "tensor " + name + " lies outside the file (truncated?)";
            uint64_t elem = dtype_bytes(t.dtype);
            if (elem == 0) return "tensor " + name + " has unknown dtype " + in_quotes(t.dtype);
            if (end - begin != numel * elem) return "tensor " + name + " byte range does not match its shape";
            // The data may lie at any byte: the format does not require alignment, and files
            // written before safetensors 0.3.1 or by MLX's writer have unpadded headers and
            // tensors packed back to back. Readers copy rows that are not aligned
            // (read_source_row), so nothing is refused for it.
            t.data = data + begin;
            t.bytes = end - begin;
            (*tensors)[key] = std::move(t);
            ranges.emplace_back(begin, end, name);
        }
    } catch (const std::exception& e) {
        return std::string("bad safetensors header: ") + e.what();
    }
    // The format's spec: "the byte buffer needs to be entirely indexed, and cannot contain
    // holes", so that no file is also a file of another format (a polyglot). Its reference
    // reader sorts the ranges and refuses one that does not start where the previous ended
    // (InvalidOffset) and data past the last (MetadataIncompleteBuffer); so does this one.
    std::sort(ranges.begin(), ranges.end());
    uint64_t covered = 0;
    const std::string* previous = nullptr;
    for (const auto& [begin, end, name] : ranges) {
        if (begin > covered)
            return "tensor " + name + " starts at byte " + std::to_string(begin) + " of the data, leaving a hole after byte " +
                   std::to_string(covered) + " (the format requires the tensors to cover the data exactly)";
        if (begin < covered)
            return "tensor " + name + " (bytes " + std::to_string(begin) + ".." + std::to_string(end) +
                   " of the data) overlaps tensor " + *previous + ", which ends at byte " + std::to_string(covered) +
                   ": tensors must not overlap";
        covered = end;
        previous = &name;
    }
    if (covered != data_size)
        return std::to_string(data_size - covered) + " bytes follow the data of the last tensor" +
               (ranges.empty() ? std::string() : " (" + std::get<2>(ranges.back()) + ")") +
               " (the format requires the tensors to cover the data exactly)";
    return "";
}

}  // namespace hearth
