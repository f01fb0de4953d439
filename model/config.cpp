#include "model/config.h"

#include <cmath>

#include "base/limits.h"
#include "base/printable.h"
#include "formats/metadata.h"

namespace hearth {

const ModelFamily& family_of(const ModelConfig& c) {
    const ModelFamily* f = find_family(c.arch);
    static const ModelFamily& llama = *find_family("llama");  // unreachable after validate_config
    return f ? *f : llama;
}

std::string validate_config(const ModelConfig& c) {
    auto in = [](long v, long lo, long hi) { return v >= lo && v <= hi; };
    if (!find_family(c.arch)) return "architecture " + in_quotes(c.arch) + " is not supported (" + family_names() + ")";
    if (!in(c.dim, 1, limits::kDim)) return "dim " + std::to_string(c.dim) + " is out of range";
    if (!in(c.hidden_dim, 1, limits::kHiddenDim)) return "hidden dim " + std::to_string(c.hidden_dim) + " is out of range";
    if (!in(c.n_layers, 1, limits::kLayers)) return "layer count " + std::to_string(c.n_layers) + " is out of range";
    if (!in(c.n_heads, 1, limits::kHeads)) return "head count " + std::to_string(c.n_heads) + " is out of range";
    if (!in(c.n_kv_heads, 1, c.n_heads) || c.n_heads % c.n_kv_heads != 0)
        return "kv head count " + std::to_string(c.n_kv_heads) + " does not divide head count " + std::to_string(c.n_heads);
    if (!in(c.head_dim, 2, limits::kHeadDim) || c.head_dim % 2 != 0)
        return "head dim " + std::to_string(c.head_dim) + " is not an even number in range";
    if (!in(c.vocab_size, 1, limits::kVocabSize)) return "vocab size " + std::to_string(c.vocab_size) + " is out of range";
    if (!in(c.max_seq_len, 1, limits::kContextLength))
        return "context length " + std::to_string(c.max_seq_len) + " is out of range";
    if (!in(c.bos_id, -1, c.vocab_size - 1) || !in(c.eos_id, -1, c.vocab_size - 1))
        return "BOS/EOS ids are outside the vocabulary";
    if (!std::isfinite(c.rope_theta) || c.rope_theta <= 1.0f) return "rope theta is not a number > 1";
    if (!std::isfinite(c.rms_eps) || c.rms_eps <= 0.0f || c.rms_eps > 1.0f) return "rms eps is not in (0, 1]";
    if (!c.rope_freq_factors.empty() && c.rope_freq_factors.size() != size_t(c.head_dim / 2))
        return "RoPE has " + std::to_string(c.rope_freq_factors.size()) + " frequency factors, the head dim " +
               std::to_string(c.head_dim) + " needs " + std::to_string(c.head_dim / 2);
    for (float f : c.rope_freq_factors)
        if (!std::isfinite(f) || f <= 0.0f || f > 1e6f) return "a RoPE frequency factor is not a number in (0, 1e6]";
    if (!in(c.sliding_window, 0, limits::kContextLength))
        return "sliding window " + std::to_string(c.sliding_window) + " is out of range";
    return "";
}

namespace {

// The integer hyperparameters and their keys after "<arch>.". 0 as the default: required.
struct IntKey {
    const char* key;
    int ModelConfig::*field;
};
const IntKey kIntKeys[] = {
    {"embedding_length", &ModelConfig::dim},
    {"feed_forward_length", &ModelConfig::hidden_dim},
    {"block_count", &ModelConfig::n_layers},
    {"attention.head_count", &ModelConfig::n_heads},
    {"attention.head_count_kv", &ModelConfig::n_kv_heads},  // default: n_heads
    {"attention.key_length", &ModelConfig::head_dim},       // default: dim / n_heads
    {"context_length", &ModelConfig::max_seq_len},
    {"vocab_size", &ModelConfig::vocab_size},  // default: from token_embd.weight
};
const char* const kName = "general.name";
const char* const kRopeTheta = "rope.freq_base";
const char* const kRmsEps = "attention.layer_norm_rms_epsilon";
const char* const kSlidingWindow = "attention.sliding_window";
const char* const kAttentionScale = "attention.scale";  // llama.cpp's f_attention_scale: 0 is 1/sqrt(head dim)
const char* const kExpertCount = "expert_count";        // llama.cpp's mixture of experts (Mixtral): refused
// GGUF's RoPE scaling keys (llama.cpp: linear, yarn, longrope), which hearth does not apply:
// a file that has them is refused rather than run wrong. Llama-3's scaling is not a key but
// the tensor rope_freqs.weight (llama.cpp's converter writes no scaling key for it).
const char* const kRopeScalingType = "rope.scaling.type";
const char* const kRopeScalingFactor = "rope.scaling.factor";
const char* const kBos = "tokenizer.ggml.bos_token_id";
const char* const kEos = "tokenizer.ggml.eos_token_id";
const char* const kAddBos = "tokenizer.ggml.add_bos_token";
const char* const kJinja = "tokenizer.chat_template";
const char* const kTemplateName = "hearth.chat_template";  // hearth's own: a built-in template's name

}  // namespace

void config_to_metadata(const ModelConfig& c, Metadata* m) {
    const std::string a = c.arch + ".";
    m->set_string("general.architecture", c.arch);
    if (!c.name.empty()) m->set_string(kName, c.name);
    for (const IntKey& k : kIntKeys) m->set_u32(a + k.key, uint32_t(c.*k.field));
    m->set_u32(a + "attention.value_length", uint32_t(c.head_dim));
    m->set_u32(a + "rope.dimension_count", uint32_t(c.head_dim));
    m->set_f32(a + kRopeTheta, c.rope_theta);
    m->set_f32(a + kRmsEps, c.rms_eps);
    if (c.sliding_window > 0) m->set_u32(a + kSlidingWindow, uint32_t(c.sliding_window));
    if (c.bos_id >= 0) m->set_u32(kBos, uint32_t(c.bos_id));
    if (c.eos_id >= 0) m->set_u32(kEos, uint32_t(c.eos_id));
    m->set_bool(kAddBos, c.add_bos);
    if (!c.chat_template_jinja.empty()) m->set_string(kJinja, c.chat_template_jinja);
    if (!c.chat_template.empty()) m->set_string(kTemplateName, c.chat_template);
}

std::string config_from_metadata(const Metadata& m, ModelConfig* c) {
    std::string err;
    if (!(err = m.get_string("general.architecture", &c->arch)).empty()) return err;
    if (c->arch.size() > 64) return "general.architecture is not a name";
    c->name.clear();
    if (m.has(kName) && !(err = m.get_string(kName, &c->name)).empty()) return err;
    const std::string a = c->arch + ".";
    for (const IntKey& k : kIntKeys) {
        const std::string key = a + k.key;
        c->*k.field = 0;
        if (!m.has(key)) continue;
        uint32_t v = 0;
        if (!(err = m.get_u32(key, &v)).empty()) return err;
        if (v > (1u << 30)) return "metadata " + key + " is " + std::to_string(v) + ", out of range";
        c->*k.field = int(v);
    }
    for (const IntKey& k : kIntKeys) {
        const bool has_default =
            k.field == &ModelConfig::n_kv_heads || k.field == &ModelConfig::head_dim || k.field == &ModelConfig::vocab_size;
        if (!has_default && c->*k.field == 0) return "metadata " + a + k.key + " is missing or 0";
    }
    if (c->n_kv_heads == 0) c->n_kv_heads = c->n_heads;
    if (c->head_dim == 0) {
        if (c->dim % c->n_heads != 0)
            return "embedding length " + std::to_string(c->dim) + " is not a multiple of the head count";
        c->head_dim = c->dim / c->n_heads;
    }
    // hearth rotates whole heads, and keys and values have the queries' head size.
    for (const char* key : {"rope.dimension_count", "attention.value_length"}) {
        uint32_t v = 0;
        if (m.has(a + key) && (!(err = m.get_u32(a + key, &v)).empty() || int64_t(v) != c->head_dim))
            return err.empty() ? "metadata " + a + key + " is " + std::to_string(v) + ", not the head size " +
                                     std::to_string(c->head_dim) + " (not supported)"
                               : err;
    }
    c->rope_theta = 10000.0f;
    if (m.has(a + kRopeTheta) && !(err = m.get_f32(a + kRopeTheta, &c->rope_theta)).empty()) return err;
    c->rms_eps = 1e-5f;
    if (m.has(a + kRmsEps) && !(err = m.get_f32(a + kRmsEps, &c->rms_eps)).empty()) return err;
    c->sliding_window = 0;
    if (m.has(a + kSlidingWindow)) {
        uint32_t v = 0;
        if (!(err = m.get_u32(a + kSlidingWindow, &v)).empty()) return err;
        // 0 is none, as llama.cpp reads it (n_swa 0) and its model saver writes it for every
        // model without a window (llama_model_save_to_file: llama-finetune's output).
        if (v > uint32_t(limits::kContextLength))
            return "metadata " + a + kSlidingWindow + " is " + std::to_string(v) + ", out of range";
        c->sliding_window = int(v);
    }
    // Mixtral's GGUF files are of architecture llama, with experts in place of the feed-forward
    // matrices: said here rather than as a missing ffn_gate.weight.
    if (m.has(a + kExpertCount)) {
        uint32_t v = 0;
        if (!(err = m.get_u32(a + kExpertCount, &v)).empty()) return err;
        if (v > 0)
            return "a mixture-of-experts model (" + a + kExpertCount + " " + std::to_string(v) + ", as Mixtral) is not supported";
    }
    // llama.cpp scales RoPE's positions by 1 / factor (none for a factor of 0 or 1) for the type
    // linear, which it assumes when no type is given: its model saver writes linear with factor 0
    // for a model without scaling. Any other factor, and the other types, are refused.
    float scaling_factor = 0.0f;
    if (m.has(a + kRopeScalingFactor)) {
        if (!(err = m.get_f32(a + kRopeScalingFactor, &scaling_factor)).empty()) return err;
        if (scaling_factor != 0.0f && scaling_factor != 1.0f)
            return "RoPE scaling factor " + std::to_string(scaling_factor) + " (" + a + kRopeScalingFactor + ") is not supported";
    }
    if (m.has(a + kRopeScalingType)) {
        std::string type;
        if (!(err = m.get_string(a + kRopeScalingType, &type)).empty()) return err;
        if (type != "none" && type != "linear")
            return "RoPE scaling " + in_quotes(type) + " (" + a + kRopeScalingType + ") is not supported";
    }
    // llama.cpp's llama architecture divides attention scores by this instead of sqrt(head dim)
    // when it is not 0 (its model saver writes 0).
    if (m.has(a + kAttentionScale)) {
        float scale = 0.0f;
        if (!(err = m.get_f32(a + kAttentionScale, &scale)).empty()) return err;
        if (scale != 0.0f)
            return "metadata " + a + kAttentionScale + " " + std::to_string(scale) +
                   " is not supported (hearth scales attention by 1/sqrt(head dim))";
    }
    for (auto [key, field] : {std::pair{kBos, &ModelConfig::bos_id}, std::pair{kEos, &ModelConfig::eos_id}}) {
        c->*field = -1;
        uint32_t v = 0;
        if (!m.has(key)) continue;
        if (!(err = m.get_u32(key, &v)).empty()) return err;
        if (v == kNoTokenId) continue;  // llama.cpp's "none" (formats/metadata.h)
        if (v > (1u << 30)) return "metadata " + std::string(key) + " is out of range";
        c->*field = int(v);
    }
    c->add_bos = c->bos_id >= 0;
    if (m.has(kAddBos) && !(err = m.get_bool(kAddBos, &c->add_bos)).empty()) return err;
    c->chat_template_jinja.clear();
    if (m.has(kJinja) && !(err = m.get_string(kJinja, &c->chat_template_jinja)).empty()) return err;
    c->chat_template.clear();
    if (m.has(kTemplateName) && !(err = m.get_string(kTemplateName, &c->chat_template)).empty()) return err;
    return "";
}

}  // namespace hearth
