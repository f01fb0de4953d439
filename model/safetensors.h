// Reads the safetensors format (Hugging Face): an 8-byte header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the raw little-endian data.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "mapped_file.h"

struct SafeTensor {
    std::string dtype;  // "F32", "F16", "BF16", ...
    std::vector<uint64_t> shape;
    const uint8_t* data = nullptr;
    uint64_t bytes = 0;
};

class SafetensorsFile {
public:
    // Maps the file and checks every tensor's byte range against it. "" on success.
    std::string open(const std::string& path);
    const std::map<std::string, SafeTensor>& tensors() const { return tensors_; }

private:
    MappedFile map_;
    std::map<std::string, SafeTensor> tensors_;
};
