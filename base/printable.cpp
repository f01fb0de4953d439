#include "base/printable.h"

#include <cerrno>

namespace hearth {

int utf8_char_length(std::string_view s, size_t at) {
    const unsigned char c = s[at];
    int len;
    unsigned lo = 0x80, hi = 0xbf;  // allowed range of the second byte
    if (c < 0x80)
        return 1;
    else if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c == 0xe0) {
        len = 3;
        lo = 0xa0;
    } else if (c == 0xed) {
        len = 3;
        hi = 0x9f;
    }  // no surrogates
    else if (c >= 0xe1 && c <= 0xef)
        len = 3;
    else if (c == 0xf0) {
        len = 4;
        lo = 0x90;
    } else if (c >= 0xf1 && c <= 0xf3)
        len = 4;
    else if (c == 0xf4) {
        len = 4;
        hi = 0x8f;
    } else
        return -1;
    for (int i = 1; i < len; i++) {
        if (at + i >= s.size()) return 0;
        const unsigned char b = s[at + i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf)) return -1;
    }
    return len;
}

size_t utf8_invalid_length(std::string_view s, size_t at) {
    // The longest prefix of s[at..] that utf8_char_length calls the valid beginning of one.
    size_t n = 1;
    while (at + n < s.size() && n < 4 && utf8_char_length(s.substr(at, n + 1), 0) == 0) n++;
    return n;
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return out;
}

bool is_valid_utf8(std::string_view s) {
    for (size_t at = 0; at < s.size();) {
        const int len = utf8_char_length(s, at);
        if (len <= 0) return false;
        at += size_t(len);
    }
    return true;
}

std::string printable(std::string_view s, size_t max_bytes) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    size_t at = 0;
    while (at < s.size() && out.size() < max_bytes) {
        const unsigned char c = s[at];
        const int len = utf8_char_length(s, at);
        // C1 controls are U+0080..U+009F: 0xc2 0x80..0x9f in UTF-8.
        const bool c1 = len == 2 && c == 0xc2 && static_cast<unsigned char>(s[at + 1]) < 0xa0;
        if (len <= 0 || c < 0x20 || c == 0x7f || c1) {
            for (int i = 0; i < (c1 ? 2 : 1); i++) {
                const unsigned char b = s[at + size_t(i)];
                out += "\\x";
                out += hex[b >> 4];
                out += hex[b & 15];
            }
            at += c1 ? 2 : 1;
        } else {
            out.append(s, at, size_t(len));
            at += size_t(len);
        }
    }
    if (at < s.size()) out += "...";
    return out;
}

std::string in_quotes(std::string_view s, size_t max_bytes) { return "'" + printable(s, max_bytes) + "'"; }

namespace {
int first_stdout_errno = 0;
}

bool flush_stdout() {
    // A failed fwrite set errno and stdout's error flag; a later fflush may then find nothing to
    // write and succeed: the flag is what tells.
    const bool flushed = std::fflush(stdout) == 0;
    if (flushed && !std::ferror(stdout)) return true;
    if (!first_stdout_errno) first_stdout_errno = errno ? errno : EIO;
    return false;
}

int stdout_error() {
    if (!first_stdout_errno && std::ferror(stdout)) first_stdout_errno = EIO;
    return first_stdout_errno;
}

}  // namespace hearth
