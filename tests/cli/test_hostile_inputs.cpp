// Issue 20, "Hostile files and folders": generators of crafted inputs for every parser that
// reads a file from a stranger (config.json, tokenizer.json, tokenizer_config.json,
// tokenizer.model, safetensors headers and indexes, hearth v1/v2 and GGUF files, llama2.c
// files), driven through ./run and ./quantize as a user would.
//
// Every case must reach the same end, whatever the input: within a guard of seconds the
// program either exits 1 with exactly one printable line on stderr, or succeeds with a
// correct result (tokenize prints ids, a written file loads); it never dies of a signal,
// never hangs, keeps its peak memory bounded, and quantize leaves no output and no
// OUTPUT.partial-* when it fails and never changes an input. The assertions are about that
// end, never about hearth's wording.
//
// Each generator makes many variants of one kind (kinds × parsers); the programs run in
// parallel (fork/exec, a time guard, a memory watchdog, wait4 for the peak RSS). With
// HEARTH_BIN_DIR set (make test's second pass) the sanitizer builds run instead.
// HEARTH_HOSTILE_REPORT=1 prints every case's outcome; HEARTH_HOSTILE_KEEP=1 keeps the work
// folders (build/tests/hostile/).
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <random>
#include <sentencepiece_trainer.h>
#include <sstream>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "kernels/quant_types.h"
#include "chat/chat_template.h"
#include "formats/writer.h"
#include "model/config.h"
#include "formats/hearth.h"
#include "formats/metadata.h"
#include "model/model.h"
#include "model/tensors.h"
#include "model/tokenizer_metadata.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/tokenizer.h"
#include "tests/safetensors_crafted.h"
#include "tests/test_helpers.h"

using namespace hearth;

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::string kRoot = "build/tests/hostile";

// A guard against hangs, not a speed claim: the sanitizer builds are several times slower.
constexpr double kGuardSeconds = 20;
// Peak memory a case may take (KiB): far above what the tiny models here need, even under
// AddressSanitizer, far below what reading /dev/zero or a regex's gigabytes take. The peak is
// wait4's ru_maxrss, or the VmHWM polled from /proc where ru_maxrss only shows the size of
// this process, whose copy the child was before exec.
constexpr long kMaxRssKiB = 1L << 20;  // 1 GiB
// Past this a child is killed at once (the machine must survive the case that fails).
constexpr long kKillRssKiB = 2L << 20;  // 2 GiB
// A one-line message longer than this is not a message.
constexpr size_t kMaxLineBytes = 1024;

// ---------------------------------------------------------------------------------------
// Showing bytes in a report

std::string shown(const std::string& s, size_t max = 300) {
    std::string out;
    for (size_t i = 0; i < s.size() && out.size() < max; i++) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += char(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, c == '\n' ? "\\n" : "\\x%02x", c);
            out += buf;
        }
    }
    return out.size() >= max || s.size() > max ? out + "..." : out;
}

// ---------------------------------------------------------------------------------------
// What a terminal may be shown: checked here byte by byte, independently of base/printable.

// Why `line` (without its newline) is not printable text, or "". Printable: valid UTF-8
// (no overlong forms, surrogates or code points past U+10FFFF), no C0 control, no DEL, no C1
// control (U+0080..U+009F: 0xC2 0x80..0x9F, which terminals read as escape sequences).
std::string line_problem(const std::string& line) {
    for (size_t i = 0; i < line.size();) {
        const unsigned char c = static_cast<unsigned char>(line[i]);
        char where[64];
        std::snprintf(where, sizeof where, " at byte %zu", i);
        if (c < 0x20) return "a control byte " + shown(std::string(1, char(c))) + where;
        if (c == 0x7f) return std::string("a DEL") + where;
        if (c < 0x80) {
            i++;
            continue;
        }
        int len = 0;
        uint32_t cp = 0, min = 0;
        if (c >= 0xc2 && c <= 0xdf)
            len = 2, cp = c & 0x1f, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef)
            len = 3, cp = c & 0x0f, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4)
            len = 4, cp = c & 0x07, min = 0x10000;
        else
            return "an invalid UTF-8 byte " + shown(std::string(1, char(c))) + where;
        if (i + size_t(len) > line.size()) return std::string("a UTF-8 character cut short") + where;
        for (int k = 1; k < len; k++) {
            const unsigned char b = static_cast<unsigned char>(line[i + size_t(k)]);
            if ((b & 0xc0) != 0x80) return std::string("an invalid UTF-8 sequence") + where;
            cp = cp << 6 | (b & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return std::string("an invalid UTF-8 sequence") + where;
        if (cp >= 0x80 && cp <= 0x9f) return std::string("a C1 control character") + where;
        i += size_t(len);
    }
    return "";
}

// Why stderr is not exactly one printable line ending in a newline, or "".
std::string not_one_clean_line(const std::string& err) {
    if (err.empty()) return "stderr is empty";
    const long lines = std::count(err.begin(), err.end(), '\n');
    if (err.back() != '\n') return "stderr does not end in a newline";
    if (lines != 1) return "stderr is " + std::to_string(lines) + " lines";
    if (err.size() > kMaxLineBytes) return "stderr is " + std::to_string(err.size()) + " bytes long";
    const std::string p = line_problem(err.substr(0, err.size() - 1));
    return p.empty() ? "" : "stderr has " + p;
}

// For a run that succeeded: every line of stderr printable and of sane length (may be none).
std::string not_clean_lines(const std::string& err) {
    if (!err.empty() && err.back() != '\n') return "stderr does not end in a newline";
    for (size_t at = 0; at < err.size();) {
        const size_t nl = err.find('\n', at);
        const std::string line = err.substr(at, nl - at);
        if (line.size() > kMaxLineBytes) return "a stderr line is " + std::to_string(line.size()) + " bytes long";
        const std::string p = line_problem(line);
        if (!p.empty()) return "a stderr line has " + p;
        at = nl + 1;
    }
    return "";
}

// ---------------------------------------------------------------------------------------
// Running programs: fork/exec, stdin fed, stdout/stderr captured, a time guard, a memory
// watchdog, and the peak RSS from wait4.

struct Job {
    std::vector<std::string> args;  // args[0]: "run" or "quantize" (hearth's, from HEARTH_BIN_DIR if set), or a path
    std::string input;              // fed to stdin, which is then closed
    uint64_t file_size_limit = 0;   // RLIMIT_FSIZE in bytes (0: none)
    double guard_seconds = kGuardSeconds;
    Job() = default;
    Job(std::vector<std::string> a, std::string in = "") : args(std::move(a)), input(std::move(in)) {}
};

struct Outcome {
    int exit_code = -1;      // when it exited
    long rss_bound_kib = 0;  // when not 0, max_rss_kib is what polls saw and the peak was below this
    int signal = 0;          // when a signal ended it (not the guard or the watchdog)
    bool hung = false;       // killed by the time guard
    bool too_big = false;    // killed by the memory watchdog
    long max_rss_kib = 0;
    double seconds = 0;
    std::string out, err;
    std::string summary() const {
        char buf[160];
        if (!rss_bound_kib)
            std::snprintf(buf, sizeof buf, ", %.2f s, peak %ld MiB", seconds, max_rss_kib >> 10);
        else
            std::snprintf(buf, sizeof buf, ", %.2f s, peak under %ld MiB", seconds, (rss_bound_kib >> 10) + 1);
        if (hung) return "hung: killed by the time guard" + std::string(buf);
        if (too_big) return "killed by the watchdog past " + std::to_string(kKillRssKiB >> 10) + " MiB" + buf;
        if (signal) return std::string("killed by signal ") + std::to_string(signal) + " (" + strsignal(signal) + ")" + buf;
        return "exit " + std::to_string(exit_code) + buf;
    }
};

std::string program_path(const std::string& name) {
    if (name != "run" && name != "quantize") return name;
    const std::string p = with_programs_of_build("./" + name + " ");  // honours HEARTH_BIN_DIR
    return p.substr(0, p.size() - 1);
}

// A process's resident memory now and at its peak (VmRSS, VmHWM), in KiB; 0 when gone.
std::pair<long, long> rss_kib(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    long rss = 0, hwm = 0;
    while (std::getline(in, line)) {
        if (line.compare(0, 6, "VmRSS:") == 0) rss = std::atol(line.c_str() + 6);
        if (line.compare(0, 6, "VmHWM:") == 0) hwm = std::atol(line.c_str() + 6);
    }
    return {rss, hwm};
}

std::vector<Outcome> run_jobs(const std::vector<Job>& jobs) {
    using Clock = std::chrono::steady_clock;
    constexpr size_t kMaxCaptured = 1 << 20;  // a program that floods its output keeps 1 MiB of it
    struct Live {
        size_t index;
        pid_t pid;
        int in = -1, out = -1, err = -1;
        size_t fed = 0;
        Clock::time_point start;
        bool reaped = false;
        long parent_rss_kib = 0, hwm_kib = 0;
    };
    std::vector<Outcome> results(jobs.size());
    std::vector<Live> live;
    // A child that stops reading stdin must not kill the test with SIGPIPE.
    struct sigaction ignore {
    }, old_pipe{};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &old_pipe);
    const size_t parallel = std::min<size_t>(8, std::max(2u, 2 * std::thread::hardware_concurrency()));
    size_t next = 0;
    while (next < jobs.size() || !live.empty()) {
        while (next < jobs.size() && live.size() < parallel) {
            const Job& job = jobs[next];
            int pin[2], pout[2], perr[2], exec_sync[2];
            REQUIRE(pipe2(exec_sync, O_CLOEXEC) == 0);
            REQUIRE(pipe2(pin, O_CLOEXEC) == 0);
            REQUIRE(pipe2(pout, O_CLOEXEC) == 0);
            REQUIRE(pipe2(perr, O_CLOEXEC) == 0);
            std::vector<std::string> args = job.args;
            args[0] = program_path(args[0]);
            std::vector<char*> argv;
            for (std::string& a : args) argv.push_back(&a[0]);
            argv.push_back(nullptr);
            const long parent_rss = rss_kib(getpid()).first;
            const pid_t pid = fork();
            REQUIRE(pid >= 0);
            if (pid == 0) {
                setpgid(0, 0);  // its own group: the guard kills it and anything it started
                dup2(pin[0], 0);
                dup2(pout[1], 1);
                dup2(perr[1], 2);
                signal(SIGPIPE, SIG_DFL);
                signal(SIGXFSZ, SIG_DFL);
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, nullptr);
                if (job.file_size_limit) {
                    const rlimit r{job.file_size_limit, job.file_size_limit};
                    setrlimit(RLIMIT_FSIZE, &r);
                }
                execv(argv[0], argv.data());
                const int e = errno;
                (void)!write(exec_sync[1], &e, sizeof e);
                _exit(127);
            }
            // Until it has exec'd, the child is a copy of this process, and /proc shows this
            // process's memory: wait for the exec (the pipe closes) before measuring anything.
            close(exec_sync[1]);
            int exec_errno = 0;
            while (read(exec_sync[0], &exec_errno, sizeof exec_errno) < 0 && errno == EINTR) {}
            close(exec_sync[0]);
            REQUIRE_MESSAGE(exec_errno == 0, "cannot run " << args[0] << ": " << std::strerror(exec_errno));
            close(pin[0]);
            close(pout[1]);
            close(perr[1]);
            Live l{next, pid, pin[1], pout[0], perr[0], 0, Clock::now(), false, parent_rss, 0};
            // Never blocks on a child that writes nothing: the guard and the watchdog must run.
            for (int fd : {l.in, l.out, l.err}) fcntl(fd, F_SETFL, O_NONBLOCK);
            if (job.input.empty()) {
                close(l.in);
                l.in = -1;
            }
            live.push_back(l);
            next++;
        }
        std::vector<pollfd> fds;
        for (const Live& l : live) {
            if (l.in >= 0) fds.push_back({l.in, POLLOUT, 0});
            if (l.out >= 0) fds.push_back({l.out, POLLIN, 0});
            if (l.err >= 0) fds.push_back({l.err, POLLIN, 0});
        }
        poll(fds.data(), nfds_t(fds.size()), 20);
        for (Live& l : live) {
            Outcome& o = results[l.index];
            const Job& job = jobs[l.index];
            if (l.in >= 0) {
                const ssize_t n = write(l.in, job.input.data() + l.fed, job.input.size() - l.fed);
                if (n > 0) l.fed += size_t(n);
                if (l.fed == job.input.size() || (n < 0 && errno != EAGAIN)) {
                    close(l.in);
                    l.in = -1;
                }
            }
            for (auto [fd, text] : {std::pair{&l.out, &o.out}, std::pair{&l.err, &o.err}}) {
                if (*fd < 0) continue;
                char buf[65536];
                for (;;) {
                    const ssize_t n = read(*fd, buf, sizeof buf);
                    if (n > 0) {
                        if (text->size() < kMaxCaptured) text->append(buf, size_t(n));
                        continue;
                    }
                    if (n == 0) {
                        close(*fd);
                        *fd = -1;
                    }
                    if (n == 0 || errno != EINTR) break;
                }
            }
            o.seconds = std::chrono::duration<double>(Clock::now() - l.start).count();
            const auto [rss, hwm] = rss_kib(l.pid);
            l.hwm_kib = std::max(l.hwm_kib, hwm);
            if (!o.hung && !o.too_big) {
                if (o.seconds > job.guard_seconds) {
                    o.hung = true;
                    kill(-l.pid, SIGKILL);
                    kill(l.pid, SIGKILL);
                } else if (rss > kKillRssKiB) {
                    o.too_big = true;
                    kill(-l.pid, SIGKILL);
                    kill(l.pid, SIGKILL);
                }
            }
            int status = 0;
            rusage ru{};
            if (wait4(l.pid, &status, WNOHANG, &ru) == l.pid) {
                l.reaped = true;
                // ru_maxrss keeps the forked copy of this process's memory across exec: above
                // that it is the program's own peak; below, the peak polled from /proc is.
                const bool own_peak = ru.ru_maxrss > l.parent_rss_kib + (8L << 10);
                o.max_rss_kib = std::max(l.hwm_kib, own_peak ? long(ru.ru_maxrss) : 0L);
                if (!own_peak && l.hwm_kib < ru.ru_maxrss) o.rss_bound_kib = ru.ru_maxrss;
                if (WIFEXITED(status))
                    o.exit_code = WEXITSTATUS(status);
                else if (WIFSIGNALED(status) && !o.hung && !o.too_big)
                    o.signal = WTERMSIG(status);
                // What the pipes still hold; the child is gone, so they end.
                for (int* fd : {&l.out, &l.err}) {
                    if (*fd < 0) continue;
                    std::string& text = fd == &l.out ? o.out : o.err;
                    char buf[65536];
                    fcntl(*fd, F_SETFL, 0);
                    for (ssize_t n; (n = read(*fd, buf, sizeof buf)) > 0;)
                        if (text.size() < kMaxCaptured) text.append(buf, size_t(n));
                    close(*fd);
                    *fd = -1;
                }
                if (l.in >= 0) close(l.in);
                l.in = -1;
            }
        }
        live.erase(std::remove_if(live.begin(), live.end(), [](const Live& l) { return l.reaped; }), live.end());
    }
    sigaction(SIGPIPE, &old_pipe, nullptr);
    return results;
}

Outcome run_job(const Job& job) { return run_jobs({job})[0]; }

// ---------------------------------------------------------------------------------------
// Files

bool exists(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
}

// A fresh, empty work folder.
std::string fresh(const std::string& dir) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir);
    return dir;
}

void clean_up(const std::string& dir) {
    if (std::getenv("HEARTH_HOSTILE_KEEP")) return;
    std::error_code ec;
    fs::remove_all(dir, ec);
}

// A folder whose files are hard links to a base folder's: a variant costs nothing, and
// write_file replaces one of its files without touching the base.
std::string variant_of(const std::string& base, const std::string& dir) {
    fresh(dir);
    for (const auto& e : fs::directory_iterator(base)) fs::create_hard_link(e.path(), dir + "/" + e.path().filename().string());
    return dir;
}

// What a path is, enough to tell whether anything changed it: the inode (a replaced file is a
// new one), its size and modification time (in nanoseconds: any write changes it), a link's
// target, and for a folder the names in it (not its own modification time: its entries).
struct FileState {
    bool exists = false;
    mode_t type = 0;
    uint64_t ino = 0, size = 0;
    int64_t mtime_ns = 0;
    std::string link;
    bool operator==(const FileState& o) const {
        return exists == o.exists && type == o.type && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns && link == o.link;
    }
};

FileState state_of(const std::string& path) {
    FileState s;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) return s;
    s.exists = true;
    s.type = st.st_mode & S_IFMT;
    s.ino = st.st_ino;
    s.size = uint64_t(st.st_size);
    s.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (S_ISLNK(st.st_mode)) s.link = fs::read_symlink(path).string();
    if (S_ISDIR(st.st_mode)) {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
        std::sort(names.begin(), names.end());
        for (const std::string& n : names) s.link += n + "/";
        s.mtime_ns = 0;
        s.size = 0;
    }
    return s;
}

using Snapshot = std::map<std::string, FileState>;

// The state of each path, and of every entry of each folder among them.
Snapshot snapshot(const std::vector<std::string>& paths) {
    Snapshot s;
    for (const std::string& p : paths) {
        s[p] = state_of(p);
        struct stat st;
        if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
            for (const auto& e : fs::directory_iterator(p)) s[e.path().string()] = state_of(e.path().string());
    }
    return s;
}

// How the paths differ from the snapshot, or "": files first, then what folders hold.
std::string changes_since(const Snapshot& before) {
    for (const bool folders : {false, true}) {
        for (const auto& [path, was] : before) {
            if ((was.type == S_IFDIR) != folders) continue;
            const FileState now = state_of(path);
            if (now == was) continue;
            if (!now.exists) return "the input " + path + " was removed";
            if (folders && now.type == S_IFDIR)
                return "the input folder " + path + " holds other files now: " + shown(now.link, 200);
            if (now.ino != was.ino) return "the input " + path + " was replaced";
            if (now.size != was.size) return "the input " + path + " was written";
            return "the input " + path + " changed (its modification time)";
        }
    }
    return "";
}

// OUTPUT.partial-* files quantize left beside its output.
std::vector<std::string> partial_files(std::string out) {
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    const size_t slash = out.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : out.substr(0, slash);
    const std::string prefix = out.substr(slash == std::string::npos ? 0 : slash + 1) + ".partial-";
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().filename().string().compare(0, prefix.size(), prefix) == 0) found.push_back(e.path().string());
    return found;
}

// ---------------------------------------------------------------------------------------
// Cases: a program run on a crafted input, and what its end must be.

struct Case {
    std::string what;  // the kind, the parser and the variant, as the report names them
    Job job;
    // quantize: the output path, and the inputs (files, folders) that must be left as they were.
    std::string out;
    std::vector<std::string> inputs;
    // A failure's message must name this (the file that is wrong, or the system's reason),
    // when not "".
    std::string blame;
    // A written output is read back with `run OUT readback...`; that must succeed (exit 0
    // with ids on stdout) when readback_must_succeed, else only reach a clean end.
    std::vector<std::string> readback = {"--tokenize", "-p", "hi"};
    bool readback_must_succeed = true;
    // A check of a successful run's outcome: "" or the problem.
    std::function<std::string(const Outcome&)> on_success;
    long max_rss_kib = kMaxRssKiB;
    // A failure that can only come after quantize has said what it converts (a write error):
    // those lines may come first, and the last line is the one-line error.
    bool progress_lines = false;
};

// "" or why a line of stdout is not a list of ids.
std::string not_ids(const std::string& out) {
    if (out.empty() || out.back() != '\n') return "stdout is not one line of ids: '" + shown(out, 80) + "'";
    for (char c : out.substr(0, out.size() - 1))
        if (!(std::isdigit(static_cast<unsigned char>(c)) || c == ','))
            return "stdout is not one line of ids: '" + shown(out, 80) + "'";
    return "";
}

std::vector<int> parse_ids(const std::string& out) {
    std::vector<int> ids;
    std::stringstream ss(out);
    for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty() && item != "\n") ids.push_back(std::atoi(item.c_str()));
    return ids;
}

// Problems with how a program ended, "" when it ended as every case must.
std::string end_problems(const Outcome& o, long max_rss_kib, bool progress_lines = false) {
    std::string p;
    auto add = [&](const std::string& s) {
        if (!s.empty()) p += (p.empty() ? "" : "; ") + s;
    };
    if (o.hung)
        add("hung (killed after " + std::to_string(int(o.seconds)) + " s)");
    else if (o.too_big)
        add("memory ran away (killed past " + std::to_string(kKillRssKiB >> 10) + " MiB)");
    else if (o.signal)
        add(std::string("killed by signal ") + std::to_string(o.signal) + " (" + strsignal(o.signal) + ")");
    else if (o.exit_code != 0 && o.exit_code != 1)
        add("exit code " + std::to_string(o.exit_code));
    if (!o.too_big && o.max_rss_kib > max_rss_kib) add("peak memory " + std::to_string(o.max_rss_kib >> 10) + " MiB");
    if (!o.hung && !o.too_big && !o.signal) {
        const std::string lines = o.exit_code == 0 || progress_lines ? not_clean_lines(o.err) : not_one_clean_line(o.err);
        if (!lines.empty()) add(lines);
    }
    return p;
}

bool report_all() { return std::getenv("HEARTH_HOSTILE_REPORT") != nullptr; }

// Runs every case (in parallel), then reads back what quantize wrote, and checks each end.
void check_cases(std::vector<Case>& cases) {
    std::vector<Snapshot> before;
    std::vector<bool> out_existed;
    std::vector<Job> jobs;
    for (const Case& c : cases) {
        before.push_back(snapshot(c.inputs));
        out_existed.push_back(!c.out.empty() && exists(c.out));
        jobs.push_back(c.job);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<Outcome> outcomes = run_jobs(jobs);
    const double run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<std::string> problems(cases.size());
    std::vector<Job> readbacks;
    std::vector<size_t> readback_of;
    for (size_t i = 0; i < cases.size(); i++) {
        const Case& c = cases[i];
        const Outcome& o = outcomes[i];
        std::string& p = problems[i];
        auto add = [&](const std::string& s) {
            if (!s.empty()) p += (p.empty() ? "" : "; ") + s;
        };
        add(end_problems(o, c.max_rss_kib, c.progress_lines));
        if (o.exit_code == 1 && c.progress_lines && o.err.empty()) add("no message");
        // The error is the last line (the only one, unless progress_lines).
        const std::string last = o.err.substr(o.err.rfind('\n', o.err.size() < 2 ? 0 : o.err.size() - 2) + 1);
        if (!c.blame.empty() && o.exit_code == 1 && last.find(c.blame) == std::string::npos)
            add("the message does not name " + c.blame);
        if (!c.out.empty()) {
            add(changes_since(before[i]));
            for (const std::string& f : partial_files(c.out)) add("left " + f);
            const bool written = o.exit_code == 0 && !o.hung && !o.too_big && !o.signal;
            if (!written && !out_existed[i] && exists(c.out)) add("a failed quantize left its output " + c.out);
            if (written && !exists(c.out)) add("quantize succeeded but wrote no " + c.out);
            if (written && exists(c.out)) {
                Job r{{"run", c.out}};
                for (const std::string& a : c.readback) r.args.push_back(a);
                readbacks.push_back(r);
                readback_of.push_back(i);
            }
        }
        if (p.empty() && o.exit_code == 0 && c.on_success) add(c.on_success(o));
    }
    const auto t1 = std::chrono::steady_clock::now();
    const std::vector<Outcome> read = run_jobs(readbacks);
    if (report_all())
        MESSAGE(cases.size() << " cases in " << run_seconds << " s, " << readbacks.size() << " read back in "
                             << std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() << " s");
    for (size_t k = 0; k < readbacks.size(); k++) {
        const Case& c = cases[readback_of[k]];
        const Outcome& r = read[k];
        std::string& p = problems[readback_of[k]];
        auto add = [&](const std::string& s) {
            if (!s.empty()) p += (p.empty() ? "" : "; ") + s;
        };
        std::string rp = end_problems(r, kMaxRssKiB);
        if (rp.empty() && c.readback_must_succeed && r.exit_code != 0) rp = "exit 1: " + shown(r.err, 200);
        if (rp.empty() && r.exit_code == 0 && c.readback[0] == "--tokenize") rp = not_ids(r.out);
        if (!rp.empty()) add("run cannot read back what quantize wrote (" + r.summary() + "): " + rp);
    }
    for (size_t i = 0; i < cases.size(); i++) {
        const Outcome& o = outcomes[i];
        if (report_all())
            MESSAGE((problems[i].empty() ? "pass  " : "FAIL  ") << cases[i].what << "  [" << o.summary() << "] " << problems[i]
                                                                << (problems[i].empty() ? "" : "  stderr: " + shown(o.err, 160)));
        CHECK_MESSAGE(problems[i].empty(),
                      cases[i].what << ": " << problems[i] << " [" << o.summary() << "] stderr: '" << shown(o.err) << "'");
    }
}

}  // namespace

namespace {

// ---------------------------------------------------------------------------------------
// Crafted inputs: Hugging Face folders and model files

// A tiny Llama as a Hugging Face folder: config.json and model.safetensors (F16 zeros, a
// sparse file), `vocab` embedding rows of `dim`.
void write_hf_folder(const std::string& dir, int vocab, int dim = 32) {
    fs::create_directories(dir);
    write_f16_zeros_safetensors(dir + "/model.safetensors",
                                one_layer_llama_tensors(uint64_t(vocab), uint64_t(dim), 2 * uint64_t(dim)));
    const json config = {{"architectures", {"LlamaForCausalLM"}},
                         {"model_type", "llama"},
                         {"hidden_size", dim},
                         {"intermediate_size", 2 * dim},
                         {"num_hidden_layers", 1},
                         {"num_attention_heads", 1},
                         {"vocab_size", vocab},
                         {"max_position_embeddings", 256},
                         {"tie_word_embeddings", true},
                         {"bos_token_id", 1},
                         {"eos_token_id", 2}};
    write_file(dir + "/config.json", config.dump(1));
}

// The small Llama-3 tokenizer.json of the fuzz corpus: 374 tokens, its regex, its merges.
const std::string kSmallTokenizerJson = "tests/fuzz/corpus/tokenizer_json/llama3-small.json";

// The base folders the variants are made from: a SentencePiece folder (the mha parity
// model), a sharded one with an index (odd), and a byte-level BPE one (tokenizer.json and
// tokenizer_config.json). golden.json is the tests' own, not part of a model folder.
std::string base_folder(const std::string& kind, const std::string& dir) {
    fresh(dir);
    if (kind == "sp" || kind == "sharded") {
        for (const auto& e : fs::directory_iterator(kind == "sp" ? "tests/data/parity/mha" : "tests/data/parity/odd"))
            if (e.path().filename() != "golden.json") fs::copy_file(e.path(), dir + "/" + e.path().filename().string());
    } else {
        write_hf_folder(dir, 374);
        write_file(dir + "/tokenizer.json", read_text(kSmallTokenizerJson));
        write_file(dir + "/tokenizer_config.json", read_text("tests/data/bpe/llama3-tokenizer_config.json"));
    }
    return dir;
}

// A JSON value replaced by raw text: the document with a placeholder at `path` ("a/b/0":
// keys and array indices; "" for the whole document), the placeholder then replaced.
std::string json_with_raw(const std::string& text, const std::string& path, const std::string& raw) {
    if (path.empty()) return raw;
    json j = json::parse(text);
    json* at = &j;
    std::stringstream ss(path);
    std::vector<std::string> parts;
    for (std::string part; std::getline(ss, part, '/');) parts.push_back(part);
    for (size_t i = 0; i < parts.size(); i++) {
        const std::string& k = parts[i];
        if (at->is_array())
            at = &(*at)[size_t(std::stoul(k))];
        else
            at = &(*at)[k];
    }
    *at = "@@HOSTILE@@";
    std::string out = j.dump();
    const size_t p = out.find("\"@@HOSTILE@@\"");
    return out.replace(p, 13, raw);
}

// A safetensors file with its header's JSON replaced by `header` (padded with spaces, as the
// format does), the data kept.
std::string safetensors_with_header(const std::string& file, const std::string& header) {
    uint64_t len;
    std::memcpy(&len, file.data(), 8);
    std::string text = header;
    text.append((8 - text.size() % 8) % 8, ' ');
    const uint64_t new_len = text.size();
    return std::string(reinterpret_cast<const char*>(&new_len), 8) + text + file.substr(size_t(8 + len));
}
std::string safetensors_header(const std::string& file) {
    uint64_t len;
    std::memcpy(&len, file.data(), 8);
    return file.substr(8, size_t(len));
}

// A JSON string literal holding the bytes as they are: only '"', '\' and C0 controls are
// escaped (so the parsed string holds the raw control bytes); DEL, C1 and invalid UTF-8 stay.
std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\')
            out += std::string("\\") + char(c);
        else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else
            out += char(c);
    }
    return out + "\"";
}

// ---- Model files written in-process (CheckpointWriter, as quantize writes them)

ModelConfig tiny_config(int vocab, int dim = 32) {
    ModelConfig c;
    c.name = "hostile";
    c.dim = dim;
    c.hidden_dim = 2 * dim;
    c.n_layers = 1;
    c.n_heads = 1;
    c.n_kv_heads = 1;
    c.head_dim = dim;
    c.vocab_size = vocab;
    c.max_seq_len = 256;
    c.bos_id = -1;
    c.eos_id = -1;
    c.add_bos = false;
    return c;
}

// A model file: the configuration's and the tokenizer's metadata (as quantize writes them for
// the format), changed by `patch`, and small deterministic weights.
void write_model(const std::string& path, CheckpointFormat format, const ModelConfig& c, const TokenizerSpec& tok,
                 const std::function<void(Metadata&)>& patch = {}) {
    Metadata m;
    config_to_metadata(c, &m);
    if (format == CheckpointFormat::hearth) {
        tokenizer_to_metadata(tok, &m);
    } else {
        std::string caveat;
        REQUIRE(tokenizer_to_gguf_metadata(tok, c.vocab_size, &m, &caveat) == "");
    }
    if (patch) patch(m);
    std::vector<TensorSpec> specs;
    for (const ModelTensor& t : model_tensors(c)) {
        TensorSpec s{t.name, t.n_dims == 1 ? uint32_t(TYPE_F32) : uint32_t(TYPE_F16), Layout::rows, t.n_dims, {1, 1, 1, 1}};
        for (int d = 0; d < t.n_dims; d++) s.shape[d] = t.shape[d];
        specs.push_back(s);
    }
    unlink(path.c_str());
    CheckpointWriter w;
    REQUIRE(w.open(path, format, m, specs) == "");
    std::mt19937 rng(11);
    for (const TensorSpec& s : specs) {
        const uint64_t bytes = tensor_bytes(s.type, s.n_dims, s.shape);
        std::string chunk;
        for (uint64_t done = 0; done < bytes; done += chunk.size()) {
            chunk.assign(size_t(std::min<uint64_t>(bytes - done, 1 << 20)), '\0');
            if (s.type == TYPE_F32) {
                for (size_t i = 0; i + 4 <= chunk.size(); i += 4) {
                    const float f = 0.5f + float(rng() % 1000) / 1000.0f;  // norm weights near 1
                    std::memcpy(&chunk[i], &f, 4);
                }
            } else {
                for (size_t i = 0; i + 2 <= chunk.size(); i += 2) {
                    const uint16_t h = uint16_t((rng() & 0x83ff) | 0x2000);  // small finite halves, either sign
                    std::memcpy(&chunk[i], &h, 2);
                }
            }
            REQUIRE(w.write(chunk.data(), chunk.size()) == "");
        }
    }
    REQUIRE(w.commit() == "");
}

CheckpointFormat format_of(const std::string& path) { return checkpoint_format_for_path(path); }

// The small byte-level BPE vocabulary, with <|begin_of_text|> as BOS, added to prompts.
BpeVocab small_bpe() {
    BpeVocab v;
    REQUIRE(bpe_from_tokenizer_json(read_text(kSmallTokenizerJson), "", &v) == "");
    v.bos_id = 370;
    v.eos_id = 371;
    v.add_bos = true;
    return v;
}

TokenizerSpec bpe_spec(const BpeVocab& v) {
    TokenizerSpec t;
    t.kind = TokenizerKind::bpe;
    t.bpe = v;
    return t;
}

ModelConfig config_for(const BpeVocab& v, int dim = 32) {
    ModelConfig c = tiny_config(int(v.tokens.size()), dim);
    c.bos_id = v.bos_id;
    c.eos_id = v.eos_id;
    c.add_bos = v.add_bos;
    return c;
}

// A model of the small BPE vocabulary, changed by `patch`.
void write_bpe_model(const std::string& path, const BpeVocab& v, const std::function<void(Metadata&)>& patch = {}) {
    write_model(path, format_of(path), config_for(v), bpe_spec(v), patch);
}

// A SentencePiece model as its bytes, and a model file of it.
TokenizerSpec sp_spec(const std::string& bytes) {
    TokenizerSpec t;
    t.kind = TokenizerKind::sentencepiece;
    t.sentencepiece = bytes;
    return t;
}
int sp_pieces(const std::string& bytes) {
    SentencePieceModel m;
    REQUIRE(parse_sentencepiece_model(bytes, &m) == "");
    return int(m.pieces.size());
}

// A hearth v1 file of just its header (the parser checks the configuration before anything
// after it): the arch and chat_template fields are 32 bytes from the file, NUL-padded.
std::string v1_header(const std::string& arch, const std::string& chat_template) {
    FileHeaderV1 h{};
    std::memcpy(h.magic, kCheckpointMagic, 8);
    h.version = 1;
    h.header_bytes = sizeof h;
    h.dim = 32, h.hidden_dim = 64, h.n_layers = 1, h.n_heads = 1, h.n_kv_heads = 1, h.head_dim = 32;
    h.vocab_size = 512, h.max_seq_len = 64, h.bos_id = 1, h.eos_id = 2;
    h.rope_theta = 10000.0f, h.rms_eps = 1e-5f;
    h.tokenizer_offset = sizeof h;
    h.file_bytes = sizeof h;
    std::memcpy(h.arch, arch.data(), std::min(arch.size(), sizeof h.arch - 1));
    std::memcpy(h.chat_template, chat_template.data(), std::min(chat_template.size(), sizeof h.chat_template - 1));
    return std::string(reinterpret_cast<const char*>(&h), sizeof h);
}

// Metadata entries as they are encoded (formats/metadata.h), to place what Metadata cannot hold
// (nested arrays, a key twice) into a written file over a placeholder of the same length.
std::string u32_bytes(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string u64_bytes(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }
std::string string_entry(const std::string& key, const std::string& value) {
    return u64_bytes(key.size()) + key + u32_bytes(META_STRING) + u64_bytes(value.size()) + value;
}

// Replaces the only occurrence of `from` in the file with `to` (of the same length).
void replace_in_file(const std::string& path, const std::string& from, const std::string& to) {
    REQUIRE(from.size() == to.size());
    std::string bytes = read_text(path);
    const size_t at = bytes.find(from);
    REQUIRE(at != std::string::npos);
    REQUIRE(bytes.find(from, at + 1) == std::string::npos);
    bytes.replace(at, from.size(), to);
    write_file(path, bytes);
}

// A model file whose metadata holds an array nested `depth` deep under `key`.
void write_nested_array_model(const std::string& path, int depth) {
    const std::string key = "hearth.hostile.nested";
    const std::string placeholder(size_t(12) * size_t(depth) - 8, 'n');
    write_bpe_model(path, small_bpe(), [&](Metadata& m) { m.set_string(key, placeholder); });
    std::string nested = u64_bytes(key.size()) + key + u32_bytes(META_ARRAY);
    for (int d = 0; d + 1 < depth; d++) nested += u32_bytes(META_ARRAY) + u64_bytes(1);
    nested += u32_bytes(META_U8) + u64_bytes(0);
    replace_in_file(path, string_entry(key, placeholder), nested);
}

// A model file whose metadata has one key twice (both entries strings).
void write_duplicate_key_model(const std::string& path, const std::string& key) {
    write_bpe_model(path, small_bpe(), [&](Metadata& m) {
        m.set_string(key + "1", "a");
        m.set_string(key + "2", "b");
    });
    replace_in_file(path, u64_bytes(key.size() + 1) + key + "2", u64_bytes(key.size() + 1) + key + "1");
}

// ---- Inputs most cases share

// Strings a terminal must never be handed raw, of each kind the issue names. Kinds a fix
// escapes the same way share a string (any one left raw fails the case): escape sequences
// (CSI and OSC), line breaks (LF and CR).
const std::vector<std::pair<std::string, std::string>>& payloads() {
    static const std::vector<std::pair<std::string, std::string>> p = {
        {"ESC sequences", "\x1b[31mred\x1b[0m \x1b]0;pwned\x07"},
        {"line breaks", "one\ntwo\rover"},
        {"C1 CSI",
         "\xc2\x9b"
         "31mred"},
        {"invalid UTF-8",
         "bad\xff\xfe"
         "bytes"},
        {"DEL", "del\x7f"},
        {"10 KB", std::string(10240, 'A')},
        {"3-byte characters across every cut",
         [] {
             std::string s = "ab";
             for (int i = 0; i < 400; i++) s += "\xe2\x82\xac";  // the euro sign
             return s;
         }()},
    };
    return p;
}

// The same, without the bytes a metadata key cannot hold (C0, DEL) and at most 1 KiB long.
std::vector<std::pair<std::string, std::string>> key_payloads() {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto [name, s] : payloads()) {
        if (std::any_of(s.begin(), s.end(), [](char c) { return uint8_t(c) < 0x20 || uint8_t(c) == 0x7f; })) continue;
        if (s.size() > 1000) s.resize(999);  // a cut inside a euro sign stays: invalid UTF-8 is a payload too
        out.push_back({name, s});
    }
    return out;
}

Job run_tokenize(const std::string& model, const std::string& text) { return {{"run", model, "--tokenize", "-p", text}}; }

Job quantize_job(const std::vector<std::string>& args) {
    Job j{{"quantize"}};
    for (const std::string& a : args) j.args.push_back(a);
    return j;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Deeply nested JSON

namespace {

// A JSON value `depth` containers deep: arrays, objects, or both by turns.
std::string nested_json(const std::string& kind, int depth) {
    std::string open, close;
    for (int d = 0; d < depth; d++) {
        const bool array = kind == "array" || (kind == "mixed" && d % 2 == 0);
        open += array ? "[" : "{\"a\":";
        close += array ? "]" : "}";
    }
    std::reverse(close.begin(), close.end());
    return open + "0" + close;
}

}  // namespace

TEST_CASE("hostile: deeply nested JSON in every JSON file of a folder, and nested arrays in model metadata") {
    const std::string dir = fresh(kRoot + "/json");
    const std::string bases[] = {"sp", "bpe", "sharded"};
    for (const std::string& b : bases) base_folder(b, dir + "/base-" + b);
    // Where the value goes: the whole file, then keys each parser reads (values it copies,
    // prints or compares) and one it ignores. `all` takes every kind and depth.
    struct Place {
        std::string base, file, path;
        bool all;
    };
    const std::string embed = "model.embed_tokens.weight";
    const Place places[] = {
        {"sp", "config.json", "", true},
        {"sp", "config.json", "rope_scaling", true},
        {"sp", "config.json", "x", false},
        {"sp", "config.json", "architectures", false},
        {"sp", "config.json", "architectures/0", false},
        {"sp", "config.json", "eos_token_id", false},
        {"sp", "config.json", "hidden_act", false},
        {"sp", "config.json", "hidden_size", false},
        {"bpe", "tokenizer.json", "", true},
        {"bpe", "tokenizer.json", "pre_tokenizer", true},
        {"bpe", "tokenizer.json", "x", false},
        {"bpe", "tokenizer.json", "normalizer", false},
        {"bpe", "tokenizer.json", "decoder", false},
        {"bpe", "tokenizer.json", "post_processor", false},
        {"bpe", "tokenizer.json", "added_tokens", false},
        {"bpe", "tokenizer.json", "added_tokens/0/content", false},
        {"bpe", "tokenizer.json", "model", false},
        {"bpe", "tokenizer.json", "model/vocab", false},
        {"bpe", "tokenizer.json", "model/merges", false},
        {"bpe", "tokenizer.json", "model/merges/0", false},
        {"bpe", "tokenizer.json", "pre_tokenizer/pretokenizers/0/pattern", false},
        {"bpe", "tokenizer_config.json", "", true},
        {"bpe", "tokenizer_config.json", "bos_token", true},
        {"bpe", "tokenizer_config.json", "x", false},
        {"bpe", "tokenizer_config.json", "eos_token", false},
        {"bpe", "tokenizer_config.json", "chat_template", false},
        {"bpe", "tokenizer_config.json", "add_bos_token", false},
        {"sp", "tokenizer_config.json", "", false},  // beside a tokenizer.model
        {"sp", "tokenizer_config.json", "chat_template", false},
        {"sp", "model.safetensors", "", true},
        {"sp", "model.safetensors", embed + "/data_offsets/0", true},
        {"sp", "model.safetensors", "__metadata__", false},
        {"sp", "model.safetensors", embed, false},
        {"sp", "model.safetensors", embed + "/shape", false},
        {"sp", "model.safetensors", embed + "/shape/0", false},
        {"sp", "model.safetensors", embed + "/dtype", false},
        {"sharded", "model.safetensors.index.json", "", true},
        {"sharded", "model.safetensors.index.json", "weight_map/" + embed, true},
        {"sharded", "model.safetensors.index.json", "x", false},
        {"sharded", "model.safetensors.index.json", "metadata", false},
        {"sharded", "model.safetensors.index.json", "weight_map", false},
    };
    std::vector<Case> cases;
    int n = 0, k = 0;
    for (const Place& p : places) {
        k++;
        for (const std::string kind : {"array", "object", "mixed"})
            for (const int depth : {65, 1000, 200000}) {
                // The others: the depth that overflows a recursive copy, one kind each, by turns.
                if (!p.all && (depth != 200000 || kind != (k % 3 == 0 ? "array" : k % 3 == 1 ? "object" : "mixed"))) continue;
                const std::string base = dir + "/base-" + p.base, v = variant_of(base, dir + "/v" + std::to_string(n++));
                const std::string raw = nested_json(kind, depth);
                if (p.file == "model.safetensors") {
                    const std::string file = read_text(base + "/model.safetensors");
                    write_file(v + "/" + p.file,
                               safetensors_with_header(file, json_with_raw(safetensors_header(file), p.path, raw)));
                } else {
                    const std::string text = exists(base + "/" + p.file) ? read_text(base + "/" + p.file) : "{}";
                    write_file(v + "/" + p.file, json_with_raw(text, p.path, raw));
                }
                Case c;
                c.what = "deep JSON: " + p.file + " (" + p.base + " folder) " + (p.path.empty() ? "as a whole" : "at " + p.path) +
                         ": " + (kind == "mixed" ? "arrays and objects" : kind + "s") + " " + std::to_string(depth) + " deep";
                c.out = v + ".hearth";
                c.job = quantize_job({v, c.out, "-q"});
                c.inputs = {v};
                c.blame = p.file;
                cases.push_back(c);
            }
    }
    // GGUF and hearth metadata: arrays of arrays.
    for (const std::string ext : {"gguf", "hearth"})
        for (const int depth : {65, 1000, 200000}) {
            const std::string model = dir + "/nested-" + std::to_string(depth) + "." + ext;
            write_nested_array_model(model, depth);
            Case c;
            c.what = "deep metadata: a " + ext + " file with arrays " + std::to_string(depth) + " deep: run --tokenize";
            c.job = run_tokenize(model, "hi");
            c.on_success = [](const Outcome& o) { return not_ids(o.out); };
            cases.push_back(c);
            Case q;
            q.what = "deep metadata: a " + ext + " file with arrays " + std::to_string(depth) + " deep: quantize";
            q.out = model + ".out.hearth";
            q.job = quantize_job({model, q.out});
            q.inputs = {model};
            cases.push_back(q);
        }
    check_cases(cases);
    clean_up(dir);
}

// ---------------------------------------------------------------------------------------
// Pre-tokenizer regexes from the file

namespace {

// A pattern whose first alternative tries ~n^3/6 ways to spread three characters over n
// optional items before it fails; the second then matches the whole piece, so the next
// regex gets it whole again. PCRE2's interpreter, which the verbs force, takes seconds for
// each try; sixteen regexes (the most a vocabulary may have) take minutes on "Hi!".
std::string backtracking_regex(const std::string& verbs) { return verbs + "(?:.?){378}x|[\\s\\S]+"; }

// PCRE2's start-of-pattern verbs: each with (*NO_JIT), which forces the interpreter, and
// others that switch optimizations off or ask for higher limits; and no verb (JIT).
const std::vector<std::string> kVerbs = {
    "(*NO_JIT)",
    "(*NO_START_OPT)(*NO_JIT)",
    "(*NO_AUTO_POSSESS)(*NO_DOTSTAR_ANCHOR)(*NO_JIT)",
    "(*LIMIT_MATCH=4000000000)(*LIMIT_DEPTH=4000000000)(*LIMIT_HEAP=4000000000)(*NO_JIT)",
    "(*UTF)(*UCP)(*CRLF)(*BSR_UNICODE)(*NO_JIT)",
    "",
};

// A tokenizer.json of the small vocabulary whose pre-tokenizer is these Split regexes, then
// ByteLevel without a regex of its own.
std::string tokenizer_json_with_regexes(const std::vector<std::string>& regexes) {
    json j = json::parse(read_text(kSmallTokenizerJson));
    json steps = json::array();
    for (const std::string& r : regexes)
        steps.push_back({{"type", "Split"}, {"pattern", {{"Regex", r}}}, {"behavior", "Isolated"}, {"invert", false}});
    steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}});
    j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", steps}};
    return j.dump();
}

// A successful --tokenize printed ids that decode back to the text, by the tokenizer of the
// same file read in this process (reading it does not encode: no regex runs here).
std::function<std::string(const Outcome&)> ids_of_text(const std::string& model, const std::string& text) {
    return [model, text](const Outcome& o) {
        std::string p = not_ids(o.out);
        if (!p.empty()) return p;
        Model m;
        Tokenizer tok;
        if (load_model(model, &m) != "" || tok.load(m.tokenizer) != "") return std::string();  // nothing to compare with
        const std::vector<int> ids = parse_ids(o.out);
        for (int id : ids)
            if (id < 0 || id >= tok.vocab_size()) return "id " + std::to_string(id) + " is outside the vocabulary";
        const std::string back = tok.decode(ids);
        return back == text ? std::string() : "the ids decode to '" + shown(back, 80) + "', not the text";
    };
}

}  // namespace

TEST_CASE("hostile: pre-tokenizer regexes built to backtrack, through every route a file has to them") {
    const std::string dir = fresh(kRoot + "/regex");
    std::vector<Case> cases;
    const std::string text = "Hi!";
    for (size_t i = 0; i < kVerbs.size(); i++) {
        BpeVocab v = small_bpe();
        v.pre_split_regexes.assign(16, backtracking_regex(kVerbs[i]));
        const std::string name = kVerbs[i].empty() ? "no verb (JIT)" : kVerbs[i];
        for (const std::string ext : {"gguf", "hearth"}) {
            if (ext == "hearth" && i > 1) continue;  // one format carries each verb; two carry the first ones
            const std::string model = dir + "/regex-" + std::to_string(i) + "." + ext;
            write_bpe_model(model, v);
            Case c;
            c.what = "regex: " + ext + " hearth.tokenizer.pre_split_regex, " + name + ": run --tokenize -p 'Hi!'";
            c.job = run_tokenize(model, text);
            c.on_success = ids_of_text(model, text);
            cases.push_back(c);
            if (i > 0) continue;
            Case chat;
            chat.what = "regex: " + ext + " hearth.tokenizer.pre_split_regex, " + name + ": a one-line chat message";
            chat.job = {{"run", model, "--chat", "-n", "2", "--temp", "0"}, "Hi there, how are you?\n"};
            cases.push_back(chat);
            Case gen;
            gen.what = "regex: " + ext + " hearth.tokenizer.pre_split_regex, " + name + ": run -p 'Hi!' -n 1";
            gen.job = {{"run", model, "-p", text, "-n", "1", "--temp", "0"}};
            cases.push_back(gen);
            const std::string ppl_text = dir + "/ppl.txt";
            write_file(ppl_text, "Hi there! How are you? I am fine.\n");
            Case ppl;
            ppl.what = "regex: " + ext + " hearth.tokenizer.pre_split_regex, " + name + ": run --perplexity";
            ppl.job = {{"run", model, "--perplexity", ppl_text, "-c", "4"}};
            cases.push_back(ppl);
            Case conv;
            conv.what = "regex: " + ext + " hearth.tokenizer.pre_split_regex, " + name + ": quantize it on, then run --tokenize";
            conv.out = model + ".out." + (ext == "gguf" ? "hearth" : "gguf");
            conv.job = quantize_job({model, conv.out});
            conv.inputs = {model};
            conv.readback = {"--tokenize", "-p", text};
            conv.readback_must_succeed = false;  // the written file may refuse to encode "Hi!" in one line
            cases.push_back(conv);
        }
        // tokenizer.json's Split sequence: quantize accepts it and writes it on.
        if (i < 3 || i == kVerbs.size() - 1) {
            const std::string folder = dir + "/folder-" + std::to_string(i);
            base_folder("bpe", folder);
            write_file(folder + "/tokenizer.json",
                       tokenizer_json_with_regexes(std::vector<std::string>(16, backtracking_regex(kVerbs[i]))));
            Case q;
            q.what = "regex: tokenizer.json Split sequence, " + name + ": quantize, then run --tokenize -p 'Hi!'";
            q.out = folder + ".gguf";
            q.job = quantize_job({folder, q.out, "-q"});
            q.inputs = {folder};
            q.readback = {"--tokenize", "-p", text};
            q.readback_must_succeed = false;
            cases.push_back(q);
        }
    }
    check_cases(cases);
    clean_up(dir);
}

namespace {

// A regex with thousands of capture groups whose match, in PCRE2's interpreter, keeps ~87k
// backtracking frames of ~30 KB each (every frame holds room for every group): a tree of
// subroutine calls 4 wide and 8 deep, each leaf an optional character. 3.9 KB of pattern,
// 4.5 GB of memory on a 55-character text.
std::string capture_group_regex(const std::string& verbs) {
    std::string defs = "(?<g0>.?)";
    for (int level = 1; level <= 8; level++) {
        std::string calls;
        for (int k = 0; k < 4; k++) calls += "(?&g" + std::to_string(level - 1) + ")";
        defs += "(?<g" + std::to_string(level) + ">" + calls + ")";
    }
    std::string groups;
    for (int i = 0; i < 1800; i++) groups += "()";
    return verbs + "(?(DEFINE)" + defs + ")" + groups + "(?&g8)|.";
}

}  // namespace

TEST_CASE("hostile: a pre-tokenizer regex with thousands of capture groups") {
    const std::string dir = fresh(kRoot + "/groups");
    const std::string text = "Hello there, how are you doing today? I am fine, thanks";
    REQUIRE(text.size() == 55);
    std::vector<Case> cases;
    for (const std::string verbs : {"(*NO_JIT)", ""}) {
        const std::string name = verbs.empty() ? "JIT" : verbs;
        BpeVocab v = small_bpe();
        v.pre_split_regexes = {capture_group_regex(verbs)};
        REQUIRE(v.pre_split_regexes[0].size() < 4096);
        for (const std::string ext : {"gguf", "hearth"}) {
            const std::string model = dir + "/groups-" + std::to_string(verbs.size()) + "." + ext;
            write_bpe_model(model, v);
            Case c;
            c.what = "capture groups: " + ext + ", " + name + ": run --tokenize on 55 characters";
            c.job = run_tokenize(model, text);
            c.on_success = ids_of_text(model, text);
            cases.push_back(c);
            Case chat;
            chat.what = "capture groups: " + ext + ", " + name + ": the text as a chat message";
            chat.job = {{"run", model, "--chat", "-n", "1", "--temp", "0"}, text + "\n"};
            cases.push_back(chat);
        }
        const std::string folder = dir + "/folder-" + std::to_string(verbs.size());
        base_folder("bpe", folder);
        write_file(folder + "/tokenizer.json", tokenizer_json_with_regexes(v.pre_split_regexes));
        Case q;
        q.what = "capture groups: tokenizer.json Split, " + name + ": quantize, then run --tokenize on 55 characters";
        q.out = folder + ".hearth";
        q.job = quantize_job({folder, q.out, "-q"});
        q.inputs = {folder};
        q.readback = {"--tokenize", "-p", text};
        q.readback_must_succeed = false;
        cases.push_back(q);
    }
    check_cases(cases);
    clean_up(dir);
}

// ---------------------------------------------------------------------------------------
// The BPE encoder and the vocabulary's added tokens

TEST_CASE("hostile: user-defined added tokens that are not whole UTF-8 characters") {
    const std::string dir = fresh(kRoot + "/partial");
    // Bytes that occur only inside characters of valid text: a continuation byte, a lead byte,
    // a cut 3-byte character, and the same joined to whole characters. A text (valid UTF-8)
    // never holds them as characters, so no encoding of one may contain their ids; the ids
    // must decode to the text and be the same from run to run.
    const std::vector<std::pair<std::string, std::string>> tokens = {
        {"a continuation byte", "\xa9"},
        {"a lead byte", "\xc3"},
        {"a cut euro sign", "\xe2\x82"},
        {"ASCII then a lead byte", "a\xc3"},
        {"a continuation byte then ASCII",
         "\xa9"
         "b"},
        {"two continuation bytes", "\x80\x80"},
        {"the end of a euro sign", "\x82\xac"},
    };
    std::string long_text;
    for (int i = 0; i < 300; i++) long_text += "caf\xc3\xa9 \xe2\x82\xac\xc3\xa9 ";
    // The third leaves, before the token, a piece of text (longer than a short string's
    // inline buffer) that ends inside a character: a regex engine told the text is valid
    // reads past its end.
    // The first holds every token's bytes inside some character: é (C3 A9), € (E2 82 AC),
    // U+2000 (E2 80 80), "aé", "éb".
    const std::vector<std::string> texts = {
        "caf\xc3\xa9 \xe2\x82\xac n\xc3\xa9 a\xc3\xa9 \xc3\xa9"
        "b\xc3\xa8ne \xe2\x80\x80 x",
        long_text, "The price is twenty euros, or 20 \xe2\x82\xac each."};
    auto first_ids = std::make_shared<std::map<std::string, std::string>>();
    std::vector<Case> cases;
    for (size_t t = 0; t < tokens.size(); t++)
        for (const std::string ext : {"gguf", "hearth"}) {
            BpeVocab v = small_bpe();
            const int id = int(v.tokens.size());
            v.tokens.push_back(tokens[t].second);
            v.types.push_back(BpeVocab::kUserDefined);
            const std::string model = dir + "/partial-" + std::to_string(t) + "." + ext;
            write_bpe_model(model, v);
            for (size_t x = 0; x < texts.size(); x++)
                for (int repeat = 0; repeat < (x == 0 ? 3 : 1); repeat++) {  // the same ids each time
                    Case c;
                    c.what = "partial added token: " + ext + ", " + tokens[t].first + ": run --tokenize, text " +
                             std::to_string(x) + ", run " + std::to_string(repeat + 1);
                    c.job = run_tokenize(model, texts[x]);
                    const auto decodes = ids_of_text(model, texts[x]);
                    const std::string key = model + "\n" + texts[x];
                    c.on_success = [decodes, id, key, first_ids](const Outcome& o) {
                        std::string p = decodes(o);
                        if (!p.empty()) return p;
                        for (int got : parse_ids(o.out))
                            if (got == id) return "the added token " + std::to_string(id) + " was matched inside a character";
                        auto [it, first] = first_ids->emplace(key, o.out);
                        if (!first && it->second != o.out)
                            return "other ids than another run of the same text: " + shown(o.out, 80) + " vs " +
                                   shown(it->second, 80);
                        return std::string();
                    };
                    cases.push_back(c);
                }
            if (ext != "gguf") continue;
            Case chat;
            chat.what = "partial added token: " + ext + ", " + tokens[t].first + ": a chat message";
            chat.job = {{"run", model, "--chat", "-n", "1", "--temp", "0"}, texts[2] + "\n"};
            cases.push_back(chat);
        }
    check_cases(cases);
    clean_up(dir);
}

TEST_CASE("hostile: a vocabulary with a million added tokens, and 100 KB of text") {
    const std::string dir = fresh(kRoot + "/added");
    const std::string text_file = dir + "/text.txt";
    std::string text = read_text("tests/data/tinyshakespeare-valid.txt");
    REQUIRE(text.size() > 100000);
    text.resize(100000);
    write_file(text_file, text);
    std::vector<Case> cases;
    // All of them start with a space, the text's most frequent byte, and none occurs in it:
    // " @" and four base-36 digits. 600,000 of them stay under 4 MiB of added text together.
    for (const auto& [count, ext] : {std::pair{1000000, "gguf"}, std::pair{600000, "hearth"}}) {
        BpeVocab v = small_bpe();
        for (int i = 0; i < count; i++) {
            std::string t = " @";
            for (int k = 0, x = i; k < 4; k++, x /= 36) t += "0123456789abcdefghijklmnopqrstuvwxyz"[x % 36];
            v.tokens.push_back(t);
            v.types.push_back(BpeVocab::kUserDefined);
        }
        const std::string model = dir + "/added-" + std::to_string(count) + "." + ext;
        write_model(model, format_of(model), config_for(v, 8), bpe_spec(v));
        Case c;
        c.what = "added tokens: " + std::to_string(count) + " in a " + ext + " file: run --tokenize on 100 KB";
        c.job = {{"run", model, "--tokenize", "-f", text_file}};
        c.on_success = ids_of_text(model, text);
        cases.push_back(c);
    }
    check_cases(cases);
    clean_up(dir);
}

// ---------------------------------------------------------------------------------------
// Chat on a vocabulary without BOS

namespace {

class TextLines : public sentencepiece::SentenceIterator {
public:
    explicit TextLines(const std::string& text) : in_(text) { Next(); }
    bool done() const override { return done_; }
    void Next() override { done_ = !std::getline(in_, line_); }
    const std::string& value() const override { return line_; }
    sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

private:
    std::istringstream in_;
    std::string line_;
    bool done_ = false;
};

// A SentencePiece model trained here with NFKC normalization (U+3000 becomes a space, which
// is then removed) and no BOS piece.
const std::string& nfkc_without_bos() {
    static const std::string model = [] {
        TextLines lines(read_text("tests/data/tinyshakespeare-valid.txt").substr(0, 60000));
        std::string bytes;
        const auto status = sentencepiece::SentencePieceTrainer::Train(
            "--model_type=bpe --vocab_size=300 --normalization_rule_name=nmt_nfkc --unk_id=0 --bos_id=-1 --eos_id=1 "
            "--pad_id=-1 --minloglevel=2",
            &lines, &bytes);
        REQUIRE_MESSAGE(status.ok(), status.ToString());
        return bytes;
    }();
    return model;
}

}  // namespace

TEST_CASE("hostile: a first chat message that normalizes to nothing, on a vocabulary without BOS") {
    const std::string dir = fresh(kRoot + "/chat");
    const std::string& sp = nfkc_without_bos();
    {
        Tokenizer tok;
        REQUIRE(tok.load(sp.data(), sp.size()) == "");
        REQUIRE(tok.bos_id() < 0);
        std::vector<int> ids;
        REQUIRE(tok.encode("\xe3\x80\x80", false, &ids) == "");
        REQUIRE(ids.empty());  // the premise: the message is nothing once normalized
    }
    ModelConfig c = tiny_config(sp_pieces(sp));
    c.eos_id = 1;
    std::vector<Case> cases;
    const std::string ideographic_space = "\xe3\x80\x80";
    for (const std::string ext : {"hearth", "gguf"}) {
        const std::string model = dir + "/no-bos." + ext;
        write_model(model, format_of(model), c, sp_spec(sp));
        for (const std::string& name : chat_template_names()) {
            Case k;
            k.what = "chat: " + ext + ", no BOS, --template " + name + ": a first message of U+3000";
            k.job = {{"run", model, "--chat", "-n", "2", "--temp", "0", "--template", name}, ideographic_space + "\nHello\n"};
            cases.push_back(k);
        }
        for (const auto& [what, input] : std::vector<std::pair<std::string, std::string>>{
                 {"spaces", "   \n"},
                 {"two U+3000", ideographic_space + ideographic_space + "\n"},
                 {"U+3000 as the second message too", "Hello\n" + ideographic_space + "\n"},
                 {"U+3000 with a system prompt", ideographic_space + "\n"}}) {
            Case k;
            k.what = "chat: " + ext + ", no BOS, the stored template: " + what;
            k.job = {{"run", model, "--chat", "-n", "2", "--temp", "0"}, input};
            if (what == "U+3000 with a system prompt") k.job.args.insert(k.job.args.end(), {"--system", ideographic_space});
            cases.push_back(k);
        }
        Case p;
        p.what = "chat: " + ext + ", no BOS: run -p U+3000 (the prompt path)";
        p.job = {{"run", model, "-p", ideographic_space, "-n", "2", "--temp", "0"}};
        cases.push_back(p);
    }
    check_cases(cases);
    clean_up(dir);
}

// ---------------------------------------------------------------------------------------
// quantize's output over its own input

namespace {

// Every way to name `file` (in folder `dir`) as an output: directly, through ./ and ../,
// through a symlink and a hard link made outside the folder (in `links`).
std::vector<std::pair<std::string, std::string>> names_of(const std::string& dir, const std::string& file,
                                                          const std::string& links, const std::string& tag) {
    const std::string path = dir + "/" + file;
    const std::string parent = dir.substr(0, dir.rfind('/')), leaf = dir.substr(dir.rfind('/') + 1);
    const std::string symlink = links + "/" + tag + ".symlink", hardlink = links + "/" + tag + ".hardlink";
    fs::create_directories(links);
    fs::create_symlink(fs::absolute(path), symlink);
    fs::create_hard_link(path, hardlink);
    return {{"directly", path},
            {"through ./", dir + "/./" + file},
            {"through ../", dir + "/../" + leaf + "/" + file},
            {"through a symlink", symlink},
            {"through a hard link", hardlink}};
}

}  // namespace

TEST_CASE("hostile: quantize never writes over its own input, however the output names it") {
    const std::string dir = fresh(kRoot + "/overwrite");
    std::vector<Case> cases;
    int n = 0;
    // Hugging Face folders: every file quantize reads.
    for (const std::string b : {"sharded", "bpe"}) {
        const std::string base = base_folder(b, dir + "/base-" + b);
        std::vector<std::string> files;
        for (const auto& e : fs::directory_iterator(base)) files.push_back(e.path().filename().string());
        std::sort(files.begin(), files.end());
        for (const std::string& f : files) {
            for (int form = 0; form < 5; form++) {
                const std::string tag = "v" + std::to_string(n++);
                const std::string v = variant_of(base, dir + "/" + tag);
                const auto [how, out] = names_of(v, f, dir + "/links", tag)[size_t(form)];
                Case c;
                c.what = "overwrite: " + b + " folder, " + f + " as the output, " + how;
                c.out = out;
                c.job = quantize_job({v, out, "-q"});
                c.inputs = {v};
                cases.push_back(c);
            }
        }
        for (const std::string suffix : {"", "/"}) {
            const std::string v = variant_of(base, dir + "/v" + std::to_string(n++));
            Case c;
            c.what = "overwrite: " + b + " folder as its own output" + (suffix.empty() ? "" : " (with a slash)");
            c.out = v + suffix;
            c.job = quantize_job({v, v + suffix, "-q"});
            c.inputs = {v};
            cases.push_back(c);
        }
    }
    // Model files, a llama2.c file, and llama2.c's --tokenizer file.
    {
        const std::string src = dir + "/src";
        fs::create_directories(src);
        write_bpe_model(src + "/model.gguf", small_bpe());
        write_bpe_model(src + "/model.hearth", small_bpe());
        fs::copy_file("tests/data/llama2c/tiny-untied.bin", src + "/model.bin");
        fs::copy_file("tests/data/parity/mha/tokenizer.model",
                      src + "/tokenizer.model");  // 512 pieces, as tiny-untied's vocabulary
        for (const std::string f : {"model.gguf", "model.hearth", "model.bin", "tokenizer.model"})
            for (int form = 0; form < 5; form++) {
                const std::string tag = "m" + std::to_string(n++);
                const std::string v = variant_of(src, dir + "/" + tag);
                const auto [how, out] = names_of(v, f, dir + "/links", tag)[size_t(form)];
                Case c;
                c.out = out;
                c.inputs = {v};
                if (f == "tokenizer.model") {
                    c.what = "overwrite: llama2.c's --tokenizer file as the output, " + how;
                    c.job = quantize_job({v + "/model.bin", out, "--tokenizer", v + "/tokenizer.model", "-q"});
                } else if (f == "model.bin") {
                    c.what = "overwrite: a llama2.c file as its own output, " + how;
                    c.job = quantize_job({v + "/model.bin", out, "--tokenizer", v + "/tokenizer.model", "-q"});
                } else {
                    c.what = "overwrite: a " + f.substr(6) + " file as its own output, " + how;
                    c.job = quantize_job({v + "/" + f, out, "-q"});
                }
                cases.push_back(c);
            }
    }
    check_cases(cases);
    clean_up(dir);
}

// ---------------------------------------------------------------------------------------
// Special files where regular ones belong

namespace {

void make_socket(const std::string& path) {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof addr.sun_path);
    std::memcpy(addr.sun_path, path.c_str(), path.size());
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    close(fd);  // the socket file stays, and nobody listens on it
}

// Puts a special file of `kind` at `path` (replacing what was there).
void make_special(const std::string& kind, const std::string& path) {
    unlink(path.c_str());
    if (kind == "a symlink to /dev/zero")
        fs::create_symlink("/dev/zero", path);
    else if (kind == "a symlink to /dev/urandom")
        fs::create_symlink("/dev/urandom", path);
    else if (kind == "a symlink to /dev/null")
        fs::create_symlink("/dev/null", path);
    else if (kind == "a dangling symlink")
        fs::create_symlink("no-such-file", path);
    else if (kind == "a FIFO")
        REQUIRE(mkfifo(path.c_str(), 0644) == 0);
    else if (kind == "a folder")
        fs::create_directory(path);
    else if (kind == "a socket")
        make_socket(path);
    else
        FAIL("unknown kind " << kind);
}

const std::vector<std::string> kSpecialKinds = {"a symlink to /dev/zero",
                                                "a symlink to /dev/urandom",
                                                "a symlink to /dev/null",
                                                "a dangling symlink",
                                                "a FIFO",
                                                "a folder",
                                                "a socket"};

}  // namespace

TEST_CASE("hostile: special files in place of a folder's files, of model files and of text files") {
    const std::string dir = fresh(kRoot + "/special");
    for (const std::string b : {"sp", "bpe", "sharded"}) base_folder(b, dir + "/base-" + b);
    const std::pair<std::string, std::string> files[] = {
        {"sp", "config.json"},
        {"sp", "tokenizer.model"},
        {"sp", "model.safetensors"},
        {"sp", "tokenizer_config.json"},
        {"bpe", "tokenizer.json"},
        {"bpe", "tokenizer_config.json"},
        {"sharded", "model.safetensors.index.json"},
        {"sharded", "model-00001-of-00002.safetensors"},
    };
    std::vector<Case> cases;
    int n = 0;
    for (const auto& [b, f] : files)
        for (const std::string& kind : kSpecialKinds) {
            const std::string v = variant_of(dir + "/base-" + b, dir + "/v" + std::to_string(n++));
            make_special(kind, v + "/" + f);
            Case c;
            c.what = "special file: " + f + " (" + b + " folder) is " + kind;
            c.out = v + ".hearth";
            c.job = quantize_job({v, c.out, "-q"});
            c.inputs = {v};
            c.blame = f;
            cases.push_back(c);
        }
    // Model and text files named on the command line.
    const std::string model = dir + "/model.hearth", text = dir + "/text.txt";
    write_bpe_model(model, small_bpe());
    write_file(text, "Hi there! How are you? I am fine.\n");
    fs::copy_file("tests/data/llama2c/tiny-untied.bin", dir + "/model.bin");
    for (const std::string& kind :
         {std::string("a symlink to /dev/zero"), std::string("a FIFO"), std::string("a folder"), std::string("a socket")}) {
        const std::string s = dir + "/s" + std::to_string(n++);
        make_special(kind, s);
        auto add = [&](const std::string& what, const Job& job, const std::string& out = "") {
            Case c;
            c.what = "special file: " + what + " is " + kind;
            c.job = job;
            c.out = out;
            if (!out.empty()) c.inputs = {dir + "/model.bin", model};
            cases.push_back(c);
        };
        add("run's model", {{"run", s, "--tokenize", "-p", "hi"}});
        add("quantize's input", quantize_job({s, s + ".out.hearth"}), s + ".out.hearth");
        add("llama2.c's --tokenizer", quantize_job({dir + "/model.bin", s + ".tok.hearth", "--tokenizer", s}), s + ".tok.hearth");
        add("run -f", {{"run", model, "--tokenize", "-f", s}});
        add("run --perplexity's text", {{"run", model, "--perplexity", s}});
    }
    check_cases(cases);
    clean_up(dir);
}

// ---------------------------------------------------------------------------------------
// What quantize writes, run must read

TEST_CASE("hostile: quantize writes only files that run reads back") {
    const std::string dir = fresh(kRoot + "/readback");
    const std::string base = base_folder("bpe", dir + "/base");
    std::vector<Case> cases;
    // The large inputs get a longer guard: under the sanitizers, reading 64 MiB is slow.
    auto add = [&](const std::string& what, const std::string& folder, const std::string& ext, long max_rss_kib = kMaxRssKiB,
                   double guard = kGuardSeconds) {
        Case c;
        c.what = "read back: " + what + " -> " + ext;
        c.out = folder + "." + ext;
        c.job = quantize_job({folder, c.out, "-q"});
        c.job.guard_seconds = guard;
        c.inputs = {folder};
        c.max_rss_kib = max_rss_kib;
        cases.push_back(c);
    };
    // A chat template one byte over 64 MiB (the most one metadata string may hold).
    {
        const std::string v = variant_of(base, dir + "/template");
        json cfg = json::parse(read_text(base + "/tokenizer_config.json"));
        const std::string filler = "{# " + std::string((64u << 20) + 1 - 6, 'x') + " #}";
        REQUIRE(filler.size() == (64u << 20) + 1);
        cfg["chat_template"] = filler;
        write_file(v + "/tokenizer_config.json", cfg.dump());
        // The input alone is 64 MiB: room for a few copies of it besides.
        add("a chat template of 64 MiB + 1 byte in tokenizer_config.json", v, "hearth", kMaxRssKiB + (512L << 10),
            3 * kGuardSeconds);
        add("a chat template of 64 MiB + 1 byte in tokenizer_config.json", v, "gguf", kMaxRssKiB + (512L << 10),
            3 * kGuardSeconds);
    }
    // config.json's vocab_size past the BPE tokenizer's limit of 2^21 tokens: GGUF pads the
    // vocabulary with a placeholder per embedding row. 8 dims keep the embedding at 32 MiB.
    {
        const std::string v = dir + "/padded";
        fs::create_directories(v);
        write_hf_folder(v, (1 << 21) + 1, 8);
        fs::copy_file(base + "/tokenizer.json", v + "/tokenizer.json");
        fs::copy_file(base + "/tokenizer_config.json", v + "/tokenizer_config.json");
        add("config.json vocab_size 2^21 + 1, padded", v, "gguf", kMaxRssKiB, 3 * kGuardSeconds);
    }
    // A regex with more capture groups than real pre-tokenizers have (none), harmless otherwise.
    {
        const std::string v = variant_of(base, dir + "/groups");
        std::string groups;
        for (int i = 0; i < 65; i++) groups += "()";
        write_file(v + "/tokenizer.json", tokenizer_json_with_regexes({groups + kLlama3SplitRegex}));
        add("a Split regex with 65 capture groups", v, "hearth");
    }
    // More regexes than a vocabulary may have, and a regex longer than one may be.
    {
        const std::string v = variant_of(base, dir + "/regexes");
        write_file(v + "/tokenizer.json", tokenizer_json_with_regexes(std::vector<std::string>(17, kLlama3SplitRegex)));
        add("17 Split regexes", v, "hearth");
        const std::string w = variant_of(base, dir + "/long-regex");
        write_file(
            w + "/tokenizer.json",
            tokenizer_json_with_regexes({std::string(4097 - std::strlen(kLlama3SplitRegex) - 1, 'z') + "|" + kLlama3SplitRegex}));
        add("a Split regex of 4097 bytes", w, "hearth");
    }
    // Added tokens whose text is more than 4 MiB together.
    {
        const std::string v = variant_of(base, dir + "/added");
        json j = json::parse(read_text(base + "/tokenizer.json"));
        json cfg = json::parse(read_text(base + "/config.json"));
        for (int i = 0; i < 4400; i++)
            j["added_tokens"].push_back(
                {{"id", 374 + i}, {"content", "<" + std::to_string(i) + std::string(1000, 'w') + ">"}, {"special", false}});
        cfg["vocab_size"] = 374 + 4400;
        write_file(v + "/tokenizer.json", j.dump());
        write_file(v + "/config.json", cfg.dump());
        fs::remove(v + "/model.safetensors");
        write_hf_folder(dir + "/added-weights", 374 + 4400);
        fs::create_hard_link(dir + "/added-weights/model.safetensors", v + "/model.safetensors");
        add("4.2 MiB of added tokens", v, "gguf");
    }
    check_cases(cases);
    clean_up(dir);
}

// ---------------------------------------------------------------------------------------
// Strings from a file on the terminal

TEST_CASE("hostile: strings from a file reach the terminal in one printable line") {
    const std::string dir = fresh(kRoot + "/strings");
    for (const std::string b : {"sp", "bpe", "sharded"}) base_folder(b, dir + "/base-" + b);
    std::vector<Case> cases;
    int n = 0;
    // ---- Model files, through run (and quantize, which prints on success too)
    // Every payload goes through run on a GGUF file. hearth v2 files hold the same metadata,
    // read by the same code, and quantize reads model files with run's parser: those take
    // the representatives of the C0 and C1 kinds (`representative`), and quantize every
    // payload only where it succeeds and prints the string in a warning (`quantize_all`).
    bool representative = false;
    auto model_case = [&](const std::string& what, const std::string& ext, const std::function<void(const std::string&)>& write,
                          const std::vector<std::string>& run_args = {"--tokenize", "-p", "hi"}, const std::string& input = "",
                          bool quantize_all = false) {
        if (ext != "gguf" && !representative) return;
        const std::string model = dir + "/m" + std::to_string(n++) + "." + ext;
        write(model);
        Case c;
        c.what = "strings: " + what + " (" + ext + "): run " + (run_args[0] == "--chat" ? "--chat" : "--tokenize");
        c.job = {{"run", model}, input};
        for (const std::string& a : run_args) c.job.args.push_back(a);
        cases.push_back(c);
        if (ext != "gguf" || !(representative || quantize_all)) return;
        Case q;
        q.what = "strings: " + what + " (" + ext + "): quantize";
        q.out = model + ".out." + (ext == "gguf" ? "gguf" : "hearth");
        q.job = quantize_job({model, q.out});
        q.inputs = {model};
        cases.push_back(q);
    };
    const BpeVocab bpe = small_bpe();
    for (const auto& payload : payloads()) {
        const std::string& pname = payload.first;  // not a structured binding: lambdas capture it
        const std::string& s = payload.second;
        const std::string tag = " = " + pname;
        representative = pname == "ESC sequences" || pname == "C1 CSI";
        for (const std::string ext : {"gguf", "hearth"}) {
            model_case("tokenizer.ggml.pre" + tag + ", no regex keys", ext, [&](const std::string& path) {
                write_bpe_model(path, bpe, [&](Metadata& m) {
                    m.set_string("tokenizer.ggml.pre", s);
                    m.erase("hearth.tokenizer.pre_split_regex");
                });
            });
            model_case(
                "tokenizer.ggml.pre" + tag + ", with the regex keys", ext,
                [&](const std::string& path) {
                    write_bpe_model(path, bpe, [&](Metadata& m) { m.set_string("tokenizer.ggml.pre", s); });
                },
                {"--tokenize", "-p", "hi"}, "", true);
            model_case("tokenizer.ggml.model" + tag, ext, [&](const std::string& path) {
                write_bpe_model(path, bpe, [&](Metadata& m) { m.set_string("tokenizer.ggml.model", s); });
            });
            model_case("general.architecture" + tag, ext, [&](const std::string& path) {
                write_bpe_model(path, bpe, [&](Metadata& m) { m.set_string("general.architecture", s); });
            });
            model_case("hearth.chat_template" + tag, ext, [&](const std::string& path) {
                write_bpe_model(path, bpe, [&](Metadata& m) { m.set_string("hearth.chat_template", s); });
            });
            model_case(
                "tokenizer.chat_template" + tag, ext,
                [&](const std::string& path) {
                    write_bpe_model(path, bpe, [&](Metadata& m) { m.set_string("tokenizer.chat_template", s); });
                },
                {"--chat", "-n", "1", "--temp", "0"}, "Hello\n");
            model_case("llama.rope.scaling.type" + tag, ext, [&](const std::string& path) {
                write_bpe_model(path, bpe, [&](Metadata& m) { m.set_string("llama.rope.scaling.type", s); });
            });
            model_case("a BPE token twice" + tag, ext, [&](const std::string& path) {
                write_bpe_model(path, bpe, [&](Metadata& m) {
                    std::vector<std::string> tokens = bpe.tokens;
                    tokens[300] = tokens[301] = s;
                    m.set_strings("tokenizer.ggml.tokens", tokens);
                });
            });
            model_case("a SentencePiece piece twice (GGUF arrays)" + tag, ext, [&](const std::string& path) {
                const std::string sp = read_text("tests/data/parity/mha/tokenizer.model");
                ModelConfig c = tiny_config(sp_pieces(sp));
                c.bos_id = 1, c.eos_id = 2, c.add_bos = true;
                Metadata arrays;
                std::string caveat;
                REQUIRE(tokenizer_to_gguf_metadata(sp_spec(sp), c.vocab_size, &arrays, &caveat) == "");
                std::vector<std::string> tokens;
                REQUIRE(arrays.get_strings("tokenizer.ggml.tokens", &tokens) == "");
                tokens[300] = tokens[301] = s;
                write_model(path, format_of(path), c, sp_spec(sp), [&](Metadata& m) {
                    for (const MetaEntry& e : arrays.entries())
                        if (e.key.rfind("tokenizer.", 0) == 0) m.erase(e.key);
                    std::vector<float> scores;
                    std::vector<int32_t> types;
                    REQUIRE(arrays.get_f32s("tokenizer.ggml.scores", &scores) == "");
                    REQUIRE(arrays.get_i32s("tokenizer.ggml.token_type", &types) == "");
                    m.set_string("tokenizer.ggml.model", "llama");
                    m.set_strings("tokenizer.ggml.tokens", tokens);
                    m.set_f32s("tokenizer.ggml.scores", scores);
                    m.set_i32s("tokenizer.ggml.token_type", types);
                    m.erase("hearth.tokenizer.sentencepiece_model");
                });
            });
        }
        // hearth v1: the 32-byte arch and chat_template fields.
        for (const std::string field : {"arch", "chat_template"}) {
            const std::string model = dir + "/v1-" + std::to_string(n++) + ".hearth";
            write_file(model, field == "arch" ? v1_header(s, "") : v1_header("llama", s));
            Case c;
            c.what = "strings: hearth v1 " + field + tag + ": run";
            c.job = run_tokenize(model, "hi");
            cases.push_back(c);
        }
    }
    // A metadata key twice: keys cannot hold C0 or DEL, and are at most 1 KiB.
    for (const auto& [pname, s] : key_payloads())
        for (const std::string ext : {"gguf", "hearth"}) {
            const std::string model = dir + "/dup-" + std::to_string(n++) + "." + ext;
            write_duplicate_key_model(model, "hearth.x" + s);
            Case c;
            c.what = "strings: a metadata key twice = " + pname + " (" + ext + "): run";
            c.job = run_tokenize(model, "hi");
            cases.push_back(c);
        }
    // ---- Folders, through quantize
    auto folder_case = [&](const std::string& what, const std::string& b, const std::string& file, const std::string& content) {
        const std::string v = variant_of(dir + "/base-" + b, dir + "/f" + std::to_string(n++));
        write_file(v + "/" + file, content);
        Case c;
        c.what = "strings: " + what;
        c.out = v + ".hearth";
        c.job = quantize_job({v, c.out, "-q"});
        c.inputs = {v};
        cases.push_back(c);
    };
    const std::string config = read_text(dir + "/base-sp/config.json"), tokenizer = read_text(dir + "/base-bpe/tokenizer.json");
    const std::string weights = read_text(dir + "/base-sp/model.safetensors"),
                      index = read_text(dir + "/base-sharded/model.safetensors.index.json");
    const std::string embed = "model.embed_tokens.weight";
    for (const auto& [pname, s] : payloads()) {
        const std::string tag = " = " + pname, js = json_string(s);
        json no_arch = json::parse(config);
        no_arch.erase("architectures");
        folder_case("config.json model_type" + tag + ", no architectures", "sp", "config.json",
                    json_with_raw(no_arch.dump(), "model_type", js));
        folder_case("config.json architectures[0]" + tag, "sp", "config.json", json_with_raw(config, "architectures/0", js));
        folder_case("config.json hidden_act" + tag, "sp", "config.json", json_with_raw(config, "hidden_act", js));
        json scaling = json::parse(config);
        scaling["rope_scaling"] = {{"rope_type", "@@"}, {"factor", 2.0}};
        folder_case("config.json rope_scaling.rope_type" + tag, "sp", "config.json",
                    json_with_raw(scaling.dump(), "rope_scaling/rope_type", js));
        folder_case("config.json that stops being JSON at" + tag, "sp", "config.json", "{\"hidden_size\": " + s + "}");
        folder_case(
            "a safetensors tensor name" + tag, "sp", "model.safetensors",
            safetensors_with_header(weights, "{" + js + ": {\"dtype\": \"F32\"}, " + safetensors_header(weights).substr(1)));
        folder_case("a safetensors dtype" + tag, "sp", "model.safetensors",
                    safetensors_with_header(weights, json_with_raw(safetensors_header(weights), embed + "/dtype", js)));
        folder_case("a safetensors header that stops being JSON at" + tag, "sp", "model.safetensors",
                    safetensors_with_header(weights, "{\"" + embed + "\": " + s + "}"));
        folder_case("a shard named in the index" + tag, "sharded", "model.safetensors.index.json",
                    json_with_raw(index, "weight_map/" + embed, js));
        folder_case("tokenizer.json pre_tokenizer type" + tag, "bpe", "tokenizer.json",
                    json_with_raw(tokenizer, "pre_tokenizer/type", js));
        folder_case("tokenizer.json model type" + tag, "bpe", "tokenizer.json", json_with_raw(tokenizer, "model/type", js));
        folder_case("tokenizer.json normalizer type" + tag, "bpe", "tokenizer.json",
                    json_with_raw(tokenizer, "normalizer", "{\"type\": " + js + "}"));
        folder_case("tokenizer.json decoder type" + tag, "bpe", "tokenizer.json",
                    json_with_raw(tokenizer, "decoder", "{\"type\": " + js + "}"));
        json lstrip = json::parse(tokenizer);
        lstrip["added_tokens"][0]["lstrip"] = true;
        folder_case("tokenizer.json added token (lstrip)" + tag, "bpe", "tokenizer.json",
                    json_with_raw(lstrip.dump(), "added_tokens/0/content", js));
        folder_case("tokenizer.json merge" + tag, "bpe", "tokenizer.json", json_with_raw(tokenizer, "model/merges/0", js));
        SentencePieceModel sp;
        REQUIRE(parse_sentencepiece_model(read_text(dir + "/base-sp/tokenizer.model"), &sp) == "");
        sp.pieces[300].piece = sp.pieces[301].piece = s;
        folder_case("tokenizer.model piece twice" + tag, "sp", "tokenizer.model", serialize_sentencepiece_model(sp));
        // llama2.c's --tokenizer: the same tokenizer.model.
        const std::string tok = dir + "/tok-" + std::to_string(n++) + ".model";
        write_file(tok, serialize_sentencepiece_model(sp));
        Case c;
        c.what = "strings: llama2.c --tokenizer piece twice" + tag;
        c.out = tok + ".hearth";
        c.job = quantize_job({"tests/data/llama2c/tiny-untied.bin", c.out, "--tokenizer", tok, "-q"});
        c.inputs = {tok};
        cases.push_back(c);
    }
    check_cases(cases);
    clean_up(dir);
}

// ---------------------------------------------------------------------------------------
// Smaller ends

TEST_CASE("hostile: a broken tokenizer_config.json is what the message names") {
    const std::string dir = fresh(kRoot + "/tokenizer-config");
    for (const std::string b : {"bpe", "sp"}) base_folder(b, dir + "/base-" + b);
    const std::vector<std::pair<std::string, std::string>> broken = {
        {"cut short", "{\"bos_token\": \"<|begin_of_text|>\", "},
        {"trailing garbage", "{\"bos_token\": \"<|begin_of_text|>\"} trailing"},
        {"not JSON", "this is not JSON"},
        {"invalid UTF-8 in a string", "{\"bos_token\": \"\xff\xfe\"}"},
        {"a trailing comma", "{\"bos_token\": \"<|begin_of_text|>\",}"},
        {"empty", ""},
    };
    std::vector<Case> cases;
    int n = 0;
    for (const std::string b : {"bpe", "sp"})
        for (const auto& [what, text] : broken) {
            const std::string v = variant_of(dir + "/base-" + b, dir + "/v" + std::to_string(n++));
            write_file(v + "/tokenizer_config.json", text);
            Case c;
            c.what = "tokenizer_config.json " + what + ", beside " + (b == "bpe" ? "tokenizer.json" : "tokenizer.model");
            c.out = v + ".hearth";
            c.job = quantize_job({v, c.out, "-q"});
            c.inputs = {v};
            c.blame = "tokenizer_config.json";
            cases.push_back(c);
        }
    check_cases(cases);
    clean_up(dir);
}

TEST_CASE("hostile: a model without a vocabulary, run with --prompt-ids, prints only run's own lines") {
    const std::string dir = fresh(kRoot + "/no-vocab");
    std::vector<Case> cases;
    for (const std::string ext : {"hearth", "gguf"}) {
        const std::string model = dir + "/no-vocab." + ext;
        const Outcome q = run_job(quantize_job({"tests/data/llama2c/tiny-untied.bin", model, "-q"}));
        REQUIRE_MESSAGE(q.exit_code == 0, q.err);
        for (const auto& sampling : {std::vector<std::string>{"--temp", "0"}, std::vector<std::string>{"--seed", "7"}}) {
            Case c;
            c.what = "no vocabulary (" + ext + "): run --prompt-ids --print-ids " + sampling[0];
            c.job = {{"run", model, "--prompt-ids", "1,2,3", "--print-ids", "-n", "4", sampling[0], sampling[1]}};
            c.on_success = [](const Outcome& o) -> std::string {
                std::stringstream ss(o.err);
                for (std::string line; std::getline(ss, line);)
                    if (line.compare(0, 5, "run: ") != 0)
                        return "stderr has a line that is not run's: '" + shown(line, 120) + "'";
                return not_ids(o.out);
            };
            cases.push_back(c);
        }
    }
    check_cases(cases);
    clean_up(dir);
}

TEST_CASE("hostile: quantize past a file size limit says so in one line and leaves nothing") {
    const std::string dir = fresh(kRoot + "/fsize");
    std::vector<Case> cases;
    for (const auto& [in, ext] :
         {std::pair{"models/tiny-shakespeare.hearth", "hearth"}, std::pair{"models/tiny-shakespeare.hearth", "gguf"},
          std::pair{"tests/data/parity/mha", "hearth"}}) {
        Case c;
        c.what = std::string("ulimit -f 64: quantize ") + in + " -> " + ext;
        c.out = dir + "/limited-" + std::to_string(cases.size()) + "." + ext;
        c.job = quantize_job({in, c.out, "f32", "-q"});
        c.job.file_size_limit = 64 << 10;
        c.on_success = [](const Outcome&) { return std::string("succeeded past the file size limit"); };
        c.blame = "File too large";  // what the system says (strerror(EFBIG))
        c.progress_lines = true;     // the limit is met while writing, after quantize said what it writes
        cases.push_back(c);
    }
    check_cases(cases);
    clean_up(dir);
}
