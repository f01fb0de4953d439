// `run --chat` in a real terminal: a pseudo-terminal (forkpty) in which the test types
// as a person would — messages, /reset, Ctrl-C in the middle of a long answer, Ctrl-D —
// and reads what the screen shows. Every wait has a deadline, and a child still running
// at the end is killed, so a broken chat fails the test instead of hanging the suite.
#include <doctest/doctest.h>

#include "tests/test_helpers.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

const std::string kModel = "models/tiny-shakespeare.hearth";
// The prompt as run draws it in colour: a green ">" then a space.
const std::string kPrompt = "\033[1;32m>\033[0m ";
const std::string kReplyColour = "\033[36m";

// PtyChild's env value that removes the variable (a NUL, which no variable's value can hold).
const std::string kUnset(1, '\0');

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

class PtyChild {
public:
    // env: variables set in the child, after TERM=xterm and NO_COLOR unset; one set to kUnset is
    // removed instead.
    // job_control: the program runs as a shell runs a job, in a process group of its own in the
    // foreground, under a parent that waits for it; when it stops, the parent takes the
    // terminal back, writes "[stopped]", waits for a line (fg) and continues it.
    explicit PtyChild(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env = {},
                      bool job_control = false) {
        struct winsize ws = {};
        ws.ws_row = 24;
        ws.ws_col = 100;
        pid_ = forkpty(&fd_, nullptr, nullptr, &ws);
        if (pid_ == 0) {
            setenv("TERM", "xterm", 1);
            unsetenv("NO_COLOR");
            for (const auto& [name, value] : env)
                if (value == kUnset)
                    unsetenv(name.c_str());
                else
                    setenv(name.c_str(), value.c_str(), 1);
            std::vector<char*> argv;
            for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            const std::string program = with_programs_of_build(args[0] + " ");  // "./run " or a sanitizer build's
            if (job_control) {
                signal(SIGTTOU, SIG_IGN);
                const pid_t job = fork();
                if (job == 0) {
                    setpgid(0, 0);
                    tcsetpgrp(STDIN_FILENO, getpid());
                    signal(SIGTTOU, SIG_DFL);
                    execv(program.substr(0, program.size() - 1).c_str(), argv.data());
                    _exit(127);
                }
                setpgid(job, job);
                tcsetpgrp(STDIN_FILENO, job);
                int status = 0;
                while (waitpid(job, &status, WUNTRACED) == job && WIFSTOPPED(status)) {
                    tcsetpgrp(STDIN_FILENO, getpgrp());
                    (void)!write(STDOUT_FILENO, "[stopped]\n", 10);
                    char c = 0;
                    while (read(STDIN_FILENO, &c, 1) == 1 && c != '\n') {}
                    tcsetpgrp(STDIN_FILENO, job);
                    kill(-job, SIGCONT);
                }
                _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
            }
            execv(program.substr(0, program.size() - 1).c_str(), argv.data());
            _exit(127);
        }
    }
    ~PtyChild() {
        if (pid_ > 0 && !exited_) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        if (fd_ >= 0) close(fd_);
    }
    bool started() const { return pid_ > 0 && fd_ >= 0; }

    // Reads until `what` appears after everything matched so far; false at the deadline
    // or when the child closes the terminal first.
    bool expect(const std::string& what, double seconds) {
        const auto deadline = after(seconds);
        for (;;) {
            size_t at = out_.find(what, seen_);
            if (at != std::string::npos) {
                seen_ = at + what.size();
                return true;
            }
            if (!read_some(deadline)) return false;
        }
    }
    // Reads until the prompt is drawn and the line editor has the terminal (libedit turns
    // ICANON off). Keys typed before that go through the kernel's line discipline instead:
    // Ctrl-D there would become a NUL byte that libedit does not take for end of input.
    bool expect_prompt(double seconds) {
        if (!expect(kPrompt, seconds)) return false;
        const auto deadline = after(seconds);
        while (settings().c_lflag & ICANON)
            if (!read_some(std::min(deadline, after(0.01))) && Clock::now() >= deadline) return false;
        return true;
    }
    // Reads until at least `n` more bytes have come, or the deadline.
    bool expect_bytes(size_t n, double seconds) {
        const auto deadline = after(seconds);
        const size_t want = out_.size() + n;
        while (out_.size() < want)
            if (!read_some(deadline)) return false;
        return true;
    }
    void send_signal(int sig) { kill(pid_, sig); }
    // Resizes the terminal, as a window manager does: the kernel sends SIGWINCH to the child.
    void resize(int rows, int cols) {
        struct winsize ws = {};
        ws.ws_row = (unsigned short)rows;
        ws.ws_col = (unsigned short)cols;
        if (ioctl(fd_, TIOCSWINSZ, &ws) != 0) FAIL("cannot resize the pty");
    }
    void type(const std::string& keys) {
        if (write(fd_, keys.data(), keys.size()) != ssize_t(keys.size())) FAIL("cannot write to the pty");
    }
    // The exit code, or -1 if the child did not exit before the deadline (it is killed); then
    // output() has all the child wrote.
    int wait_exit(double seconds) {
        const auto deadline = after(seconds);
        for (;;) {
            int status = 0;
            pid_t r = waitpid(pid_, &status, WNOHANG);
            if (r == pid_) {
                exited_ = true;
                // What it wrote last may still be in the terminal's buffer: read to its end (EIO
                // once the child's side is closed), so that output() holds all of it.
                const auto drain_until = after(2);
                while (read_some(drain_until)) {}
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            if (Clock::now() > deadline) return -1;
            read_some(Clock::now() + std::chrono::milliseconds(50));  // drain, so it never blocks writing
        }
    }
    // The terminal's settings (the master side reports the slave's).
    termios settings() const {
        termios t = {};
        tcgetattr(fd_, &t);
        return t;
    }
    const std::string& output() const { return out_; }

private:
    bool read_some(Clock::time_point deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p = {fd_, POLLIN, 0};
        int r = poll(&p, 1, int(std::min<long long>(left, 200)));
        if (r < 0 && errno != EINTR) return false;
        if (r <= 0) return true;
        char buf[4096];
        ssize_t n = read(fd_, buf, sizeof buf);
        if (n > 0) {
            out_.append(buf, size_t(n));
            return true;
        }
        return n < 0 && (errno == EINTR || errno == EAGAIN);  // EIO: the child closed the terminal
    }

    pid_t pid_ = -1;
    int fd_ = -1;
    bool exited_ = false;
    std::string out_;
    size_t seen_ = 0;
};

// Generous: the machine may be busy; a working chat answers in well under a second.
const double kWait = 60;

}  // namespace

TEST_CASE("chat pty: two turns, /reset, Ctrl-C in a long answer, Ctrl-D; the prompt comes back each time") {
    // --ignore-eos: every answer runs to -n, long enough to be interrupted in the middle. Ctrl-C
    // comes after 40 bytes of the reply, and the rest must still be under way: 400 tokens (0.8 KB,
    // a few ms on this model) were once all written before it (CI on a Zen 5, its other lanes
    // running); 3000 (6.5 KB) give it 7 times the time.
    PtyChild chat({"./run", kModel, "--chat", "-n", "3000", "-c", "8192", "--temp", "0", "--ignore-eos", "-t", "1"});
    REQUIRE(chat.started());
    REQUIRE(chat.expect_prompt(kWait));

    chat.type("ROMEO:\r");
    CHECK(chat.expect(kReplyColour, kWait));
    CHECK(chat.expect("[reply stopped at the limit of 3000 tokens (-n)]", kWait));
    REQUIRE(chat.expect_prompt(kWait));

    // A second turn reuses the first from the KV cache: /stats says how many tokens.
    chat.type("JULIET:\r");
    CHECK(chat.expect(kReplyColour, kWait));
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("/stats\r");
    REQUIRE(chat.expect("tokens evaluated (", kWait));
    REQUIRE(chat.expect(" reused)", kWait));
    const std::string stats = chat.output();
    const size_t reused_at = stats.rfind("tokens evaluated (") + std::string("tokens evaluated (").size();
    CHECK(std::atoi(stats.c_str() + reused_at) >= 3000);  // "N reused)": all of the first turn
    REQUIRE(chat.expect_prompt(kWait));
    CHECK(chat.output().find("/stats") != std::string::npos);

    chat.type("/reset\r");
    CHECK(chat.expect("[conversation reset]", kWait));
    REQUIRE(chat.expect_prompt(kWait));
    // /stats after it: no messages, not the last conversation's token count as the context's.
    chat.type("/stats\r");
    CHECK(chat.expect("context: 0 messages (", kWait));
    REQUIRE(chat.expect_prompt(kWait));

    // Ctrl-C once the answer is under way: it stops, and the prompt returns.
    chat.type("Tell me a long tale\r");
    REQUIRE(chat.expect(kReplyColour, kWait));
    REQUIRE(chat.expect_bytes(40, kWait));
    chat.type("\x03");
    CHECK(chat.expect("[interrupted]", kWait));
    REQUIRE(chat.expect_prompt(kWait));

    // Ctrl-D at the empty prompt leaves, with exit code 0 and the terminal as it was.
    chat.type("\x04");
    CHECK(chat.wait_exit(kWait) == 0);
    const termios t = chat.settings();
    CHECK((t.c_lflag & ICANON) != 0);
    CHECK((t.c_lflag & ECHO) != 0);
    CHECK(chat.output().find("[interrupted]") != std::string::npos);
}

TEST_CASE("chat pty: Ctrl-C at an empty prompt leaves; with a line typed, it only clears the line") {
    PtyChild chat({"./run", kModel, "--chat", "-n", "8", "-t", "1"});
    REQUIRE(chat.started());
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("half a thought");
    REQUIRE(chat.expect("half a thought", kWait));
    chat.type("\x03");
    REQUIRE(chat.expect_prompt(kWait));  // still running, a fresh prompt
    // A message over two lines: a trailing backslash continues it.
    chat.type("first \\\r");
    CHECK(chat.expect("...", kWait));
    chat.type("second\r");
    CHECK(chat.expect(kReplyColour, kWait));
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("\x03");
    CHECK(chat.wait_exit(kWait) == 0);
    const termios t = chat.settings();
    CHECK((t.c_lflag & ICANON) != 0);
    CHECK((t.c_lflag & ECHO) != 0);
}

TEST_CASE("chat pty: Ctrl-D typed while a reply is written leaves at the next prompt") {
    // During a reply the terminal is in its own (canonical) mode, where Ctrl-D is an end-of-file
    // mark rather than a byte; libedit then read it as a NUL and dropped it, and the chat sat at
    // the prompt (a new-user test: 16 of 16 tries).
    PtyChild chat({"./run", kModel, "--chat", "-n", "1500", "-c", "2048", "--temp", "0", "--ignore-eos", "-t", "1"});
    REQUIRE(chat.started());
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("ROMEO:\r");
    REQUIRE(chat.expect(kReplyColour, kWait));
    chat.type("\x04");
    CHECK(chat.wait_exit(15) == 0);
}

TEST_CASE("chat pty: letters beyond ASCII typed at the prompt reach the model, as they do from a pipe") {
    // libedit in the C locale dropped every byte above 0x7F: "héllo" reached the model as "hllo".
    const std::string message = "h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac";  // héllo 日本
    // The context's size after the turn, as /stats reports it: "context: T of C tokens, ...".
    auto tokens_in = [](const std::string& out) {
        const size_t at = out.rfind("context: ");
        return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + 9);
    };
    const CommandResult piped =
        run_command("printf '" + message + "\\n/stats\\n' | ./run " + kModel + " --chat -n 4 --temp 0 -t 1");
    REQUIRE(piped.exit_code == 0);
    const int want = tokens_in(piped.out);
    REQUIRE(want > 0);

    PtyChild chat({"./run", kModel, "--chat", "-n", "4", "--temp", "0", "-t", "1"});
    REQUIRE(chat.started());
    REQUIRE(chat.expect_prompt(kWait));
    chat.type(message + "\r");
    REQUIRE(chat.expect(kReplyColour, kWait));
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("/stats\r");
    REQUIRE(chat.expect(" messages", kWait));
    REQUIRE(chat.expect_prompt(kWait));
    INFO(piped.out << "\n---\n" << chat.output());
    CHECK(tokens_in(chat.output()) == want);
    chat.type("\x04");
    CHECK(chat.wait_exit(kWait) == 0);
}

TEST_CASE("chat pty: SIGTERM or SIGHUP at the prompt ends the chat with the terminal as it was") {
    // libedit's raw mode stayed: no echo, no line editing, no Ctrl-C in the shell after.
    for (int sig : {SIGTERM, SIGHUP}) {
        INFO(strsignal(sig));
        PtyChild chat({"./run", kModel, "--chat", "-n", "4", "-t", "1"});
        REQUIRE(chat.started());
        REQUIRE(chat.expect_prompt(kWait));
        REQUIRE((chat.settings().c_lflag & ICANON) == 0);  // the line editor has the terminal
        chat.send_signal(sig);
        CHECK(chat.wait_exit(kWait) == 128 + sig);
        const termios t = chat.settings();
        CHECK((t.c_lflag & ICANON) != 0);
        CHECK((t.c_lflag & ECHO) != 0);
        CHECK((t.c_lflag & ISIG) != 0);
    }
}

TEST_CASE("chat pty: NO_COLOR turns colour off when it is set and not empty, as no-color.org defines it") {
    for (const std::string value : {"", "1"}) {
        INFO("NO_COLOR='" << value << "'");
        PtyChild chat({"./run", kModel, "--chat", "-n", "4", "-t", "1"}, {{"NO_COLOR", value}});
        REQUIRE(chat.started());
        REQUIRE(chat.expect(">", kWait));
        chat.type("/quit\r");
        CHECK(chat.wait_exit(kWait) == 0);
        const bool coloured = chat.output().find(kPrompt) != std::string::npos;
        CHECK(coloured == value.empty());
    }
}

TEST_CASE("chat pty: -f - reads what is typed at the terminal up to Ctrl-D, as cat and grep -f - do") {
    // It was refused: "/dev/stdin is a character device, not a regular file".
    const CommandResult direct = run_command("./run " + kModel + " --tokenize -p 'ROMEO: Good morrow'");
    REQUIRE(direct.exit_code == 0);
    PtyChild typed({"./run", kModel, "--tokenize", "-f", "-"});
    REQUIRE(typed.started());
    typed.type("ROMEO: Good morrow\n");
    typed.type("\x04");  // Ctrl-D at the start of a line: the end of the text
    CHECK(typed.wait_exit(kWait) == 0);
    // The terminal echoes the typed line, then run prints the ids (the pty turns \n into \r\n).
    std::string ids = direct.out;
    ids.insert(ids.size() - 1, "\r");
    CHECK(typed.output().find(ids) != std::string::npos);
}

TEST_CASE("chat pty: after the terminal is resized, a line wider than the new width is edited on its rows") {
    // editline(3): el_resize "must be called if the terminal size changes" when EL_SIGNAL is not
    // set. It was not: narrowed from 100 columns to 40, a line of 62 characters (two rows there)
    // was still taken for one row, and Ctrl-A moved the cursor along the second row instead of up
    // to the first, so what was typed next overwrote the wrong characters (seen in tmux).
    PtyChild chat({"./run", kModel, "--chat", "-n", "8", "-t", "1"});
    REQUIRE(chat.started());
    REQUIRE(chat.expect_prompt(kWait));
    chat.resize(24, 40);
    // (The resize reaches the child as a signal; give it the time to arrive before typing.)
    usleep(200 * 1000);
    const std::string line(60, 'a');
    chat.type(line.substr(0, 59) + "b");
    REQUIRE(chat.expect("b", kWait));
    chat.type("\x01");  // Ctrl-A: to the start of the line, one row up
    // xterm's cursor-up, cuu1.
    const bool up = chat.expect("\033[A", 5);
    CHECK(up);
    chat.type("\x05\x15");  // to the end, and clear the line
    chat.type("\x04");
    CHECK(chat.wait_exit(kWait) == 0);
}

TEST_CASE("chat pty: Ctrl-Z at the prompt suspends the chat with the terminal as it was, and fg brings it back") {
    // The terminal's Ctrl-Z (susp) suspends a foreground job, at bash's, python's or any readline
    // program's prompt. libedit reads the line with isig off, so the key reached it as a byte,
    // bound to nothing that stops: Ctrl-Z did nothing (seen in tmux under bash).
    PtyChild chat({"./run", kModel, "--chat", "-n", "4", "-t", "1"}, {}, true);
    REQUIRE(chat.started());
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("ROMEO");
    REQUIRE(chat.expect("ROMEO", kWait));
    chat.type("\x1a");
    REQUIRE(chat.expect("[stopped]", 10));
    // While it is stopped the shell has the terminal as it was: canonical, with echo.
    const termios t = chat.settings();
    CHECK((t.c_lflag & ICANON) != 0);
    CHECK((t.c_lflag & ECHO) != 0);
    chat.type("\n");                     // fg
    REQUIRE(chat.expect_prompt(kWait));  // the prompt and the line are drawn again, as they were
    REQUIRE(chat.expect("ROMEO", kWait));
    chat.type(":\r");
    CHECK(chat.expect(kReplyColour, kWait));
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("\x04");
    CHECK(chat.wait_exit(kWait) == 0);
}

TEST_CASE("chat pty: a bracketed paste of several lines is one message, sent with Enter") {
    // xterm's bracketed paste (mode 2004, on by default in readline 8.1 and bash 5.1): a program
    // that turns it on gets pasted text between ESC[200~ and ESC[201~ and takes it as text, so
    // that its newlines do not act as Enter. It was not turned on, and a pasted paragraph of
    // three lines was sent as three messages, three replies (seen in tmux).
    PtyChild chat({"./run", kModel, "--chat", "-n", "4", "-t", "1"});
    REQUIRE(chat.started());
    REQUIRE(chat.expect_prompt(kWait));
    CHECK(chat.output().find("\033[?2004h") != std::string::npos);  // turned on while the prompt is read
    chat.type("\033[200~ROMEO:\rWhat light\rbreaks\033[201~");
    REQUIRE(chat.expect("breaks", kWait));
    chat.type("\r");
    REQUIRE(chat.expect(kReplyColour, kWait));
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("/stats\r");
    CHECK(chat.expect("2 messages", kWait));
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("\x04");
    CHECK(chat.wait_exit(kWait) == 0);
    // Off again when it ends, so the shell's paste is not wrapped in what it may not read.
    const size_t on = chat.output().rfind("\033[?2004h"), off = chat.output().rfind("\033[?2004l");
    CHECK((off != std::string::npos && (on == std::string::npos || off > on)));
}

TEST_CASE("chat pty: no colour when TERM is unset, empty or dumb, as git and systemd decide") {
    // git's check_auto_color colours only when TERM is set and not "dumb", systemd's
    // getenv_terminal_is_dumb() says the same, and libedit takes an unset TERM for "dumb" (a
    // terminal whose escape sequences are unknown: an Emacs shell buffer, a serial console).
    // Colour stayed on when TERM was unset.
    for (const std::string& term : {kUnset, std::string(), std::string("dumb")}) {
        INFO("TERM " << (term == kUnset ? std::string("unset") : "'" + term + "'"));
        PtyChild chat({"./run", kModel, "--chat", "-n", "4", "-t", "1"}, {{"TERM", term}});
        REQUIRE(chat.started());
        REQUIRE(chat.expect("> ", kWait));
        chat.type("ROMEO:\r");
        REQUIRE(chat.expect("> ", kWait));
        chat.type("/quit\r");
        CHECK(chat.wait_exit(kWait) == 0);
        INFO(chat.output());
        CHECK(chat.output().find("\033[") == std::string::npos);  // no colour, and no bracketed paste's ESC[?2004h
    }
}

TEST_CASE("chat pty: a message continued with \\ is one history entry: Up recalls all of it, and Enter sends it again") {
    // Each line went into libedit's history by itself: Up brought back only the last line.
    // The message as sent over a pipe, twice: what the recalled one must equal.
    auto tokens_in = [](const std::string& out) {
        const size_t at = out.rfind("context: ");
        return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + 9);
    };
    const std::string chat_args = " --chat -n 4 --temp 0 -t 1";
    const CommandResult piped =
        run_command("printf 'apple \\\\\\nbanana\\napple \\\\\\nbanana\\n/stats\\n' | ./run " + kModel + chat_args);
    REQUIRE(piped.exit_code == 0);
    REQUIRE(piped.out.find(", 4 messages") != std::string::npos);
    const int want = tokens_in(piped.out);

    PtyChild chat({"./run", kModel, "--chat", "-n", "4", "--temp", "0", "-t", "1"});
    REQUIRE(chat.started());
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("apple \\\r");
    REQUIRE(chat.expect("...", kWait));
    chat.type("banana\r");
    REQUIRE(chat.expect(kReplyColour, kWait));
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("\033[A");  // Up
    CHECK(chat.expect("apple", 10));
    chat.type("\r");
    REQUIRE(chat.expect(kReplyColour, kWait));
    REQUIRE(chat.expect_prompt(kWait));
    chat.type("/stats\r");
    REQUIRE(chat.expect(" messages", kWait));
    REQUIRE(chat.expect_prompt(kWait));
    INFO(piped.out << "\n---\n" << chat.output());
    CHECK(tokens_in(chat.output()) == want);
    chat.type("\x04");
    CHECK(chat.wait_exit(kWait) == 0);
}
