// Converting an imported checkpoint into a hearth or GGUF file of a chosen type or mix of
// types, with per-tensor size and quantization error statistics.
#pragma once
#include <cstdint>
#include <string>

#include "formats/writer.h"
#include "convert/import.h"

namespace hearth {

// What the user asked for: one type for every matrix, or a named mix.
enum class OutputMix {
    F32,
    F16,
    Q8_0,
    Q4_0,
    Q4_K,
    Q6_K,
    Q5_K,
    Q4_K_M,  // llama.cpp's Q4_K_M: Q4_K, with Q6_K where quantization hurts most
    Q5_K_M,  // llama.cpp's Q5_K_M: the same with Q5_K
    Keep,    // every matrix keeps its type (for hearth, one run cannot compute with gets the nearest it can)
};

// "f32", "q4_k_m", ... (case-insensitive). False for an unknown name.
bool parse_output_mix(const std::string& name, OutputMix* out);
const char* output_mix_name(OutputMix mix);

// The type a tensor gets under a mix in a file of the format. 1-D tensors stay f32. A row
// length the chosen block size does not divide falls back to q8_0 (32) and then to f16, as
// llama.cpp does. Under keep, a GGUF file keeps every type as it is (llama.cpp computes with
// all of them); a hearth file gets the nearest type run computes with.
// With tied embeddings the token embedding is the output projection too and gets the
// output's type, as llama.cpp's quantizer gives it.
uint32_t tensor_type_for(OutputMix mix, const SourceTensor& t, int n_layers, CheckpointFormat format = CheckpointFormat::hearth,
                         bool tied_embeddings = false);
// The layout a tensor of that type gets in a file of the format: rows_x8 for the matrices of a
// hearth file whose type the kernels read so (kernel_layout), but the token embedding.
Layout tensor_layout_for(const std::string& name, uint32_t type, CheckpointFormat format = CheckpointFormat::hearth);

// general.file_type of a GGUF file: llama.cpp's LLAMA_FTYPE for the mix (include/llama.h);
// for keep, the one llama.cpp's loader would guess from the most common type of the
// matrices. -1 when there is none.
int llama_file_type(OutputMix mix, const std::vector<TensorSpec>& tensors);

// Writes the file (atomically: see CheckpointWriter). Prints a line per tensor unless quiet,
// and always a summary with the total size and bits per weight.
std::string convert_checkpoint(const ImportedCheckpoint& src, const std::string& out_path, CheckpointFormat format, OutputMix mix,
                               bool quiet);

}  // namespace hearth
