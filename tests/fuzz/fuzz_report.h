// HEARTH_FUZZ_VERBOSE=1 makes a fuzz target say what it made of an input (parsed, refused and
// why): for checking that seeds reach what they were made for (tools/make_fuzz_seeds.py --check),
// not while fuzzing.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>

namespace fuzz {

inline bool verbose() {
    static const bool on = std::getenv("HEARTH_FUZZ_VERBOSE") != nullptr;
    return on;
}

inline void report(const char* what, const std::string& err) {
    if (verbose()) std::fprintf(stderr, "fuzz: %s: %s\n", what, err.empty() ? "ok" : err.c_str());
}

}  // namespace fuzz
