// libFuzzer target: a model file (GGUF or hearth) loaded as run loads it (mapped from a file,
// parsed, bound, its matrices repacked for this CPU's kernels), then evaluated: a 3-token prompt
// (the batched kernels), one more token (the one-token kernels), and a step of two sequences
// together (forward_batch, as the server's slots), into a cache of a few positions. The other
// model targets stop at binding; this one holds the kernels and the forward pass to whatever
// shapes, types and values a file that binds can give them: odd row counts, dims that are no
// multiple of the interleaving or the vector width, heads of any size, NaN scales.
//
// The file's last two bytes (tensor data, which the fuzzer changes without breaking the parse)
// choose the KV cache's key and value types and the number of threads, so that every cache type
// and both the one- and two-thread splits of the rows are reached.
#include <omp.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/model.h"
#include "tests/fuzz/fuzz_report.h"

using namespace hearth;

namespace {

// The input as a file (load_model maps a path, as run does), one name per process; it is
// removed once mapped, so that none is left behind (the replay's children end with _exit).
std::string scratch_path() { return "/tmp/hearth-fuzz-forward-" + std::to_string(getpid()); }

bool write_scratch(const uint8_t* data, size_t size) {
    FILE* f = std::fopen(scratch_path().c_str(), "wb");
    if (!f) return false;
    const bool ok = std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2 || !write_scratch(data, size)) return 0;
    Model m;
    std::string err = load_model(scratch_path(), &m);
    unlink(scratch_path().c_str());
    fuzz::report("load", err);
    if (!err.empty()) return 0;

    const TensorType kCacheTypes[] = {TYPE_F16, TYPE_F32, TYPE_Q8_0};
    const uint8_t a = data[size - 1], b = data[size - 2];
    KvCacheTypes cache;
    cache.k = kCacheTypes[a % 3];
    cache.v = kCacheTypes[(a / 3) % 3];
    if (!check_kv_cache_types(m.config, cache).empty()) cache = KvCacheTypes{};
    omp_set_num_threads(1 + b % 2);

    const int vocab = m.config.vocab_size;
    const int n_ctx = m.config.max_seq_len < 8 ? m.config.max_seq_len : 8;
    RunState s, s2;
    err = make_run_state(m.config, n_ctx, &s, cache);
    if (err.empty()) err = make_run_state(m.config, n_ctx, &s2, cache, 0);
    fuzz::report("run state", err);
    if (!err.empty()) return 0;

    std::vector<float> logits(size_t(vocab) * 2);
    const int tokens[4] = {0, 1 % vocab, (vocab - 1) % vocab, (vocab / 2) % vocab};
    int pos = n_ctx < 3 ? n_ctx - 1 : 3;  // positions of s filled; one is left for the batch
    err = forward(m, s, tokens, pos, 0, logits.data());
    fuzz::report("prompt", err.empty() ? check_logits(logits.data(), size_t(vocab)) : err);
    if (err.empty() && pos + 2 <= n_ctx) {
        err = forward(m, s, tokens + 3, 1, pos, logits.data());
        fuzz::report("token", err.empty() ? check_logits(logits.data(), size_t(vocab)) : err);
        pos += err.empty() ? 1 : 0;
    }
    SequenceChunk seqs[2];
    seqs[0].state = &s2;
    seqs[0].tokens = tokens;
    seqs[0].n = n_ctx < 2 ? n_ctx : 2;
    seqs[0].logits = logits.data();
    seqs[1].state = &s;
    seqs[1].tokens = tokens + 1;
    seqs[1].n = 1;
    seqs[1].pos = pos;
    seqs[1].logits = logits.data() + vocab;
    err = forward_batch(m, s, seqs, 2);
    fuzz::report("batch", err);
    return 0;
}
