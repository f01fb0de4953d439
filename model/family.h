// A model family as data: one row (a ModelFamily in model/families/NAME.cpp) says everything
// that sets a family apart — the Hugging Face classes it is imported from and their
// config.json defaults, the tensor names its checkpoints use where they are not Llama's, and
// the typed switches forward() reads. No code outside the rows tests a family's name: a new
// Llama-like family is its file plus one line in model/family.cpp (docs/architecture.md).
#pragma once
#include <string>

namespace hearth {

// How a family's RoPE pairs the elements of a head. llama's q/k rows (in hearth files and in
// GGUF) rotate adjacent pairs (x[2i], x[2i+1]); qwen3's, stored as Hugging Face and llama.cpp
// (LLAMA_ROPE_TYPE_NEOX) have them, rotate x[i] with x[i + head_dim/2]. Importing a Hugging
// Face folder of an adjacent-pairs family reorders its q/k rows into pairs (docs/format.md); a
// halves family's are kept as they are, so that q_norm/k_norm weights and GGUF's tensors need
// no reordering.
enum class RopeStyle { adjacent_pairs, halves };

// One Hugging Face class of a family, with transformers' config.json defaults where they differ.
struct HfClass {
    const char* architecture;     // config.json's architectures[0]
    const char* model_type;       // config.json's model_type, used when architectures is absent
    int default_head_dim;         // 0: dim / heads
    int default_sliding_window;   // when config.json has no sliding_window key; -1: the class has none (key ignored)
    const char* refused_if_true;  // a config.json switch hearth does not support, or nullptr
};

// A tensor whose Hugging Face name differs from the one in model/tensors.h's role table.
struct HfTensorName {
    const char* role;     // the role's name ("ffn_norm", ...)
    const char* hf_name;  // "%d" stands for the layer
};

struct ModelFamily {
    const char* arch;  // hearth's and GGUF's general.architecture
    // What forward() does differently.
    RopeStyle rope_style;
    bool qk_norm;   // an RMSNorm over each query and key head before RoPE (attn_q_norm, attn_k_norm)
    bool qkv_bias;  // biases added to the query, key and value projections (attn_q/k/v.bias; a halves family's only)
    // What the importers need.
    bool prompts_start_with_bos;   // Hugging Face tokenizers of this family add BOS
    const HfClass* hf_classes;     // ends with a row whose architecture is nullptr
    const HfTensorName* hf_names;  // exceptions to the role table's names, nullptr-ended; nullptr: none
};

// The family of general.architecture `arch`, or nullptr when hearth has none.
const ModelFamily* find_family(const std::string& arch);
// The family and class of a config.json's architectures[0] (or, when that is empty, its
// model_type); nullptr when no family has it.
const ModelFamily* find_hf_family(const std::string& architecture, const std::string& model_type, const HfClass** cls);
// "llama, qwen2, qwen3" and "LlamaForCausalLM, ..." for messages.
std::string family_names();
std::string hf_class_names();
// The Hugging Face name of a role's tensor in this family (a printf pattern with %d for the
// layer): the family's exception, else the role table's `hf_name`.
const char* hf_tensor_name(const ModelFamily& f, const char* role, const char* role_hf_name);

}  // namespace hearth
