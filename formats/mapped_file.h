// A read-only memory map of a whole file. Weights are used straight from the map:
// loading a model costs page faults, not a copy.
#pragma once
#include <cstddef>
#include <string>

#include "base/input_file.h"

namespace hearth {

class MappedFile {
public:
    MappedFile() = default;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();
    // "" on success, else a one-line reason. Only a regular file (after following links) is
    // mapped, and opening never blocks (base/input_file.h).
    std::string open(const std::string& path);
    const void* data() const { return data_; }
    size_t size() const { return size_; }
    const FileId& id() const { return id_; }  // the file mapped, to compare an output with
    // Drops this process's pages of [p, p + n) (whole pages only): for data copied elsewhere.
    // A later read would page it in again from the file.
    void release(const void* p, size_t n);

private:
    void* data_ = nullptr;
    size_t size_ = 0;
    FileId id_;
};

// Zeroed anonymous memory (for weights repacked at load), with transparent huge pages asked
// for: fewer page faults while filling it and fewer TLB misses while streaming it.
class AnonymousMemory {
public:
    AnonymousMemory() = default;
    AnonymousMemory(const AnonymousMemory&) = delete;
    AnonymousMemory& operator=(const AnonymousMemory&) = delete;
    ~AnonymousMemory();
    // "" on success, else a one-line reason. Replaces (frees) what was held before.
    std::string allocate(size_t bytes);
    void* data() const { return data_; }

private:
    void* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace hearth
