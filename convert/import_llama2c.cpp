// karpathy/llama2.c checkpoints: the legacy ("v0") file and the "ak42" versions 1 (fp32) and
// 2 (int8 groups), as its export.py writes them and run.c / runq.c read them. All are
// little-endian and use Meta's adjacent-pair RoPE order, hearth's own: no row is permuted.
//
// Which weights there are, their shapes and their order come from kTensorRoles
// (model/tensors.h), whose rows are in llama2.c's legacy order: role by role, each with all
// its layers. The ak42 files put the vectors (the norms) first, a stable partition of that order.
#include <algorithm>
#include <cstring>
#include <unistd.h>
#include <unordered_map>

#include "base/input_file.h"
#include "base/limits.h"
#include "base/printable.h"
#include "kernels/quant_types.h"
#include "tokenizer/tokenizer.h"
#include "convert/import.h"
#include "model/tensors.h"

namespace hearth {

namespace {

constexpr uint32_t kAk42Magic = 0x616b3432;  // "ak42" read as a little-endian u32
constexpr uint64_t kLegacyHeaderBytes = 7 * 4;
constexpr uint64_t kAk42HeaderBytes = 256;
constexpr uint32_t kTypeI8 = 24;  // GGUF's I8: the int8 values of a version 2 tensor

enum class Layout { legacy, ak42_v1, ak42_v2 };

struct Header {
    Layout layout = Layout::legacy;
    int32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0, seq_len = 0;
    bool shared_classifier = true;
    int32_t group_size = 0;  // version 2
    uint64_t data_offset = 0;
};

int32_t read_i32(const uint8_t* p) {
    uint32_t v = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    int32_t s;
    std::memcpy(&s, &v, 4);
    return s;
}

void read_params(const uint8_t* p, Header* h) {
    int32_t* fields[] = {&h->dim, &h->hidden_dim, &h->n_layers, &h->n_heads, &h->n_kv_heads, &h->vocab_size, &h->seq_len};
    for (int i = 0; i < 7; i++) *fields[i] = read_i32(p + 4 * i);
}

// The header in the first bytes of a file of `size` bytes; "" or why it is not one.
std::string parse_header(const uint8_t* p, uint64_t size, Header* h) {
    if (size >= 4 && uint32_t(read_i32(p)) == kAk42Magic) {
        if (size < kAk42HeaderBytes) return "the ak42 header is cut short (" + std::to_string(size) + " of 256 bytes)";
        const int32_t version = read_i32(p + 4);
        if (version != 1 && version != 2) return "ak42 version " + std::to_string(version) + " is not one hearth reads (1 or 2)";
        h->layout = version == 1 ? Layout::ak42_v1 : Layout::ak42_v2;
        read_params(p + 8, h);
        if (p[36] > 1) return "the shared-classifier flag is " + std::to_string(p[36]) + ", not 0 or 1";
        h->shared_classifier = p[36] == 1;
        if (version == 2) {
            h->group_size = read_i32(p + 37);  // packed right after the flag byte
            if (h->group_size < 1 || h->group_size > limits::kLlama2cGroupSize)
                return "group size " + std::to_string(h->group_size) + " is out of range";
        }
        h->data_offset = kAk42HeaderBytes;
        return "";
    }
    if (size < kLegacyHeaderBytes) return "too short for a llama2.c header";
    h->layout = Layout::legacy;
    read_params(p, h);
    // A negative vocabulary size is how the legacy header says the classifier is separate.
    h->shared_classifier = h->vocab_size > 0;
    if (h->vocab_size == INT32_MIN) return "vocab size " + std::to_string(h->vocab_size) + " is out of range";
    h->vocab_size = h->vocab_size < 0 ? -h->vocab_size : h->vocab_size;
    h->data_offset = kLegacyHeaderBytes;
    return "";
}

std::string config_from_header(const Header& h, ModelConfig* c) {
    if (h.n_heads < 1 || h.dim < 1 || h.dim % h.n_heads != 0)
        return "dim " + std::to_string(h.dim) + " is not a positive multiple of the head count " + std::to_string(h.n_heads);
    c->arch = "llama";
    c->dim = h.dim;
    c->hidden_dim = h.hidden_dim;
    c->n_layers = h.n_layers;
    c->n_heads = h.n_heads;
    c->n_kv_heads = h.n_kv_heads;
    c->head_dim = h.dim / h.n_heads;  // llama2.c's head_size
    c->vocab_size = h.vocab_size;
    c->max_seq_len = h.seq_len;
    c->tied_embeddings = h.shared_classifier;
    c->rope_theta = 10000.0f;  // what run.c and model.py compute RoPE with
    c->rms_eps = 1e-5f;
    c->bos_id = 1;  // run.c's, the Llama-2 tokenizer's
    c->eos_id = 2;
    c->add_bos = true;
    return validate_config(*c);
}

// a + b and a * b, false on overflow.
bool add_to(uint64_t* a, uint64_t b) { return !__builtin_add_overflow(*a, b, a); }
bool mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }

struct Placed {
    ModelTensor tensor;
    uint64_t offset;         // of its fp32 values, or of its int8 values in version 2
    uint64_t scales_offset;  // version 2 matrices: of its fp32 group scales
};

// Where each tensor lies in the file, in the file's order, and the size the whole file must
// have. Every size is computed with overflow checks; nothing is read.
std::string place_tensors(const Header& h, const ModelConfig& c, std::vector<Placed>* out, uint64_t* file_bytes) {
    // llama2.c's order is kTensorRoles' order, each role with all its layers; the ak42 files
    // write the vectors (the norms) first, a stable partition of that order.
    std::vector<const TensorRole*> roles;
    for (int r = 0; r < kTensorRoleCount; r++) roles.push_back(&kTensorRoles[r]);
    if (h.layout != Layout::legacy)
        std::stable_partition(roles.begin(), roles.end(), [](const TensorRole* r) { return !r->matrix; });
    std::vector<std::vector<ModelTensor>> by_role(kTensorRoleCount);  // layers ascending
    for (ModelTensor& t : model_tensors(c)) by_role[t.role - kTensorRoles].push_back(std::move(t));
    std::vector<const ModelTensor*> order;
    for (const TensorRole* r : roles)
        for (const ModelTensor& t : by_role[r - kTensorRoles]) order.push_back(&t);

    uint64_t at = h.data_offset;
    out->clear();
    for (const ModelTensor* t : order) {
        uint64_t n = 1;
        for (int d = 0; d < t->n_dims; d++)
            if (!mul(n, t->shape[d], &n)) return "the size of " + t->name + " overflows";
        Placed p{*t, at, 0};
        uint64_t bytes = 0;
        if (h.layout == Layout::ak42_v2 && t->role->matrix) {
            if (n % uint64_t(h.group_size) != 0)
                return std::string(t->role->llama2c_name) + " has " + std::to_string(n) +
                       " values, not a multiple of the group size " + std::to_string(h.group_size);
            uint64_t scales = 0;
            bytes = n;
            if (!mul(n / uint64_t(h.group_size), 4, &scales) || !add_to(&bytes, scales))
                return "the size of " + t->name + " overflows";
            p.scales_offset = at + n;  // cannot overflow: `at + bytes` is checked below
        } else if (!mul(n, 4, &bytes)) {
            return "the size of " + t->name + " overflows";
        }
        if (!add_to(&at, bytes)) return "the file size the header implies overflows";
        out->push_back(p);
        // The legacy file keeps RoPE's cos and sin tables after the final norm; hearth computes them.
        if (h.layout == Layout::legacy && std::strcmp(t->role->llama2c_name, "rms_final_weight") == 0) {
            uint64_t table = 0;
            if (!mul(uint64_t(c.max_seq_len), uint64_t(c.head_dim) / 2 * 4 * 2, &table) || !add_to(&at, table))
                return "the file size the header implies overflows";
        }
    }
    *file_bytes = at;
    return "";
}

const char* layout_name(Layout l) {
    switch (l) {
        case Layout::legacy: return "legacy";
        case Layout::ak42_v1: return "ak42 version 1";
        case Layout::ak42_v2: return "ak42 version 2";
    }
    return "?";
}

std::string describe(const ModelConfig& c) {
    return "dim " + std::to_string(c.dim) + ", hidden " + std::to_string(c.hidden_dim) + ", " + std::to_string(c.n_layers) +
           " layers, " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " heads, vocab " +
           std::to_string(c.vocab_size) + ", seq_len " + std::to_string(c.max_seq_len);
}

// Header, configuration and tensor placement of a file of `size` bytes whose first bytes are
// `p` (at least min(size, 256) of them), checked against that size. "" or why not.
std::string examine(const uint8_t* p, uint64_t size, Header* h, ModelConfig* c, std::vector<Placed>* placed) {
    std::string err = parse_header(p, size, h);
    if (err.empty()) err = config_from_header(*h, c);
    if (!err.empty()) return std::string(h->layout == Layout::legacy ? "legacy" : "ak42") + " header: " + err;
    uint64_t want = 0;
    if (!(err = place_tensors(*h, *c, placed, &want)).empty()) return err;
    if (want != size)
        return std::string(layout_name(h->layout)) + " checkpoint (" + describe(*c) + ") with " + std::to_string(size) +
               " bytes, not the " + std::to_string(want) + " its header implies";
    return "";
}

}  // namespace

Llama2cFormat detect_llama2c(const std::string& path, std::string* why_not) {
    if (why_not) why_not->clear();
    std::string why;
    uint64_t size = 0;
    const int fd = open_regular_file(path, &why, nullptr, &size);
    if (fd < 0) return Llama2cFormat::none;
    uint8_t head[kAk42HeaderBytes] = {};
    const ssize_t n = ::read(fd, head, sizeof head);
    ::close(fd);
    const uint64_t got = n > 0 ? uint64_t(n) : 0;
    if (got >= 4 && uint32_t(read_i32(head)) == kAk42Magic) return Llama2cFormat::ak42;
    // The legacy header has no magic: it is one when its seven numbers are a configuration
    // hearth accepts whose tensors fill the file exactly.
    Header h;
    ModelConfig c;
    std::vector<Placed> placed;
    if (!parse_header(head, got, &h).empty() || !config_from_header(h, &c).empty()) return Llama2cFormat::none;
    const std::string err = examine(head, size, &h, &c, &placed);
    if (err.empty()) return Llama2cFormat::legacy;
    if (why_not) *why_not = "looks like a llama2.c " + err;
    return Llama2cFormat::none;
}

std::string parse_llama2c(const uint8_t* base, uint64_t size, ImportedCheckpoint* out) {
    Header h;
    std::vector<Placed> placed;
    std::string err = examine(base, size, &h, &out->config, &placed);
    if (!err.empty()) return err;

    // In hearth's order (layer by layer), which is not the file's.
    std::unordered_map<std::string, const Placed*> by_name;
    for (const Placed& p : placed) by_name[p.tensor.name] = &p;
    for (const ModelTensor& t : model_tensors(out->config)) {
        const Placed& p = *by_name.at(t.name);
        SourceTensor s;
        s.name = t.name;
        s.n_dims = t.n_dims;
        for (int d = 0; d < kMaxDims; d++) s.shape[d] = t.shape[d];
        s.data = base + p.offset;
        s.type = TYPE_F32;
        if (p.scales_offset) {
            s.type = kTypeI8;
            s.group_scales = base + p.scales_offset;
            s.group_size = uint64_t(h.group_size);
        }
        out->tensors.push_back(s);
    }
    out->tokenizer = TokenizerSpec{};
    return "";
}

// llama2.c's tokenizer.bin (its tokenizer.py writes it, run.c's build_tokenizer reads it): an
// int32 max_token_length, then for each token a float32 score, an int32 length and the bytes.
// A user given llama2.c's files passes it to --tokenizer; it is recognised by walking the
// records to exactly the file's end, so that the refusal can say which file to give instead.
static bool is_llama2c_tokenizer_bin(const std::string& bytes) {
    auto i32_at = [&](size_t at) {
        int32_t v;
        std::memcpy(&v, bytes.data() + at, 4);
        return v;
    };
    if (bytes.size() < 4) return false;
    const int32_t max_length = i32_at(0);
    if (max_length < 1 || max_length > 1024) return false;
    size_t at = 4, records = 0;
    while (at + 8 <= bytes.size()) {
        const int32_t length = i32_at(at + 4);
        if (length < 0 || length > max_length || bytes.size() - at - 8 < size_t(length)) return false;
        at += 8 + size_t(length);
        records++;
    }
    return at == bytes.size() && records > 0;
}

std::string import_llama2c(const std::string& path, const std::string& tokenizer_path, ImportedCheckpoint* out) {
    out->source = path;
    out->mapped.reset(new MappedFile);
    std::string err = out->mapped->open(path);
    if (!err.empty()) return err;
    err = parse_llama2c(static_cast<const uint8_t*>(out->mapped->data()), out->mapped->size(), out);
    if (!err.empty()) return shown_path(path) + ": " + err;
    out->inputs.push_back({path, out->mapped->id()});
    if (tokenizer_path.empty()) {
        out->tokenizer = TokenizerSpec{};  // kind none: run takes and prints ids only
        return "";
    }
    out->tokenizer.kind = TokenizerKind::sentencepiece;
    FileId id;
    if (!(err = read_input_file(tokenizer_path, InputKind::sentencepiece_model, &out->tokenizer.sentencepiece, &id)).empty())
        return err;
    out->inputs.push_back({tokenizer_path, id});
    if (is_llama2c_tokenizer_bin(out->tokenizer.sentencepiece))
        return shown_path(tokenizer_path) +
               " is llama2.c's own tokenizer.bin, not a SentencePiece model: give the tokenizer.model it was made from "
               "(Llama-2's for the stories models; llama2.c's repository has it beside tokenizer.bin)";
    Tokenizer tok;
    if (!(err = tok.load(out->tokenizer)).empty()) return shown_path(tokenizer_path) + ": " + err;
    if (tok.vocab_size() != out->config.vocab_size)
        return shown_path(tokenizer_path) + " has " + std::to_string(tok.vocab_size()) + " pieces but " + shown_path(path) +
               " has a vocabulary of " + std::to_string(out->config.vocab_size) + ": it is not this model's tokenizer";
    // The ids the tokenizer encodes with (the Llama-2 one's are llama2.c's 1 and 2).
    out->config.bos_id = tok.bos_id();
    out->config.eos_id = tok.eos_id();
    return validate_config(out->config);
}

}  // namespace hearth
