// Prompt-processing and generation speed, measured as llama-bench does: ppN evaluates N
// random tokens in one batch; tgN generates N tokens one at a time. With n_seqs > 1, tgN
// advances n_seqs sequences together, one token of each per forward_batch call (as the server's
// slots are batched), each with its own KV cache, and counts all their tokens. With depth > 0
// (llama-bench's -d) every sequence's cache first holds depth evaluated positions, and both
// parts start after them: attention then reads that much cache for every token, as a
// conversation's replies do after its prompt.
#pragma once
#include <cstdint>
#include <string>

#include "model/forward.h"
#include "model/model.h"

namespace hearth {

struct BenchResult {
    double pp_tok_s = 0;           // median over the repetitions
    double tg_tok_s = 0;           // median over the repetitions; all sequences' tokens together
    uint64_t bytes_per_token = 0;  // weight bytes one generated token reads
};

struct BenchSpec {
    int n_pp = 512, n_tg = 128;  // either may be 0 to skip that part
    int n_seqs = 1;              // 1 to kMaxBatch
    int depth = 0;               // cached positions before both parts
    int reps = 3;
    KvCacheTypes cache_types;
};

// The positions sequence `seq`'s cache needs for spec: sequence 0 evaluates pp and tg, the
// others tg only.
int bench_context(const BenchSpec& spec, int seq);
// All the sequences' caches together: what the bench allocates, checked before it does.
int bench_positions(const BenchSpec& spec);

// "" on success.
std::string bench_model(const Model& m, const BenchSpec& spec, BenchResult* out);

// The kernel table's rows (kernels/table.h) this CPU runs for the model's matrices at n_tokens
// tokens a pass, e.g. "q4_K x8 avx2 (from 1), q6_K avx512 (from 1)": the choices made at
// start-up from what the CPU is, for --bench and --verbose to show. token_bits: a pass of
// generated tokens, which keep each token's bits (kernels/matmul.h).
std::string kernel_choices(const Model& m, int n_tokens, bool token_bits);

}  // namespace hearth
