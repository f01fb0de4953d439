// GGUF out: `quantize IN OUT.gguf` writes a GGUF v3 file that llama.cpp runs (docs/gguf.md).
//
// Every exported file goes through an independent reading of GGUF written here from the
// specification (ggml's docs/gguf.md) and from what llama.cpp's reader requires
// (ggml/src/gguf.cpp, src/llama-vocab.cpp), not through hearth's parse_gguf; llama.cpp's own
// files (tests/data/gguf-mini) must pass it too, which checks the checker. Then the file is
// read back by hearth and compared with independent sources: the same input converted to a
// hearth file, and llama.cpp's own files' bytes and vocabulary arrays.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <map>
#include <sys/stat.h>

#include "kernels/quant_types.h"
#include "kernels/rows_x8.h"
#include "formats/writer.h"
#include "model/forward.h"
#include "formats/gguf.h"
#include "formats/metadata.h"
#include "model/model.h"
#include "model/tensors.h"
#include "model/tokenizer_metadata.h"
#include "tokenizer/tokenizer.h"
#include "tests/test_helpers.h"

using namespace hearth;

namespace {

// ---- GGUF as the specification states it ----

// Value types: uint8 0, int8 1, uint16 2, int16 3, uint32 4, int32 5, float32 6, bool 7,
// string 8, array 9, uint64 10, int64 11, float64 12.
enum : uint32_t { kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };
const int kScalarBytes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

struct Kv {
    uint32_t type = 0, elem_type = 0;
    uint64_t count = 0;
    std::vector<std::string> strings;  // a string value, or an array's strings
    std::string raw;                   // a scalar's bytes, or an array of scalars' bytes
};

struct Info {
    std::string name;
    std::vector<uint64_t> ne;  // innermost first
    uint32_t type = 0;
    uint64_t offset = 0, bytes = 0;
};

struct Gguf {
    std::map<std::string, Kv> kv;
    std::vector<Info> infos;
    uint64_t alignment = 32, data_start = 0;
    const Info* info(const std::string& name) const {
        for (const Info& i : infos)
            if (i.name == name) return &i;
        return nullptr;
    }
};

// Reads little-endian values from a byte string; a read past the end fails the test.
struct Reader {
    const std::string& b;
    uint64_t at = 0;
    void take(void* out, uint64_t n) {
        REQUIRE_MESSAGE(n <= b.size() - at, "read of " << n << " bytes at " << at << " runs past the end");
        std::memcpy(out, b.data() + at, size_t(n));
        at += n;
    }
    template <typename T>
    T get() {
        T v;
        take(&v, sizeof v);
        return v;
    }
    std::string string() {
        const uint64_t n = get<uint64_t>();
        REQUIRE(n <= b.size() - at);
        std::string s = b.substr(size_t(at), size_t(n));
        at += n;
        return s;
    }
};

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// The type llama.cpp's loader insists on for each key it reads (its getters compare the
// stored type exactly); for arrays, the element type.
const std::map<std::string, std::pair<uint32_t, uint32_t>> kExpectedTypes = {
    {"general.architecture", {kString, 0}},
    {"general.name", {kString, 0}},
    {"general.alignment", {kU32, 0}},
    {"general.file_type", {kU32, 0}},
    {"general.quantization_version", {kU32, 0}},
    {"llama.context_length", {kU32, 0}},
    {"llama.embedding_length", {kU32, 0}},
    {"llama.block_count", {kU32, 0}},
    {"llama.feed_forward_length", {kU32, 0}},
    {"llama.attention.head_count", {kU32, 0}},
    {"llama.attention.head_count_kv", {kU32, 0}},
    {"llama.attention.key_length", {kU32, 0}},
    {"llama.attention.value_length", {kU32, 0}},
    {"llama.rope.dimension_count", {kU32, 0}},
    {"llama.vocab_size", {kU32, 0}},
    {"llama.rope.freq_base", {kF32, 0}},
    {"llama.attention.layer_norm_rms_epsilon", {kF32, 0}},
    {"llama.attention.sliding_window", {kU32, 0}},
    {"tokenizer.ggml.model", {kString, 0}},
    {"tokenizer.ggml.tokens", {kArray, kString}},
    {"tokenizer.ggml.scores", {kArray, kF32}},
    {"tokenizer.ggml.token_type", {kArray, kI32}},
    {"tokenizer.ggml.bos_token_id", {kU32, 0}},
    {"tokenizer.ggml.eos_token_id", {kU32, 0}},
    {"tokenizer.ggml.unknown_token_id", {kU32, 0}},
    {"tokenizer.ggml.padding_token_id", {kU32, 0}},
    {"tokenizer.ggml.add_bos_token", {kBool, 0}},
    {"tokenizer.ggml.add_space_prefix", {kBool, 0}},
    {"tokenizer.ggml.remove_extra_whitespaces", {kBool, 0}},
    {"tokenizer.chat_template", {kString, 0}},
};

// Keys a llama model cannot load without (llama.cpp's required get_key calls).
const char* const kRequiredKeys[] = {"general.architecture",
                                     "llama.context_length",
                                     "llama.embedding_length",
                                     "llama.block_count",
                                     "llama.feed_forward_length",
                                     "llama.attention.head_count",
                                     "llama.attention.layer_norm_rms_epsilon",
                                     "tokenizer.ggml.model"};

void read_value(Reader& r, uint32_t type, Kv* kv, int depth) {
    REQUIRE(type <= kF64);
    if (type == kString) {
        kv->strings.push_back(r.string());
    } else if (type == kArray) {
        REQUIRE(depth == 0);  // hearth writes no nested arrays, and llama.cpp reads none
        kv->elem_type = r.get<uint32_t>();
        kv->count = r.get<uint64_t>();
        REQUIRE(kv->elem_type <= kF64);
        REQUIRE(kv->elem_type != kArray);
        if (kv->elem_type == kString) {
            for (uint64_t i = 0; i < kv->count; i++) kv->strings.push_back(r.string());
        } else {
            const uint64_t n = kv->count * uint64_t(kScalarBytes[kv->elem_type]);
            REQUIRE(n <= r.b.size() - r.at);
            kv->raw = r.b.substr(size_t(r.at), size_t(n));
            r.at += n;
        }
    } else {
        std::string v(size_t(kScalarBytes[type]), '\0');
        r.take(&v[0], v.size());
        if (type == kBool) CHECK(uint8_t(v[0]) <= 1);
        kv->raw = v;
    }
}

// Reads a GGUF v3 file and checks every invariant of the format and what llama.cpp needs of
// a llama model. Fails the test on the first structural error.
Gguf check_gguf(const std::string& bytes) {
    Gguf g;
    Reader r{bytes};
    REQUIRE(bytes.size() >= 24);
    REQUIRE(bytes.compare(0, 4, "GGUF") == 0);
    r.at = 4;
    CHECK(r.get<uint32_t>() == 3);
    const uint64_t n_tensors = r.get<uint64_t>(), n_kv = r.get<uint64_t>();
    REQUIRE(n_tensors > 0);
    REQUIRE(n_kv < 65536);

    for (uint64_t i = 0; i < n_kv; i++) {
        const std::string key = r.string();
        CAPTURE(key);
        REQUIRE(!key.empty());
        // The specification's convention: lower_snake_case words separated by dots.
        for (char c : key) CHECK(((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.'));
        REQUIRE(g.kv.count(key) == 0);
        Kv kv;
        kv.type = r.get<uint32_t>();
        read_value(r, kv.type, &kv, 0);
        // qwen3's keys are llama's under another prefix.
        auto want = kExpectedTypes.find(key.rfind("qwen3.", 0) == 0 ? "llama." + key.substr(6) : key);
        if (want != kExpectedTypes.end()) {
            CHECK(kv.type == want->second.first);
            if (kv.type == kArray) CHECK(kv.elem_type == want->second.second);
        }
        g.kv[key] = kv;
    }
    REQUIRE(g.kv.count("general.architecture"));
    const std::string arch = g.kv["general.architecture"].strings.at(0);
    CHECK((arch == "llama" || arch == "qwen2" || arch == "qwen3"));
    for (std::string key : kRequiredKeys) {
        if (key.rfind("llama.", 0) == 0) key = arch + key.substr(5);
        CHECK_MESSAGE(g.kv.count(key), key);
    }
    if (g.kv.count("general.alignment")) {
        std::memcpy(&g.alignment, g.kv["general.alignment"].raw.data(), 4);
        g.alignment &= 0xffffffffu;
    }
    REQUIRE(g.alignment > 0);
    REQUIRE((g.alignment & (g.alignment - 1)) == 0);

    for (uint64_t i = 0; i < n_tensors; i++) {
        Info t;
        t.name = r.string();
        CAPTURE(t.name);
        CHECK(!t.name.empty());
        CHECK(t.name.size() < 64);  // GGML_MAX_NAME, with its NUL
        CHECK(g.info(t.name) == nullptr);
        const uint32_t n_dims = r.get<uint32_t>();
        REQUIRE(n_dims >= 1);
        REQUIRE(n_dims <= 4);  // GGML_MAX_DIMS
        for (uint32_t d = 0; d < n_dims; d++) t.ne.push_back(r.get<uint64_t>());
        t.type = r.get<uint32_t>();
        t.offset = r.get<uint64_t>();
        const TypeTraits* traits = type_traits(t.type);
        REQUIRE(traits != nullptr);
        CHECK(traits->use != USE_ACT);
        uint64_t rows = 1;
        for (uint32_t d = 0; d < n_dims; d++) {
            REQUIRE(t.ne[d] >= 1);
            if (d > 0) rows *= t.ne[d];
        }
        REQUIRE(t.ne[0] % uint64_t(traits->block_size) == 0);
        t.bytes = t.ne[0] / uint64_t(traits->block_size) * uint64_t(traits->block_bytes) * rows;
        CHECK(t.offset % g.alignment == 0);
        g.infos.push_back(t);
    }

    // The data starts at the next multiple of the alignment; the padding is zeros.
    g.data_start = align_up(r.at, g.alignment);
    REQUIRE(g.data_start <= bytes.size());
    CHECK(bytes.find_first_not_of('\0', size_t(r.at)) >= g.data_start);
    // llama.cpp's reader wants each tensor right after the previous one, padded to the
    // alignment (ggml/src/gguf.cpp: "tensor ... has offset ..., expected ..."): so offsets
    // increase and tensors never overlap.
    // The padding after each tensor is zeros, as llama.cpp's writer writes it.
    uint64_t expected = 0;
    for (const Info& t : g.infos) {
        CAPTURE(t.name);
        CHECK(t.offset == expected);
        REQUIRE(t.offset <= bytes.size() - g.data_start);
        REQUIRE(t.bytes <= bytes.size() - g.data_start - t.offset);
        const uint64_t end = g.data_start + t.offset + t.bytes;
        expected = align_up(t.offset + t.bytes, g.alignment);
        const uint64_t padding = std::min<uint64_t>(g.data_start + expected, bytes.size()) - end;
        CHECK(bytes.compare(size_t(end), size_t(padding), std::string(size_t(padding), '\0')) == 0);
    }
    // The file ends at the last tensor's end padded to the alignment, as llama.cpp's writer
    // ends it (gguf_write_out pads after every tensor).
    const Info& last = g.infos.back();
    CHECK(bytes.size() >= g.data_start + last.offset + last.bytes);
    CHECK(bytes.size() == g.data_start + expected);

    // The vocabulary: one token per row of the embedding, and as many scores and types.
    const Info* embd = g.info("token_embd.weight");
    REQUIRE(embd != nullptr);
    REQUIRE(embd->ne.size() == 2);
    const std::string model = g.kv["tokenizer.ggml.model"].strings.at(0);
    if (model == "llama") {
        REQUIRE(g.kv.count("tokenizer.ggml.tokens"));
        const uint64_t n = g.kv["tokenizer.ggml.tokens"].count;
        CHECK(n == embd->ne[1]);
        for (const char* key : {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
            REQUIRE_MESSAGE(g.kv.count(key), key);
            CHECK(g.kv[key].count == n);
        }
        for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
                                "tokenizer.ggml.padding_token_id"})
            if (g.kv.count(key)) {
                uint32_t id;
                std::memcpy(&id, g.kv[key].raw.data(), 4);
                CHECK_MESSAGE(id < n, key);
            }
    } else {
        CHECK((model == "no_vocab" || model == "none"));
    }
    return g;
}

uint32_t u32_of(const Gguf& g, const std::string& key) {
    REQUIRE_MESSAGE(g.kv.count(key), key);
    uint32_t v;
    std::memcpy(&v, g.kv.at(key).raw.data(), 4);
    return v;
}

std::vector<float> f32s_of(const Gguf& g, const std::string& key) {
    REQUIRE_MESSAGE(g.kv.count(key), key);
    const std::string& raw = g.kv.at(key).raw;
    std::vector<float> v(raw.size() / 4);
    std::memcpy(v.data(), raw.data(), raw.size());
    return v;
}

std::vector<int32_t> i32s_of(const Gguf& g, const std::string& key) {
    REQUIRE_MESSAGE(g.kv.count(key), key);
    const std::string& raw = g.kv.at(key).raw;
    std::vector<int32_t> v(raw.size() / 4);
    std::memcpy(v.data(), raw.data(), raw.size());
    return v;
}

// ---- helpers ----

bool exists(const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

// Files in build/tests/ whose names start with `prefix`: what a failed run may have left.
std::vector<std::string> leftovers(const std::string& prefix) {
    std::vector<std::string> found;
    if (DIR* d = opendir("build/tests")) {
        while (dirent* e = readdir(d))
            if (std::string(e->d_name).compare(0, prefix.size(), prefix) == 0) found.push_back(e->d_name);
        closedir(d);
    }
    return found;
}

void quantize(const std::string& args) {
    CommandResult r = run_command("./quantize " + args + " -q");
    INFO("./quantize " << args << ": " << r.err);
    REQUIRE(r.exit_code == 0);
}

ParsedCheckpoint parse(const std::string& bytes) {
    ParsedCheckpoint p;
    REQUIRE(parse_model_file(bytes.data(), bytes.size(), &p) == "");
    return p;
}

void check_same_config(const ModelConfig& a, const ModelConfig& b) {
    CHECK(a.arch == b.arch);
    CHECK(a.name == b.name);
    CHECK(a.dim == b.dim);
    CHECK(a.hidden_dim == b.hidden_dim);
    CHECK(a.n_layers == b.n_layers);
    CHECK(a.n_heads == b.n_heads);
    CHECK(a.n_kv_heads == b.n_kv_heads);
    CHECK(a.head_dim == b.head_dim);
    CHECK(a.vocab_size == b.vocab_size);
    CHECK(a.max_seq_len == b.max_seq_len);
    CHECK(a.tied_embeddings == b.tied_embeddings);
    CHECK(a.rope_theta == b.rope_theta);
    CHECK(a.rms_eps == b.rms_eps);
    CHECK(a.rope_freq_factors == b.rope_freq_factors);
    CHECK(a.sliding_window == b.sliding_window);
    CHECK(a.bos_id == b.bos_id);
    CHECK(a.eos_id == b.eos_id);
    CHECK(a.add_bos == b.add_bos);
    CHECK(a.chat_template == b.chat_template);
    CHECK(a.chat_template_jinja == b.chat_template_jinja);
}

// A tensor's blocks in the plain layout (a hearth file stores q4_0/q8_0/q4_K matrices with rows
// interleaved by 8; GGUF files never do).
std::string plain_blocks(const TensorView& t) {
    std::string bytes(static_cast<const char*>(t.data), t.bytes);
    if (t.layout == Layout::rows_x8) repack_x8_to_rows(t.type, t.data, &bytes[0], int64_t(t.rows()), int64_t(t.cols()));
    return bytes;
}

// Every tensor of `want` is in `got` with the same type, shape and blocks.
void check_same_tensors(const ParsedCheckpoint& got, const ParsedCheckpoint& want) {
    CHECK(got.tensors.size() == want.tensors.size());
    for (const TensorView& w : want.tensors) {
        CAPTURE(w.name);
        const TensorView* g = nullptr;
        for (const TensorView& t : got.tensors)
            if (t.name == w.name) g = &t;
        REQUIRE(g != nullptr);
        CHECK(g->type == w.type);
        CHECK(shape_string(g->n_dims, g->shape) == shape_string(w.n_dims, w.shape));
        REQUIRE(g->bytes == w.bytes);
        CHECK(plain_blocks(*g) == plain_blocks(w));
    }
}

std::vector<float> prompt_logits(const std::string& path, const std::vector<int>& prompt) {
    Model m;
    REQUIRE(load_model(path, &m) == "");
    RunState s;
    REQUIRE(make_run_state(m.config, 64, &s) == "");
    std::vector<float> logits(prompt.size() * size_t(m.config.vocab_size));
    REQUIRE(forward(m, s, prompt.data(), int(prompt.size()), 0, logits.data(), true) == "");
    return logits;
}

void check_same_logits(const std::string& a, const std::string& b, const std::vector<int>& prompt) {
    const std::vector<float> la = prompt_logits(a, prompt), lb = prompt_logits(b, prompt);
    REQUIRE(la.size() == lb.size());
    CHECK(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)) == 0);
}

// The exported file's metadata, through hearth's reader (for what the checker does not hold).
Metadata metadata_of(const std::string& bytes) {
    uint64_t n_kv, used = 0;
    std::memcpy(&n_kv, bytes.data() + 16, 8);
    Metadata m;
    REQUIRE(m.parse(reinterpret_cast<const uint8_t*>(bytes.data()) + 24, bytes.size() - 24, n_kv, &used) == "");
    return m;
}

const char* const kParityFolders[] = {"mha", "gqa", "tied", "theta500k", "bf16", "odd", "llama3", "mistral", "qwen2", "qwen3"};
const char* const kMiniTypes[] = {"F16", "Q8_0", "Q4_0", "Q4_K_M"};
std::string mini(const std::string& type) { return "build/tests/gguf-mini/mini-" + type + ".gguf"; }
const std::vector<int> kPrompt = {1, 9038, 2501, 263, 931};  // "<s> Once upon a time" in the Llama-2 vocabulary

}  // namespace

TEST_CASE("gguf export: the invariant checker accepts llama.cpp's own files") {
    for (const std::string type : kMiniTypes) {
        CAPTURE(type);
        const Gguf g = check_gguf(read_text(mini(type)));
        CHECK(g.alignment == 32);
        CHECK(g.kv.at("tokenizer.ggml.tokens").count == 32000);
    }
}

TEST_CASE("gguf export: Hugging Face folders give the hearth conversion's configuration, tensors and logits") {
    for (const std::string folder : kParityFolders) {
        CAPTURE(folder);
        const std::string dir = "tests/data/parity/" + folder, gguf = "build/tests/export-" + folder + ".gguf",
                          hearth = "build/tests/export-" + folder + ".hearth";
        quantize(dir + " " + gguf);
        quantize(dir + " " + hearth);
        const std::string gb = read_text(gguf), hb = read_text(hearth);
        const Gguf g = check_gguf(gb);
        CHECK(g.kv.count("general.alignment") == 0);  // 32, GGUF's default
        CHECK(g.kv.at("general.name").strings.at(0) == folder);
        CHECK(u32_of(g, "general.file_type") == 1);  // LLAMA_FTYPE_MOSTLY_F16
        CHECK(g.kv.count("general.quantization_version") == 0);
        const ParsedCheckpoint pg = parse(gb), ph = parse(hb);
        CHECK(pg.format == "GGUF v3");
        CHECK(ph.format == "hearth v2");
        check_same_config(pg.config, ph.config);
        CHECK(pg.config.name == folder);
        check_same_tensors(pg, ph);
        // The tokenizer comes back byte for byte: the SentencePiece model rides along.
        CHECK(pg.tokenizer.kind == TokenizerKind::sentencepiece);
        CHECK(pg.tokenizer.sentencepiece == read_text(dir + "/tokenizer.model"));
        check_same_logits(gguf, hearth, {1, 5, 9, 40, 3, 77, 12, 8});
    }
}

TEST_CASE("gguf export: quantized mixes keep the hearth conversion's blocks and say their llama.cpp file type") {
    // LLAMA_FTYPE_MOSTLY_Q8_0 = 7, _Q4_0 = 2, _Q4_K_M = 15 (llama.cpp's include/llama.h).
    const struct {
        const char* type;
        uint32_t file_type;
    } cases[] = {{"q8_0", 7}, {"q4_0", 2}, {"q4_k_m", 15}, {"f32", 0}};
    for (const auto& c : cases) {
        CAPTURE(c.type);
        const std::string gguf = std::string("build/tests/export-gqa-") + c.type + ".gguf",
                          hearth = std::string("build/tests/export-gqa-") + c.type + ".hearth";
        quantize("tests/data/parity/gqa " + gguf + " " + c.type);
        quantize("tests/data/parity/gqa " + hearth + " " + c.type);
        const std::string gb = read_text(gguf), hb = read_text(hearth);
        const Gguf g = check_gguf(gb);
        CHECK(u32_of(g, "general.file_type") == c.file_type);
        if (c.file_type == 0) {
            CHECK(g.kv.count("general.quantization_version") == 0);
        } else {
            CHECK(u32_of(g, "general.quantization_version") == 2);  // ggml's GGML_QNT_VERSION
        }
        check_same_tensors(parse(gb), parse(hb));
        check_same_logits(gguf, hearth, {1, 5, 9, 40, 3, 77, 12, 8});
    }
}

TEST_CASE("gguf export: a padded vocabulary gets llama.cpp's placeholder tokens, and the arrays alone still tokenize") {
    // tests/data/parity/gqa: 520 embedding rows, 512 SentencePiece pieces.
    quantize("tests/data/parity/gqa build/tests/export-gqa.gguf");
    const std::string bytes = read_text("build/tests/export-gqa.gguf");
    const Gguf g = check_gguf(bytes);
    const std::vector<std::string>& tokens = g.kv.at("tokenizer.ggml.tokens").strings;
    const std::vector<float> scores = f32s_of(g, "tokenizer.ggml.scores");
    const std::vector<int32_t> types = i32s_of(g, "tokenizer.ggml.token_type");
    REQUIRE(tokens.size() == 520);
    // The first 512 are the pieces as the SentencePiece library reports them.
    Tokenizer sp;
    REQUIRE(sp.load_file("tests/data/parity/gqa/tokenizer.model") == "");
    REQUIRE(sp.vocab_size() == 512);
    for (int i = 0; i < 512; i++) {
        CAPTURE(i);
        CHECK(tokens[i] == sp.piece(i));
        // GGUF's token types: 1 normal, 2 unknown, 3 control, 6 byte (SentencePiece's numbers).
        const int32_t want = sp.is_unknown(i) ? 2 : sp.is_control(i) ? 3 : sp.is_byte(i) ? 6 : 1;
        CHECK(types[i] == want);
    }
    // The rest as llama.cpp's convert script pads (conversion/base.py, _create_vocab_sentencepiece):
    // "[PAD{id}]", score -10000, UNUSED (5).
    for (int i = 512; i < 520; i++) {
        CHECK(tokens[i] == "[PAD" + std::to_string(i) + "]");
        CHECK(scores[i] == -10000.0f);
        CHECK(types[i] == 5);
    }
    CHECK(u32_of(g, "tokenizer.ggml.unknown_token_id") == 0);
    CHECK(u32_of(g, "tokenizer.ggml.bos_token_id") == 1);
    CHECK(u32_of(g, "tokenizer.ggml.eos_token_id") == 2);

    // Without the SentencePiece model's bytes, hearth builds one from the arrays (as for any
    // llama.cpp file): it must tokenize as the original does.
    Metadata m = metadata_of(bytes);
    REQUIRE(m.has("hearth.tokenizer.sentencepiece_model"));
    m.erase("hearth.tokenizer.sentencepiece_model");
    TokenizerSpec spec;
    REQUIRE(tokenizer_from_metadata(m, &spec) == "");
    Tokenizer from_arrays;
    REQUIRE(from_arrays.load(spec) == "");
    CHECK(from_arrays.vocab_size() == 520);
    for (const char* text : {"Hello world", "  two  spaces", "ROMEO: O, she doth teach the torches to burn bright!",
                             "caf\xc3\xa9 \xe2\x82\xac 1234"}) {
        CAPTURE(text);
        CHECK(encoded(from_arrays, text, true) == encoded(sp, text, true));
        CHECK(from_arrays.decode(encoded(sp, text, false)) == sp.decode(encoded(sp, text, false)));
    }
}

TEST_CASE("gguf export: the default model (a hearth v1 file) exports with its tensors, tokenizer and logits") {
    const std::string in = "models/tiny-shakespeare.hearth", out = "build/tests/export-tiny-shakespeare.gguf";
    quantize(in + " " + out);
    const std::string ib = read_text(in), ob = read_text(out);
    const Gguf g = check_gguf(ob);
    const ParsedCheckpoint pi = parse(ib), po = parse(ob);
    CHECK(pi.format == "hearth v1");
    ModelConfig named = pi.config;
    named.name = "tiny-shakespeare";  // a v1 file names nothing: the file's name stands in
    check_same_config(po.config, named);
    check_same_tensors(po, pi);
    CHECK(po.tokenizer.sentencepiece == pi.tokenizer.sentencepiece);
    CHECK(g.kv.at("tokenizer.ggml.tokens").count == uint64_t(pi.config.vocab_size));
    check_same_logits(out, in, {1, 5, 9, 40, 3, 77, 12, 8});
}

TEST_CASE("gguf export: llama.cpp's files come back with every block and the vocabulary arrays unchanged") {
    for (const std::string type : kMiniTypes) {
        CAPTURE(type);
        const std::string out = "build/tests/export-mini-" + type + ".gguf";
        quantize(mini(type) + " " + out);
        const std::string ib = read_text(mini(type)), ob = read_text(out);
        const Gguf gi = check_gguf(ib), go = check_gguf(ob);
        // llama.cpp wrote the input's arrays: they are an independent source.
        CHECK(go.kv.at("tokenizer.ggml.tokens").strings == gi.kv.at("tokenizer.ggml.tokens").strings);
        CHECK(f32s_of(go, "tokenizer.ggml.scores") == f32s_of(gi, "tokenizer.ggml.scores"));
        CHECK(i32s_of(go, "tokenizer.ggml.token_type") == i32s_of(gi, "tokenizer.ggml.token_type"));
        for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
                                "general.file_type"})
            CHECK_MESSAGE(u32_of(go, key) == u32_of(gi, key), key);
        CHECK(go.kv.count("general.quantization_version") == gi.kv.count("general.quantization_version"));
        CHECK(go.kv.at("general.name").strings == gi.kv.at("general.name").strings);
        // Every tensor: type, shape and bytes, read by the checker (not by hearth).
        REQUIRE(go.infos.size() == gi.infos.size());
        for (const Info& t : gi.infos) {
            CAPTURE(t.name);
            const Info* o = go.info(t.name);
            REQUIRE(o != nullptr);
            CHECK(o->type == t.type);
            CHECK(o->ne == t.ne);
            REQUIRE(o->bytes == t.bytes);
            CHECK(ob.compare(size_t(go.data_start + o->offset), size_t(o->bytes), ib, size_t(gi.data_start + t.offset),
                             size_t(t.bytes)) == 0);
        }
        check_same_logits(out, mini(type), kPrompt);
    }
    // Through a hearth file and back: the same blocks again.
    quantize(mini("Q4_0") + " build/tests/export-mini-Q4_0.hearth");
    quantize("build/tests/export-mini-Q4_0.hearth build/tests/export-mini-Q4_0-again.gguf");
    check_same_tensors(parse(read_text("build/tests/export-mini-Q4_0-again.gguf")), parse(read_text(mini("Q4_0"))));
}

TEST_CASE("gguf export: a model without a tokenizer says no_vocab, and reads back without one") {
    // Written through the writer directly (no importer makes one yet), in q8_0: 41 rows of one
    // 34-byte block are not a multiple of 32 bytes, so the padding after token_embd and at the
    // end of the file is exercised.
    ModelConfig c;
    c.name = "no-tokenizer";
    c.dim = 32;
    c.hidden_dim = 64;
    c.n_layers = 1;
    c.n_heads = 2;
    c.n_kv_heads = 2;
    c.head_dim = 16;
    c.vocab_size = 41;
    c.max_seq_len = 16;
    Metadata meta;
    config_to_metadata(c, &meta);
    std::string caveat;
    REQUIRE(tokenizer_to_gguf_metadata(TokenizerSpec{}, c.vocab_size, &meta, &caveat) == "");
    std::vector<TensorSpec> specs;
    for (const ModelTensor& t : model_tensors(c)) {
        TensorSpec s{t.name, t.n_dims == 1 ? uint32_t(TYPE_F32) : uint32_t(TYPE_Q8_0), Layout::rows, t.n_dims, {1, 1, 1, 1}};
        for (int d = 0; d < t.n_dims; d++) s.shape[d] = t.shape[d];
        specs.push_back(s);
    }
    REQUIRE(specs.front().name == "token_embd.weight");
    REQUIRE(tensor_bytes(specs.front().type, 2, specs.front().shape) % 32 != 0);
    REQUIRE(specs.back().name == "output.weight");
    const std::string path = "build/tests/export-no-tokenizer.gguf";
    CheckpointWriter w;
    REQUIRE(w.open(path, CheckpointFormat::gguf, meta, specs) == "");
    std::vector<std::string> data;
    for (const TensorSpec& s : specs) {
        // f32 ones; q8_0 blocks of scale 0x3c00 (1.0) and quants i % 7
        std::string bytes(tensor_bytes(s.type, s.n_dims, s.shape), '\0');
        for (size_t i = 0; i < bytes.size(); i++)
            bytes[i] = char(s.type == TYPE_F32 ? "\0\0\x80\x3f"[i % 4] : i % 34 == 1 ? 0x3c : i % 34 == 0 ? 0 : i % 7);
        REQUIRE(w.write(bytes.data(), bytes.size()) == "");
        data.push_back(bytes);
    }
    REQUIRE(w.commit() == "");
    const std::string bytes = read_text(path);
    const Gguf g = check_gguf(bytes);
    REQUIRE(g.infos.size() == data.size());
    for (size_t i = 0; i < data.size(); i++)
        CHECK(bytes.compare(size_t(g.data_start + g.infos[i].offset), data[i].size(), data[i]) == 0);
    CHECK(g.kv.at("tokenizer.ggml.model").strings.at(0) == "no_vocab");  // gguf-py's spelling
    CHECK(u32_of(g, "llama.vocab_size") == 41);                          // llama.cpp makes that many placeholder tokens
    const ParsedCheckpoint p = parse(bytes);
    CHECK(p.tokenizer.kind == TokenizerKind::none);
    check_same_config(p.config, c);
    Model m;
    CHECK(bind_model(p, &m) == "");
}

TEST_CASE("gguf export: bad requests fail with one line and leave no file behind") {
    const std::string in = "tests/data/parity/gqa";
    struct Case {
        std::string args, expect, out;
    } cases[] = {
        {in + " build/tests/export-bad.gguf --format ggml", "unknown format 'ggml'", "build/tests/export-bad.gguf"},
        {in + " build/tests/no-such-folder/export-bad.gguf", "there is no folder", "build/tests/no-such-folder/export-bad.gguf"},
    };
    for (const Case& c : cases) {
        CommandResult r = run_command("./quantize " + c.args);
        INFO("./quantize " << c.args << ": " << r.err);
        CHECK(r.exit_code == 1);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err.find(c.expect) != std::string::npos);
        CHECK(!exists(c.out));
    }
    CHECK(leftovers("export-bad").empty());

    // OUT == IN, for a GGUF file and for a file inside the input folder: refused, input unchanged.
    quantize(in + " build/tests/export-same.gguf");
    const std::string before = read_text("build/tests/export-same.gguf");
    CommandResult same = run_command("./quantize build/tests/export-same.gguf build/tests/export-same.gguf q8_0");
    CHECK(same.exit_code == 1);
    CHECK(std::count(same.err.begin(), same.err.end(), '\n') == 1);
    CHECK(same.err.find("overwrite the input") != std::string::npos);
    CHECK(read_text("build/tests/export-same.gguf") == before);
    CHECK(leftovers("export-same.gguf.partial").empty());

    REQUIRE(run_command("rm -rf build/tests/export-folder && cp -r " + in + " build/tests/export-folder").exit_code == 0);
    const std::string weights = read_text("build/tests/export-folder/model.safetensors");
    CommandResult inside =
        run_command("./quantize build/tests/export-folder build/tests/export-folder/model.safetensors --format gguf");
    CHECK(inside.exit_code == 1);
    CHECK(inside.err.find("overwrite the input") != std::string::npos);
    CHECK(read_text("build/tests/export-folder/model.safetensors") == weights);

    // --format overrides the extension, both ways.
    quantize(in + " build/tests/export-format.bin --format gguf");
    CHECK(read_text("build/tests/export-format.bin").compare(0, 4, "GGUF") == 0);
    quantize(in + " build/tests/export-format.gguf --format hearth");
    CHECK(read_text("build/tests/export-format.gguf").compare(0, 8, "HEARTHCK") == 0);
}
