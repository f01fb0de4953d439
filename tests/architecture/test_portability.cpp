// hearth builds on Linux and, in principle, macOS and other POSIX systems: what differs between
// them is wrapped by base/platform.h, and nothing else may use one system's interfaces.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

TEST_CASE("portability: Linux- and macOS-only interfaces appear only in base/platform.cpp") {
    namespace fs = std::filesystem;
    // Headers and paths that exist on one system only; base/platform.h wraps what hearth needs.
    const char* const only_on_one_system[] = {
        "<sched.h>", "<linux/", "<sys/auxv.h>", "<sys/prctl.h>", "<sys/sysinfo.h>", "<malloc.h>", "<mach/",
        "<mach-o/", "<sys/sysctl.h>", "\"/proc/", "\"/sys/", "MADV_HUGEPAGE", "sched_getaffinity", "getauxval(",
        "sysctlbyname(", "arch_prctl(",
    };
    int files = 0;
    std::vector<std::string> roots;
    for (const char* folder : {"base", "kernels", "tokenizer", "formats", "model", "chat", "convert", "cli", "server"}) roots.push_back(folder);
    for (const char* program : {"run.cpp", "quantize.cpp"}) roots.push_back(program);
    for (const std::string& root : roots) {
        if (!fs::exists(root)) continue;
        std::vector<fs::path> paths;
        if (fs::is_regular_file(root)) paths.push_back(root);
        else
            for (const auto& e : fs::recursive_directory_iterator(root))
                if (e.is_regular_file() && (e.path().extension() == ".h" || e.path().extension() == ".cpp")) paths.push_back(e.path());
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
