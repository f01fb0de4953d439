// libFuzzer target: a llama2.c checkpoint (legacy, ak42 version 1 or 2) as quantize imports it,
// every row of every tensor then read as quantize reads it.
#include <vector>

#include "convert/import.h"

using namespace hearth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ImportedCheckpoint imported;
    if (!parse_llama2c(data, size, &imported).empty()) return 0;
    std::vector<float> row;
    for (const SourceTensor& t : imported.tensors) {
        row.resize(t.cols());
        for (uint64_t r = 0; r < t.rows(); r++) read_source_row(t, r, row.data());
    }
    return 0;
}
