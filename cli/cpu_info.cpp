#include "cli/cpu_info.h"

#include <cstdlib>
#include <fstream>
#include <sched.h>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <utility>

int physical_core_count() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        int n = int(std::thread::hardware_concurrency());
        return n > 0 ? n : 1;
    }
    // Hardware threads this process may use, grouped by the core they belong to.
    std::set<std::pair<int, int>> cores;  // (package, core)
    int threads = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed)) continue;
        threads++;
        std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
        std::ifstream core_file(base + "core_id"), package_file(base + "physical_package_id");
        int core = -1, package = 0;
        if (!(core_file >> core)) core = cpu;  // no topology: count the thread as a core
        if (!(package_file >> package)) package = 0;
        cores.insert({package, core});
    }
    int n = cores.empty() ? threads : int(cores.size());
    return n > 0 ? n : 1;
}

void bound_openmp_spin_wait(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
    setenv("GOMP_SPINCOUNT", "1000", 1);
    execv("/proc/self/exe", argv);
    // exec failed (no /proc): carry on with libgomp's defaults
}

// A number read from a file such as /sys/fs/cgroup/memory.max; false for "max" or no file.
static bool read_number(const std::string& path, uint64_t* out) {
    std::ifstream f(path);
    return bool(f >> *out);
}

uint64_t available_memory_bytes() {
    uint64_t available = 0;
    std::ifstream meminfo("/proc/meminfo");
    for (std::string key; meminfo >> key;) {
        uint64_t kb = 0;
        if (!(meminfo >> kb)) break;
        if (key == "MemAvailable:") available = kb * 1024;
        meminfo.ignore(1 << 10, '\n');
    }
    uint64_t limit = 0, used = 0;
    if (read_number("/sys/fs/cgroup/memory.max", &limit) && read_number("/sys/fs/cgroup/memory.current", &used)) {
        const uint64_t left = limit > used ? limit - used : 0;
        if (available == 0 || left < available) available = left;
    }
    return available;
}
