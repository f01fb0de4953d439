// quantize's output file in hostile situations: it is created exclusively under a name nobody
// can plant a symlink at, and whatever ends the program — a closed pipe, a file size limit, a
// write error — leaves either the complete file or nothing, never OUTPUT.partial-*.
#include <doctest/doctest.h>

#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/model.h"
#include "tests/test_helpers.h"

using namespace hearth;

static const std::string kDir = "build/tests/output-files";

static void fresh_dir() { REQUIRE(run_command("rm -rf " + kDir + " && mkdir -p " + kDir).exit_code == 0); }

// Files in the test folder whose name contains ".partial-".
static int partial_files() {
    int n = 0;
    DIR* d = opendir(kDir.c_str());
    if (!d) return 0;
    while (dirent* e = readdir(d)) n += std::string(e->d_name).find(".partial-") != std::string::npos;
    closedir(d);
    return n;
}

static bool exists(const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

// The output either does not exist or is a complete checkpoint that loads.
static void complete_or_absent(const std::string& path) {
    if (!exists(path)) return;
    Model m;
    CHECK(load_model(path, &m) == "");
}

TEST_CASE("output files: a symlink planted at the old predictable temporary name is not written through") {
    fresh_dir();
    const std::string victim = kDir + "/victim.txt", out = kDir + "/out.hearth";
    std::ofstream(victim) << "the user's file";
    // The shell's PID is quantize's after exec: this is where OUTPUT.partial-PID used to be.
    CommandResult r =
        run_command("sh -c 'ln -s victim.txt " + out + ".partial-$$; exec ./quantize tests/data/parity/mha " + out + " -q'");
    CHECK(r.exit_code == 0);
    CHECK(read_text(victim) == "the user's file");
    complete_or_absent(out);
    CHECK(exists(out));
}

TEST_CASE("output files: a closed pipe on stderr leaves no partial file") {
    fresh_dir();
    const std::string out = kDir + "/piped.hearth";
    // quantize's stderr is a pipe this test stops reading once the output file exists (the
    // line "-> OUT"); the next line quantize writes raises SIGPIPE.
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        const std::string program = with_programs_of_build("./quantize ");
        execl(program.substr(0, program.size() - 1).c_str(), "quantize", "models/tiny-shakespeare.hearth", out.c_str(), "f32",
              static_cast<char*>(nullptr));
        _exit(127);
    }
    close(fds[1]);
    std::string seen;
    char buf[256];
    for (ssize_t n; seen.find("-> ") == std::string::npos && (n = read(fds[0], buf, sizeof buf)) > 0;)
        seen.append(buf, size_t(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    INFO(seen);
    CHECK(seen.find("-> ") != std::string::npos);
    CHECK((WIFSIGNALED(status) ? WTERMSIG(status) == SIGPIPE : WEXITSTATUS(status) == 0));
    CHECK(partial_files() == 0);
    complete_or_absent(out);
}

TEST_CASE("output files: a file size limit (ulimit -f) is a one-line error and leaves nothing behind") {
    fresh_dir();
    const std::string out = kDir + "/limited.hearth";
    // quantize ignores SIGXFSZ: the write past the limit fails (EFBIG), as on a full disk, with
    // the system's own words for it — whether or not the caller ignored the signal already.
    for (const std::string trap : {"", "trap \"\" XFSZ; "}) {
        CAPTURE(trap);
        CommandResult r =
            run_command("sh -c '" + trap + "ulimit -f 64; exec ./quantize models/tiny-shakespeare.hearth " + out + " f32 -q'");
        CHECK(r.exit_code == 1);
        // Progress lines come first; the error is the one last line.
        const size_t last = r.err.rfind('\n', r.err.size() - 2);
        CHECK(r.err.substr(last == std::string::npos ? 0 : last + 1).find("File too large") != std::string::npos);
        CHECK(partial_files() == 0);
        CHECK(!exists(out));
    }
}

TEST_CASE("output files: a failed or interrupted conversion leaves an existing output as it was") {
    fresh_dir();
    const std::string out = kDir + "/kept.hearth", old = "an older file of that name";
    std::ofstream(out) << old;
    // A conversion that fails half way (its input's weights are truncated).
    REQUIRE(
        run_command("cp -r tests/data/parity/mha " + kDir + "/broken && truncate -s 300000 " + kDir + "/broken/model.safetensors")
            .exit_code == 0);
    CommandResult r = run_command("./quantize " + kDir + "/broken " + out + " -q");
    CHECK(r.exit_code == 1);
    CHECK(read_text(out) == old);
    CHECK(partial_files() == 0);
    // SIGTERM during a conversion: the handler removes the partial file. Whether the signal
    // lands before or after the rename, the output is the old file or the whole new one.
    // The same for every signal whose default ends the process (SIGUSR1 and SIGXCPU left a
    // partial file before, found by a new-user test), in a conversion long enough (0.3 s, longer
    // in the sanitizer build) to be under way when it comes.
    for (const char* sig : {"TERM", "USR1", "XCPU", "ALRM", "ABRT"}) {
        INFO(sig);
        run_command("sh -c './quantize build/tests/gguf-mini/mini-F16.gguf " + out + " q4_k_m -q & sleep 0.1; kill -" +
                    std::string(sig) + " $!; wait $!'");
        CHECK(partial_files() == 0);
        if (read_text(out) != old) {
            Model m;
            CHECK(load_model(out, &m) == "");
        }
    }
}

TEST_CASE("output files: quantize with stderr closed writes a whole model, not its messages into it") {
    fresh_dir();
    // The output's temporary file took descriptor 2, and the progress lines went into the model.
    const std::string out = kDir + "/closed-stderr.hearth";
    const CommandResult r = run_command("sh -c './quantize models/tiny-shakespeare.hearth " + out + " q8_0 2>&-'");
    CHECK(r.exit_code == 0);
    Model m;
    CHECK(load_model(out, &m) == "");
    CHECK(partial_files() == 0);
}

TEST_CASE("output files: a replaced output keeps its permissions; '-' is refused, not a file named -") {
    fresh_dir();
    const std::string out = kDir + "/private.hearth";
    std::ofstream(out) << "an older file";
    REQUIRE(chmod(out.c_str(), 0640) == 0);
    REQUIRE(run_command("./quantize models/tiny-shakespeare.hearth " + out + " q8_0 -q").exit_code == 0);
    struct stat st;
    REQUIRE(stat(out.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0640);
    const CommandResult dash =
        run_command("sh -c 'cd " + kDir + " && exec ../../../quantize ../../../models/tiny-shakespeare.hearth - q8_0'");
    CHECK(dash.exit_code == 1);
    CHECK(dash.err.find("not to stdout") != std::string::npos);
    CHECK(access((kDir + "/-").c_str(), F_OK) != 0);
}
