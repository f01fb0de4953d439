// libFuzzer target: a safetensors file's header and byte ranges.
#include <map>
#include <string>

#include "../../model/safetensors.h"
#include "fuzz_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::map<std::string, SafeTensor> tensors;
    fuzz::report("safetensors", parse_safetensors(data, size, &tensors));
    return 0;
}
