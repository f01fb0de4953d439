// Parity with the PyTorch reference (tests/reference/hf_llama.py): each Hugging Face
// checkpoint is converted with ./quantize, then hearth's logits and ./run's greedy ids
// must equal the goldens the reference recorded.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "model/forward.h"
#include "model/model.h"
#include "tests/safetensors_crafted.h"
#include "tests/test_helpers.h"

using namespace hearth;

struct Golden {
    std::vector<int> prompt_ids;
    std::vector<std::vector<float>> logits;  // one row per prompt position
    std::vector<int> greedy_ids;
};

static Golden load_golden(const std::string& path) {
    auto j = nlohmann::json::parse(read_text(path));
    Golden g;
    g.prompt_ids = j.at("prompt_ids").get<std::vector<int>>();
    g.logits = j.at("logits").get<std::vector<std::vector<float>>>();
    g.greedy_ids = j.at("greedy_ids").get<std::vector<int>>();
    return g;
}

static std::string join_ids(const std::vector<int>& ids) {
    std::string s;
    for (int id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
    return s;
}

// max |hearth - reference| over all positions, and max |reference|.
static void compare_logits(const std::vector<float>& got, const Golden& g, int vocab, const std::string& what) {
    double max_diff = 0, max_ref = 0;
    for (size_t t = 0; t < g.logits.size(); t++)
        for (int v = 0; v < vocab; v++) {
            max_diff = std::max(max_diff, std::fabs(double(got[t * vocab + v]) - g.logits[t][v]));
            max_ref = std::max(max_ref, std::fabs(double(g.logits[t][v])));
        }
    INFO(what << ": max |diff| " << max_diff << ", max |logit| " << max_ref);
    CHECK(max_diff <= 1e-3 * max_ref);
}

// The reference keeps its KV cache in fp32, so the direct forward() calls here do too: what
// these tests hold is the forward pass itself. The default f16 cache is held to the same
// greedy ids below, through ./run, and to f32's perplexity in tests/model/test_kv_cache.cpp.
static const KvCacheTypes kF32Cache{TYPE_F32, TYPE_F32};

static void check_model(const std::string& model_path, const Golden& g) {
    Model m;
    REQUIRE(load_model(model_path, &m) == "");
    const int vocab = m.config.vocab_size;
    REQUIRE(g.logits.size() == g.prompt_ids.size());
    REQUIRE(int(g.logits[0].size()) == vocab);
    const int n = int(g.prompt_ids.size());

    // The whole prompt in one batch.
    RunState s;
    REQUIRE(make_run_state(m.config, 256, &s, kF32Cache) == "");
    std::vector<float> logits(size_t(n) * vocab);
    REQUIRE(forward(m, s, g.prompt_ids.data(), n, 0, logits.data(), true) == "");
    compare_logits(logits, g, vocab, model_path + " batched");

    // One token at a time through the KV cache, as generation does.
    RunState s1;
    REQUIRE(make_run_state(m.config, 256, &s1, kF32Cache) == "");
    for (int t = 0; t < n; t++) REQUIRE(forward(m, s1, &g.prompt_ids[t], 1, t, &logits[size_t(t) * vocab]) == "");
    compare_logits(logits, g, vocab, model_path + " token by token");

    // Several sequences in one batch, as the server's conversations step together: three
    // copies of the prompt at different paces (a token per step, two per step, and a token per
    // step from the fourth step on) in the same forward_batch calls, whose activations are the
    // first sequence's own buffers. Each sequence must still see only its own cache.
    RunState seq[3];
    std::vector<float> got[3];
    for (int i = 0; i < 3; i++) {
        REQUIRE(make_run_state(m.config, 256, &seq[i], kF32Cache) == "");
        got[i].resize(size_t(n) * vocab);
    }
    const int pace[3] = {1, 2, 1}, first_step[3] = {0, 0, 3};
    int done[3] = {0, 0, 0};
    for (int step = 0; done[0] < n || done[1] < n || done[2] < n; step++) {
        std::vector<SequenceChunk> chunks;
        for (int i = 0; i < 3; i++) {
            if (step < first_step[i] || done[i] == n) continue;
            const int k = std::min(pace[i], n - done[i]);
            chunks.push_back({&seq[i], &g.prompt_ids[done[i]], k, done[i], &got[i][size_t(done[i]) * vocab], true});
            done[i] += k;
        }
        REQUIRE(forward_batch(m, seq[0], chunks.data(), int(chunks.size())) == "");
    }
    for (int i = 0; i < 3; i++) compare_logits(got[i], g, vocab, model_path + " sequence " + std::to_string(i) + " of a batch");

    // Greedy generation through the real program, with its default (f16) KV cache.
    CommandResult r = run_command("./run " + model_path + " --prompt-ids " + join_ids(g.prompt_ids) + " -n " +
                                  std::to_string(g.greedy_ids.size()) + " --temp 0 --ignore-eos --print-ids -t 2");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == join_ids(g.greedy_ids) + "\n");
}

TEST_CASE("parity: Hugging Face checkpoints converted to f32 match the PyTorch reference") {
    for (const char* name : {"mha", "gqa", "tied", "theta500k", "bf16", "odd", "llama3", "mistral", "qwen2", "qwen3"}) {
        SUBCASE(name) {
            const std::string dir = std::string("tests/data/parity/") + name;
            const std::string out = std::string("build/tests/parity-") + name + ".hearth";
            CommandResult q = run_command("./quantize " + dir + " " + out + " --type f32 -q");
            INFO(q.err);
            REQUIRE(q.exit_code == 0);
            check_model(out, load_golden(dir + "/golden.json"));
        }
    }
}

TEST_CASE("parity: the default model matches the PyTorch reference on its exported weights") {
    check_model("models/tiny-shakespeare.hearth", load_golden("tests/data/default_model_golden.json"));
}

TEST_CASE("parity: an f16 conversion stays close to the f32 reference") {
    // f16 rounds the weights (relative error 2^-11), so the bound is looser; the greedy
    // margin of these goldens is over 1e-3 of the logit range, not enough to demand
    // equal ids here.
    const std::string out = "build/tests/parity-gqa-f16.hearth";
    REQUIRE(run_command("./quantize tests/data/parity/gqa " + out + " --type f16 -q").exit_code == 0);
    Golden g = load_golden("tests/data/parity/gqa/golden.json");
    Model m;
    REQUIRE(load_model(out, &m) == "");
    RunState s;
    REQUIRE(make_run_state(m.config, 64, &s, kF32Cache) == "");
    const int n = int(g.prompt_ids.size()), vocab = m.config.vocab_size;
    std::vector<float> logits(size_t(n) * vocab);
    REQUIRE(forward(m, s, g.prompt_ids.data(), n, 0, logits.data(), true) == "");
    double max_diff = 0, max_ref = 0;
    for (int t = 0; t < n; t++)
        for (int v = 0; v < vocab; v++) {
            max_diff = std::max(max_diff, std::fabs(double(logits[size_t(t) * vocab + v]) - g.logits[t][v]));
            max_ref = std::max(max_ref, std::fabs(double(g.logits[t][v])));
        }
    CHECK(max_diff <= 1e-2 * max_ref);
    CHECK(max_diff > 0);  // the weights really were rounded
}

TEST_CASE("forward: a prompt spanning several batches gives the logits of evaluating it token by token") {
    Model m;
    REQUIRE(load_model("models/tiny-shakespeare.hearth", &m) == "");
    const int vocab = m.config.vocab_size;
    std::vector<int> ids = {1};
    for (int i = 0; ids.size() < 150; i++) ids.push_back(3 + (i * 37) % (vocab - 3));  // > 2 batches of 64
    RunState a, b;
    REQUIRE(make_run_state(m.config, 256, &a, kF32Cache) == "");
    REQUIRE(make_run_state(m.config, 256, &b, kF32Cache) == "");
    REQUIRE(a.max_batch < int(ids.size()) / 2);
    std::vector<float> batched(vocab), stepped(vocab);
    REQUIRE(forward(m, a, ids.data(), int(ids.size()), 0, batched.data()) == "");
    for (size_t t = 0; t < ids.size(); t++) REQUIRE(forward(m, b, &ids[t], 1, int(t), stepped.data()) == "");
    double max_diff = 0, max_ref = 0;
    for (int v = 0; v < vocab; v++) {
        max_diff = std::max(max_diff, std::fabs(double(batched[v]) - stepped[v]));
        max_ref = std::max(max_ref, std::fabs(double(stepped[v])));
    }
    CHECK(max_diff <= 1e-4 * max_ref);
}

TEST_CASE("forward_batch: what cannot be evaluated is refused in one line, and nothing is evaluated") {
    Model m;
    REQUIRE(load_model("models/tiny-shakespeare.hearth", &m) == "");
    RunState a, b;
    REQUIRE(make_run_state(m.config, 16, &a, kF32Cache) == "");
    REQUIRE(make_run_state(m.config, 16, &b, kF32Cache) == "");
    std::vector<float> logits(m.config.vocab_size);
    const std::vector<int> ids(16, 5);
    const int bad = m.config.vocab_size;
    auto refusal = [&](std::vector<SequenceChunk> chunks) { return forward_batch(m, a, chunks.data(), int(chunks.size())); };
    CHECK(refusal({}) == "nothing to evaluate");
    CHECK(refusal({{&a, ids.data(), 1, 0, nullptr, false}, {&a, ids.data(), 1, 1, nullptr, false}}) ==
          "one state is given for two sequences");
    CHECK(refusal({{&a, ids.data(), 1, 0, nullptr, false}, {&b, &bad, 1, 0, nullptr, false}}).find("outside the vocabulary") !=
          std::string::npos);
    CHECK(refusal({{&b, ids.data(), 2, 15, nullptr, false}}) == "positions 15..16 exceed the context of 16");
    CHECK(refusal({{&b, ids.data(), 0, 0, nullptr, false}}) == "nothing to evaluate");
    CHECK(refusal({{nullptr, ids.data(), 1, 0, nullptr, false}}) == "a sequence without a state");
    RunState small;  // a work state whose buffers hold fewer tokens than the batch has
    REQUIRE(make_run_state(m.config, 16, &small, kF32Cache) == "");
    small.max_batch = 8;
    const SequenceChunk two[] = {{&a, ids.data(), 5, 0, nullptr, false}, {&b, ids.data(), 5, 0, nullptr, false}};
    CHECK(forward_batch(m, small, two, 2) == "10 tokens in one batch, more than its buffers hold (8)");

    // A state made without activations (the server's slots but one) is evaluated only in
    // another's batches.
    RunState cache_only;
    REQUIRE(make_run_state(m.config, 16, &cache_only, kF32Cache, 0) == "");
    CHECK(cache_only.x.empty());
    CHECK(run_state_bytes(m.config, kF32Cache, 0).fixed < run_state_bytes(m.config, kF32Cache).fixed);
    CHECK(forward(m, cache_only, ids.data(), 1, 0, logits.data()).find("holds a cache only") != std::string::npos);
    const SequenceChunk in_other{&cache_only, ids.data(), 3, 0, logits.data(), false};
    CHECK(forward_batch(m, a, &in_other, 1) == "");
}

TEST_CASE("forward_batch: a generated token gets the logits it gets alone, beside another's and a prompt being read") {
    // A server step evaluates the slots' next tokens and a new request's prompt together. With
    // the prompt, the batch is large enough for the GEMMs, which round otherwise than the
    // few-token rows a token alone runs on; forward_batch evaluates the leading short chunks
    // apart (kernels/table.h, kFewTokenRowsBelow), so that the prompt cannot change the tokens
    // generated beside it. A random one-layer Llama in Q4_0 (interleaved rows; GEMMs from a few
    // tokens on every CPU) whose ffn_down rows (5632 columns, TinyLlama's) are longer than the kernels'
    // partial sums (kernels/x86/avx2_util.h): on shorter ones GEMMs and rows can agree anyway.
    const std::string dir = "build/tests/forward-batch-hf", path = "build/tests/forward-batch-q4_0.hearth";
    REQUIRE(
        run_command("rm -rf " + dir + " && mkdir -p " + dir + " && cp tests/data/parity/mha/tokenizer.model " + dir).exit_code ==
        0);
    const uint64_t vocab = 512, dim = 256, hidden = 5632;
    SafetensorsShapes tensors = one_layer_llama_tensors(vocab, dim, hidden);
    tensors.push_back({"lm_head.weight", {vocab, dim}});
    write_f16_random_safetensors(dir + "/model.safetensors", tensors, 7);
    write_file(dir + "/config.json", nlohmann::json{{"architectures", {"LlamaForCausalLM"}},
                                                    {"hidden_size", dim},
                                                    {"intermediate_size", hidden},
                                                    {"num_hidden_layers", 1},
                                                    {"num_attention_heads", 4},
                                                    {"vocab_size", vocab},
                                                    {"tie_word_embeddings", false},
                                                    {"bos_token_id", 1},
                                                    {"eos_token_id", 2}}
                                         .dump());
    CommandResult q = run_command("./quantize " + dir + " " + path + " q4_0 -q");
    INFO(q.err);
    REQUIRE(q.exit_code == 0);
    Model m;
    REQUIRE(load_model(path, &m) == "");
    // What each token leaves in the residual stream (RunState::x, fp32) after the last layer, and
    // its logits. The logits alone would rarely show a difference: the output matmul quantizes
    // the stream to 8 bits first, which absorbs one in the last bits.
    const int d = m.config.dim;
    const std::vector<int> prompt_a = {1, 40, 41, 42, 43}, prompt_c = {1, 50, 51};
    std::vector<int> prompt_b;
    for (int i = 0; i < 40; i++) prompt_b.push_back(3 + (i * 37) % int(vocab - 3));
    const int next_a = 60, next_c = 61, pa = int(prompt_a.size()), pc = int(prompt_c.size()), nb = int(prompt_b.size());
    std::vector<float> alone_a(vocab), alone_b(vocab), alone_c(vocab), with_a(vocab), with_b(vocab), with_c(vocab);
    std::vector<float> alone_x, with_x;  // rows a, c, then b's nb
    for (bool together : {false, true}) {
        RunState a, b, c;
        REQUIRE(make_run_state(m.config, 128, &a, kF32Cache) == "");
        REQUIRE(make_run_state(m.config, 128, &b, kF32Cache) == "");
        REQUIRE(make_run_state(m.config, 128, &c, kF32Cache) == "");
        std::vector<float> scratch(vocab);
        REQUIRE(forward(m, a, prompt_a.data(), pa, 0, scratch.data()) == "");
        REQUIRE(forward(m, c, prompt_c.data(), pc, 0, scratch.data()) == "");
        if (!together) {
            REQUIRE(forward(m, a, &next_a, 1, pa, alone_a.data()) == "");
            REQUIRE(forward(m, c, &next_c, 1, pc, alone_c.data()) == "");
            REQUIRE(forward(m, b, prompt_b.data(), nb, 0, alone_b.data()) == "");
            alone_x.assign(a.x.begin(), a.x.begin() + d);
            alone_x.insert(alone_x.end(), c.x.begin(), c.x.begin() + d);
            alone_x.insert(alone_x.end(), b.x.begin(), b.x.begin() + size_t(nb) * d);
            continue;
        }
        // As the server orders a step: the generating slots' tokens, then the prompt's chunk.
        const SequenceChunk step[3] = {{&a, &next_a, 1, pa, with_a.data(), false},
                                       {&c, &next_c, 1, pc, with_c.data(), false},
                                       {&b, prompt_b.data(), nb, 0, with_b.data(), false}};
        REQUIRE(forward_batch(m, a, step, 3) == "");
        with_x.assign(a.x.begin(), a.x.begin() + size_t(2 + nb) * d);
    }
    CHECK(std::memcmp(with_x.data(), alone_x.data(), sizeof(float) * 2 * d) == 0);  // the generated tokens'
    CHECK(std::memcmp(with_a.data(), alone_a.data(), sizeof(float) * vocab) == 0);
    CHECK(std::memcmp(with_c.data(), alone_c.data(), sizeof(float) * vocab) == 0);
    // The prompt, read in one chunk either way, gets its bits alone too.
    CHECK(std::memcmp(with_x.data() + 2 * d, alone_x.data() + 2 * d, sizeof(float) * size_t(nb) * d) == 0);
    CHECK(std::memcmp(with_b.data(), alone_b.data(), sizeof(float) * vocab) == 0);
}
