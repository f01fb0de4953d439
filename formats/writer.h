// Writes a model file — a hearth v2 checkpoint or a GGUF v3 file — to a temporary file beside
// the target (OUTPUT.partial-XXXXXX, created exclusively under an unpredictable name) and
// renames it into place only when every byte is written and flushed to the disk: a failed or
// interrupted run leaves nothing half-written, and never touches an existing file of the
// same name until it succeeds.
//
// The two formats differ only before the tensor data and in the alignment between tensors
// (docs/format.md); the data itself, each tensor's blocks as they are, is streamed the same way.
//   hearth v2: 64-byte header, metadata, 128-byte table entries, data aligned to 64
//   GGUF v3:   "GGUF", version, counts, metadata, tensor infos, data aligned to 32
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "formats/hearth.h"
#include "formats/metadata.h"

namespace hearth {

enum class CheckpointFormat { hearth, gguf };

// "hearth" or "gguf" (case-insensitive); false for anything else.
bool parse_checkpoint_format(const std::string& name, CheckpointFormat* out);
const char* checkpoint_format_name(CheckpointFormat format);
// The format a path's extension asks for: gguf for ".gguf" (any case), else hearth.
CheckpointFormat checkpoint_format_for_path(const std::string& path);

struct TensorSpec {
    std::string name;
    uint32_t type = 0;
    Layout layout = Layout::rows;  // rows_x8 only in hearth files (format.h, hearth_type_id)
    int n_dims = 0;
    uint64_t shape[kMaxDims] = {1, 1, 1, 1};  // outermost first, as everywhere in hearth
};

class CheckpointWriter {
public:
    CheckpointWriter() = default;
    CheckpointWriter(const CheckpointWriter&) = delete;
    CheckpointWriter& operator=(const CheckpointWriter&) = delete;
    ~CheckpointWriter();  // removes the temporary file unless commit() succeeded

    // Lays out the file and writes everything before the tensor data: the metadata as given
    // (model/config.h, model/tokenizer_metadata.h build it) and the tensor table or infos.
    // "" on success.
    std::string open(const std::string& path, CheckpointFormat format, const Metadata& meta,
                     const std::vector<TensorSpec>& tensors);
    // Appends bytes of the tensor data, in table order; padding is added between tensors.
    std::string write(const void* data, size_t bytes);
    // Checks that every tensor is complete, pads the end as the format wants, flushes, and
    // renames into place — but first hands the finished temporary file to `check` (when
    // given), and on its error removes the file and returns that error: quantize asks its
    // output to pass the checks run applies (check_model_file), so that it never leaves a
    // file run refuses.
    std::string commit(const std::function<std::string(const std::string& path)>& check = nullptr);

    uint64_t file_bytes() const { return file_bytes_; }

private:
    // Where a tensor's bytes go, from the start of the file.
    struct Placement {
        uint64_t offset, bytes;
    };
    std::string fail(const std::string& why);
    std::string pad_to(uint64_t offset);
    std::string path_, tmp_path_;
    FILE* f_ = nullptr;
    std::vector<Placement> placements_;
    size_t current_ = 0;       // tensor being written
    uint64_t written_ = 0;     // bytes of it written so far
    uint64_t at_ = 0;          // bytes of the file written so far
    uint64_t file_bytes_ = 0;  // the file's size when complete
    bool committed_ = false;
};

// Removes every temporary checkpoint file still open; safe to call from a signal handler.
void remove_unfinished_checkpoints();

}  // namespace hearth
