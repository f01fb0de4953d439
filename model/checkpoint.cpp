#include "model/checkpoint.h"

#include <cstring>

#include "formats/gguf.h"
#include "model/tokenizer_metadata.h"

namespace hearth {

// hearth v1 keeps the hyperparameters in its fixed header (formats/hearth.h).
static std::string config_from_v1_header(const FileHeaderV1& h, ModelConfig* out) {
    ModelConfig& c = *out;
    auto u = [](uint32_t v) { return v > (1u << 30) ? -1 : int(v); };  // absurd values fail validation
    c.dim = u(h.dim);
    c.hidden_dim = u(h.hidden_dim);
    c.n_layers = u(h.n_layers);
    c.n_heads = u(h.n_heads);
    c.n_kv_heads = u(h.n_kv_heads);
    c.head_dim = u(h.head_dim);
    c.vocab_size = u(h.vocab_size);
    c.max_seq_len = u(h.max_seq_len);
    // Only 0xffffffff means "none"; any other id outside the vocabulary fails validation.
    auto id = [](uint32_t v) { return v == 0xffffffffu ? -1 : v > (1u << 30) ? (1 << 30) : int(v); };
    c.bos_id = id(h.bos_id);
    c.eos_id = id(h.eos_id);
    c.add_bos = c.bos_id >= 0;
    c.tied_embeddings = (h.flags & 1) != 0;
    c.rope_theta = h.rope_theta;
    c.rms_eps = h.rms_eps;
    c.arch = header_string(h.arch, sizeof h.arch);
    c.chat_template = header_string(h.chat_template, sizeof h.chat_template);
    std::string err = validate_config(c);
    return err.empty() ? "" : "bad model configuration: " + err;
}

// The configuration and tokenizer of a file its format's reader accepted.
static std::string interpret(ModelFile&& file, ParsedCheckpoint* out) {
    out->format = file.format;
    out->tensors = std::move(file.tensors);
    if (file.v1_header) {
        out->tokenizer.kind = TokenizerKind::sentencepiece;
        out->tokenizer.sentencepiece = std::move(file.v1_sentencepiece);
        return config_from_v1_header(*file.v1_header, &out->config);
    }
    std::string err = config_from_metadata(file.meta, &out->config);
    if (!err.empty()) return "bad model configuration: " + err;
    if (!(err = tokenizer_from_metadata(file.meta, &out->tokenizer)).empty()) return err;
    return finish_config(out);
}

std::string parse_checkpoint(const void* data, size_t size, ParsedCheckpoint* out) {
    ModelFile file;
    std::string err = read_hearth_file(data, size, &file);
    out->format = file.format;
    return err.empty() ? interpret(std::move(file), out) : err;
}

std::string parse_gguf(const void* data, size_t size, ParsedCheckpoint* out) {
    ModelFile file;
    std::string err = read_gguf_file(data, size, &file);
    out->format = file.format;
    if (!err.empty()) return err;
    // One part of a model split by llama.cpp's llama-gguf-split (large downloads come so, as
    // NAME-00001-of-00003.gguf): llama.cpp's loader reads split.count and maps the other parts;
    // hearth reads one file, and says how to make it rather than name a tensor as missing.
    uint32_t parts = 1, part = 0;
    if (file.meta.has("split.count") && !(err = file.meta.get_u32("split.count", &parts)).empty()) return err;
    if (parts > 1) {
        if (file.meta.has("split.no") && !(err = file.meta.get_u32("split.no", &part)).empty()) return err;
        return "part " + std::to_string(part + 1) + " of " + std::to_string(parts) +
               " of a GGUF split by llama.cpp's llama-gguf-split; hearth reads one file: join the parts first with "
               "llama-gguf-split --merge FIRST-PART JOINED.gguf";
    }
    return interpret(std::move(file), out);
}

std::string parse_model_file(const void* data, size_t size, ParsedCheckpoint* out) {
    if (is_gguf(data, size)) return parse_gguf(data, size, out);
    if (size >= sizeof(kCheckpointMagic) && std::memcmp(data, kCheckpointMagic, sizeof(kCheckpointMagic)) == 0)
        return parse_checkpoint(data, size, out);
    return kNotAModelFile;
}

std::string finish_config(ParsedCheckpoint* p) {
    ModelConfig& c = p->config;
    const TensorView *embd = nullptr, *rope_freqs = nullptr;
    c.tied_embeddings = true;
    for (const TensorView& t : p->tensors) {
        if (t.name == "token_embd.weight") embd = &t;
        if (t.name == "output.weight") c.tied_embeddings = false;
        if (t.name == "rope_freqs.weight") rope_freqs = &t;
    }
    // RoPE's frequency factors (Llama-3's rope scaling) are a tensor, as in GGUF: read here so
    // that the configuration, which the RoPE table is made from, has them.
    c.rope_freq_factors.clear();
    if (rope_freqs) {
        if (rope_freqs->type != TYPE_F32 || rope_freqs->n_dims != 1 || rope_freqs->shape[0] > 1024)
            return "rope_freqs.weight is not an f32 vector of at most 1024 values";
        c.rope_freq_factors.resize(size_t(rope_freqs->shape[0]));
        std::memcpy(c.rope_freq_factors.data(), rope_freqs->data, 4 * c.rope_freq_factors.size());
    }
    if (c.vocab_size == 0) {
        if (!embd || embd->n_dims != 2) return "the vocabulary size is neither stated nor given by token_embd.weight";
        if (embd->shape[0] > (1u << 30)) return "token_embd.weight has an absurd shape";
        c.vocab_size = int(embd->shape[0]);
    }
    std::string err = validate_config(c);
    return err.empty() ? "" : "bad model configuration: " + err;
}

}  // namespace hearth
