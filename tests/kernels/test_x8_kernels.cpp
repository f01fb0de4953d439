// Tests for the matmul kernels of the interleaved layout (Q4_0, Q8_0, Q4_K, Q5_K; kernels/rows_x8.h)
// on every build: x86 AVX2 with and without
// VNNI, aarch64 NEON with and without dotprod (under qemu), so that one layout serves them all.
//  - The scalar twin on the repacked weights equals the plain scalar kernel on the plain weights
//    bit for bit: it gathers each record into plain blocks and then does exactly what the plain
//    kernel does.
//  - This build's kernels (those pick_kernel chooses, kernels/table.h) equal the scalar twin within the float rounding of
//    the dot's terms: the same integer sums per block, float sums in another order.
// With rows of random bytes in every field and rows of extreme quants, extreme activations, row
// counts with a plain tail, row ranges (which must write their rows and nothing else), 1..70
// tokens (one token, tiles and their remainders, chunked passes, the AVX2 GEMMs) and rows of one
// and of several blocks. The AVX-512 and NEON i8mm GEMMs are also called directly (below).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/arm/arm.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/ref/ref.h"
#include "kernels/rows_x8.h"
#include "kernels/table.h"
#include "kernels/x86/x86.h"
#include "tests/kernels/kernel_test_data.h"

using namespace hearth;

namespace {

using kernel_test::Bytes;
using kernel_test::magnitudes;
using kernel_test::random_acts;
using kernel_test::random_weights;
using kernel_test::within_rounding;

struct X8Kernels {
    uint32_t plain;
    matmul_rows_fn plain_scalar, x8_scalar;
};
const X8Kernels kKernels[] = {
    {TYPE_Q4_0, matmul_q4_0_rows_scalar, matmul_q4_0x8_rows_scalar},
    {TYPE_Q8_0, matmul_q8_0_rows_scalar, matmul_q8_0x8_rows_scalar},
    {TYPE_Q4_K, matmul_q4_k_rows_scalar, matmul_q4_kx8_rows_scalar},
    {TYPE_Q5_K, matmul_q5_k_rows_scalar, matmul_q5_kx8_rows_scalar},
};

// The kernel of this build for `type` in `layout` at n_tokens, as matmul picks it.
matmul_rows_fn picked(uint32_t type, Layout layout, int n_tokens) {
    return pick_kernel(KernelOp::matmul, type, layout, n_tokens)->matmul;
}

// The plain scalar kernel of a type: the tail of its scalar twin.
matmul_rows_fn ref_tail(uint32_t type) {
    for (const X8Kernels& k : kKernels)
        if (k.plain == type) return k.plain_scalar;
    return nullptr;
}

constexpr float kSentinel = 12345.f;
using Ranges = std::vector<std::pair<int, int>>;

// out (stride os, n_tokens rows, kSentinel where nothing is written) after kernel k over each range;
// with a `tail` kernel, k takes the whole groups of each range and `tail` the plain rows after them,
// as matmul splits interleaved matrices.
std::vector<float> run(matmul_rows_fn k, const Bytes& w, size_t wrb, const Bytes& a, size_t arb, int cols, int n_tokens, int os,
                       const Ranges& ranges, matmul_rows_fn tail = nullptr) {
    std::vector<float> out(size_t(os) * size_t(n_tokens), kSentinel);
    for (const auto& [r0, r1] : ranges) {
        const int g1 = tail ? r0 + (r1 - r0) / 8 * 8 : r1;
        if (g1 > r0) k(w.data(), wrb, a.data(), arb, cols, n_tokens, out.data(), os, r0, g1);
        if (g1 < r1) tail(w.data(), wrb, a.data(), arb, cols, n_tokens, out.data(), os, g1, r1);
    }
    return out;
}

// A GEMM called directly on each set of row ranges against the scalar twin: the rows in the
// ranges within rounding, every other entry of `out` (os columns per token) left unwritten.
[[maybe_unused]] void check_ranges_against_twin(uint32_t type, matmul_rows_fn fn, matmul_rows_fn twin_fn, const Bytes& x8,
                                                size_t wrb, const Bytes& a, size_t arb, int cols, int n_tokens, int os,
                                                const std::vector<Ranges>& range_sets, const std::vector<double>& mag, int rows,
                                                int nb) {
    for (const Ranges& ranges : range_sets) {
        CAPTURE(ranges.size());
        const std::vector<float> twin = run(twin_fn, x8, wrb, a, arb, cols, n_tokens, os, ranges, ref_tail(type));
        const std::vector<float> got = run(fn, x8, wrb, a, arb, cols, n_tokens, os, ranges, picked(type, Layout::rows, n_tokens));
        int bad = 0, unwritten = 0;
        for (int t = 0; t < n_tokens; t++)
            for (int r = 0; r < os; r++) {
                const size_t i = size_t(t) * os + r;
                bool written = false;
                for (const auto& [r0, r1] : ranges) written |= r >= r0 && r < r1;
                if (!written) {
                    unwritten += got[i] != kSentinel;
                } else if (!within_rounding(got[i], twin[i], mag[size_t(t) * rows + r], nb)) {
                    if (bad < 5) MESSAGE("t=" << t << " r=" << r << " got=" << got[i] << " twin=" << twin[i]);
                    ++bad;
                }
            }
        CHECK(bad == 0);
        CHECK(unwritten == 0);
    }
}

}  // namespace

TEST_CASE("x8 types: every build has kernels for them, its best ones") {
    for (const X8Kernels& k : kKernels) {
        CAPTURE(k.plain);
        CHECK(matmul_supports(k.plain, Layout::rows_x8));
        CHECK(kernel_layout(k.plain) == Layout::rows_x8);
        // One token: this build's best ISA (AVX2, else NEON, else the scalar twin), or AVX-512 where
        // the table has a one-token AVX-512 row for the type (Q4_0, Q8_0, Q4_K, Q5_K) and the CPU has
        // AVX-512 and is not an AMD Zen 4 or Zen 5, or on a Zen 5 its own AVX2 row where the type has
        // one (Q4_0) (kernels/table.cpp).
        const KernelRow* one = pick_kernel(KernelOp::matmul, k.plain, Layout::rows_x8, 1);
        REQUIRE(one);
        Isa best = std::string(HEARTH_ISA_NAME).rfind("avx2", 0) == 0   ? Isa::avx2
                   : std::string(HEARTH_ISA_NAME).rfind("neon", 0) == 0 ? Isa::neon
                                                                        : Isa::scalar;
        int n_rows = 0;
        const KernelRow* rows = kernel_rows(&n_rows);
        for (int i = 0; i < n_rows; i++)
            if (rows[i].op == KernelOp::matmul && rows[i].type == k.plain && rows[i].layout == Layout::rows_x8 &&
                (rows[i].isa == Isa::avx512_not_zen || rows[i].isa == Isa::avx2_zen5) && rows[i].min_tokens == 1 &&
                kernel_row_available(rows[i]))
                best = rows[i].isa;
        CHECK(one->isa == best);
    }
    CHECK(kernel_layout(TYPE_Q6_K) == Layout::rows);  // q6_k stays plain (docs/format.md says why)
    CHECK(!matmul_supports(TYPE_Q6_K, Layout::rows_x8));
}

TEST_CASE("x8 matmul: the scalar twin equals the plain scalar kernel bit for bit, this build's kernel the twin within rounding") {
    for (const X8Kernels& k : kKernels) {
        const int block = type_block_size(k.plain);
        for (int rows : {8, 13, 37, 69}) {
            // Rows of one block, of a few, and of more than one chunk of the NEON kernels.
            for (int nb : {1, 9, block == QK_K ? 11 : 64}) {
                const int cols = nb * block;
                CAPTURE(k.plain);
                CAPTURE(rows);
                CAPTURE(cols);
                const Bytes plain = random_weights(k.plain, rows, cols, uint32_t(7 * rows + cols));
                Bytes x8(plain.size());
                repack_rows_to_x8(k.plain, plain.data(), x8.data(), rows, cols);
                const size_t wrb = type_row_bytes(k.plain, cols), arb = type_row_bytes(type_vec_dot_type(k.plain), cols);
                // The whole matrix; then, into a fresh output, [8, 16) (a group) and [24, rows)
                // (groups and the tail), which leave rows 0..7 and 16..23 alone; for 13 rows,
                // [8, 13): the tail alone.
                std::vector<Ranges> range_sets = {{{0, rows}}};
                if (rows > 8) range_sets.push_back(rows <= 16 ? Ranges{{8, rows}} : Ranges{{8, 16}, {24, rows}});
                for (int n_tokens : {1, 2, 3, 4, 5, 7, 8, 9, 17, 31, 32, 70}) {
                    if (n_tokens > 9 && rows > 37) continue;  // the big ones only on smaller matrices: qemu
                    CAPTURE(n_tokens);
                    const Bytes a = random_acts(k.plain, n_tokens, cols, uint32_t(100 + n_tokens + cols));
                    const int os = rows + 3;  // columns past the last row must stay untouched too
                    const std::vector<double> mag = magnitudes(k.plain, plain, a, rows, cols, n_tokens);
                    for (const Ranges& ranges : range_sets) {
                        CAPTURE(ranges.size());
                        const std::vector<float> ref = run(k.plain_scalar, plain, wrb, a, arb, cols, n_tokens, os, ranges);
                        const std::vector<float> twin =
                            run(k.x8_scalar, x8, wrb, a, arb, cols, n_tokens, os, ranges, k.plain_scalar);
                        const std::vector<float> got = run(picked(k.plain, Layout::rows_x8, n_tokens), x8, wrb, a, arb, cols,
                                                           n_tokens, os, ranges, picked(k.plain, Layout::rows, n_tokens));
                        CHECK(std::memcmp(ref.data(), twin.data(), ref.size() * sizeof(float)) == 0);
                        int bad = 0, unwritten = 0;
                        for (int t = 0; t < n_tokens; t++)
                            for (int r = 0; r < os; r++) {
                                const size_t i = size_t(t) * os + r;
                                bool written = false;
                                for (const auto& [r0, r1] : ranges) written |= r >= r0 && r < r1;
                                if (!written) {
                                    unwritten += ref[i] != kSentinel || got[i] != kSentinel;
                                } else if (!within_rounding(got[i], twin[i], mag[size_t(t) * rows + r], nb)) {
                                    if (bad < 5) MESSAGE("t=" << t << " r=" << r << " got=" << got[i] << " twin=" << twin[i]);
                                    ++bad;
                                }
                            }
                        CHECK(bad == 0);
                        CHECK(unwritten == 0);
                    }
                }
            }
        }
    }
}

// Through matmul_many, as run calls them: the rows split across threads, single-token work cut
// into pieces (1029 rows: 2 or 3 pieces, a tail of 5), the AVX2 GEMMs from their token counts on.
TEST_CASE("x8 matmul: matmul_many on the interleaved types equals the plain scalar kernel within rounding") {
    for (const X8Kernels& k : kKernels) {
        for (int rows : {37, 1029}) {
            const int cols = 1024, nb = cols / type_block_size(k.plain);
            CAPTURE(k.plain);
            CAPTURE(rows);
            const Bytes plain = random_weights(k.plain, rows, cols, uint32_t(rows + k.plain));
            Bytes x8(plain.size());
            repack_rows_to_x8(k.plain, plain.data(), x8.data(), rows, cols);
            const size_t wrb = type_row_bytes(k.plain, cols), arb = type_row_bytes(type_vec_dot_type(k.plain), cols);
            for (int n_tokens : {1, 2, 7, 70}) {
                if (rows > 37 && n_tokens > 2) continue;
                CAPTURE(n_tokens);
                std::mt19937 rng{uint32_t(n_tokens)};
                std::normal_distribution<float> nd;
                std::vector<float> x(size_t(n_tokens) * cols);
                for (float& v : x) v = nd(rng);
                // matmul_many quantizes x itself, to the bytes the scalar quantizers give.
                Bytes a(arb * size_t(n_tokens));
                for (int t = 0; t < n_tokens; t++)
                    (type_vec_dot_type(k.plain) == TYPE_Q8_K ? quantize_row_q8_k_scalar : quantize_row_q8_0_scalar)(
                        &x[size_t(t) * cols], &a[t * arb], cols);
                std::vector<float> ref(size_t(n_tokens) * rows), got(ref.size(), NAN);
                k.plain_scalar(plain.data(), wrb, a.data(), arb, cols, n_tokens, ref.data(), rows, 0, rows);
                const MatmulJob job{got.data(), k.plain, Layout::rows_x8, x8.data(), rows};
                matmul_many(&job, 1, cols, x.data(), n_tokens);
                const std::vector<double> mag = magnitudes(k.plain, plain, a, rows, cols, n_tokens);
                int bad = 0;
                for (size_t i = 0; i < ref.size(); i++) bad += !within_rounding(got[i], ref[i], mag[i], nb);
                CHECK(bad == 0);
            }
        }
    }
}

#if defined(HEARTH_ISA_AVX512)
// The zmm GEMM tiles (kernels/x86/gemm_avx512.cpp) called directly, below their token threshold too:
// 16-row panels and an odd last group paired with itself, K chunks (32 blocks) and their tails,
// tiles of 8 tokens and every remainder, token blocks of 128 and past them, row ranges that start
// at a group after the first; against the scalar twin within the rounding of the float sums
// (tests/kernels/test_gemm_kernels.cpp's bound: the integer block sums are exact). The AMX tile
// GEMMs (kernels/x86/gemm_amx.cpp: tiles of 16 tokens, Q4_K chunks of 2 super-blocks) the same
// way, where the CPU has AMX and the OS grants the tiles.
TEST_CASE("x8 GEMM (AVX-512 VNNI zmm, and AMX tiles) equals the scalar twin within rounding: tokens, groups, blocks, ranges") {
    struct ZmmCase {
        uint32_t plain;
        matmul_rows_fn zmm, twin;
    };
    std::vector<ZmmCase> cases = {{TYPE_Q4_0, matmul_q4_0x8_gemm_avx512, matmul_q4_0x8_rows_scalar},
                                  {TYPE_Q8_0, matmul_q8_0x8_gemm_avx512, matmul_q8_0x8_rows_scalar},
                                  {TYPE_Q4_K, matmul_q4_kx8_gemm_avx512, matmul_q4_kx8_rows_scalar},
                                  {TYPE_Q5_K, matmul_q5_kx8_gemm_avx512, matmul_q5_kx8_rows_scalar}};
#if defined(HEARTH_ISA_AMX)
    bool amx = false;  // one check decides for all the AMX rows (kernels/table.cpp)
    int n_rows = 0;
    const KernelRow* rows = kernel_rows(&n_rows);
    for (int i = 0; i < n_rows; i++)
        if (rows[i].isa == Isa::amx) amx = kernel_row_available(rows[i]);
    if (amx) {
        cases.push_back({TYPE_Q4_0, matmul_q4_0x8_gemm_amx, matmul_q4_0x8_rows_scalar});
        cases.push_back({TYPE_Q8_0, matmul_q8_0x8_gemm_amx, matmul_q8_0x8_rows_scalar});
        cases.push_back({TYPE_Q4_K, matmul_q4_kx8_gemm_amx, matmul_q4_kx8_rows_scalar});
    } else {
        MESSAGE("x8 GEMM (AMX): not tested (the CPU lacks AMX, or the OS refused the tiles, or HEARTH_NO_AMX is set)");
    }
#else
    MESSAGE("x8 GEMM (AMX): not tested (this build lacks AMX)");
#endif
    for (const ZmmCase& zc : cases) {
        const bool k_type = type_block_size(zc.plain) == QK_K;  // chunks of 4 super-blocks, else of 32 blocks
        for (int nb : k_type ? std::vector<int>{1, 3, 4, 5, 11} : std::vector<int>{1, 3, 32, 33, 70}) {
            const int cols = nb * type_block_size(zc.plain);
            for (int groups : {1, 2, 3, 5}) {
                const int rows = 8 * groups + 5;  // a plain tail the GEMM must leave alone
                const Bytes plain = random_weights(zc.plain, rows, cols, uint32_t(31 * nb + groups));
                Bytes x8(plain.size());
                repack_rows_to_x8(zc.plain, plain.data(), x8.data(), rows, cols);
                const size_t wrb = type_row_bytes(zc.plain, cols), arb = type_row_bytes(type_vec_dot_type(zc.plain), cols);
                std::vector<Ranges> range_sets = {{{0, 8 * groups}}};
                if (groups > 1) range_sets.push_back({{8, 8 * groups}});
                if (groups > 2) range_sets.push_back({{0, 8}, {16, 8 * groups}});
                for (int n_tokens : {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 130}) {
                    if (n_tokens > 17 && nb > (k_type ? 4 : 33) && groups > 2) continue;  // keep the run short
                    CAPTURE(zc.plain);
                    CAPTURE(nb);
                    CAPTURE(groups);
                    CAPTURE(n_tokens);
                    const Bytes a = random_acts(zc.plain, n_tokens, cols, uint32_t(500 + n_tokens + cols));
                    const int os = rows + 3;
                    const std::vector<double> mag = magnitudes(zc.plain, plain, a, rows, cols, n_tokens);
                    check_ranges_against_twin(zc.plain, zc.zmm, zc.twin, x8, wrb, a, arb, cols, n_tokens, os, range_sets, mag,
                                              rows, nb);
                }
            }
        }
    }
}
#endif

#if defined(HEARTH_ISA_AVX512)
// The few-token kernels (kernels/x86/gemv_avx512.cpp, gemv_q4_k_avx512.cpp) called directly, for
// every token count they are picked at (1..31) and past it: blocks of 8 tokens and every
// remainder (Q4_K: one pass over each chunk up to 4 tokens, two from 5), 16-row pairs and an odd
// last group paired with itself, column chunks (64 or 128 blocks by the L1's size, 8 Q4_K
// super-blocks) and their tails,
// row ranges that start at a group after the first; against the scalar twin within rounding.
TEST_CASE("x8 few-token (AVX-512 VNNI, zmm) equals the scalar twin within rounding: tokens 1..33, groups, blocks, ranges") {
    struct FewCase {
        uint32_t plain;
        matmul_rows_fn few, twin;
    };
    // Each kernel prefetching into L1 and into L2 (the AMD Zen 4 rows): the same code otherwise.
    const FewCase cases[] = {{TYPE_Q4_K, matmul_q4_kx8_few_avx512, matmul_q4_kx8_rows_scalar},
                             {TYPE_Q4_0, matmul_q4_0x8_few_avx512, matmul_q4_0x8_rows_scalar},
                             {TYPE_Q8_0, matmul_q8_0x8_few_avx512, matmul_q8_0x8_rows_scalar},
                             {TYPE_Q4_K, matmul_q4_kx8_few_l2_avx512, matmul_q4_kx8_rows_scalar},
                             {TYPE_Q4_0, matmul_q4_0x8_few_l2_avx512, matmul_q4_0x8_rows_scalar},
                             {TYPE_Q8_0, matmul_q8_0x8_few_l2_avx512, matmul_q8_0x8_rows_scalar},
                             {TYPE_Q5_K, matmul_q5_kx8_few_avx512, matmul_q5_kx8_rows_scalar},
                             {TYPE_Q5_K, matmul_q5_kx8_few_l2_avx512, matmul_q5_kx8_rows_scalar}};
    for (const FewCase& fc : cases) {
        const bool k_type = type_block_size(fc.plain) == QK_K;
        for (int nb : k_type ? std::vector<int>{1, 3, 8, 9, 19} : std::vector<int>{1, 3, 64, 65, 129}) {
            const int cols = nb * type_block_size(fc.plain);
            for (int groups : {1, 2, 3, 5}) {
                const int rows = 8 * groups + 5;  // a plain tail the kernel must leave alone
                const Bytes plain = random_weights(fc.plain, rows, cols, uint32_t(37 * nb + groups));
                Bytes x8(plain.size());
                repack_rows_to_x8(fc.plain, plain.data(), x8.data(), rows, cols);
                const size_t wrb = type_row_bytes(fc.plain, cols), arb = type_row_bytes(type_vec_dot_type(fc.plain), cols);
                std::vector<Ranges> range_sets = {{{0, 8 * groups}}};
                if (groups > 1) range_sets.push_back({{8, 8 * groups}});
                if (groups > 2) range_sets.push_back({{0, 8}, {16, 8 * groups}});
                for (int n_tokens = 1; n_tokens <= 33; n_tokens++) {
                    if (n_tokens > 9 && n_tokens % 4 != 1 && (groups > 2 || nb > 9)) continue;  // keep the run short
                    CAPTURE(fc.plain);
                    CAPTURE(nb);
                    CAPTURE(groups);
                    CAPTURE(n_tokens);
                    const Bytes a = random_acts(fc.plain, n_tokens, cols, uint32_t(900 + n_tokens + cols));
                    const int os = rows + 3;
                    const std::vector<double> mag = magnitudes(fc.plain, plain, a, rows, cols, n_tokens);
                    check_ranges_against_twin(fc.plain, fc.few, fc.twin, x8, wrb, a, arb, cols, n_tokens, os, range_sets, mag,
                                              rows, nb);
                }
            }
        }
    }
}
#endif

#if defined(HEARTH_ISA_NEON) && defined(HEARTH_ISA_I8MM)
// The i8mm (SMMLA) GEMM tiles (kernels/arm/gemm_neon_i8mm.cpp) called directly, below their token
// threshold too: every token count 1..20 (tiles of 4 and every remainder, the last token repeated)
// and a few past them, 1 to 3 groups with and without a plain tail, panels (32 blocks, 4 Q4_K
// super-blocks) and their tails, row ranges that start at a group after the first; against the scalar twin within the
// rounding of the float sums (the integer block sums are exact).
TEST_CASE("x8 GEMM (NEON i8mm, SMMLA) equals the scalar twin within rounding: tokens, groups, blocks, ranges") {
    struct I8mmCase {
        uint32_t plain;
        matmul_rows_fn gemm, twin;
    };
    const I8mmCase cases[] = {{TYPE_Q4_0, matmul_q4_0x8_gemm_i8mm, matmul_q4_0x8_rows_scalar},
                              {TYPE_Q8_0, matmul_q8_0x8_gemm_i8mm, matmul_q8_0x8_rows_scalar},
                              {TYPE_Q4_K, matmul_q4_kx8_gemm_i8mm, matmul_q4_kx8_rows_scalar}};
    // Tiles of 4 tokens (2 pairs): every remainder with one, two and more tiles before it; fewer
    // counts than 1..20, since this suite runs under qemu.
    const std::vector<int> token_counts = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 19, 20, 31, 33, 70};
    for (const I8mmCase& ic : cases) {
        const bool k_type = ic.plain == TYPE_Q4_K;  // panels of 4 super-blocks, else of 32 blocks
        for (int nb : k_type ? std::vector<int>{1, 3, 4, 5, 9} : std::vector<int>{1, 3, 32, 33, 70}) {
            const int cols = nb * type_block_size(ic.plain);
            for (int groups : {1, 2, 3}) {
                for (int tail : {0, 5}) {
                    const int rows = 8 * groups + tail;
                    const Bytes plain = random_weights(ic.plain, rows, cols, uint32_t(31 * nb + 7 * groups + tail));
                    Bytes x8(plain.size());
                    repack_rows_to_x8(ic.plain, plain.data(), x8.data(), rows, cols);
                    const size_t wrb = type_row_bytes(ic.plain, cols), arb = type_row_bytes(type_vec_dot_type(ic.plain), cols);
                    std::vector<Ranges> range_sets = {{{0, rows}}};
                    if (groups > 1) range_sets.push_back({{8, rows}});
                    if (groups > 2) range_sets.push_back({{0, 8}, {16, rows}});
                    for (int n_tokens : token_counts) {
                        if (n_tokens > 20 && (nb > (k_type ? 4 : 33) || groups > 2)) continue;  // keep the qemu run short
                        CAPTURE(ic.plain);
                        CAPTURE(nb);
                        CAPTURE(rows);
                        CAPTURE(n_tokens);
                        const Bytes a = random_acts(ic.plain, n_tokens, cols, uint32_t(700 + n_tokens + cols));
                        const int os = rows + 3;
                        const std::vector<double> mag = magnitudes(ic.plain, plain, a, rows, cols, n_tokens);
                        check_ranges_against_twin(ic.plain, ic.gemm, ic.twin, x8, wrb, a, arb, cols, n_tokens, os, range_sets,
                                                  mag, rows, nb);
                    }
                }
            }
        }
    }
}
#endif
