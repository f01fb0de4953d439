// A read-only memory map of a whole file. Weights are used straight from the map:
// loading a model costs page faults, not a copy.
#pragma once
#include <cstddef>
#include <string>

class MappedFile {
public:
    MappedFile() = default;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();
    // "" on success, else a one-line reason.
    std::string open(const std::string& path);
    const void* data() const { return data_; }
    size_t size() const { return size_; }

private:
    void* data_ = nullptr;
    size_t size_ = 0;
};

// True when both paths name the same existing file (same device and inode).
bool same_file(const std::string& a, const std::string& b);
