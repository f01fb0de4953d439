#include "model/model.h"

#include <cstring>
#include <sys/stat.h>
#include <map>
#include <tuple>

#include "base/printable.h"
#include "kernels/matmul.h"
#include "kernels/quant_types.h"
#include "kernels/rows_x8.h"
#include "formats/metadata.h"
#include "model/tensors.h"
#include "model/tokenizer_metadata.h"

namespace hearth {

// The view of m that tensor t binds to (a Model or a const Model).
template <typename M>
static auto& view_of(M& m, const ModelTensor& t) {
    return t.role->per_layer ? m.layers[size_t(t.layer)].*t.role->layer_field : m.*t.role->model_field;
}

std::string bind_model(const ParsedCheckpoint& parsed, Model* m) {
    m->config = parsed.config;
    m->tokenizer = parsed.tokenizer;
    m->all_tensors = parsed.tensors;
    const ModelConfig& c = m->config;
    m->layers.assign(size_t(c.n_layers), LayerWeights{});
    std::vector<MatchedTensor> matched;
    std::string err = match_tensors(c, m->all_tensors, &matched);
    if (!err.empty()) return err;
    for (const auto& [want, got] : matched) {
        const TensorView& t = *got;
        // The embedding is only looked up row by row, unless it is also the output projection.
        const bool looked_up = want.role->model_field == &Model::token_embd && !c.tied_embeddings;
        if (looked_up && !dequantize_supports(t.type))
            return "tensor " + want.name + " has type " + type_name(t.type) + ", which run cannot read";
        // Its rows are looked up one at a time (and, tied, it is read as the output too).
        if (want.role->model_field == &Model::token_embd && t.layout != Layout::rows)
            return "tensor " + want.name + " has interleaved rows; the token embedding must have plain ones";
        if (want.role->matrix && !looked_up && !matmul_supports(t.type, t.layout))
            return "tensor " + want.name + " has type " + type_name(t.type) + ", which run cannot multiply";
        if (!want.role->matrix && t.type != TYPE_F32) return "tensor " + want.name + " must be f32, not " + type_name(t.type);
        view_of(*m, want) = t;
    }
    if (c.tied_embeddings) m->output = m->token_embd;
    return "";
}

uint64_t weight_bytes_per_token(const Model& m) {
    uint64_t bytes = 0;
    for (const ModelTensor& t : model_tensors(m.config)) {
        const TensorView& v = view_of(m, t);
        // The embedding is looked up one row per token, every other tensor read whole.
        bytes += t.role->model_field == &Model::token_embd ? v.bytes / v.rows() : v.bytes;
    }
    if (m.config.tied_embeddings) bytes += m.token_embd.bytes;  // read whole as the output projection
    return bytes;
}

std::vector<MatrixKind> matmul_kinds(const Model& m) {
    std::vector<MatrixKind> kinds;
    auto add = [&](const TensorView& v) {
        for (const MatrixKind& k : kinds)
            if (k.type == v.type && k.layout == v.layout) return;
        kinds.push_back({v.type, v.layout});
    };
    for (const ModelTensor& t : model_tensors(m.config))
        if (t.role->matrix && t.role->model_field != &Model::token_embd) add(view_of(m, t));
    if (m.config.tied_embeddings) add(m.token_embd);
    return kinds;
}

// Q4_0 / Q8_0 / Q4_K matrices stored plain (a GGUF file, a hearth file of format version 1)
// into the row-interleaved layout the kernels read (kernels/rows_x8.h), copied into one
// anonymous buffer; the file's pages of them are then dropped. A hearth file stores that layout
// already (quantize writes it) and is used in place. The token embedding stays plain: its rows
// are looked up one at a time (and with tied embeddings it is the output matrix too).
static std::string repack_for_kernels(Model* m) {
    std::vector<TensorView*> views;
    for (const ModelTensor& t : model_tensors(m->config))
        if (t.role->matrix && t.role->model_field != &Model::token_embd) views.push_back(&view_of(*m, t));
    auto wanted = [&](const TensorView* t) {
        return t->layout == Layout::rows && kernel_layout(t->type) == Layout::rows_x8 && t->data != m->token_embd.data;
    };
    // Offsets in the buffer by source: a tensor seen twice (the same data, type and shape) is
    // repacked once. Views that share data otherwise (a file may overlap tensors) get copies
    // of their own, so that none reads past its region.
    using Source = std::tuple<const void*, uint32_t, uint64_t, uint64_t>;  // data, type, rows, cols
    auto source = [](const TensorView* t) { return Source{t->data, t->type, t->rows(), t->cols()}; };
    std::map<Source, size_t> offset;
    std::vector<const TensorView*> sources;
    size_t total = 0;
    for (TensorView* t : views) {
        if (!wanted(t) || offset.count(source(t))) continue;
        offset[source(t)] = total;
        sources.push_back(t);
        total += (t->bytes + 63) / 64 * 64;
    }
    if (total == 0) return "";
    m->repacked_bytes = total;
    std::string err = m->repacked.allocate(total);
    if (!err.empty()) return "repacking weights for the kernels: " + err;
    char* base = static_cast<char*>(m->repacked.data());
    for (const TensorView* t : sources)
        repack_rows_to_x8(t->type, t->data, base + offset[source(t)], int64_t(t->rows()), int64_t(t->cols()));
    for (const TensorView* t : sources) m->file.release(t->data, t->bytes);  // after all copies: sources may overlap
    for (TensorView* t : views) {
        if (!wanted(t)) continue;
        t->data = base + offset[source(t)];
        t->layout = Layout::rows_x8;
    }
    return "";
}

std::string load_tokenizer(const Model& m, Tokenizer* tok) {
    std::string err = tok->load(m.tokenizer);
    if (!err.empty()) return "embedded tokenizer: " + err;
    if (tok->vocab_size() > m.config.vocab_size)
        return "the tokenizer has " + std::to_string(tok->vocab_size()) + " tokens, more than the model's vocabulary of " +
               std::to_string(m.config.vocab_size);
    return "";
}

std::string check_model_metadata(const Metadata& meta) {
    // Through the bytes, so that the reader's limits apply as they will to the file.
    const std::string bytes = meta.serialize();
    Metadata reread;
    ModelConfig config;
    TokenizerSpec tokenizer;
    uint64_t used = 0;
    std::string err = reread.parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), meta.size(), &used);
    if (err.empty()) err = config_from_metadata(reread, &config);
    if (err.empty()) err = tokenizer_from_metadata(reread, &tokenizer);
    return err;
}

std::string check_model_file(const std::string& path) {
    Model m;
    std::string err = m.file.open(path);
    if (!err.empty()) return err;
    ParsedCheckpoint parsed;
    if ((err = parse_model_file(m.file.data(), m.file.size(), &parsed)).empty() && (err = bind_model(parsed, &m)).empty() &&
        m.tokenizer.kind != TokenizerKind::none) {
        Tokenizer tok;
        err = load_tokenizer(m, &tok);
    }
    return err;
}

std::string load_model(const std::string& path, Model* m) {
    const std::string shown = shown_path(path);
    // What a new user gives first: the folder they downloaded, its model.safetensors, or a
    // llama2.c file. quantize converts them; the message says so rather than only what they are not.
    auto convert_first = [](const std::string& what, const std::string& input) {
        return "convert " + what + " first: quantize " + input + " MODEL.hearth";
    };
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        return shown + " is a folder; run reads a hearth checkpoint or a GGUF file: for a Hugging Face folder, " +
               convert_first("it", shown);
    std::string err = m->file.open(path);
    if (!err.empty()) return err;
    ParsedCheckpoint parsed;
    err = parse_model_file(m->file.data(), m->file.size(), &parsed);
    if (err == kNotAModelFile) {
        const size_t slash = path.rfind('/');
        const std::string folder = slash == std::string::npos ? "." : shown_path(path.substr(0, slash));
        const bool safetensors = path.size() > 12 && ends_with(path, ".safetensors");
        return shown + ": " + err + "; " +
               (safetensors ? "weights of a Hugging Face folder: " + convert_first("the folder", folder)
                            : "for a llama2.c checkpoint, " + convert_first("it", shown));
    }
    if (!err.empty()) return shown + ": " + err;
    err = bind_model(parsed, m);
    if (!err.empty()) return shown + ": " + err;
    err = repack_for_kernels(m);
    return err.empty() ? "" : shown + ": " + err;
}

}  // namespace hearth
