// docs/architecture.md's rules, checked on the sources: a folder includes its own headers and
// those of lower floors, never a folder on its own floor or above (a new folder must be given a
// floor here: the test fails on a folder it does not know); and only base/platform.cpp uses an
// interface that one operating system has alone (Linux, macOS; base/platform.h wraps them).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <iterator>
#include <string>
#include <vector>

namespace {

const std::map<std::string, int> kFloors = {
    {"base", 0}, {"kernels", 1}, {"tokenizer", 1}, {"formats", 2}, {"model", 3},
    {"chat", 4}, {"convert", 5}, {"cli", 6},       {"server", 6},
};

}  // namespace

TEST_CASE("architecture: no library folder includes a folder on its own floor or above") {
    namespace fs = std::filesystem;
    const std::regex include_line(R"(^\s*#\s*include\s+"([^"]+)\")");
    int files = 0, includes = 0;
    for (const auto& [folder, floor] : kFloors) {
        if (!fs::exists(folder)) continue;
        for (const auto& entry : fs::recursive_directory_iterator(folder)) {
            const std::string path = entry.path().generic_string();
            if (!entry.is_regular_file() || !(entry.path().extension() == ".h" || entry.path().extension() == ".cpp")) continue;
            files++;
            std::ifstream in(path);
            std::string line;
            while (std::getline(in, line)) {
                std::smatch m;
                if (!std::regex_search(line, m, include_line)) continue;
                includes++;
                const std::string target = m[1];
                const size_t slash = target.find('/');
                INFO(path << " includes \"" << target << "\"");
                // Headers are included by their path from the repository root.
                REQUIRE(slash != std::string::npos);
                const std::string to = target.substr(0, slash);
                if (to == folder || to == "build") continue;  // build/: generated from the folder's own files (the chat page)
                const auto it = kFloors.find(to);
                REQUIRE(it != kFloors.end());
                CHECK(it->second < floor);
            }
        }
    }
    // Every library folder was there to check.
    CHECK(files > 50);
    CHECK(includes > 150);
    for (const auto& entry : fs::directory_iterator(".")) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_directory() || name[0] == '.') continue;
        bool has_sources = false;
        for (const auto& e : fs::recursive_directory_iterator(entry.path()))
            has_sources = has_sources || e.path().extension() == ".cpp" || e.path().extension() == ".h";
        const bool known = kFloors.count(name) || name == "tests" || name == "tools" || name == "build" || !has_sources;
        INFO("a top-level folder of C++ sources without a floor in docs/architecture.md: " << name);
        CHECK(known);
    }
}

TEST_CASE("portability: Linux- and macOS-only interfaces appear only in base/platform.cpp") {
    namespace fs = std::filesystem;
    // Headers and paths that exist on one system only; base/platform.h wraps what hearth needs.
    const char* const only_on_one_system[] = {
        "<sched.h>",     "<linux/",        "<sys/auxv.h>", "<sys/prctl.h>", "<sys/sysinfo.h>", "<malloc.h>",        "<mach/",
        "<mach-o/",      "<sys/sysctl.h>", "\"/proc/",     "\"/sys/",       "MADV_HUGEPAGE",   "sched_getaffinity", "getauxval(",
        "sysctlbyname(", "arch_prctl(",
    };
    int files = 0;
    std::vector<std::string> roots;
    for (const auto& [folder, floor] : kFloors) roots.push_back(folder);
    for (const char* program : {"run.cpp", "quantize.cpp"}) roots.push_back(program);
    for (const std::string& root : roots) {
        if (!fs::exists(root)) continue;
        std::vector<fs::path> paths;
        if (fs::is_regular_file(root))
            paths.push_back(root);
        else
            for (const auto& e : fs::recursive_directory_iterator(root))
                if (e.is_regular_file() && (e.path().extension() == ".h" || e.path().extension() == ".cpp"))
                    paths.push_back(e.path());
        for (const fs::path& p : paths) {
            const std::string path = p.generic_string();
            if (path == "base/platform.cpp") continue;
            files++;
            std::ifstream in(path);
            const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            for (const char* needle : only_on_one_system) {
                INFO(path << " uses " << needle << ": put it behind base/platform.h");
                CHECK(text.find(needle) == std::string::npos);
            }
        }
    }
    CHECK(files > 50);
}
