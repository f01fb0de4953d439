// The kernel table: one row per kernel {operation, type, layout, ISA, from how many tokens,
// function}, and the one function that picks a row. Every choice of a code path (which ISA, plain
// tiles or GEMM, from how many tokens) is a row of kernels/table.cpp; no kernel calls another to
// choose. tests/kernels/test_kernel_table.cpp holds every row to its type's scalar reference.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/quant.h"
#include "kernels/quant_types.h"

namespace hearth {

// The instruction sets of the rows (the macros of kernels/isa.h). avx512_zen4 / avx512_not_zen4:
// AVX-512 on AMD's Zen 4 / on any other CPU; avx512_not_zen: on any CPU but AMD's Zen 4 and Zen 5;
// avx2_zen5: AVX2 code on AMD's Zen 5 only. For the rows whose best choice differs there
// (kernels/table.cpp says which and why).
enum class Isa : uint8_t { scalar, avx2, avx2_zen5, avx512, avx512_not_zen, avx512_not_zen4, avx512_zen4, amx, neon, i8mm };
const char* isa_name(Isa isa);

enum class KernelOp : uint8_t {
    matmul,    // weights of `type` in `layout` x activations of type_vec_dot_type(type)
    quantize,  // fp32 activation rows to `type` (layout rows), the bytes of its reference quantizer
};

struct KernelRow {
    KernelOp op;
    uint32_t type;
    Layout layout;
    Isa isa;
    int min_tokens;            // the row applies from this many tokens on (until a row with more takes over)
    matmul_rows_fn matmul;     // op == matmul; nullptr where this build lacks the ISA
    quantize_row_fn quantize;  // op == quantize; nullptr where this build lacks the ISA
};

// Every row of the table, built in this binary or not (tests and tools/bench_kernels list them).
const KernelRow* kernel_rows(int* n);

// "q4_K x8 avx512-zen4 (from 2)": type, layout (x8 for rows_x8), ISA and from how many tokens.
std::string kernel_row_name(const KernelRow& row);

// Built into this binary, and the running CPU has the row's ISA.
bool kernel_row_available(const KernelRow& row);

// Built, and its code runs on this CPU, whether or not the picker may take it: the rows for AMD
// Zen 4 and for the other AVX-512 CPUs (Isa::avx512_zen4 / avx512_not_zen4 / avx512_not_zen) run
// on any CPU with AVX-512, those for Zen 5 (avx2_zen5) on any with AVX2, where tests and
// tools/bench_kernels run them all.
bool kernel_row_runs_here(const KernelRow& row);

// The row for `op` on (type, layout) and n_tokens tokens: of the available rows, the one with the
// largest min_tokens <= n_tokens; between rows of equal min_tokens, the later in the table (the
// table lists them in order of preference). nullptr when no row applies.
const KernelRow* pick_kernel(KernelOp op, uint32_t type, Layout layout, int n_tokens);
// Below this many tokens the rows the picker takes for the types batch_token_bits names, on
// x86 and AArch64, give each token the bits it gets alone, also when called with more tokens than
// they were picked for (tests/kernels/test_kernel_table.cpp); from here on GEMMs take over, which
// round otherwise. So a batch of several sequences' few tokens each stays on them
// (model/forward.cpp, kernels/matmul.h), and drafts keep one token's ids (model/generate.h).
constexpr int kFewTokenRowsBelow = 16;
// How a batch of generated tokens and drafts (sequences of fewer than kFewTokenRowsBelow tokens
// each, model/forward.cpp) gets each token the bits it gets alone, on every CPU
// (tests/kernels/test_kernel_table.cpp, test_matmul.cpp), by (type, layout):
//  - batch_rows: the rows picked for min(tokens, kFewTokenRowsBelow - 1), as above: Q4_0, Q8_0,
//    Q4_K and Q5_K interleaved, plain Q6_K (a K-quant model's output matrix), f32, f16 and bf16;
//  - one_token_row: the row picked for one token, called with all the tokens: the other quantized
//    types, whose GEMMs start from 2-8 tokens and sum in another order, but whose one-token rows
//    sum each token of several as they sum one.
enum class BatchTokenBits : uint8_t { batch_rows, one_token_row };
BatchTokenBits batch_token_bits(uint32_t type, Layout layout);
// The same choice among the rows built into this binary whose ISA another CPU would have
// (has_isa), whether or not this one has it: the row that CPU would run (tests compare the rows
// of one CPU across token counts).
const KernelRow* pick_kernel_for(KernelOp op, uint32_t type, Layout layout, int n_tokens, bool (*has_isa)(Isa));

}  // namespace hearth
