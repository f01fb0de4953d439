// Reads the safetensors format (Hugging Face): an 8-byte header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the raw little-endian data.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "formats/mapped_file.h"

namespace hearth {

struct SafeTensor {
    std::string dtype;  // "F32", "F16", "BF16", ...
    std::vector<uint64_t> shape;
    const uint8_t* data = nullptr;  // at any byte: not necessarily aligned to the element size
    uint64_t bytes = 0;
};

// Parses a whole safetensors file held in memory; the views point into it. Every length,
// offset and shape is checked against the bytes before use. "" or a one-line reason (without
// the file's name).
std::string parse_safetensors(const uint8_t* data, uint64_t size, std::map<std::string, SafeTensor>* out);

class SafetensorsFile {
public:
    // Maps the file and parses it. "" on success, else a reason naming the file.
    std::string open(const std::string& path);
    const std::map<std::string, SafeTensor>& tensors() const { return tensors_; }
    const FileId& id() const { return map_.id(); }

private:
    MappedFile map_;
    std::map<std::string, SafeTensor> tensors_;
};

}  // namespace hearth
