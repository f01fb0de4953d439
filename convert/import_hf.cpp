#include "convert/import.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <sys/stat.h>
#include <tuple>

#include "base/json_input.h"
#include "base/printable.h"
#include "kernels/matmul.h"
#include "kernels/quant_types.h"
#include "kernels/rows_x8.h"
#include "tokenizer/tokenizer.h"
#include "chat/chat_template.h"
#include "model/model.h"
#include "model/tensors.h"

namespace hearth {

using json = nlohmann::json;

uint64_t SourceTensor::rows() const {
    uint64_t r = 1;
    for (int i = 0; i + 1 < n_dims; i++) r *= shape[i];
    return r;
}

// Reads one of the folder's small files (base/input_file.h) and records it as an input.
static std::string read_input(const std::string& path, InputKind kind, std::string* text, ImportedCheckpoint* out) {
    FileId id;
    std::string err = read_input_file(path, kind, text, &id);
    if (err.empty()) out->inputs.push_back({path, id});
    return err;
}

// Reads and parses one of the folder's JSON files; errors name the file.
static std::string read_json(const std::string& path, InputKind kind, json* value, ImportedCheckpoint* out) {
    std::string text;
    std::string err = read_input(path, kind, &text, out);
    if (err.empty() && !(err = parse_json(text, value)).empty()) err = shown_path(path) + ": " + err;
    return err;
}

// Whether the folder has an entry of that name (a broken link counts: reading it says why).
static bool exists(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
}

// A JSON value from a file, shown in a message: escaped and cut.
static std::string shown(const json& v) { return v.is_string() ? in_quotes(v.get<std::string>()) : printable(v.dump()); }

// config.json's values, strictly: an integer must be a JSON integer in range (256.9 and
// 4294967552 are not 256), a number a finite JSON number.
static std::string json_int(const json& j, const char* key, long lo, long hi, int fallback, int* out) {
    if (!j.contains(key) || j[key].is_null()) {
        if (fallback == INT32_MIN) return std::string("config.json has no ") + key;
        *out = fallback;
        return "";
    }
    const json& v = j[key];
    const bool in_range = v.is_number_unsigned()  ? v.get<uint64_t>() <= uint64_t(hi) && int64_t(v.get<uint64_t>()) >= lo
                          : v.is_number_integer() ? v.get<int64_t>() >= lo && v.get<int64_t>() <= hi
                                                  : false;
    if (!in_range)
        return std::string() + key + " is " + shown(v) + ", not an integer from " + std::to_string(lo) + " to " +
               std::to_string(hi);
    *out = int(v.get<int64_t>());
    return "";
}

static std::string json_float(const json& j, const char* key, float fallback, float* out) {
    if (!j.contains(key) || j[key].is_null()) {
        *out = fallback;
        return "";
    }
    if (!j[key].is_number() || !std::isfinite(j[key].get<double>()))
        return std::string() + key + " is " + shown(j[key]) + ", not a number";
    *out = j[key].get<float>();
    return "";
}

// The last component of a path, without trailing slashes and, for a file, without its
// extension: what a model is called when its file names nothing else (general.name).
static std::string model_name_from_path(const std::string& path, bool strip_extension) {
    std::string p = path;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    std::string base = p.substr(p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1);
    const size_t dot = base.rfind('.');
    if (strip_extension && dot != std::string::npos && dot > 0) base.resize(dot);
    return base == "." || base == ".." || base == "/" ? "" : base;
}

// Llama-3.1's "llama3" rope scaling as RoPE frequency divisors, as transformers'
// _compute_llama3_parameters scales the frequencies: those with a wavelength below
// original/high_freq_factor are kept, those above original/low_freq_factor divided by factor,
// and those between interpolated smoothly. (llama.cpp's converter writes the same divisors
// as rope_freqs.weight.)
static std::string llama3_rope_factors(const json& rs, ModelConfig* c) {
    float factor, low, high;
    int original;
    std::string err;
    for (auto [key, out] :
         {std::pair{"factor", &factor}, std::pair{"low_freq_factor", &low}, std::pair{"high_freq_factor", &high}}) {
        if (!rs.contains(key)) return std::string("rope_scaling (llama3) has no ") + key;
        if (!(err = json_float(rs, key, 0.0f, out)).empty()) return err;
    }
    if (!(err = json_int(rs, "original_max_position_embeddings", 1, 1 << 24, INT32_MIN, &original)).empty())
        return err + " (rope_scaling, llama3)";
    if (!(factor >= 1.0f && factor <= 1e6f)) return "rope_scaling factor " + std::to_string(factor) + " is not in [1, 1e6]";
    if (!(low > 0.0f && high > low && high <= 1e6f))
        return "rope_scaling needs 0 < low_freq_factor < high_freq_factor, not " + std::to_string(low) + " and " +
               std::to_string(high);
    const double pi = 3.14159265358979323846, low_wavelen = original / double(low), high_wavelen = original / double(high);
    c->rope_freq_factors.assign(size_t(c->head_dim / 2), 1.0f);
    for (int i = 0; i < c->head_dim / 2; i++) {
        const double wavelen = 2 * pi / std::pow(double(c->rope_theta), -2.0 * i / c->head_dim);
        if (wavelen > low_wavelen) {
            c->rope_freq_factors[size_t(i)] = factor;
        } else if (wavelen >= high_wavelen) {
            const double smooth = (original / wavelen - low) / (high - low);
            c->rope_freq_factors[size_t(i)] = float(1.0 / ((1 - smooth) / factor + smooth));
        }
    }
    return "";
}

static std::string config_from_hf(const json& j, ModelConfig* c) {
    if (!j.is_object()) return "config.json is not a JSON object";
    auto text = [&](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    std::string arch = j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty()
                           ? text(j["architectures"][0])
                           : "";
    std::string model_type = j.contains("model_type") ? text(j["model_type"]) : "";
    const HfClass* hf_class = nullptr;
    const ModelFamily* family = find_hf_family(arch, model_type, &hf_class);
    if (!family)
        return "config.json describes " + in_quotes(arch.empty() ? model_type : arch) +
               ", not a Llama-family model hearth runs (" + hf_class_names() + ")";
    for (const char* key : {"attention_bias", "mlp_bias"})
        if (j.contains(key) && j[key] != false && !j[key].is_null()) return std::string() + key + " is not supported";
    if (j.contains("hidden_act") && j["hidden_act"] != "silu")
        return "hidden_act " + shown(j["hidden_act"]) + " is not supported (only silu)";
    c->arch = family->arch;
    const int required = INT32_MIN;
    std::string err;
    for (auto [key, field, fallback] : {std::tuple{"hidden_size", &ModelConfig::dim, required},
                                        std::tuple{"intermediate_size", &ModelConfig::hidden_dim, required},
                                        std::tuple{"num_hidden_layers", &ModelConfig::n_layers, required},
                                        std::tuple{"num_attention_heads", &ModelConfig::n_heads, required},
                                        std::tuple{"vocab_size", &ModelConfig::vocab_size, required},
                                        std::tuple{"max_position_embeddings", &ModelConfig::max_seq_len, 2048}})
        if (!(err = json_int(j, key, 1, 1 << 30, fallback, &(c->*field))).empty()) return err;
    if (!(err = json_int(j, "num_key_value_heads", 1, 1 << 30, c->n_heads, &c->n_kv_heads)).empty()) return err;
    // Qwen3 states head_dim (e.g. 128 with dim 1024 and 16 heads); its default is 128, not dim / heads.
    const int head_dim = hf_class->default_head_dim ? hf_class->default_head_dim : c->dim / c->n_heads;
    if (!(err = json_int(j, "head_dim", 1, 1 << 30, head_dim, &c->head_dim)).empty()) return err;
    if (!(err = json_float(j, "rms_norm_eps", 1e-6f, &c->rms_eps)).empty()) return err;  // LlamaConfig's default

    // RoPE: rope_theta and rope_scaling, or (transformers 5) both in rope_parameters.
    const char* rope_key = j.contains("rope_parameters") && !j["rope_parameters"].is_null() ? "rope_parameters" : "rope_scaling";
    const json rope = j.contains(rope_key) ? j[rope_key] : json();
    if (!rope.is_null() && !rope.is_object()) return std::string() + rope_key + " is not an object";
    const json& theta_holder = rope.is_object() && rope.contains("rope_theta") ? rope : j;
    if (!(err = json_float(theta_holder, "rope_theta", 10000.0f, &c->rope_theta)).empty()) return err;
    if (!std::isfinite(c->rope_theta) || c->rope_theta <= 1.0f) return "rope_theta is not a number > 1";
    // transformers rotates only head_dim * partial_rotary_factor dims of each head when a config
    // has the key (modeling_rope_utils, for Llama's classes too); hearth rotates whole heads.
    float partial_rotary = 1.0f;
    const json& partial_holder = rope.is_object() && rope.contains("partial_rotary_factor") ? rope : j;
    if (!(err = json_float(partial_holder, "partial_rotary_factor", 1.0f, &partial_rotary)).empty()) return err;
    if (partial_rotary != 1.0f)
        return "partial_rotary_factor " + shown(partial_holder["partial_rotary_factor"]) +
               " is not supported (RoPE on part of each head; hearth rotates whole heads)";
    std::string rope_type = "default";
    if (rope.is_object()) {
        const bool only_theta = rope.empty() || (rope.size() == 1 && rope.contains("rope_theta"));
        const json& t = rope.contains("rope_type") ? rope["rope_type"]
                        : rope.contains("type")    ? rope["type"]
                                                   : json(only_theta ? "default" : "");
        if (!t.is_string() || t.get<std::string>().empty()) return std::string() + rope_key + " has no rope_type";
        rope_type = t.get<std::string>();
    }
    c->rope_freq_factors.clear();
    if (!(c->n_heads > 0 && c->head_dim % 2 == 0 && c->head_dim <= 1024))
        return validate_config(*c);  // the head sizes first: the factors depend on them
    // transformers' linear scaling divides the frequencies by factor: by 1 it changes nothing
    // (llama.cpp's converter writes it as GGUF's linear scaling by 1, which hearth reads as none).
    float linear_factor = 0.0f;
    const bool identity_linear = rope_type == "linear" && rope.contains("factor") &&
                                 json_float(rope, "factor", 0.0f, &linear_factor).empty() && linear_factor == 1.0f;
    if (rope_type == "llama3") {
        if (!(err = llama3_rope_factors(rope, c)).empty()) return err;
    } else if (rope_type != "default" && !identity_linear) {
        return std::string() + rope_key + " type " + in_quotes(rope_type) + " is not supported (only llama3)";
    }

    // Mistral's sliding window (absent: MistralConfig's 4096; null: none).
    const char* sw = hf_class->refused_if_true;
    if (sw && j.contains(sw) && j[sw] != false && !j[sw].is_null()) return std::string() + sw + " is not supported";
    c->sliding_window = 0;
    if (hf_class->default_sliding_window >= 0 && !(j.contains("sliding_window") && j["sliding_window"].is_null()))
        if (!(err = json_int(j, "sliding_window", 1, 1 << 24, hf_class->default_sliding_window, &c->sliding_window)).empty())
            return err;

    if (j.contains("tie_word_embeddings") && !j["tie_word_embeddings"].is_boolean())
        return "tie_word_embeddings is not true or false";
    c->tied_embeddings = j.value("tie_word_embeddings", false);
    // Some configs give a list of EOS ids: the first is taken (a BPE tokenizer_config.json's
    // eos_token, when it names one, decides instead: import_hf_folder). An id outside the
    // vocabulary is an error (validate_config), not "none".
    for (auto [key, field, fallback] :
         {std::tuple{"bos_token_id", &ModelConfig::bos_id, 1}, std::tuple{"eos_token_id", &ModelConfig::eos_id, 2}}) {
        json one = j.contains(key) && j[key].is_array() ? (j[key].empty() ? json() : j[key][0]) : j.value(key, json());
        json wrapped = {{key, one}};
        if (!(err = json_int(wrapped, key, 0, 1 << 30, fallback, &(c->*field))).empty()) return err;
    }
    c->add_bos = c->bos_id >= 0 && family->prompts_start_with_bos;
    return validate_config(*c);
}

static uint32_t type_from_dtype(const std::string& dtype) {
    if (dtype == "F32") return TYPE_F32;
    if (dtype == "F16") return TYPE_F16;
    if (dtype == "BF16") return TYPE_BF16;
    return UINT32_MAX;
}

std::string config_from_hf_json(const std::string& text, ModelConfig* c) {
    json j;
    std::string err = parse_json(text, &j);
    if (!err.empty()) return err;
    try {
        return config_from_hf(j, c);
    } catch (const std::exception& e) {
        return printable(e.what(), 200);
    }
}

std::string import_hf_folder(const std::string& dir, ImportedCheckpoint* out) {
    std::string text, err;
    out->source = dir;
    const std::string shown_dir = shown_path(dir);
    // A LoRA adapter, Meta's own download of Llama (params.json, consolidated.NN.pth) and
    // PyTorch's pickles (pytorch_model.bin) are what a user may have instead; hearth reads none
    // of them (a pickle can run code as it loads), and the message names what to do.
    if (!exists(dir + "/config.json")) {
        if (exists(dir + "/adapter_config.json"))
            return shown_dir +
                   " is a LoRA adapter (adapter_config.json), not a model: merge it into its base model first (peft's "
                   "merge_and_unload, then save_pretrained) and convert the merged folder";
        if (exists(dir + "/params.json") && exists(dir + "/consolidated.00.pth"))
            return shown_dir +
                   " is Meta's original download (params.json, consolidated.*.pth: PyTorch pickles): hearth reads the Hugging "
                   "Face form (config.json, model.safetensors): use the model's Hugging Face release, or transformers' "
                   "convert_llama_weights_to_hf.py";
        return "cannot find config.json in " + shown_dir + " (is it a Hugging Face model folder?)";
    }
    if (!(err = read_input(dir + "/config.json", InputKind::config_json, &text, out)).empty()) return err;
    if (!(err = config_from_hf_json(text, &out->config)).empty()) return shown_dir + "/config.json: " + err;
    out->config.name = model_name_from_path(dir, false);

    // Which safetensors files hold the weights.
    std::vector<std::string> files;
    // model.safetensors first, as transformers looks for it before the index: a folder that has
    // both (shards merged into one file, the old index left behind) is the one file.
    if (exists(dir + "/model.safetensors")) {
        files.push_back("model.safetensors");
    } else if (exists(dir + "/model.safetensors.index.json")) {
        const std::string index_path = dir + "/model.safetensors.index.json";
        json index;
        if (!(err = read_json(index_path, InputKind::safetensors_index, &index, out)).empty()) return err;
        const std::string where = shown_path(index_path) + ": ";
        if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
            return where + "no weight_map object";
        std::set<std::string> unique;
        for (auto& [name, file] : index["weight_map"].items()) {
            if (!file.is_string()) return where + "weight_map names " + shown(file) + ", not a file name";
            const std::string f = file.get<std::string>();
            if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
                return where + "weight_map names a file outside the folder: " + in_quotes(f);
            unique.insert(f);
        }
        files.assign(unique.begin(), unique.end());
    } else if (exists(dir + "/pytorch_model.bin") || exists(dir + "/pytorch_model.bin.index.json")) {
        return shown_dir +
               " has its weights in pytorch_model.bin (a PyTorch pickle, which hearth does not read): use the model's "
               "safetensors files, or write them with transformers' save_pretrained(FOLDER, safe_serialization=True)";
    } else {
        return shown_dir + " has neither model.safetensors nor model.safetensors.index.json";
    }
    std::map<std::string, const SafeTensor*> all;
    for (const std::string& f : files) {
        out->safetensors.emplace_back(new SafetensorsFile);
        if (!(err = out->safetensors.back()->open(dir + "/" + f)).empty()) return err;
        out->inputs.push_back({dir + "/" + f, out->safetensors.back()->id()});
        for (auto& [name, t] : out->safetensors.back()->tensors()) all[name] = &t;
    }

    // The tokenizer: SentencePiece's tokenizer.model when there is one (Llama-2, Mistral),
    // else a byte-level BPE tokenizer.json (Llama-3, Qwen3), with tokenizer_config.json's
    // BOS/EOS tokens and add_bos_token.
    // tokenizer_config.json is optional, but when it is there it must be readable JSON: it
    // decides BOS/EOS and add_bos for a BPE tokenizer, and holds the chat template.
    std::string tokenizer_config;
    const std::string tokenizer_config_path = dir + "/tokenizer_config.json";
    if (exists(tokenizer_config_path)) {
        json parsed;  // checked here, so that the readers below (which parse it again) cannot fail on it
        if (!(err = read_input(tokenizer_config_path, InputKind::tokenizer_config_json, &tokenizer_config, out)).empty())
            return err;
        if (!(err = parse_json(tokenizer_config, &parsed)).empty()) return shown_path(tokenizer_config_path) + ": " + err;
    }
    Tokenizer tok;
    if (exists(dir + "/tokenizer.model") || !exists(dir + "/tokenizer.json")) {
        out->tokenizer.kind = TokenizerKind::sentencepiece;
        if (!exists(dir + "/tokenizer.model"))
            return "cannot find tokenizer.model or tokenizer.json in " + shown_dir +
                   " (hearth needs the SentencePiece tokenizer.model or a byte-level BPE tokenizer.json)";
        if (!(err = read_input(dir + "/tokenizer.model", InputKind::sentencepiece_model, &out->tokenizer.sentencepiece, out))
                 .empty())
            return err;
        if (!(err = tok.load(out->tokenizer)).empty()) return shown_dir + "/tokenizer.model: " + err;
        // tokenizer_config.json's add_bos_token decides, as for Hugging Face's LlamaTokenizer
        // (Yi's says false); without it, the family's default.
        json parsed;
        if (!tokenizer_config.empty() && parse_json(tokenizer_config, &parsed).empty() && parsed.is_object() &&
            parsed.contains("add_bos_token") && parsed["add_bos_token"].is_boolean())
            out->config.add_bos = parsed["add_bos_token"].get<bool>() && out->config.bos_id >= 0;
        out->tokenizer.sentencepiece_add_bos = out->config.add_bos;
    } else {
        out->tokenizer.kind = TokenizerKind::bpe;
        const std::string tokenizer_json_path = dir + "/tokenizer.json";
        if (!(err = read_input(tokenizer_json_path, InputKind::tokenizer_json, &text, out)).empty()) return err;
        err = bpe_from_tokenizer_json(text, tokenizer_config, &out->tokenizer.bpe, &out->tokenizer.bpe_built);
        // The reader names tokenizer_config.json when that is the file at fault.
        if (!err.empty())
            return err.rfind("tokenizer_config.json: ", 0) == 0 ? shown_dir + "/" + err
                                                                : shown_path(tokenizer_json_path) + ": " + err;
        if (!(err = tok.load(out->tokenizer)).empty()) return shown_path(tokenizer_json_path) + ": " + err;
        // The tokenizer decides whether prompts start with BOS (Qwen3's config.json names a
        // bos_token_id that its tokenizer never adds).
        const BpeVocab& v = out->tokenizer.bpe;
        out->config.add_bos = v.add_bos;
        if (v.add_bos) out->config.bos_id = v.bos_id;
        // So does its EOS, over config.json's, as llama.cpp's converter (gguf-py's SpecialVocab)
        // takes it: Llama-3.x-Instruct's config.json lists [128001, 128008, 128009], whose first is
        // <|end_of_text|>, while a reply ends at tokenizer_config.json's <|eot_id|>.
        if (v.eos_id >= 0) out->config.eos_id = v.eos_id;
    }
    if (tok.vocab_size() > out->config.vocab_size)
        return (tok.bpe() ? "tokenizer.json has " + std::to_string(tok.vocab_size()) + " tokens"
                          : "tokenizer.model has " + std::to_string(tok.vocab_size()) + " pieces") +
               " but the model only " + std::to_string(out->config.vocab_size) + " (config.json's vocab_size)";

    // The chat template, when tokenizer_config.json's is one hearth has built in.
    if (!tokenizer_config.empty()) {
        out->config.chat_template_jinja = chat_template_jinja(tokenizer_config);
        out->config.chat_template = detect_chat_template(out->config.chat_template_jinja);
    }

    const ModelConfig& c = out->config;
    for (const ModelTensor& want : model_tensors(c)) {
        if (!*want.role->hf_name) {  // rope_freqs.weight: computed from config.json's rope_scaling
            SourceTensor s;
            s.name = want.name;
            s.type = TYPE_F32;
            s.n_dims = want.n_dims;
            for (int d = 0; d < kMaxDims; d++) s.shape[d] = want.shape[d];
            s.data = reinterpret_cast<const uint8_t*>(c.rope_freq_factors.data());
            out->tensors.push_back(s);
            continue;
        }
        char hf[256];
        std::snprintf(hf, sizeof hf, hf_tensor_name(family_of(c), want.role->name, want.role->hf_name), want.layer);
        auto it = all.find(hf);
        if (it == all.end())
            return std::string("tensor ") + hf + " is missing from the safetensors files" +
                   (std::string(hf) == "lm_head.weight" ? " (a model whose output matrix is its embedding's says "
                                                          "\"tie_word_embeddings\": true in config.json)"
                                                        : "");
        const SafeTensor& st = *it->second;
        if (st.shape != std::vector<uint64_t>(want.shape, want.shape + want.n_dims)) {
            std::string got;
            for (auto d : st.shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
            return std::string("tensor ") + hf + " has shape [" + got + "], config.json implies " +
                   shape_string(want.n_dims, want.shape);
        }
        SourceTensor s;
        s.name = want.name;
        s.type = type_from_dtype(st.dtype);
        if (s.type == UINT32_MAX)
            return std::string("tensor ") + hf + " has dtype " + in_quotes(st.dtype) + " (F32, F16 or BF16 expected)";
        s.n_dims = want.n_dims;
        for (int d = 0; d < kMaxDims; d++) s.shape[d] = want.shape[d];
        s.data = st.data;
        // Hugging Face's q/k rows are reordered into adjacent pairs for the families whose RoPE
        // rotates those (llama); qwen3's are kept in Hugging Face's order, which its RoPE
        // (rotate_half, llama.cpp's NEOX) and its q_norm/k_norm weights expect (model/family.h).
        if (family_of(c).rope_style == RopeStyle::adjacent_pairs) {
            if (want.role->hf_rope == HfRope::q_heads) s.hf_rope_heads = c.n_heads;
            if (want.role->hf_rope == HfRope::kv_heads) s.hf_rope_heads = c.n_kv_heads;
        }
        out->tensors.push_back(s);
    }
    return "";
}

std::string import_parsed(const ParsedCheckpoint& parsed, ImportedCheckpoint* out) {
    out->config = parsed.config;
    out->tokenizer = parsed.tokenizer;
    std::vector<MatchedTensor> matched;
    std::string err = match_tensors(parsed.config, parsed.tensors, &matched);
    if (!err.empty()) return err;
    for (const auto& [want, got] : matched) {
        const TensorView& t = *got;
        SourceTensor s;
        s.name = want.name;
        s.type = t.type;
        s.layout = t.layout;
        s.n_dims = t.n_dims;
        for (int d = 0; d < kMaxDims; d++) s.shape[d] = t.shape[d];
        s.data = static_cast<const uint8_t*>(t.data);
        if (!dequantize_supports(s.type))
            return "tensor " + want.name + " has type " + type_name(s.type) + ", which this build cannot read";
        out->tensors.push_back(s);
    }
    return "";
}

std::string import_model_file(const std::string& path, ImportedCheckpoint* out) {
    out->source = path;
    out->mapped.reset(new MappedFile);
    std::string err = out->mapped->open(path);
    if (!err.empty()) return err;
    out->inputs.push_back({path, out->mapped->id()});
    ParsedCheckpoint parsed;
    err = parse_model_file(out->mapped->data(), out->mapped->size(), &parsed);
    if (err.empty()) err = import_parsed(parsed, out);
    if (!err.empty()) return shown_path(path) + ": " + err;
    if (out->config.name.empty()) out->config.name = model_name_from_path(path, true);
    return "";
}

// Hugging Face's q/k weights hold, for each head, the first halves of all rotation pairs
// and then the second halves (its RoPE rotates x[i] with x[i + head_dim/2]). hearth
// rotates adjacent pairs (x[2i], x[2i+1]), so output row 2i+j of a head is HF row
// j*head_dim/2 + i.
static uint64_t source_row(const SourceTensor& t, uint64_t row) {
    if (t.hf_rope_heads <= 0) return row;
    const uint64_t head_dim = t.shape[0] / uint64_t(t.hf_rope_heads);
    const uint64_t head = row / head_dim, r = row % head_dim;
    return head * head_dim + (r % 2) * (head_dim / 2) + r / 2;
}

void read_source_row(const SourceTensor& t, uint64_t row, float* out) {
    if (t.group_size > 0) {
        const uint64_t cols = t.cols(), first = row * cols;
        const int8_t* q = reinterpret_cast<const int8_t*>(t.data) + first;
        for (uint64_t j = 0; j < cols;) {
            const uint64_t group = (first + j) / t.group_size, group_end = (group + 1) * t.group_size - first;
            float scale;  // the scales need not be 4-byte aligned
            std::memcpy(&scale, t.group_scales + 4 * group, 4);
            for (; j < cols && j < group_end; j++) out[j] = float(q[j]) * scale;
        }
        return;
    }
    // A safetensors file need not align its data (formats/safetensors.h): a row that does not
    // start on a multiple of 4 bytes is copied before the f16/bf16 converters read it as halves.
    const uint64_t src_row = source_row(t, row);
    if (t.layout == Layout::rows) {
        const size_t row_bytes = type_row_bytes(t.type, int64_t(t.cols()));
        const uint8_t* p = t.data + src_row * row_bytes;
        if (reinterpret_cast<uintptr_t>(p) % 4 != 0) {
            thread_local std::vector<float> aligned;  // floats: aligned for any element type read here
            aligned.resize((row_bytes + sizeof(float) - 1) / sizeof(float));
            std::memcpy(aligned.data(), p, row_bytes);
            dequantize_row(t.type, aligned.data(), int(t.cols()), 0, out);
            return;
        }
    }
    dequantize_matrix_row(t.type, t.layout, t.data, int64_t(t.rows()), int(t.cols()), int64_t(src_row), out);
}

}  // namespace hearth
