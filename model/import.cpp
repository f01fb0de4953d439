#include "import.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "../kernels/matmul.h"
#include "../kernels/quant_types.h"
#include "../tokenizer/tokenizer.h"
#include "chat_template.h"
#include "model.h"
#include "tensors.h"

using json = nlohmann::json;

uint64_t SourceTensor::rows() const {
    uint64_t r = 1;
    for (int i = 0; i + 1 < n_dims; i++) r *= shape[i];
    return r;
}

static std::string read_file(const std::string& path, std::string* out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "cannot read " + path;
    std::stringstream ss;
    ss << in.rdbuf();
    *out = ss.str();
    return "";
}

static bool exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0;
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

static std::string config_from_hf(const json& j, ModelConfig* c) {
    auto get_int = [&](const char* key, int fallback) -> int {
        if (!j.contains(key) || j[key].is_null()) {
            if (fallback < 0) throw std::runtime_error(std::string("config.json has no ") + key);
            return fallback;
        }
        return j[key].get<int>();
    };
    std::string arch = j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty()
                           ? j["architectures"][0].get<std::string>() : "";
    std::string model_type = j.value("model_type", "");
    if (arch != "LlamaForCausalLM" && model_type != "llama")
        return "config.json describes " + (arch.empty() ? model_type : arch) + ", not a Llama model (LlamaForCausalLM)";
    if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) return "rope_scaling is not supported yet";
    if (j.value("attention_bias", false) || j.value("mlp_bias", false)) return "biases in attention/MLP are not supported";
    if (j.value("hidden_act", std::string("silu")) != "silu") return "hidden_act " + j["hidden_act"].get<std::string>() + " is not supported (only silu)";
    c->arch = "llama";
    c->dim = get_int("hidden_size", -1);
    c->hidden_dim = get_int("intermediate_size", -1);
    c->n_layers = get_int("num_hidden_layers", -1);
    c->n_heads = get_int("num_attention_heads", -1);
    c->n_kv_heads = get_int("num_key_value_heads", c->n_heads);
    c->head_dim = get_int("head_dim", c->n_heads > 0 ? c->dim / c->n_heads : 0);
    c->vocab_size = get_int("vocab_size", -1);
    c->max_seq_len = get_int("max_position_embeddings", 2048);
    c->rms_eps = j.contains("rms_norm_eps") ? j["rms_norm_eps"].get<float>() : 1e-6f;  // LlamaConfig's default
    c->rope_theta = j.contains("rope_theta") ? j["rope_theta"].get<float>() : 10000.0f;
    c->tied_embeddings = j.value("tie_word_embeddings", false);
    // Some configs give a list of EOS ids; the first is the end of a turn.
    auto token_id = [&](const char* key, int fallback) {
        if (!j.contains(key) || j[key].is_null()) return fallback;
        if (j[key].is_array()) return j[key].empty() ? fallback : j[key][0].get<int>();
        return j[key].get<int>();
    };
    c->bos_id = token_id("bos_token_id", 1);
    c->eos_id = token_id("eos_token_id", 2);
    return validate_config(*c);
}

static uint32_t type_from_dtype(const std::string& dtype) {
    if (dtype == "F32") return TYPE_F32;
    if (dtype == "F16") return TYPE_F16;
    if (dtype == "BF16") return TYPE_BF16;
    return UINT32_MAX;
}

std::string import_hf_folder(const std::string& dir, ImportedCheckpoint* out) {
    std::string text, err;
    if (!(err = read_file(dir + "/config.json", &text)).empty()) return err + " (is " + dir + " a Hugging Face model folder?)";
    try {
        err = config_from_hf(json::parse(text), &out->config);
    } catch (const std::exception& e) {
        return dir + "/config.json: " + e.what();
    }
    if (!err.empty()) return dir + "/config.json: " + err;
    out->config.name = model_name_from_path(dir, false);

    // Which safetensors files hold the weights.
    std::vector<std::string> files;
    if (exists(dir + "/model.safetensors.index.json")) {
        if (!(err = read_file(dir + "/model.safetensors.index.json", &text)).empty()) return err;
        try {
            std::set<std::string> unique;
            const json index = json::parse(text);  // must outlive the loop over its items
            for (auto& [name, file] : index.at("weight_map").items()) {
                std::string f = file.get<std::string>();
                if (f.find('/') != std::string::npos) return "model.safetensors.index.json names a file outside the folder: " + f;
                unique.insert(f);
            }
            files.assign(unique.begin(), unique.end());
        } catch (const std::exception& e) {
            return dir + "/model.safetensors.index.json: " + e.what();
        }
    } else if (exists(dir + "/model.safetensors")) {
        files.push_back("model.safetensors");
    } else {
        return dir + " has neither model.safetensors nor model.safetensors.index.json";
    }
    std::map<std::string, const SafeTensor*> all;
    for (const std::string& f : files) {
        out->safetensors.emplace_back(new SafetensorsFile);
        if (!(err = out->safetensors.back()->open(dir + "/" + f)).empty()) return err;
        out->files.push_back(dir + "/" + f);
        for (auto& [name, t] : out->safetensors.back()->tensors()) all[name] = &t;
    }

    out->tokenizer.kind = TokenizerKind::sentencepiece;
    if (!(err = read_file(dir + "/tokenizer.model", &out->tokenizer.sentencepiece)).empty())
        return err + " (hearth needs the SentencePiece tokenizer.model)";
    out->files.push_back(dir + "/tokenizer.model");
    Tokenizer tok;
    if (!(err = tok.load(out->tokenizer)).empty()) return dir + "/tokenizer.model: " + err;
    if (tok.vocab_size() > out->config.vocab_size)
        return "tokenizer.model has " + std::to_string(tok.vocab_size()) + " pieces but the model only " + std::to_string(out->config.vocab_size);

    // The chat template, when tokenizer_config.json's is one hearth has built in.
    if (exists(dir + "/tokenizer_config.json") && read_file(dir + "/tokenizer_config.json", &text).empty())
    {
        out->config.chat_template_jinja = chat_template_jinja(text);
        out->config.chat_template = detect_chat_template(out->config.chat_template_jinja);
    }

    const ModelConfig& c = out->config;
    for (const ModelTensor& want : model_tensors(c)) {
        char hf[256];
        std::snprintf(hf, sizeof hf, want.role->hf_name, want.layer);
        auto it = all.find(hf);
        if (it == all.end()) return std::string("tensor ") + hf + " is missing from the safetensors files";
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
        if (s.type == UINT32_MAX) return std::string("tensor ") + hf + " has dtype " + st.dtype + " (F32, F16 or BF16 expected)";
        s.n_dims = want.n_dims;
        for (int d = 0; d < kMaxDims; d++) s.shape[d] = want.shape[d];
        s.data = st.data;
        if (want.role->hf_rope == HfRope::q_heads) s.hf_rope_heads = c.n_heads;
        if (want.role->hf_rope == HfRope::kv_heads) s.hf_rope_heads = c.n_kv_heads;
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
        s.n_dims = t.n_dims;
        for (int d = 0; d < kMaxDims; d++) s.shape[d] = t.shape[d];
        s.data = static_cast<const uint8_t*>(t.data);
        if (!dequantize_supports(s.type)) return "tensor " + want.name + " has type " + type_name(s.type) + ", which this build cannot read";
        out->tensors.push_back(s);
    }
    return "";
}

std::string import_model_file(const std::string& path, ImportedCheckpoint* out) {
    out->mapped.reset(new MappedFile);
    std::string err = out->mapped->open(path);
    if (!err.empty()) return err;
    out->files.push_back(path);
    ParsedCheckpoint parsed;
    err = parse_model_file(out->mapped->data(), out->mapped->size(), &parsed);
    if (err.empty()) err = import_parsed(parsed, out);
    if (!err.empty()) return path + ": " + err;
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
    dequantize_row(t.type, t.data, int(t.cols()), int64_t(source_row(t, row)), out);
}
