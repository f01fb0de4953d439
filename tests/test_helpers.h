// Small helpers shared by the tests that drive ./run and ./quantize as a user would.
#pragma once
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

struct CommandResult {
    int exit_code;
    std::string out;  // stdout
    std::string err;  // stderr
};

// The programs under test: ./run and ./quantize, or the sanitizer builds' when HEARTH_BIN_DIR
// names their folder (make test runs the tests once each way).
inline std::string with_programs_of_build(std::string cmd) {
    const char* dir = std::getenv("HEARTH_BIN_DIR");
    if (!dir || !*dir) return cmd;
    for (const std::string program : {"./run ", "./quantize "})
        for (size_t at = cmd.find(program); at != std::string::npos; at = cmd.find(program, at + 1))
            if (at == 0 || cmd[at - 1] == ' ' || cmd[at - 1] == ';' || cmd[at - 1] == '|' || cmd[at - 1] == '(')
                cmd.replace(at, 1, dir);
    return cmd;
}

// Runs a shell command from the repository root and captures stdout and stderr.
inline CommandResult run_command(const std::string& cmd) {
    static int counter = 0;
    std::string err_path = "build/tests/stderr-" + std::to_string(counter++) + ".txt";
    FILE* p = popen((with_programs_of_build(cmd) + " 2>" + err_path).c_str(), "r");
    CommandResult r{-1, "", ""};
    if (!p) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    int status = pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream e(err_path);
    std::stringstream ss;
    ss << e.rdbuf();
    r.err = ss.str();
    std::remove(err_path.c_str());
    return r;
}

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Writes bytes to path as a new file: the old one is unlinked first, never written through (a
// test's folder may hold hard links into a shared one). A failed write throws, which fails
// the test case as a REQUIRE would.
inline void write_file(const std::string& path, const std::string& bytes) {
    unlink(path.c_str());
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    if (!f.good()) throw std::runtime_error("cannot write " + path);
}

// A text's ids, for tests whose tokenizer must encode it: an encoding error fails the test.
// (Tok is Tokenizer; templated so that this header needs neither doctest's runner nor the
// tokenizer's header.)
template <class Tok>
std::vector<int> encoded(const Tok& tok, const std::string& text, bool add_bos) {
    std::vector<int> ids;
    const std::string err = tok.encode(text, add_bos, &ids);
    if (!err.empty()) throw std::runtime_error("encode failed: " + err);
    return ids;
}
// The same through a BpeTokenizer, with control tokens matched when allow_control.
template <class Bpe>
std::vector<int> bpe_encoded(const Bpe& bpe, const std::string& text, bool add_bos, bool allow_control) {
    std::vector<int> ids;
    const std::string err = bpe.encode(text, add_bos, allow_control, &ids);
    if (!err.empty()) throw std::runtime_error("encode failed: " + err);
    return ids;
}
