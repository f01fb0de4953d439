// The checkpoint format: a write/read round trip, and the loader's refusal of damaged files.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "../kernels/quant_types.h"
#include "../model/checkpoint_writer.h"
#include "../model/format.h"
#include "../model/import.h"
#include "../model/model.h"

static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

static bool file_exists(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0;
}

static ModelConfig small_config() {
    ModelConfig c;
    c.dim = 8;
    c.hidden_dim = 12;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 4;
    c.vocab_size = 512;
    c.max_seq_len = 64;
    c.rope_theta = 500000.0f;
    c.rms_eps = 1e-6f;
    c.chat_template = "llama2";
    return c;
}

// Writes a small random checkpoint; returns the bytes of every tensor in table order.
static std::vector<std::string> write_small_checkpoint(const std::string& path, const ModelConfig& c, uint32_t type) {
    std::vector<TensorSpec> specs;
    for (auto& [name, shape] : llama_tensor_shapes(c)) {
        TensorSpec s;
        s.name = name;
        s.type = shape.size() == 1 ? uint32_t(TYPE_F32) : type;
        s.n_dims = int(shape.size());
        for (size_t d = 0; d < shape.size(); d++) s.shape[d] = shape[d];
        specs.push_back(s);
    }
    CheckpointWriter w;
    REQUIRE(w.open(path, c, slurp("tests/data/parity/mha/tokenizer.model"), specs) == "");
    std::mt19937 rng(5);
    std::vector<std::string> data;
    for (const TensorSpec& s : specs) {
        std::string bytes(tensor_bytes(s.type, s.n_dims, s.shape), '\0');
        for (char& ch : bytes) ch = char(rng());
        if (s.type == TYPE_F32) {  // keep floats finite
            for (size_t i = 0; i < bytes.size() / 4; i++) {
                float f = float(int(rng() % 2001) - 1000) / 1000.0f;
                std::memcpy(&bytes[i * 4], &f, 4);
            }
        } else {
            for (size_t i = 0; i + 1 < bytes.size(); i += 2) bytes[i + 1] &= 0x3b;  // finite halves
        }
        REQUIRE(w.write(bytes.data(), bytes.size()) == "");
        data.push_back(bytes);
    }
    REQUIRE(w.commit() == "");
    return data;
}

TEST_CASE("format: a written checkpoint reads back with the same configuration, tensors and bytes") {
    const std::string path = "build/tests/roundtrip.hearth";
    ModelConfig c = small_config();
    auto data = write_small_checkpoint(path, c, TYPE_F16);
    std::string file = slurp(path);
    ParsedCheckpoint p;
    REQUIRE(parse_checkpoint(file.data(), file.size(), &p) == "");
    CHECK(p.config.dim == c.dim);
    CHECK(p.config.hidden_dim == c.hidden_dim);
    CHECK(p.config.n_layers == c.n_layers);
    CHECK(p.config.n_heads == c.n_heads);
    CHECK(p.config.n_kv_heads == c.n_kv_heads);
    CHECK(p.config.head_dim == c.head_dim);
    CHECK(p.config.vocab_size == c.vocab_size);
    CHECK(p.config.max_seq_len == c.max_seq_len);
    CHECK(p.config.rope_theta == c.rope_theta);
    CHECK(p.config.rms_eps == c.rms_eps);
    CHECK(p.config.tied_embeddings == c.tied_embeddings);
    CHECK(p.config.bos_id == 1);
    CHECK(p.config.eos_id == 2);
    CHECK(p.config.arch == "llama");
    CHECK(p.config.chat_template == "llama2");
    CHECK(std::string(static_cast<const char*>(p.tokenizer), p.tokenizer_bytes) == slurp("tests/data/parity/mha/tokenizer.model"));
    auto names = llama_tensor_shapes(c);
    REQUIRE(p.tensors.size() == names.size());
    for (size_t i = 0; i < names.size(); i++) {
        const TensorView& t = p.tensors[i];
        CHECK(t.name == names[i].first);
        CHECK(t.n_dims == int(names[i].second.size()));
        CHECK(t.type == (t.n_dims == 1 ? uint32_t(TYPE_F32) : uint32_t(TYPE_F16)));
        CHECK((static_cast<const char*>(t.data) - file.data()) % 64 == 0);
        CHECK(std::string(static_cast<const char*>(t.data), t.bytes) == data[i]);
    }
    Model m;
    CHECK(load_model(path, &m) == "");
    CHECK(m.layers.size() == 2);
    CHECK(m.output.name == "output.weight");
}

TEST_CASE("format: a failed write leaves neither the output nor a temporary file") {
    const std::string path = "build/tests/unfinished.hearth";
    unlink(path.c_str());
    ModelConfig c = small_config();
    std::vector<TensorSpec> specs(1);
    specs[0].name = "token_embd.weight";
    specs[0].type = TYPE_F32;
    specs[0].n_dims = 2;
    specs[0].shape[0] = 512;
    specs[0].shape[1] = 8;
    {
        CheckpointWriter w;
        REQUIRE(w.open(path, c, "x", specs) == "");
        std::vector<float> half(256 * 8);
        REQUIRE(w.write(half.data(), half.size() * 4) == "");
        CHECK(w.commit() != "");  // half the data is missing
    }
    CHECK(!file_exists(path));
    CHECK(!file_exists(path + ".partial-" + std::to_string(getpid())));
    {
        CheckpointWriter w;  // abandoned without commit
        REQUIRE(w.open(path, c, "x", specs) == "");
    }
    CHECK(!file_exists(path));
    CHECK(!file_exists(path + ".partial-" + std::to_string(getpid())));
}

// The loader must answer every damaged file with an error, never a crash.
struct Damaged {
    std::string bytes;
    std::string error() {
        ParsedCheckpoint p;
        std::string err = parse_checkpoint(bytes.data(), bytes.size(), &p);
        if (err.empty()) {
            Model m;
            err = bind_model(p, &m);
        }
        return err;
    }
    FileHeader header() {
        FileHeader h;
        std::memcpy(&h, bytes.data(), sizeof h);
        return h;
    }
    void set_header(const FileHeader& h) { std::memcpy(&bytes[0], &h, sizeof h); }
    TensorEntry entry(int i) {
        TensorEntry e;
        std::memcpy(&e, &bytes[header().tensor_table_offset + i * sizeof e], sizeof e);
        return e;
    }
    void set_entry(int i, const TensorEntry& e) { std::memcpy(&bytes[header().tensor_table_offset + i * sizeof e], &e, sizeof e); }
};

static Damaged good_file() {
    const std::string path = "build/tests/good.hearth";
    write_small_checkpoint(path, small_config(), TYPE_F32);
    Damaged d{slurp(path)};
    REQUIRE(d.error() == "");
    return d;
}

TEST_CASE("loader: rejects a truncated file at any length") {
    Damaged good = good_file();
    for (size_t len = 0; len < good.bytes.size(); len += (len < 2000 ? 1 : 997)) {
        Damaged d{good.bytes.substr(0, len)};
        CHECK_MESSAGE(d.error() != "", "length " << len);
    }
    Damaged d{good.bytes.substr(0, good.bytes.size() - 1)};
    CHECK(d.error().find("truncated") != std::string::npos);
}

TEST_CASE("loader: rejects a wrong magic and an unknown version") {
    Damaged d = good_file();
    d.bytes[0] = 'X';
    CHECK(d.error().find("magic") != std::string::npos);
    Damaged v = good_file();
    FileHeader h = v.header();
    h.version = 2;
    v.set_header(h);
    CHECK(v.error().find("version") != std::string::npos);
}

TEST_CASE("loader: rejects a tensor whose offset + size runs past the end") {
    Damaged d = good_file();
    TensorEntry e = d.entry(3);
    e.offset = d.bytes.size() - 64 - (d.bytes.size() % 64);
    d.set_entry(3, e);
    CHECK(d.error().find("past the end") != std::string::npos);
    Damaged o = good_file();
    e = o.entry(0);
    e.offset = ~uint64_t(63);  // the sum offset + size would overflow
    o.set_entry(0, e);
    CHECK(o.error().find("past the end") != std::string::npos);
}

TEST_CASE("loader: rejects absurd dimensions") {
    auto with = [](auto change) {
        Damaged d = good_file();
        FileHeader h = d.header();
        change(h);
        d.set_header(h);
        return d.error();
    };
    CHECK(with([](FileHeader& h) { h.dim = 0x80000000u; }).find("dim") != std::string::npos);
    CHECK(with([](FileHeader& h) { h.n_layers = 1000000; }).find("layer") != std::string::npos);
    CHECK(with([](FileHeader& h) { h.n_layers = 0; }).find("layer") != std::string::npos);
    CHECK(with([](FileHeader& h) { h.n_kv_heads = 3; }).find("kv head") != std::string::npos);
    CHECK(with([](FileHeader& h) { h.head_dim = 5; }).find("head dim") != std::string::npos);
    CHECK(with([](FileHeader& h) { h.vocab_size = 0; }).find("vocab") != std::string::npos);
    CHECK(with([](FileHeader& h) { h.n_tensors = 0xffffffffu; }).find("tensor count") != std::string::npos);
    CHECK(with([](FileHeader& h) { h.tokenizer_bytes = ~uint64_t(0); }).find("tokenizer") != std::string::npos);
    // A configuration that disagrees with the tensors is caught when binding them.
    CHECK(with([](FileHeader& h) { h.dim = 16; }).find("shape") != std::string::npos);
    Damaged d = good_file();
    TensorEntry e = d.entry(1);
    e.shape[0] = uint64_t(1) << 62;
    d.set_entry(1, e);
    CHECK(d.error() != "");
}

TEST_CASE("loader: rejects duplicate names, unknown types and missing tensors") {
    Damaged d = good_file();
    TensorEntry e0 = d.entry(0), e1 = d.entry(1);
    std::memcpy(e1.name, e0.name, sizeof e1.name);
    d.set_entry(1, e1);
    CHECK(d.error().find("twice") != std::string::npos);
    Damaged t = good_file();
    TensorEntry e = t.entry(2);
    e.type = 77;
    t.set_entry(2, e);
    CHECK(t.error().find("type") != std::string::npos);
    Damaged m = good_file();
    e = m.entry(2);
    std::memcpy(e.name, "something.else", 15);
    m.set_entry(2, e);
    CHECK(m.error().find("missing") != std::string::npos);
}

TEST_CASE("loader: random corruption of the header and table never crashes it") {
    Damaged good = good_file();
    const size_t meta = good.header().data_offset;
    std::mt19937 rng(11);
    int accepted = 0;
    for (int trial = 0; trial < 3000; trial++) {
        Damaged d = good;
        int flips = 1 + rng() % 8;
        for (int f = 0; f < flips; f++) {
            size_t at = rng() % meta;
            if (at >= sizeof(FileHeader) && at < good.header().tensor_table_offset) continue;  // tokenizer bytes
            d.bytes[at] = char(rng());
        }
        ParsedCheckpoint p;
        if (parse_checkpoint(d.bytes.data(), d.bytes.size(), &p) == "") {
            accepted++;
            for (const TensorView& t : p.tensors) {
                const char* begin = static_cast<const char*>(t.data);
                CHECK(begin >= d.bytes.data());
                CHECK(begin + t.bytes <= d.bytes.data() + d.bytes.size());
            }
        }
    }
    MESSAGE("corrupted files that still parsed (harmless changes): " << accepted);
}

TEST_CASE("loader: a missing file or a directory is an error") {
    Model m;
    CHECK(load_model("build/tests/no-such-file.hearth", &m).find("cannot open") != std::string::npos);
    Model d;
    CHECK(load_model("tests", &d) != "");
}
