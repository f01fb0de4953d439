// Qwen2 and Qwen2.5 dense models: Llama's blocks with biases on the query, key and value
// projections, and RoPE on the two halves of a head (rotate_half, llama.cpp's NEOX).
#include "model/family.h"

namespace hearth {

static const HfClass kQwen2HfClasses[] = {
    // Qwen2Config's sliding_window applies only with use_sliding_window, which hearth does not
    // support (Qwen2.5's configs have it false).
    {"Qwen2ForCausalLM", "qwen2", 0, -1, "use_sliding_window"},
    {nullptr, nullptr, 0, 0, nullptr},
};

extern const ModelFamily kQwen2Family;
const ModelFamily kQwen2Family = {
    "qwen2",
    RopeStyle::halves,
    /*qk_norm=*/false,
    /*qkv_bias=*/true,
    // As Qwen3's: no BOS at the start of a prompt (llama.cpp's qwen2 files say add_bos_token false).
    /*prompts_start_with_bos=*/false,
    kQwen2HfClasses,
    nullptr,
};

}  // namespace hearth
