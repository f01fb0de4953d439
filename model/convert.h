// Converting an imported checkpoint into a hearth file of a chosen type or mix of types,
// with per-tensor size and quantization error statistics.
#pragma once
#include <cstdint>
#include <string>

#include "import.h"

// What the user asked for: one type for every matrix, or a named mix.
enum class OutputMix {
    F32,
    F16,
    Q8_0,
    Q4_0,
    Q4_K,
    Q6_K,
    Q4_K_M,  // llama.cpp's Q4_K_M: Q4_K, with Q6_K where quantization hurts most
    Keep,    // every matrix keeps its type; one hearth cannot compute with gets the nearest it can
};

// "f32", "q4_k_m", ... (case-insensitive). False for an unknown name.
bool parse_output_mix(const std::string& name, OutputMix* out);
const char* output_mix_name(OutputMix mix);

// The type a tensor gets under a mix. 1-D tensors stay f32. A row length the chosen block
// size does not divide falls back to q8_0 (32) and then to f16, as llama.cpp does.
uint32_t tensor_type_for(OutputMix mix, const SourceTensor& t, int n_layers);

// Writes the checkpoint (atomically: see CheckpointWriter). Prints a line per tensor
// unless quiet, and always a summary with the total size and bits per weight.
std::string convert_checkpoint(const ImportedCheckpoint& src, const std::string& out_path, OutputMix mix, bool quiet);
