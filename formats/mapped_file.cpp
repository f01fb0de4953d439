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

// Generation reads every weight once per token, straight from this map. On 4 KB pages that is a
// TLB miss every 4 KB, and a stop of the hardware prefetchers at every page boundary. In 2 MB
// pages TinyLlama q4_0 generated 22% faster on the Zen 3 host (docs/benchmarks.md, "Weights in
// 2 MB pages").
// Linux gives a file's map 2 MB pages where the page cache holds the file in 2 MB pieces (large
// folios: ext4 and xfs on recent kernels) and the map starts at a 2 MB boundary, so that file
// offsets and addresses agree. It reads ahead in such pieces where asked (advise_huge_pages)
// before the first touch; pages already cached in small pieces stay so (quantize drops the
// pages it wrote: formats/writer.cpp). A plain map where the aligned one fails.
static void* map_at_2mb(int fd, size_t size) {
    constexpr size_t kAlign = size_t(2) << 20;
    const size_t page = size_t(sysconf(_SC_PAGESIZE)), mapped = (size + page - 1) / page * page;
    void* area = mmap(nullptr, mapped + kAlign, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (area == MAP_FAILED) return mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const uintptr_t lo = reinterpret_cast<uintptr_t>(area), at = (lo + kAlign - 1) / kAlign * kAlign;
    void* p = mmap(reinterpret_cast<void*>(at), size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        munmap(area, mapped + kAlign);
        return mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    }
    // The reservation's rest, before and after the map.
    if (at > lo) munmap(area, at - lo);
    const uintptr_t end = at + mapped, hi = lo + mapped + kAlign;
    if (hi > end) munmap(reinterpret_cast<void*>(end), hi - end);
    return p;
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
    data_ = map_at_2mb(fd, size_);
    int err = errno;
    ::close(fd);
    if (data_ == MAP_FAILED) {
        data_ = nullptr;
        size_ = 0;
        return "cannot map " + shown_path(path) + ": " + std::strerror(err);
    }
    if (is_git_lfs_pointer(data_, size_)) {
        munmap(data_, size_);
        data_ = nullptr;
        size_ = 0;
        return git_lfs_pointer_error(shown_path(path));
    }
    advise_huge_pages(data_, size_);  // before the first touch: map_at_2mb
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
