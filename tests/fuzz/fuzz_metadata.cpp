// libFuzzer target: typed key/value metadata (GGUF's encoding), parsed and every entry read
// back through each getter.
#include <string>
#include <vector>

#include "formats/metadata.h"

using namespace hearth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    Metadata m;
    uint64_t used = 0;
    if (!m.parse(data + 1, size - 1, data[0], &used).empty()) return 0;
    for (const MetaEntry& e : m.entries()) {
        uint32_t u;
        int32_t i;
        float f;
        bool b;
        std::string s;
        std::vector<std::string> strings;
        std::vector<float> floats;
        std::vector<int32_t> ints;
        m.get_u32(e.key, &u), m.get_i32(e.key, &i), m.get_f32(e.key, &f), m.get_bool(e.key, &b);
        m.get_string(e.key, &s), m.get_bytes(e.key, &s), m.get_strings(e.key, &strings);
        m.get_f32s(e.key, &floats), m.get_i32s(e.key, &ints);
    }
    m.serialize();
    return 0;
}
