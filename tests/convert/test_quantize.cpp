// quantize's choice of type per tensor, and quantized models against their f32 logits.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "kernels/rows_x8.h"
#include "kernels/quant_types.h"
#include "convert/convert.h"
#include "model/forward.h"
#include "model/model.h"
#include "tests/test_helpers.h"

using namespace hearth;

static SourceTensor matrix(const std::string& name, uint64_t rows, uint64_t cols) {
    SourceTensor t;
    t.name = name;
    t.n_dims = 2;
    t.shape[0] = rows;
    t.shape[1] = cols;
    return t;
}

TEST_CASE("quantize: q4_k_m and q5_k_m give q6_k to the layers llama.cpp's use_more_bits picks") {
    // llama.cpp (llama-quant.cpp): use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2.
    // For 32 layers that is 0-3, 28-31 and 6, 9, ..., 27, written out here by hand.
    const std::set<int> more = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
    for (const std::pair<OutputMix, TensorType>& mix_base :
         {std::pair{OutputMix::Q4_K_M, TYPE_Q4_K}, std::pair{OutputMix::Q5_K_M, TYPE_Q5_K}}) {
        const OutputMix mix = mix_base.first;
        const uint32_t base = mix_base.second;
        CAPTURE(output_mix_name(mix));
        for (int l = 0; l < 32; l++) {
            std::string p = "blk." + std::to_string(l) + ".";
            uint32_t expect = more.count(l) ? TYPE_Q6_K : base;
            CHECK((tensor_type_for(mix, matrix(p + "attn_v.weight", 4096, 4096), 32)) == expect);
            CHECK((tensor_type_for(mix, matrix(p + "ffn_down.weight", 4096, 11008 / 256 * 256), 32)) == expect);
            CHECK((tensor_type_for(mix, matrix(p + "attn_q.weight", 4096, 4096), 32)) == base);
            CHECK((tensor_type_for(mix, matrix(p + "ffn_up.weight", 11008, 4096), 32)) == base);
        }
        CHECK((tensor_type_for(mix, matrix("output.weight", 32000, 4096), 32)) == TYPE_Q6_K);
        CHECK((tensor_type_for(mix, matrix("token_embd.weight", 32000, 4096), 32)) == TYPE_Q6_K);
    }
    // q4_0 as llama.cpp's Q4_0: output in Q6_K, everything else (embedding included) Q4_0
    CHECK((tensor_type_for(OutputMix::Q4_0, matrix("output.weight", 32000, 4096), 32)) == TYPE_Q6_K);
    CHECK((tensor_type_for(OutputMix::Q4_0, matrix("token_embd.weight", 32000, 4096), 32)) == TYPE_Q4_0);
    // Tied (Llama-3.2, small Qwen3): the embedding is the output projection, and gets its type.
    CHECK((tensor_type_for(OutputMix::Q4_0, matrix("token_embd.weight", 32000, 4096), 32, CheckpointFormat::hearth, true)) ==
          TYPE_Q6_K);
    CHECK((tensor_type_for(OutputMix::Q4_0, matrix("blk.0.attn_v.weight", 4096, 4096), 32)) == TYPE_Q4_0);
    // A hearth file stores q4_0/q8_0/q4_K matrices with rows interleaved by 8, the token embedding
    // (looked up by row) plain; a GGUF file everything plain.
    CHECK(tensor_layout_for("blk.0.attn_v.weight", TYPE_Q4_0) == Layout::rows_x8);
    CHECK(tensor_layout_for("output.weight", TYPE_Q8_0) == Layout::rows_x8);
    CHECK(tensor_layout_for("blk.0.ffn_up.weight", TYPE_Q4_K) == Layout::rows_x8);
    CHECK(tensor_layout_for("blk.0.ffn_down.weight", TYPE_Q6_K) == Layout::rows);
    CHECK(tensor_layout_for("token_embd.weight", TYPE_Q8_0) == Layout::rows);
    CHECK(tensor_layout_for("blk.0.attn_v.weight", TYPE_Q4_0, CheckpointFormat::gguf) == Layout::rows);
    SourceTensor stored = matrix("blk.0.attn_v.weight", 4096, 4096);
    stored.type = TYPE_Q4_K;
    stored.layout = Layout::rows_x8;
    CHECK(tensor_type_for(OutputMix::Keep, stored, 32, CheckpointFormat::gguf) == TYPE_Q4_K);
    CHECK(tensor_type_for(OutputMix::Keep, stored, 32) == TYPE_Q4_K);
}

TEST_CASE("quantize: norms stay f32 and rows the block size does not divide fall back") {
    SourceTensor norm;
    norm.name = "blk.0.attn_norm.weight";
    norm.n_dims = 1;
    norm.shape[0] = 4096;
    CHECK(tensor_type_for(OutputMix::Q4_0, norm, 2) == TYPE_F32);
    CHECK((tensor_type_for(OutputMix::Q4_K, matrix("blk.0.ffn_up.weight", 172, 64), 2)) == TYPE_Q8_0);   // 64 % 256 != 0
    CHECK((tensor_type_for(OutputMix::Q4_K, matrix("blk.0.ffn_down.weight", 64, 172), 2)) == TYPE_F16);  // 172 % 32 != 0
    CHECK((tensor_type_for(OutputMix::Q8_0, matrix("blk.0.ffn_down.weight", 64, 172), 2)) == TYPE_F16);
    CHECK((tensor_type_for(OutputMix::Q4_0, matrix("blk.0.ffn_up.weight", 172, 64), 2)) == TYPE_Q4_0);
    OutputMix m;
    CHECK(parse_output_mix("Q4_K_M", &m));
    CHECK(m == OutputMix::Q4_K_M);
    CHECK(parse_output_mix("q5_k_m", &m));
    CHECK(m == OutputMix::Q5_K_M);
    CHECK(!parse_output_mix("q3_k", &m));
}

// Logits of the default model's golden prompt, for a checkpoint file, with an f32 KV cache:
// the weights are under test here, not the cache.
static std::vector<float> prompt_logits(const std::string& path, const std::vector<int>& ids, int* vocab) {
    Model m;
    REQUIRE(load_model(path, &m) == "");
    RunState s;
    REQUIRE(make_run_state(m.config, 256, &s, {TYPE_F32, TYPE_F32}) == "");
    *vocab = m.config.vocab_size;
    std::vector<float> logits(ids.size() * *vocab);
    REQUIRE(forward(m, s, ids.data(), int(ids.size()), 0, logits.data(), true) == "");
    return logits;
}

TEST_CASE("quantize: quantized default models stay close to the f32 logits") {
    const std::vector<int> ids =
        nlohmann::json::parse(read_text("tests/data/default_model_golden.json")).at("prompt_ids").get<std::vector<int>>();
    REQUIRE(run_command("./quantize models/tiny-shakespeare.hearth build/tests/ts-f32.hearth f32 -q").exit_code == 0);
    int vocab = 0;
    std::vector<float> ref = prompt_logits("build/tests/ts-f32.hearth", ids, &vocab);
    // Bounds on max |logit - f32 logit| relative to max |f32 logit|, by bits per weight.
    struct Case {
        const char* type;
        double max_rel;
    } cases[] = {{"q8_0", 0.02},   {"q6_k", 0.04}, {"q5_k_m", 0.06}, {"q5_k", 0.07},
                 {"q4_k_m", 0.10}, {"q4_k", 0.12}, {"q4_0", 0.15}};
    for (const Case& c : cases) {
        const std::string out = std::string("build/tests/ts-") + c.type + ".hearth";
        CommandResult q = run_command("./quantize build/tests/ts-f32.hearth " + out + " " + c.type + " -q");
        INFO(q.err);
        REQUIRE(q.exit_code == 0);
        int v2 = 0;
        std::vector<float> got = prompt_logits(out, ids, &v2);
        REQUIRE(v2 == vocab);
        double max_diff = 0, max_ref = 0;
        int same_argmax = 0;
        for (size_t t = 0; t < ids.size(); t++) {
            int a = 0, b = 0;
            for (int v = 0; v < vocab; v++) {
                max_diff = std::max(max_diff, std::fabs(double(got[t * vocab + v]) - ref[t * vocab + v]));
                max_ref = std::max(max_ref, std::fabs(double(ref[t * vocab + v])));
                if (ref[t * vocab + v] > ref[t * vocab + a]) a = v;
                if (got[t * vocab + v] > got[t * vocab + b]) b = v;
            }
            same_argmax += a == b;
        }
        MESSAGE(std::string(c.type) << ": max |diff| / max |logit| = " << max_diff / max_ref << ", argmax agrees at "
                                    << same_argmax << "/" << ids.size());
        CHECK(max_diff / max_ref <= c.max_rel);
        CHECK(max_diff > 0);
        if (std::string(c.type) == "q8_0") CHECK(same_argmax >= int(ids.size()) - 1);
    }
}

// Logits of a few tokens from a checkpoint loaded by load_model (weights repacked for this
// build's kernels) and from the same bytes bound in place without repacking (bind_model):
// all tokens at once (the batched kernels), then one more token alone (the single-token ones).
struct LoadedVsPlain {
    double max_diff = 0, mean_diff = 0, max_ref = 0;
    uint32_t stored_type = 0, loaded_type = 0, embd_stored = 0, embd_loaded = 0;  // of blk.0.ffn_up, token_embd
    Layout stored_layout = Layout::rows, loaded_layout = Layout::rows, embd_loaded_layout = Layout::rows;
};
static LoadedVsPlain loaded_vs_plain(const std::string& path) {
    LoadedVsPlain r;
    Model loaded;
    REQUIRE(load_model(path, &loaded) == "");
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ParsedCheckpoint parsed;
    REQUIRE(parse_model_file(bytes.data(), bytes.size(), &parsed) == "");
    Model plain;
    REQUIRE(bind_model(parsed, &plain) == "");
    r.stored_type = plain.layers[0].ffn_up.type;
    r.loaded_type = loaded.layers[0].ffn_up.type;
    r.stored_layout = plain.layers[0].ffn_up.layout;
    r.loaded_layout = loaded.layers[0].ffn_up.layout;
    r.embd_loaded_layout = loaded.token_embd.layout;
    r.embd_stored = plain.token_embd.type;
    r.embd_loaded = loaded.token_embd.type;
    const std::vector<int> ids = {1, 5, 9, 40, 3, 77, 12, 8, 2, 30};
    std::vector<float> a, b;
    for (Model* m : {&loaded, &plain}) {
        RunState s;  // f32 cache: f16 rounding would amplify the ulp differences described below
        REQUIRE(make_run_state(m->config, 64, &s, {TYPE_F32, TYPE_F32}) == "");
        std::vector<float>& out = m == &loaded ? a : b;
        out.resize(ids.size() * m->config.vocab_size);
        REQUIRE(forward(*m, s, ids.data(), int(ids.size()) - 1, 0, out.data(), true) == "");
        REQUIRE(forward(*m, s, &ids.back(), 1, int(ids.size()) - 1, out.data() + (ids.size() - 1) * m->config.vocab_size,
                        false) == "");
    }
    double sum = 0;
    for (size_t i = 0; i < a.size(); i++) {
        const double d = std::fabs(double(a[i]) - b[i]);
        r.max_diff = std::max(r.max_diff, std::isfinite(d) ? d : 1e30);
        r.max_ref = std::max(r.max_ref, std::fabs(double(b[i])));
        sum += std::isfinite(d) ? d : 1e30;
    }
    r.mean_diff = sum / double(a.size());
    return r;
}

TEST_CASE("load_model: matrices repacked for the kernels give the logits of the plain layout") {
    for (const std::string type : {"q4_0", "q8_0", "q4_k"}) {
        CAPTURE(type);
        // A file in the plain layout (GGUF, as a hearth file of format version 1 too) is repacked at load.
        const std::string path = "build/tests/ts-repack-" + type + ".gguf";
        REQUIRE(run_command("./quantize models/tiny-shakespeare.hearth " + path + " " + type + " -q").exit_code == 0);
        const LoadedVsPlain r = loaded_vs_plain(path);
        CHECK(type_is_quantized(r.stored_type));
        CHECK(r.embd_loaded == r.embd_stored);  // looked up by row: never repacked
        CHECK(r.embd_loaded_layout == Layout::rows);
        CHECK(r.loaded_type == r.stored_type);
        CHECK(r.stored_layout == Layout::rows);
        CHECK(r.loaded_layout == kernel_layout(r.stored_type));
        // Same integer sums per block; only the order of the float sums differs, by an ulp or so.
        // That can move an activation across a rounding boundary of the next layer's 8-bit
        // quantization, one code step, which shows in later logits (q4_k here: 0.4% of the largest
        // logit at one position, everything else within 1e-6). A wrong layout or kernel gives
        // differences of the order of the logits themselves.
        MESSAGE(type << ": max |diff| " << r.max_diff << ", mean |diff| " << r.mean_diff << ", max |logit| " << r.max_ref);
        CHECK(r.max_diff <= 0.02 * r.max_ref);
        CHECK(r.mean_diff <= 1e-3 * r.max_ref);
    }
}

TEST_CASE("load_model: a file whose tensors overlap is repacked without reading past a tensor") {
    // The format does not forbid two tensor entries over the same bytes. Here the output matrix
    // (1024 rows) starts where blk.0.attn_q (256 rows) does: the repacked copy of each must hold
    // its own rows.
    const std::string src = "build/tests/ts-overlap-src.hearth", path = "build/tests/ts-overlap.hearth";
    REQUIRE(run_command("./quantize models/tiny-shakespeare.hearth " + src + " q8_0 -q").exit_code == 0);
    std::string bytes = read_text(src);
    FileHeaderV2 h;
    std::memcpy(&h, bytes.data(), sizeof h);
    auto entry_at = [&](const char* name) -> size_t {
        for (uint64_t i = 0; i < h.n_tensors; i++) {
            const size_t at = h.tensor_table_offset + i * sizeof(TensorEntry);
            if (std::strncmp(bytes.data() + at, name, kTensorNameBytes) == 0) return at;
        }
        FAIL("no tensor " << name);
        return 0;
    };
    TensorEntry q, out;
    std::memcpy(&q, bytes.data() + entry_at("blk.0.attn_q.weight"), sizeof q);
    std::memcpy(&out, bytes.data() + entry_at("output.weight"), sizeof out);
    REQUIRE(q.type == out.type);
    REQUIRE(out.bytes > q.bytes);
    out.offset = q.offset;
    std::memcpy(&bytes[entry_at("output.weight")], &out, sizeof out);
    {
        std::ofstream f(path, std::ios::binary);
        f.write(bytes.data(), std::streamsize(bytes.size()));
    }
    Model m;
    REQUIRE(load_model(path, &m) == "");
    // Each view, put back into the plain layout, is the file's bytes at its own offset and length.
    for (const auto& view_entry : {std::pair<const TensorView*, TensorEntry>{&m.layers[0].attn_q, q}, {&m.output, out}}) {
        const TensorView* view = view_entry.first;  // not a structured binding: CAPTURE's lambda captures it
        const TensorEntry& e = view_entry.second;
        CAPTURE(view->name);
        uint32_t file_type;
        Layout file_layout;
        REQUIRE(hearth_type_from_id(e.type, &file_type, &file_layout));
        std::string plain(view->bytes, '\0');
        if (view->layout == file_layout)
            std::memcpy(&plain[0], view->data, view->bytes);
        else
            repack_x8_to_rows(file_type, view->data, &plain[0], int64_t(view->rows()), int64_t(view->cols()));
        CHECK(view->bytes == e.bytes);
        CHECK(plain == bytes.substr(e.offset, e.bytes));
    }
    // And the model runs (the values are nonsense: the output matrix reads other tensors' bytes).
    RunState s;
    REQUIRE(make_run_state(m.config, 16, &s) == "");
    std::vector<float> logits(m.config.vocab_size);
    const int ids[3] = {1, 5, 9};
    CHECK(forward(m, s, ids, 3, 0, logits.data(), false) == "");
}

TEST_CASE("load_model: a hearth file stores the interleaved layout and is used in place, with the logits of a repacked load") {
    for (const std::string type : {"q4_0", "q8_0", "q4_k"}) {
        CAPTURE(type);
        const std::string hearth = "build/tests/ts-stored-" + type + ".hearth", gguf = "build/tests/ts-stored-" + type + ".gguf";
        REQUIRE(run_command("./quantize models/tiny-shakespeare.hearth " + hearth + " " + type + " -q").exit_code == 0);
        REQUIRE(run_command("./quantize " + hearth + " " + gguf + " -q").exit_code == 0);
        Model stored, repacked;
        REQUIRE(load_model(hearth, &stored) == "");
        REQUIRE(load_model(gguf, &repacked) == "");
        CHECK(stored.repacked_bytes == 0);  // nothing copied at load
        CHECK(repacked.repacked_bytes > 0);
        CHECK(stored.layers[0].ffn_up.type == repacked.layers[0].ffn_up.type);
        CHECK(stored.layers[0].ffn_up.layout == Layout::rows_x8);
        CHECK(repacked.layers[0].ffn_up.layout == Layout::rows_x8);
        CHECK(stored.layers[0].ffn_up.data >= stored.file.data());  // a view into the mapping
        CHECK(stored.token_embd.type == repacked.token_embd.type);  // looked up by row: plain
        const std::vector<int> ids = {1, 5, 9, 40, 3, 77, 12, 8};
        std::vector<float> a(ids.size() * size_t(stored.config.vocab_size)), b(a.size());
        RunState sa, sb;
        REQUIRE(make_run_state(stored.config, 16, &sa) == "");
        REQUIRE(make_run_state(repacked.config, 16, &sb) == "");
        REQUIRE(forward(stored, sa, ids.data(), int(ids.size()), 0, a.data(), true) == "");
        REQUIRE(forward(repacked, sb, ids.data(), int(ids.size()), 0, b.data(), true) == "");
        CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
        // run says when a file could have been stored so.
        CommandResult r = run_command("./run " + gguf + " -p hi -n 1");
        CHECK(r.err.find("repacked for the kernels at load") != std::string::npos);
        r = run_command("./run " + hearth + " -p hi -n 1");
        CHECK(r.err.find("repacked") == std::string::npos);
    }
}
