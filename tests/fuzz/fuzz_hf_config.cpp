// libFuzzer target: a Hugging Face config.json, read into a configuration and validated.
#include <string>

#include "../../model/import.h"
#include "fuzz_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ModelConfig c;
    fuzz::report("config.json", config_from_hf_json(std::string(reinterpret_cast<const char*>(data), size), &c));
    return 0;
}
