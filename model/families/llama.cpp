// Llama-2, Llama-3, Mistral, TinyLlama, and llama2.c's models: the family the role table
// (model/tensors.h) and forward() describe without exceptions.
#include "model/family.h"

namespace hearth {

static const HfClass kLlamaHfClasses[] = {
    {"LlamaForCausalLM", "llama", 0, -1, nullptr},
    {"MistralForCausalLM", "mistral", 0, 4096, nullptr},  // Mistral is Llama with a sliding window (MistralConfig's 4096)
    {nullptr, nullptr, 0, 0, nullptr},
};

extern const ModelFamily kLlamaFamily;
const ModelFamily kLlamaFamily = {
    "llama",
    RopeStyle::adjacent_pairs,
    /*qk_norm=*/false,
    /*qkv_bias=*/false,
    /*prompts_start_with_bos=*/true,
    kLlamaHfClasses,
    nullptr,
};

}  // namespace hearth
