// The checkpoint format: a write/read round trip, and the loader's refusal of damaged files.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/quant_types.h"
#include "formats/writer.h"
#include "formats/hearth.h"
#include "convert/import.h"
#include "formats/metadata.h"
#include "model/model.h"
#include "model/tensors.h"
#include "model/tokenizer_metadata.h"
#include "tokenizer/sentencepiece_model.h"
#include "tests/test_helpers.h"

using namespace hearth;

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

static TokenizerSpec small_tokenizer() {
    return TokenizerSpec{TokenizerKind::sentencepiece, slurp("tests/data/parity/mha/tokenizer.model"), {}, {}};
}

// The metadata quantize writes into a hearth file.
static Metadata hearth_metadata(const ModelConfig& c, const TokenizerSpec& tok) {
    Metadata m;
    config_to_metadata(c, &m);
    tokenizer_to_metadata(tok, &m);
    return m;
}

// Writes a small random checkpoint; returns the bytes of every tensor in table order.
static std::vector<std::string> write_small_checkpoint(const std::string& path, const ModelConfig& c, uint32_t type) {
    std::vector<TensorSpec> specs;
    for (const ModelTensor& t : model_tensors(c)) {
        TensorSpec s;
        s.name = t.name;
        s.type = t.n_dims == 1 ? uint32_t(TYPE_F32) : type;
        s.n_dims = t.n_dims;
        for (int d = 0; d < kMaxDims; d++) s.shape[d] = t.shape[d];
        specs.push_back(s);
    }
    CheckpointWriter w;
    REQUIRE(w.open(path, CheckpointFormat::hearth, hearth_metadata(c, small_tokenizer()), specs) == "");
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
    CHECK(p.format == "hearth v2");
    CHECK(p.tokenizer.kind == TokenizerKind::sentencepiece);
    CHECK(p.tokenizer.sentencepiece == slurp("tests/data/parity/mha/tokenizer.model"));
    auto names = model_tensors(c);
    REQUIRE(p.tensors.size() == names.size());
    for (size_t i = 0; i < names.size(); i++) {
        const TensorView& t = p.tensors[i];
        CHECK(t.name == names[i].name);
        CHECK(t.n_dims == names[i].n_dims);
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
        REQUIRE(w.open(path, CheckpointFormat::hearth, hearth_metadata(c, TokenizerSpec{}), specs) == "");
        std::vector<float> half(256 * 8);
        REQUIRE(w.write(half.data(), half.size() * 4) == "");
        CHECK(w.commit() != "");  // half the data is missing
    }
    CHECK(!file_exists(path));
    CHECK(!file_exists(path + ".partial-" + std::to_string(getpid())));
    {
        CheckpointWriter w;  // abandoned without commit
        REQUIRE(w.open(path, CheckpointFormat::hearth, hearth_metadata(c, TokenizerSpec{}), specs) == "");
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
    template <typename Header>
    Header header() {
        Header h;
        std::memcpy(&h, bytes.data(), sizeof h);
        return h;
    }
    template <typename Header>
    void set_header(const Header& h) {
        std::memcpy(&bytes[0], &h, sizeof h);
    }
    uint64_t table() {
        return bytes.compare(8, 4, "\2\0\0\0", 4) == 0 ? header<FileHeaderV2>().tensor_table_offset
                                                       : header<FileHeaderV1>().tensor_table_offset;
    }
    TensorEntry entry(int i) {
        TensorEntry e;
        std::memcpy(&e, &bytes[table() + i * sizeof e], sizeof e);
        return e;
    }
    void set_entry(int i, const TensorEntry& e) { std::memcpy(&bytes[table() + i * sizeof e], &e, sizeof e); }
    // Overwrites the value of a 4-byte metadata entry (u32, i32 or f32) in place.
    void set_meta4(const std::string& key, uint32_t value) {
        const uint64_t len = key.size();
        const std::string encoded = std::string(reinterpret_cast<const char*>(&len), 8) + key;
        size_t at = bytes.find(encoded);
        REQUIRE(at != std::string::npos);
        std::memcpy(&bytes[at + encoded.size() + 4], &value, 4);
    }
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
    for (size_t len = 0; len < good.bytes.size(); len += (len < 4000 ? 1 : 997)) {
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
    FileHeaderV2 h = v.header<FileHeaderV2>();
    h.version = 3;
    v.set_header(h);
    CHECK(v.error().find("version") != std::string::npos);
}

TEST_CASE("loader: rejects a tensor whose offset + size runs past the end") {
    Damaged d = good_file();
    TensorEntry e = d.entry(3);
    e.offset = d.bytes.size() - 64 - (d.bytes.size() % 64);
    d.set_entry(3, e);
    CHECK(d.error().find("outside") != std::string::npos);
    Damaged o = good_file();
    e = o.entry(0);
    e.offset = ~uint64_t(63);  // the sum offset + size would overflow
    o.set_entry(0, e);
    CHECK(o.error().find("outside") != std::string::npos);
}

TEST_CASE("loader: rejects absurd hyperparameters in the metadata") {
    auto with = [](const std::string& key, uint32_t value) {
        Damaged d = good_file();
        d.set_meta4(key, value);
        return d.error();
    };
    CHECK(with("llama.embedding_length", 0x80000000u).find("embedding_length") != std::string::npos);
    CHECK(with("llama.block_count", 1000000).find("layer") != std::string::npos);
    CHECK(with("llama.block_count", 0).find("block_count") != std::string::npos);
    CHECK(with("llama.attention.head_count_kv", 3).find("kv head") != std::string::npos);
    CHECK(with("llama.attention.key_length", 5).find("head") != std::string::npos);
    CHECK(with("llama.vocab_size", 1u << 30).find("vocab") != std::string::npos);
    CHECK(with("tokenizer.ggml.bos_token_id", 512).find("BOS") != std::string::npos);
    float nan = std::nanf("");
    uint32_t nan_bits;
    std::memcpy(&nan_bits, &nan, 4);
    CHECK(with("llama.rope.freq_base", nan_bits).find("freq_base") != std::string::npos);
    // A configuration that disagrees with the tensors is caught when binding them.
    CHECK(with("llama.embedding_length", 16).find("shape") != std::string::npos);
    CHECK(with("llama.vocab_size", 7).find("shape") != std::string::npos);
    Damaged d = good_file();
    TensorEntry e = d.entry(1);
    e.shape[0] = uint64_t(1) << 62;
    d.set_entry(1, e);
    CHECK(d.error() != "");
    // An element count beyond 64 bits (2^22 x 2^22 x 2^22): refused, not divided by a wrapped zero.
    Damaged o = good_file();
    e = o.entry(1);
    e.n_dims = 3;
    e.shape[0] = e.shape[1] = e.shape[2] = uint64_t(1) << 22;
    o.set_entry(1, e);
    CHECK(o.error().find("does not fit") != std::string::npos);
    CHECK(tensor_bytes(TYPE_F32, 3, e.shape) == 0);
    const uint64_t wraps[3] = {uint64_t(1) << 32, uint64_t(1) << 32, 32};
    CHECK(tensor_bytes(TYPE_Q4_0, 3, wraps) == 0);
}

TEST_CASE("loader: rejects absurd counts in the header") {
    auto with = [](auto change) {
        Damaged d = good_file();
        FileHeaderV2 h = d.header<FileHeaderV2>();
        change(h);
        d.set_header(h);
        return d.error();
    };
    CHECK(with([](FileHeaderV2& h) { h.n_tensors = 0xffffffffu; }).find("tensor count") != std::string::npos);
    CHECK(with([](FileHeaderV2& h) { h.n_tensors = 0; }).find("tensor count") != std::string::npos);
    CHECK(with([](FileHeaderV2& h) { h.n_metadata = ~uint64_t(0); }).find("metadata") != std::string::npos);
    CHECK(with([](FileHeaderV2& h) { h.n_metadata -= 1; }).find("metadata") != std::string::npos);
    CHECK(with([](FileHeaderV2& h) { h.tensor_table_offset = ~uint64_t(0); }).find("metadata") != std::string::npos);
    CHECK(with([](FileHeaderV2& h) { h.data_offset += 64; }) != "");
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

TEST_CASE("loader: random corruption of the header, metadata and table never crashes it") {
    Damaged good = good_file();
    const size_t meta = good.header<FileHeaderV2>().data_offset;
    std::mt19937 rng(11);
    int accepted = 0;
    for (int trial = 0; trial < 3000; trial++) {
        Damaged d = good;
        int flips = 1 + rng() % 8;
        for (int f = 0; f < flips; f++) d.bytes[rng() % meta] = char(rng());
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

// Version 1, the format of every checkpoint made before format v2 (the default model is one).
TEST_CASE("loader: version 1 checkpoints still load, and damaged ones are refused") {
    Damaged good{slurp("models/tiny-shakespeare.hearth")};
    REQUIRE(good.bytes.compare(8, 4, "\1\0\0\0", 4) == 0);
    ParsedCheckpoint p;
    REQUIRE(parse_checkpoint(good.bytes.data(), good.bytes.size(), &p) == "");
    CHECK(p.format == "hearth v1");
    CHECK(p.tokenizer.kind == TokenizerKind::sentencepiece);
    CHECK(p.config.dim == 256);
    CHECK(p.config.n_kv_heads == 4);
    auto with = [&](auto change) {
        Damaged d = good;
        FileHeaderV1 h = d.header<FileHeaderV1>();
        change(h);
        d.set_header(h);
        return d.error();
    };
    CHECK(with([](FileHeaderV1& h) { h.dim = 0x80000000u; }).find("dim") != std::string::npos);
    CHECK(with([](FileHeaderV1& h) { h.n_layers = 0; }).find("layer") != std::string::npos);
    CHECK(with([](FileHeaderV1& h) { h.n_kv_heads = 3; }).find("kv head") != std::string::npos);
    CHECK(with([](FileHeaderV1& h) { h.head_dim = 5; }).find("head dim") != std::string::npos);
    CHECK(with([](FileHeaderV1& h) { h.n_tensors = 0xffffffffu; }).find("tensor count") != std::string::npos);
    CHECK(with([](FileHeaderV1& h) { h.tokenizer_bytes = ~uint64_t(0); }).find("tokenizer") != std::string::npos);
    CHECK(with([](FileHeaderV1& h) { h.dim = 128; }).find("shape") != std::string::npos);
    CHECK(with([](FileHeaderV1& h) { h.bos_id = 0x80000000u; }).find("BOS") != std::string::npos);  // not "none"
    CHECK(with([](FileHeaderV1& h) { h.eos_id = 1024; }).find("BOS") != std::string::npos);
    Damaged t{good.bytes.substr(0, good.bytes.size() - 1)};
    CHECK(t.error().find("truncated") != std::string::npos);
}

TEST_CASE("loader: a missing file or a directory is an error") {
    Model m;
    CHECK(load_model("build/tests/no-such-file.hearth", &m).find("cannot open") != std::string::npos);
    Model d;
    CHECK(load_model("tests", &d) != "");
}

// A tokenizer whose normalizer table (precompiled_charsmap) is damaged crashed run inside the
// SentencePiece library, which trusts its input; quantize embedded it without complaint.
TEST_CASE("loader: an embedded tokenizer with a damaged normalizer is refused in one line") {
    SentencePieceModel sp;
    REQUIRE(parse_sentencepiece_model(slurp("tests/fuzz/corpus/sentencepiece/unigram-nfkc.model"), &sp) == "");
    REQUIRE(sp.normalizer.precompiled_charsmap.size() > 1024);
    const uint32_t trie_bytes = 0x7ffffff0;  // the double array claims more than the table holds
    std::memcpy(&sp.normalizer.precompiled_charsmap[0], &trie_bytes, 4);
    const std::string damaged = serialize_sentencepiece_model(sp);

    // In a checkpoint: run refuses before tokenizing anything.
    const std::string path = "build/tests/damaged-normalizer.hearth";
    ModelConfig c = small_config();
    c.vocab_size = int(sp.pieces.size());
    c.bos_id = sp.bos_id;
    c.eos_id = sp.eos_id;
    std::vector<TensorSpec> specs;
    for (const ModelTensor& t : model_tensors(c)) {
        TensorSpec s;
        s.name = t.name;
        s.type = TYPE_F32;
        s.n_dims = t.n_dims;
        for (int d = 0; d < kMaxDims; d++) s.shape[d] = t.shape[d];
        specs.push_back(s);
    }
    CheckpointWriter w;
    REQUIRE(w.open(path, CheckpointFormat::hearth, hearth_metadata(c, {TokenizerKind::sentencepiece, damaged, {}, {}}), specs) ==
            "");
    for (const TensorSpec& s : specs) {
        const std::vector<float> ones(tensor_bytes(s.type, s.n_dims, s.shape) / 4, 1.0f);
        REQUIRE(w.write(ones.data(), ones.size() * 4) == "");
    }
    REQUIRE(w.commit() == "");
    CommandResult r = run_command("./run " + path + " -p hello -n 2");
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("charsmap") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);

    // As a Hugging Face folder's tokenizer.model: quantize refuses to embed it.
    REQUIRE(run_command("rm -rf build/tests/damaged-tok && cp -r tests/data/parity/mha build/tests/damaged-tok").exit_code == 0);
    std::ofstream("build/tests/damaged-tok/tokenizer.model", std::ios::binary) << damaged;
    r = run_command("./quantize build/tests/damaged-tok build/tests/damaged-tok.hearth -q");
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("tokenizer.model") != std::string::npos);
    CHECK(!file_exists("build/tests/damaged-tok.hearth"));
}
