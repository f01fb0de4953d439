#include "cli/bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/table.h"
#include "model/forward.h"

namespace hearth {

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int bench_context(const BenchSpec& spec, int seq) { return spec.depth + std::max({seq == 0 ? spec.n_pp : 0, spec.n_tg, 1}); }

int bench_positions(const BenchSpec& spec) {
    int all = 0;
    for (int q = 0; q < spec.n_seqs; q++) all += bench_context(spec, q);
    return all;
}

std::string bench_model(const Model& m, const BenchSpec& spec, BenchResult* out) {
    const ModelConfig& c = m.config;
    const int n_pp = spec.n_pp, n_tg = spec.n_tg, n_seqs = spec.n_seqs, depth = spec.depth;
    if (n_seqs < 1 || n_seqs > kMaxBatch) return "the number of sequences must be 1 to " + std::to_string(kMaxBatch);
    if (n_pp < 0 || n_tg < 0 || depth < 0 || spec.reps < 1) return "bench sizes must be 0 or more, and reps 1 or more";
    // Sequence 0's state holds the activations of every batch; the others hold a cache only.
    std::vector<RunState> states(n_seqs);
    std::string err = make_run_state(c, bench_context(spec, 0), &states[0], spec.cache_types);
    for (int i = 1; i < n_seqs && err.empty(); i++)
        err = make_run_state(c, bench_context(spec, i), &states[i], spec.cache_types, 0);
    if (!err.empty()) return err;
    RunState& s = states[0];
    std::vector<float> logits(size_t(c.vocab_size) * n_seqs);
    // Fixed pseudo-random ids: the speed does not depend on which tokens they are.
    std::vector<int> tokens(std::max({n_pp, n_tg, depth}) + n_seqs);
    for (size_t i = 0; i < tokens.size(); i++) tokens[i] = int((i * 2654435761u + 17) % uint32_t(c.vocab_size));

    auto now = [] { return std::chrono::steady_clock::now(); };
    auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    // One untimed warm-up pass faults the mapped weights in.
    if (!(err = forward(m, s, tokens.data(), 1, 0, logits.data())).empty()) return err;
    // The depth is evaluated, not left as zeroed memory: reading untouched pages would read the
    // kernel's one zero page from the caches, faster than a real cache comes from memory. The
    // batch is sequence 0's activations, as in the steps below.
    for (int q = 0; q < n_seqs && depth > 0; q++) {
        for (int p = 0; p < depth; p += s.max_batch) {
            SequenceChunk chunk{&states[q], &tokens[p], std::min(s.max_batch, depth - p), p, nullptr, false};
            if (!(err = forward_batch(m, s, &chunk, 1)).empty()) return err;
        }
    }

    std::vector<double> pp, tg;
    std::vector<SequenceChunk> step(n_seqs);
    for (int r = 0; r < spec.reps; r++) {
        if (n_pp > 0) {
            auto t0 = now();
            if (!(err = forward(m, s, tokens.data(), n_pp, depth, logits.data())).empty()) return err;
            pp.push_back(n_pp / secs(t0, now()));
        }
        if (n_tg > 0) {
            auto t0 = now();
            for (int i = 0; i < n_tg; i++) {
                // Each sequence its own token and its own logits, as generating slots have.
                for (int q = 0; q < n_seqs; q++)
                    step[q] = {&states[q], &tokens[i + q], 1, depth + i, &logits[size_t(q) * c.vocab_size], false};
                if (!(err = forward_batch(m, s, step.data(), n_seqs)).empty()) return err;
            }
            tg.push_back(double(n_tg) * n_seqs / secs(t0, now()));
        }
    }
    out->pp_tok_s = pp.empty() ? 0 : median(pp);
    out->tg_tok_s = tg.empty() ? 0 : median(tg);
    out->bytes_per_token = weight_bytes_per_token(m);
    return "";
}

std::string kernel_choices(const Model& m, int n_tokens, bool token_bits) {
    std::string out;
    for (const MatrixKind& k : matmul_kinds(m)) {
        const KernelRow* row = matmul_kernel(k.type, k.layout, n_tokens, token_bits);
        out += (out.empty() ? "" : ", ") + (row ? kernel_row_name(*row) : std::string(type_name(k.type)) + " none");
    }
    return out;
}

}  // namespace hearth
