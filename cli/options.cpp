#include "cli/options.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "base/printable.h"

namespace hearth {

namespace {

// The commit, as the Makefile writes it (git describe).
const char kVersion[] =
#include "build/version.inc"
    ;

enum class Kind { flag, integer, real, text };

Kind kind_of(const Option& o) {
    if (std::holds_alternative<bool*>(o.target)) return Kind::flag;
    if (std::holds_alternative<float*>(o.target)) return Kind::real;
    if (std::holds_alternative<std::string*>(o.target)) return Kind::text;
    return Kind::integer;
}

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::flag: return "flag";
        case Kind::integer: return "integer";
        case Kind::real: return "real";
        case Kind::text: return "text";
    }
    return "";
}

std::string real_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

// The accepted range as --list-options and the error messages write it.
std::string min_text(const Option& o) {
    // A uint64_t's range is all of its own: -1, when it means the default, is the least it takes.
    if (std::holds_alternative<uint64_t*>(o.target)) return o.minus_one == MinusOne::means_default ? "-1" : "0";
    return kind_of(o) == Kind::integer ? std::to_string((long long)o.min) : real_text(o.min);
}
std::string max_text(const Option& o) {
    if (std::holds_alternative<uint64_t*>(o.target)) return std::to_string(std::numeric_limits<uint64_t>::max());
    return kind_of(o) == Kind::integer ? std::to_string((long long)o.max) : real_text(o.max);
}

// What the option wants, for an error message.
std::string expected(const Option& o) {
    switch (kind_of(o)) {
        case Kind::integer:
            return "an integer from " + (std::holds_alternative<uint64_t*>(o.target) ? "0" : min_text(o)) + " to " + max_text(o) +
                   (o.minus_one == MinusOne::means_default ? ", or -1" : "");
        case Kind::real: return "a number from " + min_text(o) + " to " + max_text(o);
        default: return o.value_name;
    }
}

// --help's "(default: ...)": the table's words, or else a number's value before parsing.
std::string default_shown(const Option& o) {
    if (!o.default_shown.empty()) return o.default_shown;
    if (auto p = std::get_if<int*>(&o.target)) return std::to_string(**p);
    if (auto p = std::get_if<uint64_t*>(&o.target)) return std::to_string(**p);
    if (auto p = std::get_if<float*>(&o.target)) return real_text(double(**p));
    return "";
}

// Strict: the whole argument must be a number in range, else nothing is set.
bool set_value(const Option& o, const char* v) {
    char* end = nullptr;
    errno = 0;
    if (auto p = std::get_if<int*>(&o.target)) {
        const long long x = std::strtoll(v, &end, 10);
        if (errno || end == v || *end || x < o.min || x > o.max) return false;
        **p = int(x);
    } else if (auto p = std::get_if<uint64_t*>(&o.target)) {
        const unsigned long long x = std::strtoull(v, &end, 10);
        if (errno || end == v || *end || std::strchr(v, '-')) return false;  // strtoull wraps "-1" around
        **p = x;
    } else if (auto p = std::get_if<float*>(&o.target)) {
        const float x = std::strtof(v, &end);
        if (errno || end == v || *end || !(x >= float(o.min) && x <= float(o.max))) return false;
        **p = x;
    } else if (auto p = std::get_if<std::string*>(&o.target)) {
        **p = v;
    }
    return true;
}

const size_t kHelpColumn = 27, kHelpWidth = 100;

// The words of `text`, written from `column` on and wrapped at kHelpWidth; each line after the
// first starts at `indent`.
std::string wrap_words(const std::string& text, size_t column, size_t indent) {
    std::string out;
    bool line_start = true;
    for (size_t at = 0; at < text.size();) {
        size_t space = text.find(' ', at);
        if (space == std::string::npos) space = text.size();
        const std::string word = text.substr(at, space - at);
        if (!line_start && column + 1 + word.size() > kHelpWidth) {
            out += "\n" + std::string(indent, ' ');
            column = indent;
            line_start = true;
        }
        if (!line_start) {
            out += ' ';
            column++;
        }
        out += word;
        column += word.size();
        line_start = false;
        at = space + 1;
    }
    return out + "\n";
}

// One option's lines of --help: names and value, then the help text wrapped into its column.
std::string help_lines(const std::string& names, const std::string& text) {
    std::string out = names;
    size_t column = out.size();
    if (column + 1 > kHelpColumn) {
        out += "\n";
        column = 0;
    }
    return out + std::string(kHelpColumn - column, ' ') + wrap_words(text, kHelpColumn, kHelpColumn);
}

std::string help_text(const CommandLine& cl, const std::vector<std::string>& defaults) {
    std::string out = cl.usage + "\n";
    size_t n = 0;
    for (const OptionSection& s : cl.sections) {
        if (!s.title.empty()) out += s.title + ":\n";
        for (const Option& o : s.options) {
            std::string names = std::string("  ") + (*o.short_name ? std::string(o.short_name) + ", " : "    ") + o.long_name;
            if (*o.value_name) names += std::string(" ") + o.value_name;
            const std::string& d = defaults[n++];
            const std::string minus_one = o.minus_one == MinusOne::means_default ? ", or -1" : "";
            out += help_lines(names, o.help + (d.empty() ? "" : " (default" + minus_one + ": " + d + ")"));
        }
        out += "\n";
    }
    out += help_lines("  -h, --help", "this text");
    out += help_lines("      --version", "the commit these programs were built from");
    out += "\n" + wrap_words(
                      "An option given more than once takes its last value. A long option's value may also follow an = "
                      "sign" +
                          (cl.equals_examples.empty() ? std::string() : " (" + cl.equals_examples + ")") +
                          ", and -- ends the options: the arguments after it are never options, even those that begin "
                          "with - (a file named -x.hearth).",
                      0, 0);
    if (!cl.epilogue.empty()) out += "\n" + cl.epilogue;
    return out;
}

// --help, --version and --list-options: their text on stdout, and the exit code 0; 1 with a
// line on stderr when stdout cannot take it (closed, a full disk), as coreutils' --help does.
int print_text(const std::string& program, const std::string& text) {
    if (std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0) return 0;
    const int err = errno ? errno : EIO;
    std::fprintf(stderr, "%s: cannot write the output: %s\n", program.c_str(), std::strerror(err));
    std::clearerr(stdout);  // said here: a program's own check at exit has nothing more to say
    return 1;
}

}  // namespace

bool Arguments::was_given(const std::string& long_name) const {
    for (const std::string& g : given)
        if (g == long_name) return true;
    return false;
}

std::vector<const Option*> options_without_effect(const CommandLine& cl, const Arguments& args, unsigned mode) {
    std::vector<const Option*> out;
    for (size_t i = 0; i < args.given.size(); i++) {
        if (std::find(args.given.begin(), args.given.begin() + i, args.given[i]) != args.given.begin() + i) continue;
        for (const OptionSection& s : cl.sections)
            for (const Option& o : s.options)
                if (args.given[i] == o.long_name && o.modes != 0 && (o.modes & mode) == 0) out.push_back(&o);
    }
    return out;
}

int parse_command_line(const CommandLine& cl, int argc, char** argv, Arguments* args) {
    // The defaults --help shows are the values before any option has set them; an option whose
    // -1 means its default goes back to its value before (a seed from the clock, as llama.cpp's -1).
    std::vector<std::string> defaults;
    std::vector<std::pair<const Option*, uint64_t>> before;
    for (const OptionSection& s : cl.sections)
        for (const Option& o : s.options) {
            defaults.push_back(default_shown(o));
            if (o.minus_one != MinusOne::means_default) continue;
            if (auto p = std::get_if<uint64_t*>(&o.target)) before.push_back({&o, **p});
            if (auto p = std::get_if<int*>(&o.target)) before.push_back({&o, uint64_t(**p)});
        }
    auto fail = [&](const std::string& msg) {
        std::fprintf(stderr, "%s: %s\n", cl.program.c_str(), message_line(msg).c_str());
        return 1;
    };

    bool options_ended = false;  // after "--", every argument is positional (POSIX's guideline 10)
    for (int i = 1; i < argc; i++) {
        const std::string arg = argv[i];
        if (options_ended || arg.size() < 2 || arg[0] != '-') {  // "-" alone is a file name too (stdin's, by custom)
            args->positional.push_back(arg);
            continue;
        }
        if (arg == "--") {
            options_ended = true;
            continue;
        }
        // --name=VALUE, as GNU getopt_long takes it: only long options, and the value is all after
        // the first '=' (it may be empty, or hold more '='). A short option has no attached form:
        // "-n=5" would give -n the value "=5" in getopt, which is never what was meant.
        const size_t eq = arg.find('=');
        const bool long_form = arg.compare(0, 2, "--") == 0;
        if (eq != std::string::npos && !long_form) {
            const std::string name = arg.substr(0, eq);
            std::string long_name;
            for (const OptionSection& s : cl.sections)
                for (const Option& o : s.options)
                    if (name == o.short_name) long_name = o.long_name;
            if (long_name.empty()) return fail("unknown option " + arg + " (see --help)");
            return fail(arg + ": only a long option takes =VALUE; write " + name + " " + arg.substr(eq + 1) + " or " + long_name +
                        "=" + arg.substr(eq + 1));
        }
        const std::string a = eq == std::string::npos ? arg : arg.substr(0, eq);
        const bool attached = eq != std::string::npos;
        if (attached && (a == "--help" || a == "--version" || a == "--list-options"))
            return fail("option " + a + " takes no value (" + arg + ")");
        if (a == "-h" || a == "--help") return print_text(cl.program, help_text(cl, defaults));
        if (a == "--version") return print_text(cl.program, cl.program + " (hearth) " + kVersion + "\n");
        if (a == "--list-options") {
            std::string out;
            for (const OptionSection& s : cl.sections)
                for (const Option& o : s.options) {
                    const Kind k = kind_of(o);
                    out += std::string(o.long_name) + " " + (*o.short_name ? o.short_name : "-") + " " + kind_name(k);
                    if (k == Kind::integer || k == Kind::real) out += " " + min_text(o) + " " + max_text(o);
                    out += "\n";
                }
            return print_text(cl.program, out);
        }
        const Option* found = nullptr;
        for (const OptionSection& s : cl.sections)
            for (const Option& o : s.options)
                if (a == o.long_name || a == o.short_name) found = &o;
        if (!found) return fail("unknown option " + arg + " (see --help)");
        args->given.push_back(found->long_name);
        if (auto p = std::get_if<bool*>(&found->target)) {
            if (attached) return fail("option " + a + " takes no value (" + arg + ")");
            **p = true;
            continue;
        }
        if (!attached && i + 1 >= argc) return fail(a + " needs a value: " + expected(*found));
        const std::string v = attached ? arg.substr(eq + 1) : std::string(argv[++i]);
        if (found->minus_one == MinusOne::means_default && v == "-1") {
            for (const auto& [option, value] : before)
                if (option == found) {
                    if (auto p = std::get_if<uint64_t*>(&found->target)) **p = value;
                    if (auto p = std::get_if<int*>(&found->target)) **p = int(value);
                }
            continue;
        }
        if (!set_value(*found, v.c_str()))
            return fail("invalid value '" + v + "' for " + a + " (expected " + expected(*found) + ")");
    }
    return -1;
}

}  // namespace hearth
