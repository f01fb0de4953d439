#include "formats/mapped_file.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/platform.h"
#include "base/printable.h"

namespace hearth {

MappedFile::~MappedFile() {
    if (data_ && size_) munmap(data_, size_);
}

std::string MappedFile::open(const std::string& path) {
    std::string why;
    uint64_t size = 0;
    const int fd = open_regular_file(path, &why, &id_, &size);
    if (fd < 0) return why;
    size_ = size_t(size);
    if (size_ == 0) {
        ::close(fd);
        return shown_path(path) + " is empty";
    }
    data_ = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);
    if (data_ == MAP_FAILED) {
        data_ = nullptr;
        size_ = 0;
        return "cannot map " + shown_path(path) + ": " + std::strerror(err);
    }
    return "";
}

void MappedFile::release(const void* p, size_t n) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(data_), hi = lo + size_;
    if (begin < end && begin >= lo && end <= hi) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

AnonymousMemory::~AnonymousMemory() {
    if (data_) munmap(data_, size_);
}

std::string AnonymousMemory::allocate(size_t bytes) {
    if (data_) munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
    if (bytes == 0) return "";
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return "cannot allocate " + std::to_string(bytes >> 20) + " MB: " + std::strerror(errno);
    advise_huge_pages(p, bytes);
    data_ = p;
    size_ = bytes;
    return "";
}

}  // namespace hearth
