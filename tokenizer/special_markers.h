#pragma once
// Token texts that llama.cpp's vocabulary loader (src/llama-vocab.cpp: "auto-detect special
// tokens by text" and its end-of-generation list, special_eog_ids) treats by their spelling,
// whatever a file's token types say. Hearth treats them as it does, in one place:
//  - each is a control token: never found in a user's text, decoded to nothing (bpe.cpp). Qwen3's
//    tokenizer.json has its fill-in-the-middle markers as plain added tokens and "</s>" as a
//    normal one; llama.cpp's loader and convert script make them control.
//  - those marked ends_generation end a generation (end_of_generation_ids, tokenizer.h): its
//    end-of-generation texts, and the fill-in-the-middle pad, repository and file-separator
//    markers, which llama.cpp adds to that set.
#include <string_view>

namespace hearth {

struct SpecialMarker {
    std::string_view text;
    bool ends_generation;
};

inline constexpr SpecialMarker kSpecialMarkers[] = {
    // end of generation: Llama-3, Qwen, Gemma, Phi, DeepSeek, Granite, Kimi-K2, ... (as llama.cpp lists them)
    {"<|eot_id|>", true},
    {"<|eom_id|>", true},
    {"<|end_of_text|>", true},
    {"<|im_end|>", true},
    {"<|endoftext|>", true},
    {"</s>", true},
    {"<|end|>", true},
    {"<|return|>", true},
    {"<|call|>", true},
    {"<|flush|>", true},
    {"<|calls|>", true},
    {"<end_of_turn>", true},
    {"<EOT>", true},
    {"_<EOT>", true},
    {"[EOT]", true},
    {"[EOS]", true},
    {"<end_of_utterance>", true},
    {"<eos>", true},
    {"<turn|>", true},
    {"<|tool_response>", true},
    {"<｜end▁of▁sentence｜>", true},
    {"[e~[", true},
    // fill in the middle: pad, repository and file separator end a generation too
    {"<|fim_pad|>", true},
    {"<fim-pad>", true},
    {"<fim_pad>", true},
    {"<PAD>", true},
    {"[PAD]", true},
    {"<|fim_repo|>", true},
    {"<|repo_name|>", true},
    {"<fim-repo>", true},
    {"<REPO>", true},
    {"<reponame>", true},
    {"<|file_sep|>", true},
    // ... prefix, suffix and middle do not
    {"<|fim_prefix|>", false},
    {"<fim-prefix>", false},
    {"<fim_prefix>", false},
    {"<｜fim▁begin｜>", false},
    {"<PRE>", false},
    {"▁<PRE>", false},
    {"<|code_prefix|>", false},
    {"<|prefix|>", false},
    {"<|fim_suffix|>", false},
    {"<fim-suffix>", false},
    {"<fim_suffix>", false},
    {"<｜fim▁hole｜>", false},
    {"<SUF>", false},
    {"▁<SUF>", false},
    {"<|code_suffix|>", false},
    {"<|suffix|>", false},
    {"<|fim_middle|>", false},
    {"<fim-middle>", false},
    {"<fim_middle>", false},
    {"<｜fim▁end｜>", false},
    {"<MID>", false},
    {"▁<MID>", false},
    {"<|code_middle|>", false},
    {"<|middle|>", false},
};

// The marker spelled `text`, or nullptr.
inline const SpecialMarker* find_special_marker(std::string_view text) {
    for (const SpecialMarker& m : kSpecialMarkers)
        if (m.text == text) return &m;
    return nullptr;
}

}  // namespace hearth
