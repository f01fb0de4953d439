// The families of today's models: Llama-3.x (llama3 rope scaling, tied embeddings, BF16),
// Mistral (sliding window) and Qwen3 (q_norm/k_norm, head_dim not dim / heads, RoPE on the
// halves of a head, a padded vocabulary). Each small random checkpoint in tests/data/parity/
// (made by tests/reference/make_parity_models.py, which also checked that what sets the family
// apart changes the greedy ids) is converted with ./quantize, and ./run's greedy ids must be
// the PyTorch reference's; test_parity.cpp holds their logits. Here: the f32 KV cache, the
// quantized types, the GGUF round trip, and config.json's refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "model/config.h"
#include "formats/hearth.h"
#include "model/forward.h"
#include "convert/import.h"
#include "formats/metadata.h"
#include "model/model.h"
#include "tests/test_helpers.h"

using namespace hearth;

namespace {

const char* const kFamilies[] = {"llama3", "mistral", "qwen2", "qwen3"};

struct FamilyGolden {
    std::vector<int> prompt_ids, greedy_ids;
};

FamilyGolden golden(const std::string& name) {
    auto j = nlohmann::json::parse(read_text("tests/data/parity/" + name + "/golden.json"));
    return {j.at("prompt_ids").get<std::vector<int>>(), j.at("greedy_ids").get<std::vector<int>>()};
}

std::string ids_text(const std::vector<int>& ids) {
    std::string s;
    for (int id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
    return s;
}

// ./run's greedy ids for the golden's prompt, with an f32 KV cache as the reference has.
std::string run_greedy(const std::string& model, const FamilyGolden& g, const std::string& extra = "") {
    CommandResult r =
        run_command("./run " + model + " --prompt-ids " + ids_text(g.prompt_ids) + " -n " + std::to_string(g.greedy_ids.size()) +
                    " --temp 0 --ignore-eos --print-ids -t 2 -ctk f32 -ctv f32" + extra);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
}

void quantize(const std::string& args) {
    CommandResult q = run_command("./quantize " + args + " -q");
    INFO(args << "\n" << q.err);
    REQUIRE(q.exit_code == 0);
}

// All logits of the prompt (f32 cache).
std::vector<float> prompt_logits(const std::string& path, const std::vector<int>& ids, int* vocab) {
    Model m;
    REQUIRE(load_model(path, &m) == "");
    RunState s;
    REQUIRE(make_run_state(m.config, 64, &s, {TYPE_F32, TYPE_F32}) == "");
    *vocab = m.config.vocab_size;
    std::vector<float> out(ids.size() * size_t(*vocab));
    REQUIRE(forward(m, s, ids.data(), int(ids.size()), 0, out.data(), true) == "");
    return out;
}

}  // namespace

TEST_CASE("families: f32 conversions give the reference's greedy ids with an f32 KV cache") {
    for (const std::string name : kFamilies) {
        SUBCASE(name.c_str()) {
            const std::string out = "build/tests/family-" + name + "-f32.hearth";
            quantize("tests/data/parity/" + name + " " + out + " f32");
            const FamilyGolden g = golden(name);
            CHECK(run_greedy(out, g) == ids_text(g.greedy_ids) + "\n");
        }
    }
}

TEST_CASE("families: what the configuration says reaches the model") {
    Model m;
    quantize("tests/data/parity/llama3 build/tests/family-llama3-f32.hearth f32");
    REQUIRE(load_model("build/tests/family-llama3-f32.hearth", &m) == "");
    CHECK(m.config.arch == "llama");
    CHECK(m.config.tied_embeddings);
    CHECK(m.config.rope_theta == 500000.0f);
    // head dim 32: wavelengths 2*pi*500000^(i/16). i = 0 (6.3) is below 32/4 and kept, i = 1
    // (14.3) between 32/4 and 32 and interpolated, the rest beyond 32 and divided by 8.
    REQUIRE(m.config.rope_freq_factors.size() == 16);
    CHECK(m.config.rope_freq_factors[0] == 1.0f);
    const double pi = 3.14159265358979323846, wavelen1 = 2 * pi * std::pow(500000.0, 1.0 / 16), smooth = (32 / wavelen1 - 1) / 3;
    CHECK(m.config.rope_freq_factors[1] == doctest::Approx(1 / ((1 - smooth) / 8 + smooth)).epsilon(1e-6));
    for (int i = 2; i < 16; i++) CHECK(m.config.rope_freq_factors[size_t(i)] == 8.0f);
    CHECK(m.rope_freqs.data != nullptr);

    Model q;
    quantize("tests/data/parity/qwen3 build/tests/family-qwen3-f32.hearth f32");
    REQUIRE(load_model("build/tests/family-qwen3-f32.hearth", &q) == "");
    CHECK(q.config.arch == "qwen3");
    CHECK(q.config.head_dim == 32);
    CHECK(q.config.dim == 64);
    CHECK(q.config.vocab_size == 576);
    CHECK(q.tokenizer.kind == TokenizerKind::sentencepiece);
    CHECK(q.layers[1].attn_k_norm.shape[0] == 32);
    CHECK(q.config.sliding_window == 0);

    Model b;
    quantize("tests/data/parity/qwen2 build/tests/family-qwen2-f32.hearth f32");
    REQUIRE(load_model("build/tests/family-qwen2-f32.hearth", &b) == "");
    CHECK(b.config.arch == "qwen2");
    CHECK(b.config.sliding_window == 0);
    CHECK(b.config.tied_embeddings);
    CHECK(b.config.rope_theta == 1000000.0f);
    CHECK(b.layers[1].attn_q_bias.shape[0] == 64);  // 4 heads of 16
    CHECK(b.layers[1].attn_k_bias.shape[0] == 32);  // 2 kv heads
    CHECK(b.layers[1].attn_v_bias.shape[0] == 32);
    CHECK(b.layers[1].attn_q_bias.type == TYPE_F32);

    Model s;
    quantize("tests/data/parity/mistral build/tests/family-mistral-f32.hearth f32");
    REQUIRE(load_model("build/tests/family-mistral-f32.hearth", &s) == "");
    CHECK(s.config.sliding_window == 6);
    CHECK(!s.config.tied_embeddings);
}

TEST_CASE("families: padded vocabulary rows are never generated") {
    // The reference picked among the tokenizer's 512 pieces; without that mask a padding row
    // (576 rows) would have won some steps (make_parity_models.py prints how many). Sampling
    // at a high temperature must not reach them either.
    const std::string out = "build/tests/family-qwen3-f32.hearth";
    quantize("tests/data/parity/qwen3 " + out + " f32");
    const FamilyGolden g = golden("qwen3");
    CommandResult r = run_command("./run " + out + " --prompt-ids " + ids_text(g.prompt_ids) +
                                  " -n 200 --temp 5 --top-k 0 --top-p 1 --min-p 0 --ignore-eos --print-ids -s 3 -t 2");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    int n = 0;
    for (const auto& id : nlohmann::json::parse("[" + r.out + "]")) {
        CHECK(id.get<int>() < 512);
        n++;
    }
    CHECK(n == 200);
}

TEST_CASE("families: q8_0 and q4_0 stay as close to f32 as the reference on rounded weights") {
    // These small random models with sharp attention move far more under quantization than a
    // trained one (test_quantize.cpp holds the default model to 2% in q8_0): the reference's own
    // logits move by golden.json's quant_sensitivity when its matrices are rounded as q8_0 / q4_0
    // store them (make_parity_models.py). hearth's quantized files may move at most twice that:
    // its kernels also round the activations (to q8 blocks) that multiply q8_0 and q4_0 rows.
    for (const std::string name : kFamilies) {
        CAPTURE(name);
        const std::string f32 = "build/tests/family-" + name + "-f32.hearth";
        quantize("tests/data/parity/" + name + " " + f32 + " f32");
        const FamilyGolden g = golden(name);
        const auto sensitivity =
            nlohmann::json::parse(read_text("tests/data/parity/" + name + "/golden.json")).at("quant_sensitivity");
        int vocab = 0;
        const std::vector<float> ref = prompt_logits(f32, g.prompt_ids, &vocab);
        for (const std::string type : {"q8_0", "q4_0"}) {
            const std::string out = "build/tests/family-" + name + "-" + type + ".hearth";
            quantize(f32 + " " + out + " " + type);
            int v2 = 0;
            const std::vector<float> got = prompt_logits(out, g.prompt_ids, &v2);
            REQUIRE(v2 == vocab);
            double max_diff = 0, max_ref = 0;
            for (size_t i = 0; i < ref.size(); i++) {
                max_diff = std::max(max_diff, std::fabs(double(got[i]) - ref[i]));
                max_ref = std::max(max_ref, std::fabs(double(ref[i])));
            }
            const double bound = 2 * sensitivity.at(type).get<double>();
            MESSAGE(name << " " << type << ": max |diff| / max |logit| = " << max_diff / max_ref
                         << " (reference on rounded weights: " << bound / 2 << ")");
            CHECK(max_diff > 0);
            CHECK(max_diff / max_ref <= bound);
        }
    }
}

TEST_CASE("families: GGUF export and back keeps the configuration and the greedy ids") {
    for (const std::string name : kFamilies) {
        SUBCASE(name.c_str()) {
            const std::string f32 = "build/tests/family-" + name + "-f32.hearth", gguf = "build/tests/family-" + name + ".gguf",
                              back = "build/tests/family-" + name + "-back.hearth";
            quantize("tests/data/parity/" + name + " " + f32 + " f32");
            quantize(f32 + " " + gguf);
            quantize(gguf + " " + back);
            const FamilyGolden g = golden(name);
            const std::string want = ids_text(g.greedy_ids) + "\n";
            CHECK(run_greedy(gguf, g) == want);  // run maps the GGUF file directly
            CHECK(run_greedy(back, g) == want);
            Model a, b;
            REQUIRE(load_model(f32, &a) == "");
            REQUIRE(load_model(gguf, &b) == "");
            CHECK(b.config.arch == a.config.arch);
            CHECK(b.config.head_dim == a.config.head_dim);
            CHECK(b.config.sliding_window == a.config.sliding_window);
            CHECK(b.config.rope_freq_factors == a.config.rope_freq_factors);
            CHECK(b.config.tied_embeddings == a.config.tied_embeddings);
            CHECK(b.config.rope_theta == a.config.rope_theta);
            // What llama.cpp reads: qwen3's keys under qwen3.*, its norms as attn_q_norm/attn_k_norm,
            // Llama-3's scaling as rope_freqs.weight and no rope.scaling key (llama.cpp would
            // assert on the type "llama3" and apply a factor as linear scaling).
            const std::string bytes = read_text(gguf);
            auto has = [&](const std::string& s) { return bytes.find(s) != std::string::npos; };
            CHECK(!has(".rope.scaling."));
            if (name == "qwen3") {
                CHECK(has("qwen3.attention.key_length"));
                CHECK(has("blk.1.attn_q_norm.weight"));
                CHECK(has("blk.1.attn_k_norm.weight"));
                CHECK(!has("llama."));
            }
            if (name == "qwen2") {
                CHECK(has("qwen2.attention.head_count"));
                for (const char* b : {"blk.1.attn_q.bias", "blk.1.attn_k.bias", "blk.1.attn_v.bias"}) CHECK(has(b));
                CHECK(!has("llama."));
            }
            if (name == "llama3") CHECK(has("rope_freqs.weight"));
            if (name == "mistral") CHECK(has("llama.attention.sliding_window"));
        }
    }
}

namespace {

const std::string kCrafted = "build/tests/crafted-family";

// A copy of a family's folder whose config.json has each key of `patch` set (null: removed).
std::string import_family(const std::string& name, const nlohmann::json& patch) {
    REQUIRE(run_command("rm -rf " + kCrafted + " && cp -r tests/data/parity/" + name + " " + kCrafted).exit_code == 0);
    auto cfg = nlohmann::json::parse(read_text(kCrafted + "/config.json"));
    for (auto& [key, value] : patch.items()) {
        if (value.is_null())
            cfg.erase(key);
        else
            cfg[key] = value;
    }
    std::ofstream(kCrafted + "/config.json") << cfg.dump();
    ImportedCheckpoint out;
    const std::string err = import_hf_folder(kCrafted, &out);
    CHECK(err.find('\n') == std::string::npos);
    return err;
}

bool says(const std::string& err, const std::string& what) {
    INFO(err);
    return err.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("families: config.json values hearth cannot honour are refused in one line") {
    REQUIRE(import_family("llama3", {}) == "");
    REQUIRE(import_family("mistral", {}) == "");
    REQUIRE(import_family("qwen3", {}) == "");
    using J = nlohmann::json;
    const J llama3 = J::parse(R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                   "original_max_position_embeddings": 32})");
    auto scaling = [&](const char* key, const J& value) {
        J rs = llama3;
        if (value.is_null())
            rs.erase(key);
        else
            rs[key] = value;
        return import_family("llama3", {{"rope_scaling", rs}});
    };
    // Rope scaling: only llama3 (and "default", none), each parameter present and sane.
    CHECK(says(import_family("llama3", {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}}), "'yarn' is not supported"));
    CHECK(says(import_family("llama3", {{"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}}), "'linear' is not supported"));
    CHECK(
        says(import_family("llama3", {{"rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}}}), "'dynamic' is not supported"));
    CHECK(says(import_family("llama3", {{"rope_scaling", {{"factor", 2.0}}}}), "no rope_type"));
    CHECK(says(import_family("llama3", {{"rope_scaling", "llama3"}}), "not an object"));
    CHECK(says(scaling("factor", nullptr), "no factor"));
    CHECK(says(scaling("factor", 0.5), "factor"));
    CHECK(says(scaling("factor", "8"), "factor"));
    CHECK(says(scaling("high_freq_factor", 0.5), "low_freq_factor < high_freq_factor"));
    CHECK(says(scaling("original_max_position_embeddings", 32.5), "original_max_position_embeddings"));
    CHECK(says(scaling("original_max_position_embeddings", -1), "original_max_position_embeddings"));
    CHECK(says(scaling("original_max_position_embeddings", nullptr), "original_max_position_embeddings"));
    CHECK(says(scaling("low_freq_factor", 1e300), "low_freq_factor"));
    CHECK(says(scaling("factor", nullptr), "factor"));
    CHECK(import_family("llama3", {{"rope_scaling", {{"rope_type", "default"}}}}) == "");
    // transformers 5 spells rope_theta and rope_scaling as rope_parameters.
    J params = llama3;
    params["rope_theta"] = 500000.0;
    CHECK(import_family("llama3", {{"rope_scaling", nullptr}, {"rope_theta", nullptr}, {"rope_parameters", params}}) == "");
    // Qwen3: no attention bias, no sliding window.
    CHECK(says(import_family("qwen3", {{"attention_bias", true}}), "attention_bias is not supported"));
    CHECK(says(import_family("qwen3", {{"use_sliding_window", true}}), "use_sliding_window is not supported"));
    // Qwen2: its sliding_window (131072 in this folder, as in Qwen2.5's) only with use_sliding_window.
    REQUIRE(import_family("qwen2", {}) == "");
    CHECK(says(import_family("qwen2", {{"use_sliding_window", true}}), "use_sliding_window is not supported"));
    // Mistral's sliding window: an integer from 1 up, or null for none.
    CHECK(says(import_family("mistral", {{"sliding_window", 0}}), "sliding_window"));
    CHECK(says(import_family("mistral", {{"sliding_window", -4}}), "sliding_window"));
    CHECK(says(import_family("mistral", {{"sliding_window", 6.5}}), "sliding_window"));
    CHECK(says(import_family("mistral", {{"sliding_window", "6"}}), "sliding_window"));
    CHECK(says(import_family("mistral", {{"sliding_window", 1ull << 40}}), "sliding_window"));
    ModelConfig c;
    REQUIRE(config_from_hf_json(read_text("tests/data/parity/mistral/config.json"), &c) == "");
    CHECK(c.sliding_window == 6);
    auto mistral = nlohmann::json::parse(read_text("tests/data/parity/mistral/config.json"));
    mistral["sliding_window"] = nullptr;
    REQUIRE(config_from_hf_json(mistral.dump(), &c) == "");
    CHECK(c.sliding_window == 0);
    mistral.erase("sliding_window");
    REQUIRE(config_from_hf_json(mistral.dump(), &c) == "");
    CHECK(c.sliding_window == 4096);  // MistralConfig's default
    // Qwen3's head_dim defaults to 128, not dim / heads: this folder's q_proj then has the wrong shape.
    CHECK(says(import_family("qwen3", {{"head_dim", nullptr}}),
               "q_proj.weight has shape [128, 64], config.json implies [512, 64]"));
    // An architecture hearth does not know is named.
    CHECK(says(import_family("qwen3", {{"architectures", {"Qwen3MoeForCausalLM"}}}), "Qwen3MoeForCausalLM"));
}

TEST_CASE("families: a sliding window in a file is applied, and nonsense ones are refused") {
    // The Mistral folder again, but with the window set to more than the whole sequence: its
    // greedy ids must then differ from the reference's, which saw the window of 6.
    REQUIRE(import_family("mistral", {{"sliding_window", 4096}}) == "");
    quantize(kCrafted + " build/tests/family-mistral-nowindow.hearth f32");
    const FamilyGolden g = golden("mistral");
    CHECK(run_greedy("build/tests/family-mistral-nowindow.hearth", g) != ids_text(g.greedy_ids) + "\n");
    ModelConfig c;
    REQUIRE(config_from_hf_json(read_text("tests/data/parity/mistral/config.json"), &c) == "");
    c.sliding_window = -1;
    CHECK(says(validate_config(c), "sliding window"));
    c.sliding_window = 6;
    c.rope_freq_factors = {1.0f, 2.0f};
    CHECK(says(validate_config(c), "frequency factors"));
    c.rope_freq_factors.assign(size_t(c.head_dim / 2), 1.0f);
    CHECK(validate_config(c) == "");
    c.rope_freq_factors[3] = NAN;
    CHECK(says(validate_config(c), "frequency factor"));
    c.rope_freq_factors[3] = 0.0f;
    CHECK(says(validate_config(c), "frequency factor"));
}

TEST_CASE("families: GGUF RoPE scaling keys hearth does not apply are refused, not ignored") {
    ModelConfig c;
    REQUIRE(config_from_hf_json(read_text("tests/data/parity/llama3/config.json"), &c) == "");
    Metadata m;
    config_to_metadata(c, &m);
    ModelConfig back;
    REQUIRE(config_from_metadata(m, &back) == "");
    m.set_string("llama.rope.scaling.type", "none");
    CHECK(config_from_metadata(m, &back) == "");
    m.set_string("llama.rope.scaling.type", "yarn");
    CHECK(says(config_from_metadata(m, &back), "RoPE scaling 'yarn'"));
    m.erase("llama.rope.scaling.type");
    m.set_f32("llama.rope.scaling.factor", 4.0f);  // llama.cpp: linear scaling by 4
    CHECK(says(config_from_metadata(m, &back), "llama.rope.scaling.factor"));
    m.set_f32("llama.rope.scaling.factor", 1.0f);
    CHECK(config_from_metadata(m, &back) == "");
    // 0 is no window, as llama.cpp reads it and its model saver writes it (tests/formats/test_gguf.cpp).
    m.set_u32("llama.attention.sliding_window", 0);
    REQUIRE(config_from_metadata(m, &back) == "");
    CHECK(back.sliding_window == 0);
    m.set_u32("llama.attention.sliding_window", (1u << 24) + 1);
    CHECK(says(config_from_metadata(m, &back), "sliding_window"));
    m.set_u32("llama.attention.sliding_window", 6);
    REQUIRE(config_from_metadata(m, &back) == "");
    CHECK(back.sliding_window == 6);
}

TEST_CASE("families: a rope_freqs.weight that is not head_dim/2 positive f32 values is refused") {
    quantize("tests/data/parity/llama3 build/tests/family-llama3-f32.gguf f32");
    const std::string bytes = read_text("build/tests/family-llama3-f32.gguf");
    ParsedCheckpoint p;
    REQUIRE(parse_model_file(bytes.data(), bytes.size(), &p) == "");
    REQUIRE(p.config.rope_freq_factors.size() == 16);
    auto with = [&](const std::function<void(TensorView&, std::vector<float>&)>& change) {
        ParsedCheckpoint q = p;
        std::vector<float> values(p.config.rope_freq_factors);
        for (TensorView& t : q.tensors)
            if (t.name == "rope_freqs.weight") {
                t.data = values.data();
                change(t, values);
            }
        return finish_config(&q);
    };
    CHECK(with([](TensorView&, std::vector<float>&) {}) == "");
    CHECK(says(with([](TensorView& t, std::vector<float>&) { t.type = TYPE_F16; }), "rope_freqs.weight"));
    CHECK(says(with([](TensorView& t, std::vector<float>&) { t.shape[0] = 8; }), "frequency factors"));
    CHECK(says(with([](TensorView&, std::vector<float>& v) { v[5] = -1.0f; }), "frequency factor"));
    CHECK(says(with([](TensorView&, std::vector<float>& v) { v[5] = INFINITY; }), "frequency factor"));
}

TEST_CASE("families: Llama-3.2-1B's config.json gives the reference's RoPE frequency divisors") {
    // Llama-3.2-1B's published config.json, its weights aside.
    const std::string config = R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
        "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
        "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
        "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
        "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0",
        "use_cache": true, "vocab_size": 128256})";
    ModelConfig c;
    REQUIRE(config_from_hf_json(config, &c) == "");
    CHECK(c.vocab_size == 128256);
    CHECK(c.tied_embeddings);
    CHECK(c.head_dim == 64);
    CHECK(c.n_kv_heads == 8);
    // inv_freq / hf_llama.llama3_inv_freq(inv_freq, rope_scaling), in float32 as transformers computes it.
    const float want[32] = {1,         1,        1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1.651329f,
                            3.292263f, 9.66673f, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32};
    REQUIRE(c.rope_freq_factors.size() == 32);
    for (int i = 0; i < 32; i++) CHECK(c.rope_freq_factors[size_t(i)] == doctest::Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("families: Qwen3-0.6B's and Mistral-7B-v0.1's config.json read as their models are") {
    ModelConfig q;
    REQUIRE(config_from_hf_json(R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
        "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 40960, "max_window_layers": 28,
        "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
        "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
        "use_sliding_window": false, "vocab_size": 151936})",
                                &q) == "");
    CHECK(q.arch == "qwen3");
    CHECK(q.head_dim == 128);
    CHECK(q.n_heads * q.head_dim == 2048);  // the queries are wider than the residual stream (1024)
    CHECK(q.rope_theta == 1000000.0f);
    CHECK(q.tied_embeddings);
    CHECK(q.sliding_window == 0);
    CHECK(q.rope_freq_factors.empty());
    CHECK(family_of(q).rope_style == RopeStyle::halves);
    CHECK(family_of(q).qk_norm);
    CHECK(q.bos_id == 151643);
    CHECK(!q.add_bos);  // Qwen's tokenizers add no BOS
    ModelConfig m;
    REQUIRE(config_from_hf_json(R"({"architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
        "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
        "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
        "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0", "use_cache": true,
        "vocab_size": 32000})",
                                &m) == "");
    CHECK(m.arch == "llama");
    CHECK(m.sliding_window == 4096);
    CHECK(m.head_dim == 128);
    CHECK(family_of(m).rope_style == RopeStyle::adjacent_pairs);
    CHECK(!family_of(m).qk_norm);
    CHECK(m.add_bos);
}
