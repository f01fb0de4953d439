// libFuzzer target: a tokenizer_config.json's chat template, and recognising it.
#include <string>

#include "../../model/chat_template.h"
#include "fuzz_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string jinja = chat_template_jinja(std::string(reinterpret_cast<const char*>(data), size));
    const std::string name = detect_chat_template(jinja);
    fuzz::report("chat template", jinja.empty() ? "none" : name.empty() ? "not recognised" : "");
    return 0;
}
