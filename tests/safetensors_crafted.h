// Crafted Hugging Face folders whose tests look at the configuration, not the weights: a
// safetensors file of F16 zeros with the given tensors (names and shapes, in order); or, for
// tests that need a model of some shape that computes something, of random weights.
#pragma once
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "kernels/fp16.h"
#include "tests/test_helpers.h"

using SafetensorsShapes = std::vector<std::pair<std::string, std::vector<uint64_t>>>;

// The tensors of a one-layer Llama with Hugging Face's names: `vocab` embedding rows of `dim`,
// attention dim x dim, a feed-forward of `inter` (no output matrix: a tied embedding).
inline SafetensorsShapes one_layer_llama_tensors(uint64_t vocab, uint64_t dim, uint64_t inter) {
    const std::string p = "model.layers.0.";
    SafetensorsShapes tensors = {{"model.embed_tokens.weight", {vocab, dim}}, {"model.norm.weight", {dim}},
                                 {p + "input_layernorm.weight", {dim}},       {p + "post_attention_layernorm.weight", {dim}},
                                 {p + "mlp.gate_proj.weight", {inter, dim}},  {p + "mlp.up_proj.weight", {inter, dim}},
                                 {p + "mlp.down_proj.weight", {dim, inter}}};
    for (const char* n : {"q", "k", "v", "o"}) tensors.push_back({p + "self_attn." + n + "_proj.weight", {dim, dim}});
    return tensors;
}

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

// The same file with the values N(0, 0.02) (one-dimensional tensors, the norms' weights: 1).
inline void write_f16_random_safetensors(const std::string& path, const SafetensorsShapes& tensors, uint32_t seed) {
    write_f16_zeros_safetensors(path, tensors);
    std::string file = read_text(path);
    uint64_t header_len = 0;
    std::memcpy(&header_len, file.data(), 8);
    const auto header = nlohmann::json::parse(file.substr(8, header_len));
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 0.02f);
    for (const auto& [name, shape] : tensors) {
        const uint64_t begin = header[name]["data_offsets"][0], end = header[name]["data_offsets"][1];
        for (uint64_t at = 8 + header_len + begin; at < 8 + header_len + end; at += 2) {
            const uint16_t h = hearth::fp32_to_fp16(shape.size() == 1 ? 1.f : nd(rng));
            std::memcpy(&file[at], &h, 2);
        }
    }
    write_file(path, file);
}
