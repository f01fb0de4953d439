#include "base/input_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/limits.h"
#include "base/platform.h"
#include "base/printable.h"

namespace hearth {

namespace {

struct KindRow {
    InputKind kind;
    const char* what;
    uint64_t max_bytes;
    bool fifo_allowed;
};
const KindRow kKinds[] = {
    {InputKind::config_json, "config.json", limits::kConfigJsonBytes, false},
    {InputKind::tokenizer_config_json, "tokenizer_config.json", limits::kTokenizerConfigJsonBytes, false},
    {InputKind::tokenizer_json, "tokenizer.json", limits::kTokenizerJsonBytes, false},
    {InputKind::safetensors_index, "safetensors index", limits::kSafetensorsIndexBytes, false},
    {InputKind::sentencepiece_model, "SentencePiece model", limits::kSentencePieceModelBytes, false},
    {InputKind::text, "text file", limits::kTextFileBytes, true},
};

const KindRow& row_of(InputKind kind) {
    for (const KindRow& r : kKinds)
        if (r.kind == kind) return r;
    return kKinds[0];
}

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }
std::string bytes_text(uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

// O_NONBLOCK: opening a FIFO without a writer, or some devices, would otherwise wait forever.
// shown: the file's name in messages.
int open_nonblocking(const std::string& path, const std::string& shown, std::string* why, struct stat* st) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        *why = "cannot open " + shown + ": " + std::strerror(errno);
        return -1;
    }
    if (fstat(fd, st) != 0) {
        *why = "cannot read " + shown + ": " + std::strerror(errno);
        ::close(fd);
        return -1;
    }
    return fd;
}

const char* file_kind_name(mode_t mode) {
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

}  // namespace

bool file_id_of(const std::string& path, FileId* id) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return false;
    *id = {uint64_t(st.st_dev), uint64_t(st.st_ino)};
    return true;
}

int open_regular_file(const std::string& path, std::string* why, FileId* id, uint64_t* size) {
    struct stat st;
    const int fd = open_nonblocking(path, shown_path(path), why, &st);
    if (fd < 0) return -1;
    if (!S_ISREG(st.st_mode)) {
        *why = shown_path(path) + " is " + file_kind_name(st.st_mode) + ", not a regular file";
        ::close(fd);
        return -1;
    }
    if (id) *id = {uint64_t(st.st_dev), uint64_t(st.st_ino)};
    if (size) *size = uint64_t(st.st_size);
    return fd;
}

bool is_git_lfs_pointer(const void* data, uint64_t size) {
    static const char kVersionLine[] = "version https://git-lfs.github.com/spec/v1\n";
    const uint64_t n = sizeof kVersionLine - 1;
    return size >= n && size <= kGitLfsPointerMaxBytes && std::memcmp(data, kVersionLine, n) == 0;
}

std::string git_lfs_pointer_error(const std::string& shown) {
    return shown +
           " is a Git LFS pointer, not the file it stands for: the repository was cloned without git-lfs (run `git lfs "
           "pull` in it, or download the file)";
}

namespace {

// read_input_file, with the name messages give the file.
std::string read_file(const std::string& path, const std::string& shown, InputKind kind, std::string* out, FileId* id,
                      uint64_t read_at_most) {
    const KindRow& row = row_of(kind);
    const bool cut = read_at_most > 0 && read_at_most <= row.max_bytes;
    out->clear();
    std::string why;
    struct stat st;
    const int fd = open_nonblocking(path, shown, &why, &st);
    if (fd < 0) return why;
    const bool fifo = S_ISFIFO(st.st_mode);
    // A terminal, for text (`run -f -` typed at it, ended by Ctrl-D), as cat and grep -f - read it.
    const bool terminal = S_ISCHR(st.st_mode) && row.fifo_allowed && isatty(fd);
    if (!S_ISREG(st.st_mode) && !(fifo && row.fifo_allowed) && !terminal) {
        ::close(fd);
        return shown + " is " + file_kind_name(st.st_mode) + ", not a regular file (a " + row.what + " must be one)";
    }
    if (uint64_t(st.st_size) > row.max_bytes && !cut) {
        ::close(fd);
        return shown + " is " + bytes_text(uint64_t(st.st_size)) + ", more than a " + row.what + " may have (" +
               mib(row.max_bytes) + ")";
    }
    // A FIFO's writer may not have written yet, a person may not have typed: from here on, reads
    // may wait for them.
    if (fifo || terminal) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (id) *id = {uint64_t(st.st_dev), uint64_t(st.st_ino)};
    out->reserve(size_t(cut ? std::min(read_at_most, uint64_t(st.st_size)) : uint64_t(st.st_size)));
    char buf[1 << 16];
    bool waited = false;
    for (;;) {
        const size_t want = cut ? size_t(std::min(uint64_t(sizeof buf), read_at_most - out->size())) : sizeof buf;
        if (want == 0) break;
        const ssize_t n = ::read(fd, buf, want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            why = shown + ": cannot read it: " + std::strerror(errno);
            break;
        }
        if (n == 0 && fifo && out->empty() && !waited) {
            // End of file at once: either a writer came and went without a byte (an empty text),
            // or none has opened the FIFO yet (`run -f fifo &` before `echo ... > fifo`). Only in
            // the second case does poll wait: it reports a hang-up for a writer that has gone.
            waited = true;
            pollfd p = {fd, POLLIN, 0};
            int r;
            while ((r = poll(&p, 1, limits::kFifoWriterWaitSeconds * 1000)) < 0 && errno == EINTR) {}
            if (r == 0) {
                why = shown + " is a FIFO that no one opened for writing within " +
                      std::to_string(limits::kFifoWriterWaitSeconds) + " s";
                break;
            }
            continue;
        }
        if (n == 0) break;
        // A file may grow while it is read, and a FIFO states no size: the limit holds anyway.
        if (out->size() + size_t(n) > row.max_bytes) {
            why = shown + " holds more than a " + row.what + " may have (" + mib(row.max_bytes) + ")";
            break;
        }
        out->append(buf, size_t(n));
    }
    ::close(fd);
    if (why.empty() && kind != InputKind::text && is_git_lfs_pointer(out->data(), out->size()))
        why = git_lfs_pointer_error(shown);
    if (!why.empty()) out->clear();
    return why;
}

}  // namespace

std::string read_input_file(const std::string& path, InputKind kind, std::string* out, FileId* id, uint64_t read_at_most) {
    return read_file(path, shown_path(path), kind, out, id, read_at_most);
}

std::string read_standard_input(InputKind kind, std::string* out, uint64_t read_at_most) {
    out->clear();
    if (standard_input_unreadable())
        return "cannot read standard input: " + std::string(std::strerror(EBADF)) + " (it is closed, or not open for reading)";
    return read_file("/dev/stdin", "standard input", kind, out, nullptr, read_at_most);
}

}  // namespace hearth
