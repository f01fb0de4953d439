// Qwen3 dense models: Llama's blocks with an RMSNorm of each query and key head before RoPE,
// and RoPE on the two halves of a head (rotate_half, llama.cpp's NEOX).
#include "model/family.h"

namespace hearth {

static const HfClass kQwen3HfClasses[] = {
    // Qwen3Config's head_dim default is 128, not dim / heads; its sliding_window applies only
    // with use_sliding_window, which hearth does not support.
    {"Qwen3ForCausalLM", "qwen3", 128, -1, "use_sliding_window"},
    {nullptr, nullptr, 0, 0, nullptr},
};

extern const ModelFamily kQwen3Family;
const ModelFamily kQwen3Family = {
    "qwen3",
    RopeStyle::halves,
    /*qk_norm=*/true,
    /*qkv_bias=*/false,
    // Qwen's tokenizers add no BOS (their bos_token_id, <|endoftext|>, is not a prompt's first
    // token; llama.cpp's qwen3 files say add_bos_token false).
    /*prompts_start_with_bos=*/false,
    kQwen3HfClasses,
    nullptr,
};

}  // namespace hearth
