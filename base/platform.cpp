#include "base/platform.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

#if defined(__linux__)
#include <fstream>
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif
#include <sched.h>
#if defined(__x86_64__)
#include <sys/syscall.h>
#endif
#include <set>
#include <utility>
#elif defined(__APPLE__)
#include <mach-o/dyld.h>
#include <mach/mach.h>
#include <sys/sysctl.h>
#endif

namespace hearth {

namespace {
int hardware_threads() {
    const int n = int(std::thread::hardware_concurrency());
    return n > 0 ? n : 1;
}
}  // namespace

void open_missing_standard_files() {
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) == -1) {
            // open() takes the lowest free descriptor: this one. Opened the other way: reading
            // stdin, or writing stdout and stderr, fails (EBADF) as it did while they were closed.
            const int opened = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
            if (opened >= 0 && opened != fd) close(opened);
        }
}

bool standard_input_unreadable() {
    const int flags = fcntl(STDIN_FILENO, F_GETFL);
    return flags == -1 || (flags & O_ACCMODE) == O_WRONLY;
}

#if defined(__linux__)

int physical_core_count() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return hardware_threads();
    // Hardware threads this process may use, grouped by the core they belong to.
    std::set<std::pair<int, int>> cores;  // (package, core)
    int threads = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed)) continue;
        threads++;
        const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
        std::ifstream core_file(base + "core_id"), package_file(base + "physical_package_id");
        int core = -1, package = 0;
        if (!(core_file >> core)) core = cpu;  // no topology: count the thread as a core
        if (!(package_file >> package)) package = 0;
        cores.insert({package, core});
    }
    const int n = cores.empty() ? threads : int(cores.size());
    return n > 0 ? n : 1;
}

// A number read from a file such as /sys/fs/cgroup/memory.max; false for "max" or no file.
static bool read_number(const std::string& path, uint64_t* out) {
    std::ifstream f(path);
    return bool(f >> *out);
}

size_t l1_data_cache_bytes() {
    const long n = sysconf(_SC_LEVEL1_DCACHE_SIZE);  // glibc reads it from CPUID
    return n > 0 ? size_t(n) : 0;
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

std::string executable_path() {
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    return n > 0 ? std::string(exe, size_t(n)) : "";
}

bool reexec_self(char** argv) {
    // By its path first: exec'd as /proc/self/exe, the process is named "exe" (ps, pgrep, top).
    // That link still works when the file has gone meanwhile (a rebuild).
    const std::string path = executable_path();
    if (!path.empty()) execv(path.c_str(), argv);
    execv("/proc/self/exe", argv);
    return false;
}

void advise_huge_pages(void* p, size_t bytes) { madvise(p, bytes, MADV_HUGEPAGE); }

void drop_file_cache(int fd) { posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); }

bool huge_page_bytes(HugePageBytes* out) {
    std::ifstream in("/proc/self/smaps_rollup");
    std::string key;
    uint64_t kb;
    bool found = false;
    *out = {};
    while (in >> key) {
        if (key == "FilePmdMapped:" && in >> kb) out->file = kb << 10, found = true;
        if (key == "AnonHugePages:" && in >> kb) out->anonymous = kb << 10, found = true;
    }
    return found;
}

bool arm_cpu_has_i8mm() {
#if defined(__aarch64__) && defined(HWCAP2_I8MM)
    return (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
#else
    return true;
#endif
}

bool x86_request_amx_permission() {
#if defined(__x86_64__)
    constexpr long kArchReqXcompPerm = 0x1023;  // ARCH_REQ_XCOMP_PERM (asm/prctl.h)
    constexpr long kXfeatureXtiledata = 18;     // XFEATURE_XTILEDATA: the tiles' 8 KB of state
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
}

#elif defined(__APPLE__)

int physical_core_count() {
    int n = 0;
    size_t size = sizeof n;
    // Apple Silicon: the performance cores; generation on the efficiency cores is slower than without them.
    if (sysctlbyname("hw.perflevel0.physicalcpu", &n, &size, nullptr, 0) == 0 && n > 0) return n;
    size = sizeof n;
    if (sysctlbyname("hw.physicalcpu", &n, &size, nullptr, 0) == 0 && n > 0) return n;
    return hardware_threads();
}

size_t l1_data_cache_bytes() {
    int64_t n = 0;
    size_t size = sizeof n;
    return sysctlbyname("hw.l1dcachesize", &n, &size, nullptr, 0) == 0 && n > 0 ? size_t(n) : 0;
}

uint64_t available_memory_bytes() {
    vm_statistics64_data_t vm;
    mach_msg_type_number_t count = HOST_VM_INFO64_COUNT;
    if (host_statistics64(mach_host_self(), HOST_VM_INFO64, reinterpret_cast<host_info64_t>(&vm), &count) != KERN_SUCCESS)
        return 0;
    const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
    return (uint64_t(vm.free_count) + vm.inactive_count + vm.purgeable_count) * page;
}

std::string executable_path() {
    char exe[4096];
    uint32_t size = sizeof exe;
    if (_NSGetExecutablePath(exe, &size) != 0) return "";
    char resolved[PATH_MAX];
    return realpath(exe, resolved) ? resolved : exe;
}

bool reexec_self(char** argv) {
    const std::string exe = executable_path();
    if (!exe.empty()) execv(exe.c_str(), argv);
    return false;
}

void advise_huge_pages(void*, size_t) {}
void drop_file_cache(int) {}
bool huge_page_bytes(HugePageBytes*) { return false; }

bool arm_cpu_has_i8mm() {
    int n = 0;
    size_t size = sizeof n;
    return sysctlbyname("hw.optional.arm.FEAT_I8MM", &n, &size, nullptr, 0) != 0 || n != 0;
}

bool x86_request_amx_permission() { return false; }

#else  // POSIX

int physical_core_count() {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? int(n) : hardware_threads();
}

size_t l1_data_cache_bytes() { return 0; }

uint64_t available_memory_bytes() { return 0; }
std::string executable_path() { return ""; }
bool reexec_self(char**) { return false; }
void advise_huge_pages(void*, size_t) {}
void drop_file_cache(int) {}
bool huge_page_bytes(HugePageBytes*) { return false; }
bool arm_cpu_has_i8mm() { return true; }
bool x86_request_amx_permission() { return false; }

#endif

}  // namespace hearth
