// A libFuzzer custom mutator for the JSON targets: besides libFuzzer's own mutations, one time in
// eight it wraps a JSON value of the input in many more arrays.
//
// Why: issue 20's crash is a value nested ~10,000 deep or more (copying or printing it overflows
// the stack), and byte mutations cannot get there. Deepening valid JSON takes two coordinated
// insertions — the '['s before a value and as many ']'s after it — and the half-way input is
// not JSON, so it brings no new coverage and is dropped: the seeds' 8000 levels stayed 8000.
// Wrapping a whole value is one step that keeps the input valid, so the depth the readers must
// refuse (anything beyond 64, base/limits.h) is reached in seconds, at any size up to -max_len.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace fuzz {

// The end (one past the closing bracket) of the array or object that opens at data[open], or 0
// when it does not close before `end` (strings are skipped, so brackets inside them do not count).
inline size_t json_value_end(const uint8_t* data, size_t open, size_t end) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = open; i < end; i++) {
        const uint8_t c = data[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            depth++;
        } else if (c == ']' || c == '}') {
            if (--depth == 0) return i + 1;
        } else if (c == 0) {
            return 0;  // the end of this JSON text (fuzz_tokenizer_json.cpp: a NUL follows it)
        }
    }
    return 0;
}

// Wraps one array or object of data[begin, end) in k more arrays; the new size, or 0 when no
// value could be wrapped. *added gets 2k.
inline size_t deepen_json(uint8_t* data, size_t size, size_t max_size, size_t begin, size_t end, std::minstd_rand& rng,
                          size_t* added) {
    size_t opens = 0;
    for (size_t i = begin; i < end; i++) opens += data[i] == '[' || data[i] == '{';
    if (opens == 0 || size + 2 > max_size) return 0;
    size_t pick = rng() % opens, open = begin;
    for (;; open++)
        if ((data[open] == '[' || data[open] == '{') && pick-- == 0) break;
    const size_t close = json_value_end(data, open, end);
    if (close == 0) return 0;
    // Mostly a few levels (the limit is 64), sometimes thousands (the stack).
    const size_t room = (max_size - size) / 2, want = rng() % 4 ? 1 + rng() % 80 : 1 + rng() % 40000;
    const size_t k = want < room ? want : room;
    std::memmove(data + close + 2 * k, data + close, size - close);
    std::memset(data + close + k, ']', k);
    std::memmove(data + open + k, data + open, close - open);
    std::memset(data + open, '[', k);
    *added = 2 * k;
    return size + 2 * k;
}

// What a JSON target's LLVMFuzzerCustomMutator does: libFuzzer's mutations, or one time in
// eight the deepening above. The JSON starts at json_offset; with length_prefix, a u64
// little-endian length in front of it (safetensors' header) is kept right.
inline size_t mutate_json(uint8_t* data, size_t size, size_t max_size, unsigned int seed, size_t json_offset = 0,
                          bool length_prefix = false) {
    std::minstd_rand rng(seed);
    if (rng() % 8 != 0 || size <= json_offset) return LLVMFuzzerMutate(data, size, max_size);
    size_t end = size, added = 0;
    uint64_t length = 0;
    if (length_prefix) {
        std::memcpy(&length, data, 8);
        if (length < end - json_offset) end = size_t(json_offset + length);
    }
    const size_t n = deepen_json(data, size, max_size, json_offset, end, rng, &added);
    if (n == 0) return LLVMFuzzerMutate(data, size, max_size);
    if (length_prefix) {
        length += added;
        std::memcpy(data, &length, 8);
    }
    return n;
}

}  // namespace fuzz
