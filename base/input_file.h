// The one way hearth reads a small input file whole (JSON, tokenizer files, prompt text):
// after following links it must be a regular file (a FIFO or a terminal is allowed for prompt
// text only, as `-f <(command)` makes one and `-f -` reads what is typed), no larger than its kind's limit (base/limits.h), and
// opening it never blocks. A symlink to /dev/zero, a FIFO nobody writes to or a device in a
// downloaded model folder is refused in one line instead of reading forever or hanging.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hearth {

// What a file is to the file system: the same for every path to it (a symlink, a hard link,
// "./x" and "x"), so that an output can be compared with every input read.
struct FileId {
    uint64_t dev = 0, ino = 0;
    bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino; }
};

// The kinds of small input files, each with its size limit.
enum class InputKind {
    config_json,            // config.json
    tokenizer_config_json,  // tokenizer_config.json
    tokenizer_json,         // tokenizer.json
    safetensors_index,      // model.safetensors.index.json
    sentencepiece_model,    // tokenizer.model
    text,                   // a prompt or a text to score; may be a FIFO
};

// The file's bytes in *out and, when asked, its identity. "" on success, else one line
// naming the path (escaped) and the reason. read_at_most (if not 0 and below the kind's limit):
// a larger file is not an error, its first read_at_most bytes are read, so that a caller with a
// smaller limit of its own (a prompt for its context) can refuse it having read no more.
// A FIFO that no one has opened for writing is waited for, up to limits::kFifoWriterWaitSeconds.
std::string read_input_file(const std::string& path, InputKind kind, std::string* out, FileId* id = nullptr,
                            uint64_t read_at_most = 0);

// A Git LFS pointer: the small text file a clone made without git-lfs holds in place of a large
// file (Hugging Face repositories keep weights, tokenizer.model and often tokenizer.json so).
// Git LFS's spec (docs/spec.md): under 1024 bytes, and the first line is the version key,
// "version https://git-lfs.github.com/spec/v1". Readers refuse one by name, with the fix, rather
// than report it as a damaged file of the format they expected.
constexpr uint64_t kGitLfsPointerMaxBytes = 1023;
bool is_git_lfs_pointer(const void* data, uint64_t size);
std::string git_lfs_pointer_error(const std::string& shown);  // the one line that says so, of the file named `shown`

// As read_input_file, for standard input (a program's operand "-"): read through /dev/stdin, so
// that a regular file, a pipe or a terminal behind it is taken as its path would be, and named
// "standard input" in messages, not by that path. A closed standard input (`<&-`) is an error,
// EBADF as `cat - <&-` says, not the /dev/null a program may have put in its place.
std::string read_standard_input(InputKind kind, std::string* out, uint64_t read_at_most = 0);

// The identity of the file a path names now (following links); false when there is none.
bool file_id_of(const std::string& path, FileId* id);

// Opens a file to read it without blocking on a FIFO or a device: the descriptor, or -1 with
// *why set. Only regular files are accepted (after following links).
int open_regular_file(const std::string& path, std::string* why, FileId* id = nullptr, uint64_t* size = nullptr);

}  // namespace hearth
