// libFuzzer target: a safetensors file's header and byte ranges.
#include <map>
#include <string>

#include "formats/safetensors.h"
#include "tests/fuzz/fuzz_json_depth.h"
#include "tests/fuzz/fuzz_report.h"

using namespace hearth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::map<std::string, SafeTensor> tensors;
    fuzz::report("safetensors", parse_safetensors(data, size, &tensors));
    return 0;
}

// JSON nested beyond what byte mutations reach (fuzz_json_depth.h).
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    return fuzz::mutate_json(data, size, max_size, seed, 8, true);
}
