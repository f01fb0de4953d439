// What hearth asks of the operating system beyond POSIX, in one place: a Linux implementation,
// a macOS one, and a plain POSIX fallback for anything else (base/platform.cpp). No other file
// includes a Linux- or macOS-only header or reads /proc or /sys (tests/architecture checks it).
// The macOS branch compiles in principle but is untested here (README, "Build on your machine").
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace hearth {

// Physical cores this process may run on (not hardware threads): more threads than cores slow
// generation down, since two threads on one core share its load ports and caches. At least 1.
int physical_core_count();

// Memory this process may still take, in bytes: the kernel's available memory, or less when a
// cgroup (a container) limits the process more. 0 when it cannot be told.
uint64_t available_memory_bytes();

// The first-level data cache of one core, in bytes; 0 when it cannot be told.
size_t l1_data_cache_bytes();

// Fills each of stdin, stdout and stderr that is closed (`prog 2>&-`), so that no file the
// program opens takes descriptor 2 and gets its messages written into it. Each is /dev/null
// opened the other way (stdout and stderr for reading only, stdin for writing only): a write or
// a read still fails with EBADF, as on the closed descriptor, so output that cannot go anywhere
// or input that cannot be read is an error (`cat >&-` and `cat <&-` say "Bad file descriptor"
// and exit 1), not lost or read as empty in silence.
void open_missing_standard_files();

// Whether stdin cannot be read: closed, or open for writing only (as open_missing_standard_files
// leaves a closed one, also for the program it execs). /dev/stdin, opened by its name, would be
// that /dev/null again, and read as empty.
bool standard_input_unreadable();

// The path of the running program, "" when it cannot be told.
std::string executable_path();

// Replaces the process with a new run of the program itself, with the same arguments and the
// current environment. Returns (false) only when that is not possible.
bool reexec_self(char** argv);

// A hint that [p, p + bytes) would do well on huge pages (Linux's transparent huge pages);
// nothing where there are none.
void advise_huge_pages(void* p, size_t bytes);

// Drops the page cache's copy of an open file's (written and synced) pages, so that the next
// map of it reads the file afresh: formats/mapped_file.cpp's mapping then gets huge pages.
// Nothing where the system cannot.
void drop_file_cache(int fd);

// How much of this process's memory is mapped in huge pages (Linux's /proc/self/smaps_rollup):
// of files (FilePmdMapped: the weights mapped from a checkpoint) and anonymous (AnonHugePages:
// weights repacked at load, the caches). false where the system does not say.
struct HugePageBytes {
    uint64_t file = 0, anonymous = 0;
};
bool huge_page_bytes(HugePageBytes* out);

// Whether an AArch64 CPU has the Int8 matrix multiply extension (SMMLA: the i8mm kernels). The
// build may assume it (-march=...+i8mm) on a CPU that lacks it; true where the system cannot tell.
bool arm_cpu_has_i8mm();

// Asks the OS to let this process use the AMX tile data (Linux 5.16+: arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA; the permission is the whole process's, its threads
// included). True when granted; false where the OS refuses, predates it, or is not Linux on x86-64:
// then an AMX instruction would fault (SIGILL), so the AMX kernels must not run.
bool x86_request_amx_permission();

}  // namespace hearth
