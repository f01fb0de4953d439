// MappedFile (formats/mapped_file.h): the read-only map of a checkpoint that run computes from.
// On Linux it starts at a 2 MB boundary (so that the page cache's 2 MB pieces of the file can be
// mapped as huge pages) and leaves nothing of the larger reservation it was placed in.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "base/platform.h"
#include "formats/mapped_file.h"
#include "tests/test_helpers.h"

using namespace hearth;

namespace {

// The lines of /proc/self/maps as (start, end, permissions).
struct MapLine {
    uintptr_t start, end;
    std::string perms, path;  // path: "" for anonymous memory
};
std::vector<MapLine> self_maps() {
    std::vector<MapLine> out;
    std::ifstream f("/proc/self/maps");
    std::string line;
    while (std::getline(f, line)) {
        std::istringstream in(line);
        std::string range, perms, offset, device, inode, path;
        in >> range >> perms >> offset >> device >> inode >> path;
        const size_t dash = range.find('-');
        out.push_back({uintptr_t(std::stoull(range.substr(0, dash), nullptr, 16)),
                       uintptr_t(std::stoull(range.substr(dash + 1), nullptr, 16)), perms, path});
    }
    return out;
}

}  // namespace

TEST_CASE("mapped file: the map holds the file's bytes, starts at a 2 MB boundary on Linux, and leaves no reservation behind") {
    const std::string dir = "build/tests/mapped-file";
    REQUIRE(run_command("mkdir -p " + dir).exit_code == 0);
    for (size_t size : {size_t(1), size_t(4096), size_t(3 << 20) + 123}) {
        CAPTURE(size);
        const std::string path = dir + "/f" + std::to_string(size);
        std::vector<char> bytes(size);
        for (size_t i = 0; i < size; i++) bytes[i] = char((i * 131 + 7) % 251);
        {
            std::ofstream out(path, std::ios::binary);
            out.write(bytes.data(), std::streamsize(size));
        }
        const std::string abs_path = std::filesystem::canonical(path).string();
        uintptr_t at = 0, end = 0;
        {
            MappedFile f;
            REQUIRE(f.open(path) == "");
            REQUIRE(f.size() == size);
            CHECK(std::memcmp(f.data(), bytes.data(), size) == 0);
            at = reinterpret_cast<uintptr_t>(f.data());
#if defined(__linux__)
            CHECK(at % (uintptr_t(2) << 20) == 0);
            const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
            end = at + (size + page - 1) / page * page;
            // The file is mapped there (as /proc/self/maps names it), and the inaccessible
            // reservation around the map is gone on both sides.
            bool found = false;
            for (const MapLine& m : self_maps()) found |= m.path == abs_path && m.start <= at && at < m.end;
            CHECK(found);
            for (const MapLine& m : self_maps()) {
                if (m.perms.rfind("---", 0) != 0) continue;
                CHECK(m.end != at);
                CHECK(m.start != end);
            }
#else
            MESSAGE("not tested here: the 2 MB alignment (Linux only)");
#endif
        }
#if defined(__linux__)
        // Closed: nothing of [at, end) maps the file any more. (Other memory may be there by
        // now: the allocator, ASan's above all, may take the freed addresses at once.)
        for (const MapLine& m : self_maps())
            if (m.path == abs_path) CHECK((m.end <= at || m.start >= end));
#endif
        std::remove(path.c_str());
    }
}

TEST_CASE("huge_page_bytes: the kernel's count of anonymous memory in 2 MB pages grows by memory allocated in them") {
#if defined(__linux__)
    HugePageBytes before, after;
    REQUIRE(huge_page_bytes(&before));
    const std::string thp = read_text("/sys/kernel/mm/transparent_hugepage/enabled");
    if (thp.find("[never]") != std::string::npos || thp.empty()) {
        MESSAGE("not tested here: transparent huge pages are off (" << thp << ")");
        return;
    }
    AnonymousMemory m;
    const size_t bytes = size_t(16) << 20;
    REQUIRE(m.allocate(bytes) == "");
    for (size_t i = 0; i < bytes; i += 4096) static_cast<volatile char*>(m.data())[i] = 1;
    REQUIRE(huge_page_bytes(&after));
    INFO("AnonHugePages before " << before.anonymous << ", after " << after.anonymous << " (" << thp << ")");
    // At least one whole 2 MB page of the 16 MB (the kernel may have no free 2 MB piece for some).
    CHECK(after.anonymous >= before.anonymous + (size_t(2) << 20));
#else
    HugePageBytes h;
    CHECK(!huge_page_bytes(&h));
    MESSAGE("not tested here: huge pages (Linux only)");
#endif
}
