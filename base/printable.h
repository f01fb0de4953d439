// Strings taken from a file or a request, made safe to print in a one-line message: control
// characters (C0, DEL and C1, which terminals read as escape sequences and line breaks) and
// bytes that are not valid UTF-8 become \xNN, and the result is cut to a sane length.
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

#include "base/limits.h"

namespace hearth {

// s escaped, at most max_bytes of it shown, "..." marking a cut.
std::string printable(std::string_view s, size_t max_bytes = limits::kShownStringBytes);

// The same, in single quotes: 'text'.
std::string in_quotes(std::string_view s, size_t max_bytes = limits::kShownStringBytes);

// A path in a message: escaped, cut at limits::kShownPathBytes.
inline std::string shown_path(std::string_view path) { return printable(path, limits::kShownPathBytes); }

// A whole message line, as run and quantize print it: one line, escaped, cut at
// limits::kMessageBytes, whatever its parts carried.
inline std::string message_line(std::string_view msg) { return printable(msg, limits::kMessageBytes); }

// Length of the valid UTF-8 character at s[at] (1..4), 0 if s ends inside the valid
// beginning of one, -1 if the byte at s[at] cannot start a valid character there.
int utf8_char_length(std::string_view s, size_t at);

// Where s[at] starts no valid character: the bytes one U+FFFD stands for, Unicode's "maximal
// subpart" (the longest start of a valid character there, else the one byte), as Python's
// decode(errors="replace") and nlohmann-json's replacing writer (llama-server's) count them.
size_t utf8_invalid_length(std::string_view s, size_t at);

// s with A-Z as a-z, whatever the locale: names (types, formats), header values, origins.
std::string ascii_lower(std::string_view s);

// Whether s ends with suffix (C++20's std::string::ends_with).
inline bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Whether s is valid UTF-8 throughout.
bool is_valid_utf8(std::string_view s);

// A model's text (a prompt echoed, a reply) written whole: a token may decode to a NUL byte
// (<0x00>), at which fputs of its c_str() stopped and the rest of the text was lost.
inline void write_text(std::string_view s, std::FILE* to = stdout) { std::fwrite(s.data(), 1, s.size(), to); }

// Flushes stdout and tells whether everything written to it so far arrived: false once a write
// has failed (a full disk, a closed pipe with SIGPIPE ignored, a closed stdout), now or before.
// The first failure's errno is kept for the program's last message (stdout_error).
bool flush_stdout();

// The errno of stdout's first failed write (EIO when the reason is unknown); 0 when none failed.
int stdout_error();

}  // namespace hearth
