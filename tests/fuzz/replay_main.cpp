// make test's replay of the fuzz targets: every committed seed (tests/fuzz/corpus/TARGET/) and
// every crash reproducer (tests/fuzz/regressions/TARGET/) goes through its target's
// LLVMFuzzerTestOneInput once, in the AddressSanitizer + UBSan build, without libFuzzer (which
// needs clang; `make fuzz` is the fuzzing itself). The Makefile compiles each target with its
// entry renamed fuzz_entry_TARGET and lists the targets in HEARTH_FUZZ_TARGETS, so that one
// binary holds them all. Each input runs in a child process with a time limit: a crash, a
// sanitizer report or a hang fails its check and the rest still run.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <dirent.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "tests/test_helpers.h"

#define X(t) extern "C" int fuzz_entry_##t(const uint8_t* data, size_t size);
HEARTH_FUZZ_TARGETS
#undef X

// The JSON targets' custom mutators call libFuzzer's; never called here.
extern "C" size_t LLVMFuzzerMutate(uint8_t*, size_t size, size_t) { return size; }

namespace {

struct Target {
    const char* name;
    int (*entry)(const uint8_t*, size_t);
};
const Target kTargets[] = {
#define X(t) {#t, fuzz_entry_##t},
    HEARTH_FUZZ_TARGETS
#undef X
};

std::vector<std::string> files_in(const std::string& dir) {
    std::vector<std::string> out;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            const std::string name = e->d_name;
            if (name[0] == '.' || (name.size() > 3 && name.compare(name.size() - 3, 3, ".md") == 0)) continue;
            out.push_back(dir + "/" + name);
        }
        closedir(d);
    }
    return out;
}

// "" when the target took the input and returned; else how it ended.
std::string replay(const Target& t, const std::string& path) {
    const std::string bytes = read_text(path);
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return "fork failed";
    if (pid == 0) {
        alarm(60);  // a hang; generous for the sanitizer build on a loaded machine
        t.entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
    if (WIFSIGNALED(status))
        return WTERMSIG(status) == SIGALRM ? "hung (60 s)" : "killed by signal " + std::to_string(WTERMSIG(status));
    return "exit status " + std::to_string(WEXITSTATUS(status)) + " (a sanitizer report or an abort above)";
}

}  // namespace

TEST_CASE("fuzz replay: every seed and crash reproducer of every fuzz target, under the sanitizers") {
    int inputs = 0;
    for (const Target& t : kTargets) {
        for (const char* kind : {"corpus", "regressions"}) {
            for (const std::string& path : files_in(std::string("tests/fuzz/") + kind + "/" + t.name)) {
                CAPTURE(path);
                CHECK(replay(t, path) == "");
                inputs++;
            }
        }
    }
    MESSAGE(inputs << " inputs replayed through " << sizeof kTargets / sizeof kTargets[0] << " targets");
    CHECK(inputs > 100);
}
