// Tests for kernels/ref/dequant_gguf.cpp: hearth's dequantizers of the GGUF-only types against gguf-py's
// numpy dequantizers on random valid blocks (tests/data/dequant_goldens.bin, made by
// tests/reference/make_dequant_goldens.py). Both compute each value with the same fp32
// operations in the same order, so the results must be bitwise equal.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/quant_types.h"

using namespace hearth;

namespace {

struct GoldenRecord {
    uint32_t type, block_size, block_bytes, n_blocks;
    std::vector<uint8_t> blocks;
    std::vector<float> values;
};

// The file's layout is in make_dequant_goldens.py; little-endian, as are x86-64 and aarch64.
std::vector<GoldenRecord> read_goldens(const char* path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "cannot open ", path, " (run the tests from the repository root)");
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t pos = 0;
    auto take = [&](void* dst, size_t n) {
        REQUIRE(pos + n <= data.size());
        std::memcpy(dst, data.data() + pos, n);
        pos += n;
    };
    auto u32 = [&] {
        uint32_t v;
        take(&v, 4);
        return v;
    };
    char magic[4];
    take(magic, 4);
    REQUIRE(std::string(magic, 4) == "HDQG");
    REQUIRE(u32() == 1);
    std::vector<GoldenRecord> recs(u32());
    for (GoldenRecord& r : recs) {
        r.type = u32();
        r.block_size = u32();
        r.block_bytes = u32();
        r.n_blocks = u32();
        r.blocks.resize(size_t(r.n_blocks) * r.block_bytes);
        r.values.resize(size_t(r.n_blocks) * r.block_size);
        take(r.blocks.data(), r.blocks.size());
        take(r.values.data(), r.values.size() * sizeof(float));
    }
    REQUIRE(pos == data.size());
    return recs;
}

}  // namespace

TEST_CASE("dequant_gguf: bitwise equal to gguf-py's dequantizers") {
    const std::vector<GoldenRecord> recs = read_goldens("tests/data/dequant_goldens.bin");
    std::set<uint32_t> seen;
    for (const GoldenRecord& r : recs) {
        CAPTURE(type_name(r.type));
        seen.insert(r.type);
        // gguf-py's sizes agree with hearth's table.
        REQUIRE(int(r.block_size) == type_block_size(r.type));
        REQUIRE(size_t(r.block_bytes) == type_block_bytes(r.type));
        const dequantize_row_fn dequant = type_is_known(r.type) ? type_traits(r.type)->dequantize : nullptr;
        REQUIRE(bool(dequant));

        // All blocks as one row, with sentinels after it to catch writes past n.
        const int64_t n = int64_t(r.values.size());
        std::vector<float> y(size_t(n) + 8, -12345.f);
        dequant(r.blocks.data(), y.data(), n);
        int mismatches = 0;
        for (int64_t i = 0; i < n; ++i) {
            uint32_t got, want;
            std::memcpy(&got, &y[size_t(i)], 4);
            std::memcpy(&want, &r.values[size_t(i)], 4);
            if (got != want && mismatches++ < 5)
                FAIL_CHECK("element ", i, " (block ", i / r.block_size, "): got ", y[size_t(i)], ", gguf-py ",
                           r.values[size_t(i)]);
        }
        CHECK(mismatches == 0);
        for (size_t i = size_t(n); i < y.size(); ++i) CHECK(y[i] == -12345.f);

        // One block at a time from an address that is 2-byte aligned and no more (kernels/quant.h).
        std::vector<uint8_t> shifted(r.block_bytes + 2);
        std::vector<float> yb(r.block_size);
        for (uint32_t b = 0; b < r.n_blocks; ++b) {
            std::memcpy(shifted.data() + 2, r.blocks.data() + size_t(b) * r.block_bytes, r.block_bytes);
            dequant(shifted.data() + 2, yb.data(), r.block_size);
            CHECK(std::memcmp(yb.data(), r.values.data() + size_t(b) * r.block_size, r.block_size * sizeof(float)) == 0);
        }
    }
    CHECK(seen == std::set<uint32_t>{TYPE_Q4_1, TYPE_Q5_0, TYPE_Q5_1, TYPE_Q2_K, TYPE_Q3_K, TYPE_Q5_K, TYPE_IQ4_NL, TYPE_IQ4_XS});
}

TEST_CASE("dequant_gguf: every type hearth reads has a dequantizer, and no other") {
    // quantize converts from any of them (f32 output, or another type), and the embedding is
    // looked up row by row through it.
    for (const TypeTraits& t : kTypeTraits) {
        CAPTURE(t.name);
        CHECK(bool(t.dequantize) == (t.use != USE_NONE));
        CHECK(dequantize_supports(t.id) == (t.use != USE_NONE));
    }
    CHECK(dequantize_supports(TYPE_Q2_K));
    CHECK_FALSE(dequantize_supports(16));  // iq2_xxs: known to GGUF, not read
    CHECK_FALSE(dequantize_supports(12345));
}
