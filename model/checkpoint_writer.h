// Writes a hearth checkpoint to a temporary file beside the target and renames it into
// place only when every byte is written: a failed or interrupted run leaves nothing
// half-written, and never touches an existing file of the same name until it succeeds.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "config.h"
#include "format.h"

struct TensorSpec {
    std::string name;
    uint32_t type = 0;
    int n_dims = 0;
    uint64_t shape[kMaxDims] = {1, 1, 1, 1};
};

class CheckpointWriter {
public:
    CheckpointWriter() = default;
    CheckpointWriter(const CheckpointWriter&) = delete;
    CheckpointWriter& operator=(const CheckpointWriter&) = delete;
    ~CheckpointWriter();  // removes the temporary file unless commit() succeeded

    // Lays out a version 2 file (model/format.h) and writes everything before the tensor
    // data: the configuration and tokenizer as metadata, and the tensor table. "" on success.
    std::string open(const std::string& path, const ModelConfig& config, const TokenizerSpec& tokenizer,
                     const std::vector<TensorSpec>& tensors);
    // Appends bytes of the tensor data, in table order; padding is added between tensors.
    std::string write(const void* data, size_t bytes);
    // Checks that every tensor is complete, flushes, and renames into place.
    std::string commit();

    uint64_t file_bytes() const { return file_bytes_; }

private:
    std::string fail(const std::string& why);
    std::string path_, tmp_path_;
    FILE* f_ = nullptr;
    std::vector<TensorEntry> entries_;
    size_t current_ = 0;       // tensor being written
    uint64_t written_ = 0;     // bytes of it written so far
    uint64_t file_bytes_ = 0;
    bool committed_ = false;
};

// Removes every temporary checkpoint file still open; safe to call from a signal handler.
void remove_unfinished_checkpoints();
