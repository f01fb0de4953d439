// The KV cache types (-ctk / -ctv): the perplexity they cost against hearth's own f32 cache
// (which the parity tests tie to PyTorch), their memory, and the refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <omp.h>
#include <unistd.h>

#include "kernels/attention.h"
#include "model/forward.h"
#include "model/model.h"
#include "tests/test_helpers.h"

using namespace hearth;

namespace {

// ./run --perplexity's figure, or -1 when it printed none.
double run_perplexity(const std::string& args) {
    CommandResult r = run_command("./run models/tiny-shakespeare.hearth " + args + " -t 2");
    INFO(r.err);
    double ppl = -1;
    if (r.exit_code != 0 || std::sscanf(r.out.c_str(), "perplexity: %lf", &ppl) != 1) return -1;
    return ppl;
}

long resident_bytes() {
    long pages = 0, resident = 0;
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    std::fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace

TEST_CASE("kv cache: f16 keeps the default model's perplexity within 0.1% of f32, q8_0 within 0.5%") {
    // The first 40 KB of the held-out text: 72 windows of the model's 256 positions. Under the
    // sanitizers (make test's second run, HEARTH_BIN_DIR set) the first 5000 bytes, 8 windows:
    // every window takes the same path through run, so 72 of them under ASan (50 s of the
    // run) check no more than 8 do; the normal run checks the figures on all 72.
    const char* bin_dir = std::getenv("HEARTH_BIN_DIR");
    const bool sanitized = bin_dir && *bin_dir;
    const std::string part = sanitized ? "build/tests/tinyshakespeare-valid-5k.txt" : "build/tests/tinyshakespeare-valid-40k.txt";
    std::ofstream(part) << read_text("tests/data/tinyshakespeare-valid.txt").substr(0, sanitized ? 5000 : 40000);
    const std::string args = "--perplexity " + part + " -c 256";
    const double f32 = run_perplexity(args + " -ctk f32 -ctv f32");
    const double f16 = run_perplexity(args);  // the default
    const double q8_0 = run_perplexity(args + " --cache-type-k q8_0 --cache-type-v q8_0");
    INFO("perplexity with an f32 cache " << f32 << ", f16 " << f16 << ", q8_0 " << q8_0);
    REQUIRE(f32 > 1);
    CHECK(std::fabs(f16 / f32 - 1) <= 0.001);
    CHECK(std::fabs(q8_0 / f32 - 1) <= 0.005);
}

TEST_CASE("kv cache: run_state_bytes counts each type's bytes, and positions not reached cost no memory") {
    Model m;
    REQUIRE(load_model("models/tiny-shakespeare.hearth", &m) == "");
    const ModelConfig& c = m.config;
    const uint64_t kv_dim = uint64_t(c.n_kv_heads) * c.head_dim, layers = c.n_layers;
    const RunStateBytes f32 = run_state_bytes(c, {TYPE_F32, TYPE_F32}), f16 = run_state_bytes(c, {TYPE_F16, TYPE_F16});
    const RunStateBytes q8k = run_state_bytes(c, {TYPE_Q8_0, TYPE_F32});
    // The cache rounds n_ctx up to whole key tiles: up to kAttnKeyTile - 1 positions more, in fixed.
    CHECK(f32.fixed - f16.fixed == (kAttnKeyTile - 1) * layers * 2 * kv_dim * 2);
    CHECK(f32.per_position - f16.per_position == layers * 2 * kv_dim * 2);                   // 4 bytes -> 2, keys and values
    CHECK(f32.per_position - q8k.per_position == layers * (kv_dim * 4 - kv_dim / 32 * 34));  // keys only
    CHECK(run_state_bytes(c).per_position == f16.per_position);                              // f16 is the default

    // A context of 2^17 positions (256 MiB of f16 cache here) used for 100 tokens.
    const int n_ctx = 1 << 17;
    const long before = resident_bytes();
    RunState s;
    REQUIRE(make_run_state(c, n_ctx, &s) == "");
    std::vector<int> ids(100);
    for (size_t i = 0; i < ids.size(); i++) ids[i] = int(1 + i * 7 % (c.vocab_size - 1));
    std::vector<float> logits(c.vocab_size);
    REQUIRE(forward(m, s, ids.data(), int(ids.size()), 0, logits.data()) == "");
    const long grew = resident_bytes() - before;
    INFO("resident memory grew by " << (grew >> 20) << " MiB for a state of " << (f16.total(n_ctx) >> 20) << " MiB");
    REQUIRE(before > 0);
    CHECK(uint64_t(grew) < f16.total(n_ctx) / 8);
}

TEST_CASE("kv cache: types are named as llama.cpp names them, and q8_0 needs head dims in blocks of 32") {
    TensorType t = TYPE_F32;
    CHECK(kv_cache_type_from_name("q8_0", &t) == "");
    CHECK(t == TYPE_Q8_0);
    CHECK(kv_cache_type_from_name("f16", &t) == "");
    CHECK(t == TYPE_F16);
    CHECK(kv_cache_type_from_name("q4_0", &t) == "'q4_0' is not a KV cache type: f32, f16 or q8_0");
    CHECK(kv_cache_type_from_name("F16", &t) != "");

    Model m;
    REQUIRE(load_model("models/tiny-shakespeare.hearth", &m) == "");
    ModelConfig c = m.config;
    c.head_dim = 48;
    RunState s;
    const std::string err = make_run_state(c, 16, &s, {TYPE_F16, TYPE_Q8_0});
    CHECK(err == "a q8_0 value cache needs a head dimension that is a multiple of 32, and this model's is 48: use f16 or f32");
    CHECK(make_run_state(c, 16, &s, {TYPE_F32, TYPE_F16}) == "");

    // Through ./run: a model with head dim 8, refused in one line before anything is evaluated.
    const std::string out = "build/tests/kv-cache-gqa.hearth";
    REQUIRE(run_command("./quantize tests/data/parity/gqa " + out + " -q").exit_code == 0);
    CommandResult r = run_command("./run " + out + " -p hi -n 4 -ctk q8_0");
    CHECK(r.exit_code == 1);
    CHECK(r.out == "");
    CHECK(r.err ==
          "run: a q8_0 key cache needs a head dimension that is a multiple of 32, and this model's is 8: use f16 or f32\n");
    r = run_command("./run " + out + " -p hi -n 4 -ctk f32 -ctv q4_0");
    CHECK(r.exit_code == 1);
    CHECK(r.err == "run: --cache-type-v: 'q4_0' is not a KV cache type: f32, f16 or q8_0\n");
    // The bench says which cache it measured.
    r = run_command(
        "./run models/tiny-shakespeare.hearth --bench --bench-pp 8 --bench-tg 4 --bench-reps 1 -ctk q8_0 -ctv f32 -t 1");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("KV cache q8_0/f32") != std::string::npos);
}

TEST_CASE("kv cache: generation's logits do not depend on the number of threads, for any cache type") {
    // Token by token, as generation evaluates: there the matmuls give the same bits for any
    // number of threads (a prompt's multi-token matmuls do not), and so must attention,
    // however it splits a group's query rows among the threads.
    Model m;
    REQUIRE(load_model("models/tiny-shakespeare.hearth", &m) == "");
    const int vocab = m.config.vocab_size, n = 40;
    std::vector<int> ids(n);
    for (int i = 0; i < n; i++) ids[i] = 1 + (i * 37) % (vocab - 1);
    const int saved = omp_get_max_threads();
    for (TensorType t : {TYPE_F32, TYPE_F16, TYPE_Q8_0}) {
        std::vector<float> first;
        for (int threads : {1, 2, 5, 9}) {
            omp_set_num_threads(threads);
            RunState s;
            REQUIRE(make_run_state(m.config, 64, &s, {t, t}) == "");
            std::vector<float> logits(size_t(n) * vocab);
            for (int p = 0; p < n; p++) REQUIRE(forward(m, s, &ids[p], 1, p, &logits[size_t(p) * vocab]) == "");
            if (first.empty()) first = logits;
            INFO(std::string(type_name(t)) << " cache, " << threads << " threads");
            CHECK(std::memcmp(logits.data(), first.data(), sizeof(float) * logits.size()) == 0);
        }
    }
    omp_set_num_threads(saved);
}
