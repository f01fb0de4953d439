// libFuzzer target: a tokenizer_config.json's chat template, and recognising it.
#include <string>

#include "../../model/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    detect_chat_template(chat_template_jinja(std::string(reinterpret_cast<const char*>(data), size)));
    return 0;
}
