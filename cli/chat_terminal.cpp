#include "cli/chat_terminal.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <clocale>
#include <cstring>
#include <langinfo.h>
#include <termios.h>
#include <unistd.h>

// histedit.h declares a `Tokenizer` type of its own (its word splitter, unused here).
#define Tokenizer histedit_Tokenizer
#include <histedit.h>
#undef Tokenizer

#include "base/limits.h"
#include "base/printable.h"
#include "chat/chat_session.h"
#include "chat/chat_template.h"
#include "model/forward.h"
#include "tokenizer/tokenizer.h"

namespace hearth {

namespace {

// Set by Ctrl-C (SIGINT, or the key while a line is edited) and nothing else: a handler may
// only touch a sig_atomic_t. The reply loop polls it between tokens and prompt chunks; the line
// reader after el_gets.
volatile sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) { g_interrupted = 1; }

// SIGTERM or SIGHUP ends the chat where it stands: the terminal gets back the settings it had
// (libedit's raw mode left it without echo or line editing) and the colour is reset, then the
// signal ends the process as it would have. Only async-signal-safe calls here.
termios g_terminal_before;
volatile sig_atomic_t g_terminal_saved = 0, g_colour = 0;
// The descriptor on which bracketed paste is on while a prompt is read (0: off), and the codes
// that turn it on and off (xterm's mode 2004).
volatile sig_atomic_t g_bracketed_paste = 0;
const char kPasteOn[] = "\033[?2004h", kPasteOff[] = "\033[?2004l";
extern "C" void on_ending_signal(int sig) {
    static const char reset[] = "\033[0m\n";
    if (g_colour) (void)!write(STDOUT_FILENO, reset, sizeof reset - 1);
    if (g_bracketed_paste) (void)!write(g_bracketed_paste, kPasteOff, sizeof kPasteOff - 1);
    if (g_terminal_saved) tcsetattr(STDIN_FILENO, TCSANOW, &g_terminal_before);
    signal(sig, SIG_DFL);
    raise(sig);
}

// The editor while a LineReader has one, for on_window_change. A resized terminal sends SIGWINCH;
// libedit, without EL_SIGNAL (which would also take over SIGINT, SIGTERM and SIGHUP, handled
// here), learns the new width only from el_resize, "the responsibility of the application"
// (editline(3)). Without it a line longer than the new width was redrawn as if it still fitted
// on one row: Home, Ctrl-A or a history recall wrote over the wrong row. The handler calls
// el_resize itself, as libedit's own SIGWINCH handler does.
EditLine* volatile g_editor = nullptr;
extern "C" void on_window_change(int) {
    const int saved = errno;
    if (EditLine* el = g_editor) el_resize(el);
    errno = saved;
}

// The chat's commands: what a line that begins with / does, and /help's list, both read this
// table. /clear and /exit are llama-cli's names for /reset and /quit.
struct ChatCommand {
    const char* name;
    const char* alias;     // another name for it, or ""
    const char* argument;  // "" when it takes none; else its argument as /help writes it
    const char* help;
};
const ChatCommand kCommands[] = {
    {"/help", "", "", "this text"},
    {"/reset", "/clear", "", "forget the conversation (the system prompt stays)"},
    {"/system", "", "[TEXT]", "set the system prompt (the next reply re-evaluates what changed); without TEXT, show it"},
    {"/stats", "", "", "tokens in the context, the last reply's speed"},
    {"/quit", "/exit", "", "leave (so do Ctrl-D and Ctrl-C at an empty prompt)"},
};

// The command named `word` (its name or its alias), or nullptr.
const ChatCommand* find_command(const std::string& word) {
    for (const ChatCommand& c : kCommands)
        if (word == c.name || (*c.alias && word == c.alias)) return &c;
    return nullptr;
}

std::string help_text() {
    std::string out =
        "Type a message and press Enter; end a line with \\ to continue the message on the next line\n"
        "(pasted lines stay one message).\n";
    for (const ChatCommand& c : kCommands) {
        std::string names = std::string("  ") + c.name + (*c.argument ? std::string(" ") + c.argument : "");
        if (*c.alias) names += std::string(", ") + c.alias;
        out += names + std::string(names.size() < 20 ? 20 - names.size() : 1, ' ') + c.help + "\n";
    }
    return out +
           "Ctrl-C during a reply stops it; what was written stays in the conversation.\n"
           "Start a message with // to send one that begins with /.\n";
}

// ANSI colours, used only when stdout is a terminal.
const char* kReplyColour = "\033[36m";  // cyan
const char* kReset = "\033[0m";

enum class Input { message, end, cancelled };

// libedit takes multibyte characters only in a locale whose characters are UTF-8; in the C
// locale a program starts in, it dropped every byte above 0x7F ("héllo" reached the model as
// "hllo", and 日本 as nothing). The environment's locale, or C.UTF-8 when that is not UTF-8:
// the text is UTF-8 whatever the terminal says (the tokenizers take nothing else).
void use_utf8_characters() {
    const char* l = std::setlocale(LC_CTYPE, "");
    if (!l || std::strcmp(nl_langinfo(CODESET), "UTF-8") != 0) std::setlocale(LC_CTYPE, "C.UTF-8");
}

// A terminal whose escape sequences are unknown: TERM unset, empty or "dumb". libedit takes an
// unset TERM for "dumb", and git (check_auto_color) and systemd (getenv_terminal_is_dumb) write
// no colour to either: an Emacs shell buffer, a serial console, a service's log.
bool terminal_is_dumb() {
    const char* term = std::getenv("TERM");
    return !term || !*term || std::strcmp(term, "dumb") == 0;
}

// Reads one message: with libedit when stdin is a terminal, else line by line. A line
// ending in a backslash continues on the next.
class LineReader {
public:
    LineReader(bool terminal, bool colour) : terminal_(terminal) {
        if (!terminal_) return;
        use_utf8_characters();
        prompt_ = colour ? "\1\033[1;32m\1>\1\033[0m\1 " : "> ";
        continuation_ = colour ? "\1\033[1;32m\1...\1\033[0m\1 " : "... ";
        // Echo and prompts go to stdout when it is the terminal, else to stderr, so that
        // `run --chat > file` still shows what is typed.
        el_ = el_init("hearth", stdin, isatty(STDOUT_FILENO) ? stdout : stderr, stderr);
        el_set(el_, EL_CLIENTDATA, this);
        el_set(el_, EL_PROMPT_ESC, &LineReader::prompt, '\1');  // \1 brackets the invisible colour codes
        el_set(el_, EL_EDITOR, "emacs");
        // Ctrl-C while a line is edited is a key bound to on_ctrl_c, not a signal: as a signal
        // it could come while libedit drew the line instead of waiting in read(), and then no
        // read() was interrupted and the Ctrl-C waited for the next key. (Replies are written
        // with the terminal's own settings, where Ctrl-C is SIGINT again.)
        el_set(el_, EL_SETTY, "-d", "-isig", nullptr);
        // (el_wset: el_set would copy the two strings to wide ones that libedit never frees.)
        el_wset(el_, EL_ADDFN, L"hearth-ctrl-c", L"cancel the line; leave at an empty prompt", &LineReader::on_ctrl_c);
        el_set(el_, EL_BIND, "^C", "hearth-ctrl-c", nullptr);
        // A Ctrl-D typed while a reply was written, in the terminal's own canonical mode, is an
        // end-of-file mark there, not a byte; once libedit switches to its raw mode the mark
        // reads as a NUL (^@, emacs's set-mark) and was dropped. At an empty prompt it leaves.
        el_wset(el_, EL_ADDFN, L"hearth-typed-ahead-eof", L"leave at an empty prompt (a Ctrl-D typed during a reply)",
                &LineReader::on_typed_ahead_eof);
        el_set(el_, EL_BIND, "^@", "hearth-typed-ahead-eof", nullptr);
        // Ctrl-Z: with -isig above it is a key here, not the terminal's suspend, and emacs's
        // binding of it did nothing; the shell's job control suspends a program at its prompt
        // (as bash, python and every readline program do).
        el_wset(el_, EL_ADDFN, L"hearth-ctrl-z", L"suspend, as the terminal's Ctrl-Z does", &LineReader::on_ctrl_z);
        el_set(el_, EL_BIND, "^Z", "hearth-ctrl-z", nullptr);
        // Bracketed paste (xterm's mode 2004, on by default in readline 8.1 and bash 5.1): while
        // the prompt is read, the terminal wraps pasted text in ESC[200~ ... ESC[201~, and the
        // text goes into the line as it is, its newlines included, to be sent with Enter.
        // Without it, every line of a pasted paragraph was sent as a message of its own.
        bracketed_paste_ = !terminal_is_dumb();
        el_wset(el_, EL_ADDFN, L"hearth-paste", L"insert a bracketed paste as it is", &LineReader::on_paste);
        el_set(el_, EL_BIND, "\033[200~", "hearth-paste", nullptr);
        hist_ = history_init();
        HistEvent ev;
        history(hist_, &ev, H_SETSIZE, 1000);
        history(hist_, &ev, H_SETUNIQUE, 1);
        el_set(el_, EL_HIST, history, hist_);
        el_source(el_, nullptr);  // the user's ~/.editrc, as every libedit program reads it
        // SA_RESTART: a resize must not end el_gets's read as an error (libedit would take it
        // for the end of input).
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_window_change;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        g_editor = el_;
        sigaction(SIGWINCH, &sa, &old_winch_);
    }
    // The errno of a read of stdin that failed (0: none), which ended the messages.
    int read_error() const { return read_errno_; }
    ~LineReader() {
        if (el_) {
            sigaction(SIGWINCH, &old_winch_, nullptr);
            g_editor = nullptr;
            el_end(el_);  // restores the terminal's settings
        }
        if (hist_) history_end(hist_);
    }

    Input read(std::string* message) {
        message->clear();
        for (bool first = true;; first = false) {
            current_prompt_ = first ? prompt_ : continuation_;
            std::string line;
            bool eof = false;
            g_interrupted = 0;
            if (terminal_) {
                int count = 0;
                FILE* echo = isatty(STDOUT_FILENO) ? stdout : stderr;
                if (bracketed_paste_) std::fputs(kPasteOn, echo), std::fflush(echo), g_bracketed_paste = fileno(echo);
                const char* got = el_gets(el_, &count);
                if (bracketed_paste_) std::fputs(kPasteOff, echo), std::fflush(echo), g_bracketed_paste = 0;
                if (g_interrupted) {
                    // Ctrl-C (the key, or SIGINT). An empty prompt means "leave";
                    // otherwise the message being typed is discarded.
                    const LineInfo* li = el_line(el_);
                    const bool typed = (got && count > 0) || (li && li->lastchar > li->buffer) || !first;
                    std::fputs("\n", stdout);
                    std::fflush(stdout);
                    if (!typed) return Input::end;
                    return Input::cancelled;
                }
                if (!got || count <= 0)
                    eof = true;
                else
                    line.assign(got, size_t(count));
            } else {
                char* buf = nullptr;
                size_t cap = 0;
                ssize_t n = getline(&buf, &cap, stdin);
                // A read that fails (stdin a folder, an I/O error) ends the chat as an error, as
                // `cat < DIR` says "Is a directory"; Ctrl-C's interrupted read is not one.
                if (n < 0 && std::ferror(stdin) && errno != EINTR && !read_errno_) read_errno_ = errno;
                if (n <= 0)
                    eof = true;
                else
                    line.assign(buf, size_t(n));
                std::free(buf);
            }
            if (eof) {
                if (terminal_ && first) std::fputs("\n", stdout);  // leave the shell's prompt on a line of its own
                // Ctrl-D in the middle of a continued message sends what was typed.
                if (first) return Input::end;
                remember(*message);
                return Input::message;
            }
            while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
            if (!line.empty() && line.back() == '\\') {
                line.pop_back();
                *message += line + "\n";
                continue;
            }
            *message += line;
            remember(*message);
            return Input::message;
        }
    }

private:
    // A message goes into the history whole, as the model gets it: the lines of a message continued
    // with \ are one entry, their backslashes gone, so that Up recalls all of it (as a paste's
    // lines are), and Enter sends it again unchanged.
    void remember(const std::string& message) {
        if (!terminal_ || message.find_first_not_of(" \t\r\n") == std::string::npos) return;
        HistEvent ev;
        history(hist_, &ev, H_ENTER, message.c_str());
    }
    static unsigned char on_ctrl_c(EditLine*, int) {
        g_interrupted = 1;
        return CC_EOF;  // el_gets returns; read() sees g_interrupted and the line as typed
    }
    static unsigned char on_ctrl_z(EditLine* el, int) {
        // The terminal as it was while the job is stopped (the shell gets it cooked, with echo),
        // then libedit's mode again and the line redrawn after fg. SIGTSTP to the process group,
        // as the terminal sends it; ignored, or in an orphaned group, it changes nothing.
        const int paste = g_bracketed_paste;
        if (paste) (void)!write(paste, kPasteOff, sizeof kPasteOff - 1);
        el_set(el, EL_PREP_TERM, 0);
        kill(0, SIGTSTP);
        el_set(el, EL_PREP_TERM, 1);
        if (paste) (void)!write(paste, kPasteOn, sizeof kPasteOn - 1);
        return CC_REDISPLAY;
    }
    static unsigned char on_paste(EditLine* el, int) {
        // The pasted bytes up to ESC[201~, read as libedit reads keys (one read at a time, so
        // nothing of what follows is taken); a line break in them is a newline of the message.
        // At most limits::kChatPasteBytes of it are kept (a paste whose end marker never comes is
        // read to the end of input, not into memory without end); the rest is read and dropped.
        static const std::string end = "\033[201~";
        std::string text, last;  // last: the bytes read last, where the end marker is looked for
        char c;
        while (::read(STDIN_FILENO, &c, 1) == 1) {
            last += c;
            if (last.size() > end.size()) last.erase(0, 1);
            if (text.size() < limits::kChatPasteBytes + end.size()) text += c;
            if (last == end) {
                text.resize(text.size() >= end.size() ? text.size() - end.size() : 0);
                break;
            }
        }
        if (text.size() > limits::kChatPasteBytes) text.resize(limits::kChatPasteBytes);
        std::string line;
        for (size_t i = 0; i < text.size(); ++i) {
            if (text[i] == '\r') {
                line += '\n';
                if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
            } else {
                line += text[i];
            }
        }
        if (!line.empty()) el_insertstr(el, line.c_str());
        return CC_REFRESH;
    }
    static unsigned char on_typed_ahead_eof(EditLine* el, int) {
        const LineInfo* li = el_line(el);
        return li && li->lastchar == li->buffer ? CC_EOF : CC_NORM;
    }
    static char* prompt(EditLine* el) {
        LineReader* self = nullptr;
        el_get(el, EL_CLIENTDATA, &self);
        return const_cast<char*>(self->current_prompt_);
    }

    bool terminal_;
    EditLine* el_ = nullptr;
    History* hist_ = nullptr;
    struct sigaction old_winch_ = {};
    const char* prompt_ = "";
    const char* continuation_ = "";
    const char* current_prompt_ = "";
    int read_errno_ = 0;
    bool bracketed_paste_ = false;
};

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

int run_chat(const Model& model, const Tokenizer& tok, const ChatOptions& opt) {
    std::string why;
    const std::string name = resolve_chat_template(model.config, tok, opt.template_name, &why);
    if (!is_chat_template(name)) {
        std::string names;
        for (const std::string& n : chat_template_names()) names += (names.empty() ? "" : ", ") + n;
        std::fprintf(stderr, "run: unknown chat template %s (built in: %s)\n", in_quotes(name).c_str(), names.c_str());
        return 1;
    }
    RunState state;
    std::string err = make_run_state(model.config, opt.n_ctx, &state, opt.cache_types);
    if (!err.empty()) {
        std::fprintf(stderr, "run: %s\n", message_line(err).c_str());
        return 1;
    }
    ChatSession session(model, tok, state, name);
    // Without --system, the system message the model's Jinja template puts first (Qwen2.5's).
    const std::string default_system = opt.system_prompt.empty() ? default_system_message(model.config, name) : "";
    session.set_system_prompt(default_system.empty() ? opt.system_prompt : default_system);
    session.set_ignore_end_of_turn(opt.ignore_eos);
    session.set_draft(opt.draft);
    Sampler sampler(opt.sampler);

    const bool terminal = isatty(STDIN_FILENO);
    const char* no_colour = std::getenv("NO_COLOR");  // set and not empty, as no-color.org defines it
    const bool colour = isatty(STDOUT_FILENO) && !(no_colour && *no_colour) && !terminal_is_dumb();

    // No SA_RESTART: Ctrl-C must interrupt a blocking read (getline when stdin is not a terminal).
    struct sigaction sa, old_sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    g_terminal_saved = terminal && tcgetattr(STDIN_FILENO, &g_terminal_before) == 0;
    g_colour = colour;
    struct sigaction ending, old_term, old_hup;
    std::memset(&ending, 0, sizeof ending);
    ending.sa_handler = on_ending_signal;
    sigemptyset(&ending.sa_mask);
    sigaction(SIGTERM, &ending, &old_term);
    sigaction(SIGHUP, &ending, &old_hup);
    // A signal the caller ignores (nohup's SIGHUP) stays ignored.
    if (old_term.sa_handler == SIG_IGN) sigaction(SIGTERM, &old_term, nullptr);
    if (old_hup.sa_handler == SIG_IGN) sigaction(SIGHUP, &old_hup, nullptr);

    if (terminal || opt.verbose)
        std::fprintf(stderr, "chat template: %s (%s)%s. /help for commands; Ctrl-D or /quit to leave.\n", name.c_str(),
                     why.c_str(), default_system.empty() ? "" : ", with its default system prompt (/system shows it)");

    ChatCallbacks cb;
    bool wrote_text = false;
    cb.on_text = [&](const std::string& s) {
        if (s.empty()) return;
        write_text(s);
        flush_stdout();
        wrote_text = true;
    };
    // Output that cannot be written (a closed stdout, a full disk) ends the reply and the chat, as
    // for run -p: nobody would read the rest. run's main says why.
    cb.interrupted = [] { return g_interrupted != 0 || std::ferror(stdout) != 0; };
    cb.on_notice = [&](const std::string& s) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s[%s]\n", wrote_text ? "\n" : "", s.c_str());
        wrote_text = false;
    };

    ReplyStats last;
    bool have_last = false;
    int read_errno = 0;
    {
        LineReader reader(terminal, colour);
        for (;;) {
            std::string msg;
            const Input in = reader.read(&msg);
            if (in == Input::end) break;
            if (in == Input::cancelled) continue;
            const std::string cmd = trim(msg);
            if (cmd.empty()) continue;
            if (cmd[0] == '/' && cmd.compare(0, 2, "//") != 0) {
                const size_t space = cmd.find_first_of(" \t\n");
                const std::string word = cmd.substr(0, space), arg = space == std::string::npos ? "" : trim(cmd.substr(space));
                const ChatCommand* command = find_command(word);
                const std::string name = command ? command->name : "";
                if (!command) {
                    std::fprintf(stderr, "[unknown command %s: /help lists them]\n", printable(word).c_str());
                } else if (!arg.empty() && !*command->argument) {
                    // Not done and not sent: "/reset now" may be a typo as much as a message.
                    std::fprintf(stderr, "[%s takes no argument: nothing was done or sent; /help lists the commands]\n",
                                 word.c_str());
                } else if (name == "/quit") {
                    break;
                } else if (name == "/help") {
                    std::fputs(help_text().c_str(), stdout);
                } else if (name == "/reset") {
                    session.reset();
                    std::fprintf(stderr, "[conversation reset%s]\n",
                                 session.system_prompt().empty() ? "" : "; the system prompt stays");
                } else if (name == "/system") {
                    if (arg.empty()) {
                        std::printf("system prompt: %s\n",
                                    session.system_prompt().empty() ? "(none)" : session.system_prompt().c_str());
                    } else {
                        session.set_system_prompt(arg);
                        std::fprintf(stderr, "[system prompt set]\n");
                    }
                } else if (name == "/stats") {
                    // After /reset the cache keeps the last conversation's tokens until the next
                    // prompt (what it shares with them is reused): not the conversation's.
                    if (session.turns().empty() && !session.context().empty())
                        std::printf("context: 0 messages (%zu tokens of the last conversation stay cached, for reuse)\n",
                                    session.context().size());
                    else
                        std::printf("context: %zu of %d tokens, %zu messages\n", session.context().size(), session.n_ctx(),
                                    session.turns().size());
                    if (have_last)
                        std::printf(
                            "last reply: %d tokens, %.1f tok/s; its prompt: %d new tokens evaluated (%d reused), "
                            "first token after %.0f ms\n",
                            last.reply_tokens, last.reply_tokens / std::max(last.reply_seconds, 1e-9), last.prompt_tokens,
                            last.reused_tokens, last.first_token_seconds * 1e3);
                }
                if (!flush_stdout()) break;
                continue;
            }
            if (cmd.compare(0, 2, "//") == 0) msg.erase(0, msg.find('/') + 1);

            if (colour) std::fputs(kReplyColour, stdout);
            wrote_text = false;
            ReplyStats st = session.reply(msg, sampler, opt.n_predict, cb);
            if (colour) std::fputs(kReset, stdout);
            if (wrote_text || st.end == ReplyEnd::end_of_turn || st.end == ReplyEnd::length_limit) std::fputs("\n", stdout);
            if (!flush_stdout()) break;
            switch (st.end) {
                case ReplyEnd::end_of_turn: break;
                case ReplyEnd::length_limit:
                    std::fprintf(stderr, "[reply stopped at the limit of %d tokens (-n)]\n", opt.n_predict);
                    break;
                case ReplyEnd::interrupted: std::fprintf(stderr, "[interrupted]\n"); break;
                case ReplyEnd::cancelled: std::fprintf(stderr, "[interrupted: the message was withdrawn]\n"); break;
                case ReplyEnd::context_full:
                    std::fprintf(stderr, "[reply stopped: this turn alone fills the context of %d tokens (raise -c)]\n",
                                 session.n_ctx());
                    break;
                case ReplyEnd::refused: std::fprintf(stderr, "[%s]\n", message_line(st.error).c_str()); break;
            }
            if (opt.verbose && st.end != ReplyEnd::refused)
                std::fprintf(stderr,
                             "[prompt: %d new tokens (%d reused) in %.0f ms, %.1f tok/s | first token after %.1f ms | "
                             "reply: %d tokens, %.1f tok/s | context %zu/%d%s]\n",
                             st.prompt_tokens, st.reused_tokens, st.prompt_seconds * 1e3,
                             st.prompt_tokens / std::max(st.prompt_seconds, 1e-9), st.first_token_seconds * 1e3, st.reply_tokens,
                             st.reply_tokens / std::max(st.reply_seconds, 1e-9), session.context().size(), session.n_ctx(),
                             opt.draft ? (" | " + draft_summary(st.drafts)).c_str() : "");
            if (st.end != ReplyEnd::refused && st.end != ReplyEnd::cancelled) {
                last = st;
                have_last = true;
            }
        }
        read_errno = reader.read_error();
    }  // the reader's destructor restores the terminal
    if (colour) std::fputs(kReset, stdout);
    std::fflush(stdout);
    sigaction(SIGINT, &old_sa, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    if (read_errno) {
        std::fprintf(stderr, "run: cannot read the messages: %s\n", std::strerror(read_errno));
        return 1;
    }
    return std::ferror(stdout) ? 1 : 0;  // run's main says why
}

}  // namespace hearth
