// libFuzzer target: a Hugging Face config.json, read into a configuration and validated.
#include <string>

#include "convert/import.h"
#include "tests/fuzz/fuzz_json_depth.h"
#include "tests/fuzz/fuzz_report.h"

using namespace hearth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ModelConfig c;
    fuzz::report("config.json", config_from_hf_json(std::string(reinterpret_cast<const char*>(data), size), &c));
    return 0;
}

// JSON nested beyond what byte mutations reach (fuzz_json_depth.h).
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    return fuzz::mutate_json(data, size, max_size, seed);
}
