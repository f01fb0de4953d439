// Crafted Hugging Face folders whose tests look at the configuration, not the weights: a
// safetensors file of F16 zeros with the given tensors (names and shapes, in order).
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/test_helpers.h"

using SafetensorsShapes = std::vector<std::pair<std::string, std::vector<uint64_t>>>;

inline void write_f16_zeros_safetensors(const std::string& path, const SafetensorsShapes& tensors) {
    nlohmann::json header = nlohmann::json::object();
    uint64_t at = 0;
    for (const auto& [name, shape] : tensors) {
        uint64_t bytes = 2;
        for (uint64_t d : shape) bytes *= d;
        header[name] = {{"dtype", "F16"}, {"shape", shape}, {"data_offsets", {at, at + bytes}}};
        at += bytes;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // padded as the safetensors library pads it
    const uint64_t len = text.size();
    write_file(path, std::string(reinterpret_cast<const char*>(&len), 8) + text);
    std::filesystem::resize_file(path, 8 + len + at);  // the zeros, without writing them (a sparse file)
}
