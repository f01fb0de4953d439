// GGUF in: llama.cpp's own files (tests/data/gguf-mini, made by llama.cpp's tools; the Makefile
// decompresses them into build/tests/gguf-mini/) run directly and convert, against the PyTorch
// reference on gguf-py's dequantization (tests/reference/gguf_llama.py) and llama.cpp's ids.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <tuple>

#include "kernels/quant_types.h"
#include "kernels/rows_x8.h"
#include "model/forward.h"
#include "formats/gguf.h"
#include "formats/metadata.h"
#include "formats/writer.h"
#include "model/tokenizer_metadata.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tests/test_helpers.h"

using namespace hearth;

static const char* const kMiniTypes[] = {"F16", "Q8_0", "Q4_0", "Q4_K_M"};
static std::string mini(const std::string& type) { return "build/tests/gguf-mini/mini-" + type + ".gguf"; }
static const std::vector<int> kPrompt = {1, 9038, 2501, 263, 931};  // "<s> Once upon a time"

static std::string join(const std::vector<int>& ids) {
    std::string s;
    for (int id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
    return s;
}

static std::string greedy_ids(const std::string& model, int n, const std::vector<int>& prompt = kPrompt) {
    CommandResult r = run_command("./run " + model + " --prompt-ids " + join(prompt) + " -n " + std::to_string(n) +
                                  " --temp 0 --ignore-eos --print-ids -t 2");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
}

// Logits of every prompt position, with an f32 KV cache as the reference has.
static std::vector<float> prompt_logits(const Model& m, const std::vector<int>& prompt = kPrompt) {
    RunState s;
    REQUIRE(make_run_state(m.config, 64, &s, {TYPE_F32, TYPE_F32}) == "");
    std::vector<float> logits(prompt.size() * size_t(m.config.vocab_size));
    REQUIRE(forward(m, s, prompt.data(), int(prompt.size()), 0, logits.data(), true) == "");
    return logits;
}

struct Reference {
    std::vector<int> prompt_ids, greedy_ids, sample_ids;
    std::vector<std::vector<float>> sample_logits;
    std::vector<double> margins;  // top-1 minus top-2 logit at each greedy step
};
static Reference read_reference(const std::string& path) {
    auto j = nlohmann::json::parse(read_text(path));
    return {j.at("prompt_ids").get<std::vector<int>>(), j.at("greedy_ids").get<std::vector<int>>(),
            j.at("sample_ids").get<std::vector<int>>(), j.at("sample_logits").get<std::vector<std::vector<float>>>(),
            j.at("margins").get<std::vector<double>>()};
}
static Reference reference(const std::string& type) {
    Reference r = read_reference("tests/data/gguf-mini/mini-" + type + ".golden.json");
    REQUIRE(r.prompt_ids == kPrompt);
    return r;
}

// max and mean |hearth - reference| over the sampled logits of every prompt position, each
// divided by max |reference|.
struct LogitError {
    double max, mean;
};
static LogitError relative_logit_error(const std::vector<float>& got, const Reference& ref, int vocab) {
    double diff = 0, sum = 0, scale = 0;
    size_t n = 0;
    for (size_t p = 0; p < ref.sample_logits.size(); p++)
        for (size_t i = 0; i < ref.sample_ids.size(); i++, n++) {
            const double want = ref.sample_logits[p][i], d = std::fabs(got[p * size_t(vocab) + size_t(ref.sample_ids[i])] - want);
            diff = std::max(diff, d);
            sum += d;
            scale = std::max(scale, std::fabs(want));
        }
    return {diff / scale, sum / double(n) / scale};
}

// The hearth checkpoint `quantize` made of a GGUF file with `keep` holds each of its tensors as the
// same blocks: a q4_0/q8_0/q4_K matrix has its rows interleaved by 8 (docs/format.md), which moves
// bytes and nothing else.
static void check_same_blocks(const std::string& gguf, const std::string& hearth) {
    const std::string gguf_bytes = read_text(gguf), hearth_bytes = read_text(hearth);
    ParsedCheckpoint g, h;
    REQUIRE(parse_gguf(gguf_bytes.data(), gguf_bytes.size(), &g) == "");
    REQUIRE(parse_checkpoint(hearth_bytes.data(), hearth_bytes.size(), &h) == "");
    CHECK(h.format == "hearth v2");
    REQUIRE(h.tensors.size() == g.tensors.size());
    for (const TensorView& gt : g.tensors) {
        const TensorView* ht = nullptr;
        for (const TensorView& t : h.tensors)
            if (t.name == gt.name) ht = &t;
        REQUIRE_MESSAGE(ht, gt.name);
        CHECK(ht->type == gt.type);
        REQUIRE(ht->bytes == gt.bytes);
        std::string plain(static_cast<const char*>(ht->data), ht->bytes);
        if (ht->layout == Layout::rows_x8)
            repack_x8_to_rows(gt.type, ht->data, &plain[0], int64_t(ht->rows()), int64_t(ht->cols()));
        CHECK(std::memcmp(plain.data(), gt.data, gt.bytes) == 0);
    }
}

TEST_CASE("gguf: llama.cpp's mini-F16.gguf runs directly and gives llama.cpp's greedy ids") {
    // ../shared/data/README.md: llama.cpp on mini-F16.gguf, and the PyTorch reference on the same
    // weights as a Hugging Face folder, continue with 21516 x4 then 18574 x8.
    const std::vector<int> llama_cpp = {21516, 21516, 21516, 21516, 18574, 18574, 18574, 18574, 18574, 18574, 18574, 18574};
    CHECK(greedy_ids(mini("F16"), 12) == join(llama_cpp) + "\n");
    // llama.cpp gives the same 12 ids on mini-Q8_0.gguf, with Q8_0 activations as hearth's.
    CHECK(greedy_ids(mini("Q8_0"), 12) == join(llama_cpp) + "\n");
}

TEST_CASE("gguf: logits of each file are those of the PyTorch reference on its dequantized weights") {
    for (const std::string type : kMiniTypes) {
        CAPTURE(type);
        const Reference ref = reference(type);
        Model m;
        REQUIRE(load_model(mini(type), &m) == "");
        CHECK(m.config.tied_embeddings);
        // Run directly, quantized matrices meet 8-bit activations (as in llama.cpp): close, not
        // equal. The f32 conversion below shows the weights themselves are exact.
        const LogitError direct = relative_logit_error(prompt_logits(m), ref, m.config.vocab_size);
        MESSAGE(type << " run directly: max |diff| / max |logit| = " << direct.max << ", mean " << direct.mean);
        CHECK(direct.max < (type == "F16" ? 1e-4 : 0.05));
        CHECK(direct.mean < (type == "F16" ? 1e-5 : 0.01));
        // Converted to f32, hearth computes on exactly the reference's weights.
        const std::string f32 = "build/tests/gguf-mini-" + type + "-f32.hearth";
        CommandResult q = run_command("./quantize " + mini(type) + " " + f32 + " f32 -q");
        INFO(q.err);
        REQUIRE(q.exit_code == 0);
        Model mf;
        REQUIRE(load_model(f32, &mf) == "");
        const LogitError converted = relative_logit_error(prompt_logits(mf), ref, mf.config.vocab_size);
        CHECK(converted.max < 1e-4);
        CHECK(greedy_ids(f32, 12) == join(ref.greedy_ids) + "\n");
    }
}

TEST_CASE("gguf: a converted checkpoint keeps every block and computes the same logits bit for bit") {
    for (const std::string type : kMiniTypes) {
        CAPTURE(type);
        const std::string out = "build/tests/gguf-mini-" + type + ".hearth";
        CommandResult q = run_command("./quantize " + mini(type) + " " + out + " -q");
        INFO(q.err);
        REQUIRE(q.exit_code == 0);
        check_same_blocks(mini(type), out);
        Model mg, mh;
        REQUIRE(load_model(mini(type), &mg) == "");
        REQUIRE(load_model(out, &mh) == "");
        const std::vector<float> lg = prompt_logits(mg), lh = prompt_logits(mh);
        CHECK(std::memcmp(lg.data(), lh.data(), lg.size() * sizeof(float)) == 0);
        CHECK(greedy_ids(mini(type), 12) == greedy_ids(out, 12));
    }
}

TEST_CASE("gguf: the vocabulary in the metadata tokenizes exactly as the Llama-2 tokenizer.model") {
    // tests/data/tokenizer_goldens.json: python sentencepiece on the Llama-2 tokenizer.model, the
    // vocabulary llama.cpp's mini files carry.
    auto goldens = nlohmann::json::parse(read_text("tests/data/tokenizer_goldens.json")).at("llama2-tokenizer.model");
    Model m;
    REQUIRE(load_model(mini("Q4_0"), &m) == "");
    Tokenizer tok;
    REQUIRE(tok.load(m.tokenizer) == "");
    CHECK(tok.vocab_size() == 32000);
    CHECK(tok.bos_id() == 1);
    CHECK(tok.eos_id() == 2);
    REQUIRE(goldens.size() > 10);
    for (const auto& g : goldens) {
        const std::string text = g.at("text").get<std::string>();
        CAPTURE(text);
        CHECK(encoded(tok, text, false) == g.at("ids").get<std::vector<int>>());
        CHECK(tok.decode(g.at("ids").get<std::vector<int>>()) == g.at("decoded").get<std::string>());
    }
    // And through the program, from text: BOS, then the text's ids.
    CommandResult r = run_command("./run " + mini("F16") + " -p 'Once upon a time' -n 12 --temp 0");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("Once upon a time Staat Staat Staat Staat") == 0);
}

// tests/data/gguf-types: small files llama.cpp's llama-quantize made in GGUF's other types
// (tests/reference/make_gguf_types.py), with goldens from the PyTorch reference on gguf-py's
// dequantization of each.

// Q5_K_M, Q3_K_M, Q2_K and IQ4_XS, GGUF types often downloaded (Q3_K_M: Q3_K with Q4_K, Q5_K and
// Q6_K; the Q2_K file: Q2_K with Q3_K and Q6_K), and the 32-element types llama.cpp puts in K-quant
// files where a row is not a multiple of 256 (Q4_K -> Q5_0, Q5_K -> Q5_1, Q2_K/Q3_K/IQ4_XS ->
// IQ4_NL; e.g. Qwen2.5-0.5B, dim 896): run computes with their blocks as they are. tiny320 (dim
// 320) has them where llama.cpp's own Q4_K_M and Q5_K_M mixes put them. BF16 (the "-BF16.gguf"
// downloads): tied128, whose token embedding is every matrix's type and the output matrix too.
// hd64: heads of 64 with dim 128 and 4 heads (llama.attention.key_length 64, not dim / heads).
TEST_CASE(
    "gguf: Q5_K_M, Q3_K_M, Q2_K, IQ4_XS, the 32-element types and BF16 run directly, close to the reference, and keep their "
    "blocks") {
    const std::pair<std::string, uint32_t> files[] = {
        {"tiny-Q5_K_M", TYPE_Q5_K},    {"tiny-Q3_K_M", TYPE_Q3_K},    {"tiny-Q2_K", TYPE_Q2_K},    {"tiny-IQ4_XS", TYPE_IQ4_XS},
        {"tiny-Q4_1", TYPE_Q4_1},      {"tiny-Q5_0", TYPE_Q5_0},      {"tiny-Q5_1", TYPE_Q5_1},    {"tiny-IQ4_NL", TYPE_IQ4_NL},
        {"tiny320-Q4_K_M", TYPE_Q5_0}, {"tiny320-Q5_K_M", TYPE_Q5_1}, {"tied128-BF16", TYPE_BF16}, {"hd64-Q8_0", TYPE_Q8_0}};
    for (const auto& [type, block_type] : files) {
        CAPTURE(type);
        const std::string file = "tests/data/gguf-types/" + type + ".gguf";
        const Reference ref = read_reference("tests/data/gguf-types/" + type + ".golden.json");
        Model m;
        REQUIRE(load_model(file, &m) == "");
        int n = 0;
        for (const TensorView& t : m.all_tensors) n += t.type == block_type;
        CHECK(n > 0);
        const bool bf16 = block_type == TYPE_BF16;
        if (bf16) {
            CHECK(m.config.tied_embeddings);
            CHECK(m.token_embd.type == TYPE_BF16);
            CHECK(m.output.data == m.token_embd.data);
        }
        // Quantized matrices meet 8-bit activations, as the other quantized files' (above); bf16
        // ones fp32 activations, as f16's: only the float sums' order differs from the reference's.
        const LogitError e = relative_logit_error(prompt_logits(m, ref.prompt_ids), ref, m.config.vocab_size);
        MESSAGE(type << " run directly: max |diff| / max |logit| = " << e.max << ", mean " << e.mean);
        CHECK(e.max < (bf16 ? 1e-4 : 0.05));
        CHECK(e.mean < (bf16 ? 1e-5 : 0.01));
        // The reference's greedy ids up to the first step where its top two logits are closer than
        // twice the largest logit difference just measured: there 8-bit activations may pick either.
        double scale = 0;
        for (const std::vector<float>& row : ref.sample_logits)
            for (float v : row) scale = std::max(scale, double(std::fabs(v)));
        size_t sure = 0;
        while (sure < ref.margins.size() && ref.margins[sure] > 2 * e.max * scale) sure++;
        MESSAGE(type << " greedy ids compared up to the first near-tie: " << sure << " of " << ref.greedy_ids.size()
                     << std::string(sure == 0 ? " (the first step is one: none compared; the logits above are)" : ""));
        if (sure > 0) {
            const std::vector<int> want(ref.greedy_ids.begin(), ref.greedy_ids.begin() + long(sure));
            CHECK(greedy_ids(file, int(sure), ref.prompt_ids) == join(want) + "\n");
        }
        // `keep` stores every block as it is, bf16 too, and the checkpoint computes the same logits.
        const std::string out = "build/tests/gguf-types-" + type + "-keep.hearth";
        CommandResult k = run_command("./quantize " + file + " " + out + " -q");
        INFO(k.err);
        REQUIRE(k.exit_code == 0);
        check_same_blocks(file, out);
        Model mk;
        REQUIRE(load_model(out, &mk) == "");
        if (bf16) CHECK(mk.token_embd.type == TYPE_BF16);
        const std::vector<float> lg = prompt_logits(m, ref.prompt_ids), lh = prompt_logits(mk, ref.prompt_ids);
        CHECK(std::memcmp(lg.data(), lh.data(), lg.size() * sizeof(float)) == 0);
    }
}

// A Llama whose heads are wider than dim / heads: llama.attention.key_length 64 with dim 128 and
// 4 heads (tests/data/gguf-types/hd64-Q8_0.gguf, made by llama-quantize). The reference reads the
// key since tests/reference/gguf_llama.py was fixed (it took dim / heads, and PyTorch refused the
// shapes); llama.cpp's llama-server (3f545becc) gives the reference's first 8 greedy ids on the
// file, 504,45,37,507,416,446,386,14, before its output check stops at a piece that is not UTF-8.
TEST_CASE("gguf: a Llama whose head dimension is attention.key_length, not dim / heads, runs as llama.cpp") {
    const std::string file = "tests/data/gguf-types/hd64-Q8_0.gguf";
    const Reference ref = read_reference("tests/data/gguf-types/hd64-Q8_0.golden.json");
    Model m;
    REQUIRE(load_model(file, &m) == "");
    CHECK(m.config.dim == 128);
    CHECK(m.config.n_heads == 4);
    CHECK(m.config.head_dim == 64);
    const std::vector<int> llama_cpp = {504, 45, 37, 507, 416, 446, 386, 14};
    CHECK(std::vector<int>(ref.greedy_ids.begin(), ref.greedy_ids.begin() + 8) == llama_cpp);
    CHECK(greedy_ids(file, 8, ref.prompt_ids) == join(llama_cpp) + "\n");
}

// ---- damaged and crafted files ----

static std::string parse_error(const std::string& bytes) {
    ParsedCheckpoint p;
    std::string err = parse_gguf(bytes.data(), bytes.size(), &p);
    if (err.empty()) {
        Model m;
        err = bind_model(p, &m);
    }
    return err;
}

// Offset of the tensor infos (after the metadata) and of the data section.
static void sections(const std::string& bytes, uint64_t* infos) {
    uint64_t n_kv;
    std::memcpy(&n_kv, bytes.data() + 16, 8);
    Metadata meta;
    uint64_t used = 0;
    REQUIRE(meta.parse(reinterpret_cast<const uint8_t*>(bytes.data()) + 24, bytes.size() - 24, n_kv, &used) == "");
    *infos = 24 + used;
}

TEST_CASE("gguf: truncated files are refused at any length") {
    const std::string good = read_text(mini("Q4_0"));
    REQUIRE(parse_error(good) == "");
    uint64_t infos;
    sections(good, &infos);
    std::mt19937 rng(1);
    std::vector<size_t> lengths;
    for (size_t len = 0; len < 4096; len++) lengths.push_back(len);
    // Inside the tensor infos: every length through the first ones (each field of an info, and
    // its end), then every 7th through the rest (each such cut parses all the metadata first).
    for (size_t len = infos - 64; len < infos + 1024; len++) lengths.push_back(len);
    for (size_t len = infos + 1024; len < infos + 4096; len += 7) lengths.push_back(len);
    for (int i = 0; i < 200; i++) lengths.push_back(rng() % good.size());
    lengths.push_back(good.size() - 1);
    for (size_t len : lengths) {
        const std::string cut = good.substr(0, len);
        CHECK_MESSAGE(parse_error(cut) != "", "length " << len);
    }
}

TEST_CASE("gguf: crafted headers, tensor infos and metadata are refused with a reason") {
    const std::string good = read_text(mini("Q4_0"));
    uint64_t infos;
    sections(good, &infos);
    auto with = [&](size_t at, const void* value, size_t n) {
        std::string bytes = good;
        std::memcpy(&bytes[at], value, n);
        return parse_error(bytes);
    };
    const uint32_t v1 = 1, v4 = 4;
    const uint64_t huge = ~uint64_t(0), zero = 0;
    CHECK(with(4, &v1, 4).find("version 1") != std::string::npos);
    CHECK(with(4, &v4, 4).find("version 4") != std::string::npos);
    CHECK(with(8, &huge, 8).find("tensor count") != std::string::npos);
    CHECK(with(8, &zero, 8).find("tensor count") != std::string::npos);
    CHECK(with(16, &huge, 8).find("metadata") != std::string::npos);
    // The first tensor info: name length, name, n_dims, ne[], type, offset.
    uint64_t name_len;
    std::memcpy(&name_len, good.data() + infos, 8);
    const size_t dims_at = infos + 8 + name_len, ne_at = dims_at + 4;
    uint32_t n_dims;
    std::memcpy(&n_dims, good.data() + dims_at, 4);
    const size_t type_at = ne_at + 8 * n_dims, offset_at = type_at + 4;
    const uint64_t long_name = 64, misaligned = 3, beyond = uint64_t(1) << 62, big_dim = uint64_t(1) << 41;
    const uint32_t dims0 = 0, dims5 = 5, type99 = 99, type_q8k = TYPE_Q8_K;
    CHECK(with(infos, &long_name, 8).find("name of 64 bytes") != std::string::npos);
    CHECK(with(infos, &huge, 8).find("name") != std::string::npos);
    CHECK(with(dims_at, &dims0, 4).find("0 dimensions") != std::string::npos);
    CHECK(with(dims_at, &dims5, 4).find("5 dimensions") != std::string::npos);
    CHECK(with(type_at, &type99, 4).find("unknown type 99") != std::string::npos);
    CHECK(with(type_at, &type_q8k, 4).find("no file holds") != std::string::npos);
    CHECK(with(offset_at, &misaligned, 8).find("aligned") != std::string::npos);
    CHECK(with(offset_at, &beyond, 8).find("outside") != std::string::npos);
    CHECK(with(offset_at, &huge, 8) != "");
    CHECK(with(ne_at, &big_dim, 8) != "");
    CHECK(with(ne_at, &zero, 8).find("does not fit") != std::string::npos);
    // A tensor of a type run cannot multiply (iq2_xxs, which GGUF knows and hearth does not
    // compute with): named, with its type.
    const uint32_t iq2_xxs = 16;
    std::string bytes = good;
    for (uint64_t at = infos, i = 0; i < 20; i++) {  // find a 2-D tensor whose rows are whole 256-blocks
        uint64_t len;
        std::memcpy(&len, bytes.data() + at, 8);
        const std::string name = bytes.substr(at + 8, len);
        uint32_t nd;
        std::memcpy(&nd, bytes.data() + at + 8 + len, 4);
        const size_t type_pos = at + 8 + len + 4 + 8 * nd;
        if (name == "blk.0.ffn_up.weight") {
            std::memcpy(&bytes[type_pos], &iq2_xxs, 4);
            break;
        }
        at = type_pos + 12;
    }
    const std::string err = parse_error(bytes);
    CHECK(err.find("blk.0.ffn_up.weight") != std::string::npos);
    CHECK(err.find("iq2_xxs") != std::string::npos);
    CHECK(err.find("cannot multiply") != std::string::npos);
}

TEST_CASE("gguf: random corruption of the header, metadata and tensor infos never crashes the parser") {
    const std::string good = read_text(mini("Q4_0"));
    uint64_t infos;
    sections(good, &infos);
    const size_t end = infos + 20 * 100;  // the tensor infos take well under 100 bytes each
    std::mt19937 rng(7);
    int accepted = 0;
    for (int trial = 0; trial < 300; trial++) {
        std::string bytes = good;
        for (int f = 0, n = 1 + int(rng() % 6); f < n; f++) {
            // Half the flips in the first 64 KiB (header, keys, token strings), half in the infos.
            const size_t at = rng() % 2 ? rng() % 65536 : infos + rng() % (end - infos);
            bytes[at] = char(rng());
        }
        ParsedCheckpoint p;
        if (parse_gguf(bytes.data(), bytes.size(), &p) == "") {
            accepted++;
            for (const TensorView& t : p.tensors) {
                const char* begin = static_cast<const char*>(t.data);
                CHECK(begin >= bytes.data());
                CHECK(begin + t.bytes <= bytes.data() + bytes.size());
            }
        }
    }
    MESSAGE("corruptions that still parsed: " << accepted);
}

// mini-F16.gguf rewritten by hearth's writer, with `change` applied to its metadata and
// tensors (the extra tensors' bytes in `extra_data`, by name).
static std::string rewritten_mini(const std::string& path, const std::function<void(Metadata*, std::vector<TensorView>*)>& change,
                                  const std::vector<float>& extra_data) {
    const std::string bytes = read_text(mini("F16"));
    ModelFile file;
    REQUIRE(read_gguf_file(bytes.data(), bytes.size(), &file) == "");
    change(&file.meta, &file.tensors);
    std::vector<TensorSpec> specs;
    for (const TensorView& t : file.tensors) {
        TensorSpec s;
        s.name = t.name;
        s.type = t.type;
        s.n_dims = t.n_dims;
        for (int d = 0; d < kMaxDims; d++) s.shape[d] = t.shape[d];
        specs.push_back(s);
    }
    CheckpointWriter w;
    REQUIRE(w.open(path, CheckpointFormat::gguf, file.meta, specs) == "");
    for (const TensorView& t : file.tensors) REQUIRE(w.write(t.data ? t.data : extra_data.data(), size_t(t.bytes)) == "");
    REQUIRE(w.commit() == "");
    return path;
}

// llama.cpp's llama architecture computes with tensors hearth's does not have: the optional
// biases of attn_output, ffn_up/gate/down and attn_q/k/v, a fused attn_qkv, and Mixtral's
// experts (llama.expert_count with ffn_*_exps). llama.cpp (same commit as tests/reference)
// loads such files and its greedy text changes with the biases, while its loader refuses a file
// with any tensor it does not use ("wrong number of tensors"). hearth ignored every tensor it did
// not look for and computed without the bias, and named a missing ffn_gate.weight for Mixtral:
// both are refused now, by name.
TEST_CASE("gguf: a tensor the model does not use, or Mixtral's experts, is refused rather than left out") {
    const std::vector<float> bias(256, 0.5f);  // dim 256
    for (const char* name : {"blk.0.attn_output.bias", "blk.1.ffn_down.bias"}) {
        CAPTURE(name);
        const std::string path = rewritten_mini(
            "build/tests/gguf-extra-tensor.gguf",
            [&](Metadata*, std::vector<TensorView>* tensors) {
                TensorView b;
                b.name = name;
                b.type = TYPE_F32;
                b.n_dims = 1;
                b.shape[0] = 256;
                b.bytes = 256 * 4;
                tensors->push_back(b);
            },
            bias);
        Model m;
        const std::string err = load_model(path, &m);
        CHECK(err.find(name) != std::string::npos);
        CommandResult q = run_command("./quantize " + path + " build/tests/gguf-extra-tensor.hearth -q");
        CHECK(q.exit_code == 1);
        CHECK(q.err.find(name) != std::string::npos);
    }
    {
        const std::string path =
            rewritten_mini("build/tests/gguf-experts.gguf",
                           [](Metadata* meta, std::vector<TensorView>*) { meta->set_u32("llama.expert_count", 8); }, {});
        Model m;
        const std::string err = load_model(path, &m);
        CHECK(err.find("mixture-of-experts") != std::string::npos);
        CHECK(err.find("llama.expert_count 8") != std::string::npos);
    }
    // The file unchanged still loads: the rewriting itself is not what is refused.
    Model m;
    CHECK(load_model(rewritten_mini("build/tests/gguf-rewritten.gguf", [](Metadata*, std::vector<TensorView>*) {}, {}), &m) ==
          "");
}

// tokenizer.ggml.add_bos_token false on a SentencePiece ("llama") vocabulary: llama.cpp's
// llama-tokenize (same commit as tests/reference) gives 9038,2501,263,931 for "Once upon a
// time" on mini-F16.gguf rewritten so, and 1,9038,2501,263,931 on the file as it is. hearth
// put BOS first in both: a SentencePiece tokenizer always added it.
TEST_CASE("gguf: a SentencePiece vocabulary whose add_bos_token is false gives prompts without BOS") {
    for (bool add_bos : {false, true}) {
        CAPTURE(add_bos);
        const std::string path = rewritten_mini(
            "build/tests/gguf-add-bos.gguf",
            [&](Metadata* meta, std::vector<TensorView>*) { meta->set_bool("tokenizer.ggml.add_bos_token", add_bos); }, {});
        Model m;
        REQUIRE(load_model(path, &m) == "");
        Tokenizer tok;
        REQUIRE(load_tokenizer(m, &tok) == "");
        std::vector<int> ids;
        REQUIRE(tok.encode("Once upon a time", true, &ids) == "");
        CHECK(ids == (add_bos ? std::vector<int>{1, 9038, 2501, 263, 931} : std::vector<int>{9038, 2501, 263, 931}));
        // The same with special tokens parsed (llama-tokenize's default, the server's /tokenize).
        std::vector<int> special_ids;
        REQUIRE(tok.encode_special("Once upon a time", true, &special_ids) == "");
        CHECK(special_ids == ids);
        // And so does the file quantize makes of it.
        CommandResult q = run_command("./quantize " + path + " build/tests/gguf-add-bos.hearth -q");
        INFO(q.err);
        REQUIRE(q.exit_code == 0);
        Model h;
        REQUIRE(load_model("build/tests/gguf-add-bos.hearth", &h) == "");
        Tokenizer htok;
        REQUIRE(load_tokenizer(h, &htok) == "");
        std::vector<int> hids;
        REQUIRE(htok.encode("Once upon a time", true, &hids) == "");
        CHECK(hids == ids);
    }
}

// A SentencePiece ("llama") vocabulary without tokenizer.ggml.scores or without
// tokenizer.ggml.token_type: llama.cpp's loader (src/llama-vocab.cpp) takes scores of 0 and
// types "normal" for what is absent, and runs the file; hearth refused it. mini-F16.gguf with
// the keys removed by gguf-py; the ids are llama-tokenize's (llama.cpp 3f545becc, special
// tokens parsed, BOS added) on each file. Without scores the merges tie, so "café" and
// " there" split otherwise; without types the <0xXX> pieces still take bytes (the emoji,
// "\n") and "</s>" is still EOS.
TEST_CASE("gguf: a SentencePiece vocabulary without scores or token types tokenizes as llama.cpp's") {
    const std::string text1 = "Once upon a time, the caf\xc3\xa9 sold \xe6\x97\xa5\xe6\x9c\xac tea \xf0\x9f\x99\x82\nnew line";
    const std::string text2 = "hi</s> there";
    const std::vector<int> scored1 = {1,     9038,  2501,  263,   931, 29892, 278, 274, 28059, 5239, 29871,
                                      30325, 30346, 23429, 29871, 243, 162,   156, 133, 13,    1482, 1196};
    const std::vector<int> zero_scores1 = {1,     9038,  2501,  263,   931, 29892, 278, 5777, 29888, 29948, 5239, 29871,
                                           30325, 30346, 23429, 29871, 243, 162,   156, 133,  13,    1482,  1196};
    const std::vector<int> scored2 = {1, 7251, 2, 29871, 727}, zero_scores2 = {1, 7251, 2, 259, 12711};
    const std::vector<std::string> scores = {"tokenizer.ggml.scores"}, types = {"tokenizer.ggml.token_type"},
                                   both = {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"};
    for (auto [removed, want1, want2] :
         {std::tuple{&scores, &zero_scores1, &zero_scores2}, std::tuple{&types, &scored1, &scored2},
          std::tuple{&both, &zero_scores1, &zero_scores2}}) {
        CAPTURE(removed->size());
        CAPTURE(removed->front());
        const std::string path = rewritten_mini("build/tests/gguf-no-scores.gguf",
                                                [&, removed = removed](Metadata* meta, std::vector<TensorView>*) {
                                                    for (const std::string& key : *removed) meta->erase(key);
                                                },
                                                {});
        Model m;
        REQUIRE(load_model(path, &m) == "");
        Tokenizer tok;
        REQUIRE(load_tokenizer(m, &tok) == "");
        std::vector<int> ids1, ids2;
        REQUIRE(tok.encode_special(text1, true, &ids1) == "");
        CHECK(ids1 == *want1);
        REQUIRE(tok.encode_special(text2, true, &ids2) == "");
        CHECK(ids2 == *want2);
        // run reads it as well, and quantize converts it.
        CommandResult r = run_command("./run " + path + " -p 'Once upon a time' -n 4 --temp 0 -t 2");
        INFO(r.err);
        CHECK(r.exit_code == 0);
        CommandResult q = run_command("./quantize " + path + " build/tests/gguf-no-scores.hearth -q");
        INFO(q.err);
        CHECK(q.exit_code == 0);
    }
}

// llama.cpp's loader also takes tokenizer.ggml.scores as an i32 array (read as floats) and
// score and type arrays longer than the tokens (it reads the first entries); hearth refused both.
// llama-tokenize (3f545becc) on mini-F16.gguf rewritten so by gguf-py (the scores rounded, which
// keeps Llama-2's whole-number scores; then both arrays one entry longer) gives the ids of the
// file as it is.
TEST_CASE("gguf: SentencePiece scores stored as i32, and arrays longer than the tokens, are read as llama.cpp reads them") {
    const std::string text = "Once upon a time, the caf\xc3\xa9 sold \xe6\x97\xa5\xe6\x9c\xac tea \xf0\x9f\x99\x82\nnew line";
    const std::vector<int> llama_cpp = {1,     9038,  2501,  263,   931, 29892, 278, 274, 28059, 5239, 29871,
                                        30325, 30346, 23429, 29871, 243, 162,   156, 133, 13,    1482, 1196};
    for (const bool integers : {true, false}) {
        CAPTURE(integers);
        const std::string path = rewritten_mini("build/tests/gguf-i32-scores.gguf",
                                                [&](Metadata* meta, std::vector<TensorView>*) {
                                                    std::vector<float> scores;
                                                    std::vector<int32_t> types;
                                                    REQUIRE(meta->get_f32s("tokenizer.ggml.scores", &scores) == "");
                                                    REQUIRE(meta->get_i32s("tokenizer.ggml.token_type", &types) == "");
                                                    if (integers) {
                                                        std::vector<int32_t> rounded;
                                                        for (float s : scores) rounded.push_back(int32_t(std::lround(s)));
                                                        meta->set_i32s("tokenizer.ggml.scores", rounded);
                                                    } else {
                                                        scores.push_back(scores.back());
                                                        types.push_back(types.back());
                                                        meta->set_f32s("tokenizer.ggml.scores", scores);
                                                        meta->set_i32s("tokenizer.ggml.token_type", types);
                                                    }
                                                },
                                                {});
        Model m;
        REQUIRE(load_model(path, &m) == "");
        Tokenizer tok;
        REQUIRE(load_tokenizer(m, &tok) == "");
        std::vector<int> ids;
        REQUIRE(tok.encode_special(text, true, &ids) == "");
        CHECK(ids == llama_cpp);
    }
}

// A large model is often downloaded as parts made by llama.cpp's llama-gguf-split
// (NAME-00001-of-00003.gguf): its loader (src/llama-model-loader.cpp) reads split.count and
// split.no from the first part and maps the others. hearth read the first part alone and named a
// tensor of a later part as missing (or, here, where the part holds all of them, ran it). It
// says what the file is and how to join the parts now, in run and in quantize.
TEST_CASE("gguf: one part of a split GGUF is named as one, with the command that joins the parts") {
    const std::string path = rewritten_mini("build/tests/gguf-split-00001-of-00002.gguf",
                                            [](Metadata* meta, std::vector<TensorView>*) {
                                                meta->set_u32("split.no", 0);
                                                meta->set_u32("split.count", 2);
                                                meta->set_u32("split.tensors.count", 20);
                                            },
                                            {});
    Model m;
    const std::string err = load_model(path, &m);
    CHECK(err.find("part 1 of 2 of a GGUF split by llama.cpp's llama-gguf-split") != std::string::npos);
    CHECK(err.find("llama-gguf-split --merge") != std::string::npos);
    CommandResult q = run_command("./quantize " + path + " build/tests/gguf-split.hearth -q");
    CHECK(q.exit_code == 1);
    CHECK(q.err.find("part 1 of 2") != std::string::npos);
    // A file that is its own only part is a model like any other.
    const std::string whole =
        rewritten_mini("build/tests/gguf-split-whole.gguf",
                       [](Metadata* meta, std::vector<TensorView>*) { meta->set_u32("split.count", 1); }, {});
    CHECK(load_model(whole, &m) == "");
}

// llama.cpp's model saver (llama_model_save_to_file, which llama-finetune writes its output
// with) writes every key it knows, with llama.cpp's values for "none": on mini-F16.gguf it adds
// llama.attention.sliding_window 0, llama.rope.scaling.type "linear" with factor 0 (llama.cpp's
// freq_scale is 1 for a factor of 0), llama.attention.scale 0, llama.expert_count 0, and
// 0xFFFFFFFF (LLAMA_TOKEN_NULL) for the special tokens the model has none of. llama.cpp runs
// that file as the original (21516 x4 then 18574 x8 on this prompt, llama-completion); hearth
// refused it for the window, then the scaling type, then the padding id. The same keys set here.
TEST_CASE("gguf: the keys llama.cpp's model saver writes for 'none' are read as none") {
    auto saver_keys = [](Metadata* meta) {
        meta->set_u32("llama.attention.sliding_window", 0);
        meta->set_string("llama.rope.scaling.type", "linear");
        meta->set_f32("llama.rope.scaling.factor", 0.0f);
        meta->set_f32("llama.attention.scale", 0.0f);
        meta->set_u32("llama.expert_count", 0);
        meta->set_u32("llama.expert_used_count", 0);
        for (const char* id :
             {"tokenizer.ggml.padding_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.seperator_token_id"})
            meta->set_u32(id, 0xFFFFFFFFu);
    };
    const std::string path =
        rewritten_mini("build/tests/gguf-saver.gguf", [&](Metadata* meta, std::vector<TensorView>*) { saver_keys(meta); }, {});
    const std::vector<int> llama_cpp = {21516, 21516, 21516, 21516, 18574, 18574, 18574, 18574, 18574, 18574, 18574, 18574};
    CHECK(greedy_ids(path, 12) == join(llama_cpp) + "\n");
    Model m;
    REQUIRE(load_model(path, &m) == "");
    CHECK(m.config.sliding_window == 0);
    // What would change the computation is still refused.
    for (auto [key, value] : {std::pair{"llama.rope.scaling.factor", 2.0f}, std::pair{"llama.attention.scale", 0.125f}}) {
        CAPTURE(key);
        const std::string changed = rewritten_mini("build/tests/gguf-saver-changed.gguf",
                                                   [&, key = key, value = value](Metadata* meta, std::vector<TensorView>*) {
                                                       saver_keys(meta);
                                                       meta->set_f32(key, value);
                                                   },
                                                   {});
        Model c;
        CHECK(load_model(changed, &c).find(key) != std::string::npos);
    }
}

// llama.cpp's converter names the pre-tokenizer it recognises by its vocabulary's hash, so files
// of one regex carry several names: DeepSeek-R1-Distill-Qwen's (architecture qwen2) say
// deepseek-r1-qwen, Falcon3's (llama) falcon3, and llama.cpp's loader gives those the regex of
// qwen2 and llama-bpe. hearth knew only the first names and refused the files. The vocabularies
// here are the ones hearth's GGUF export writes for the Llama-3 and Qwen3 tokenizer.json, with
// hearth's own regex keys removed and tokenizer.ggml.pre renamed, as in a llama.cpp file; the
// ids are llama-tokenize's (--no-bos, same commit as tests/reference) on such a file.
TEST_CASE("gguf: the pre-tokenizer names llama.cpp gives the llama-bpe and qwen2 regexes tokenize as llama.cpp") {
    const std::string text =
        "Hello world! It's 2024-11-29, 12345 apples; na\xc3\xafve caf\xc3\xa9 (\xc3\x85\xc3\x86\xc3\x98) "
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88  spaces\ttab\nnew line's OK";
    const std::vector<int> llama3 = {9906,  1917, 0,      1102,   596,    220,  2366,   19,     12,    806,
                                     12,    1682, 11,     220,    4513,   1774, 41776,  26,     95980, 588,
                                     53050, 320,  106453, 113119, 115554, 8,    105180, 102158, 57933, 62903,
                                     71634, 220,  12908,  59249,  198,    943,  1584,   596,    10619};
    const std::vector<int> qwen = {9707,  1879,  0,     1084,  594,   220,    17,     15,     17,   19,    12,    16,
                                   16,    12,    17,    24,    11,    220,    16,     17,     18,   19,    20,    40676,
                                   26,    94880, 586,   51950, 320,   144044, 144839, 144050, 8,    75402, 21894, 102819,
                                   56833, 61803, 70534, 220,   12621, 58149,  198,    931,    1555, 594,   10402};
    for (auto [name, pre, vocab, want] :
         {std::tuple{"llama3", "falcon3", 128256, &llama3}, std::tuple{"llama3", "llama-bpe", 128256, &llama3},
          std::tuple{"qwen3", "deepseek-r1-qwen", 151936, &qwen}, std::tuple{"qwen3", "qwen2", 151936, &qwen}}) {
        CAPTURE(pre);
        const std::string json_path = std::string("build/tests/bpe/") + name + "-tokenizer.json";
        if (read_text(json_path).empty())
            REQUIRE(run_command(std::string("mkdir -p build/tests/bpe && xz -dc tests/data/bpe/") + name +
                                "-tokenizer.json.xz > " + json_path)
                        .exit_code == 0);
        TokenizerSpec spec;
        spec.kind = TokenizerKind::bpe;
        REQUIRE(bpe_from_tokenizer_json(read_text(json_path),
                                        read_text(std::string("tests/data/bpe/") + name + "-tokenizer_config.json"),
                                        &spec.bpe) == "");
        Metadata meta;
        std::string caveat;
        REQUIRE(tokenizer_to_gguf_metadata(spec, vocab, &meta, &caveat) == "");
        for (const char* key :
             {"hearth.tokenizer.pre_split_regex", "hearth.tokenizer.normalizer", "hearth.tokenizer.ignore_merges"})
            meta.erase(key);
        meta.set_string("tokenizer.ggml.pre", pre);
        TokenizerSpec read;
        REQUIRE(tokenizer_from_metadata(meta, &read) == "");
        Tokenizer tok;
        REQUIRE(tok.load(read) == "");
        std::vector<int> ids;
        REQUIRE(tok.encode(text, false, &ids) == "");
        CHECK(ids == *want);
    }
}
