// libFuzzer target: a tokenizer_config.json's chat template, recognising it, and the default
// system message a ChatML template holds.
#include <string>

#include "chat/chat_template.h"
#include "tests/fuzz/fuzz_json_depth.h"
#include "tests/fuzz/fuzz_report.h"

using namespace hearth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string jinja = chat_template_jinja(std::string(reinterpret_cast<const char*>(data), size));
    const std::string name = detect_chat_template(jinja);
    const std::string system = chatml_default_system(jinja);
    if (system.size() > jinja.size()) __builtin_trap();  // the text of one of its literals
    fuzz::report("chat template", jinja.empty() ? "none" : name.empty() ? "not recognised" : "");
    return 0;
}

// JSON nested beyond what byte mutations reach (fuzz_json_depth.h).
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    return fuzz::mutate_json(data, size, max_size, seed);
}
