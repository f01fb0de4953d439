// Fault injection for tests/cli/test_cli.cpp, preloaded into ./run or ./quantize (LD_PRELOAD):
// malloc fails, as it does when memory runs out, for every request of at least
// $HEARTH_FAIL_THREAD_MALLOC bytes made on a thread other than the main one, i.e. on OpenMP's
// workers. operator new (std::vector, a kernel's thread_scratch) allocates through malloc, and
// so throws std::bad_alloc there. Everything else goes to glibc's own malloc. Linux and glibc
// only (__libc_malloc, gettid), like the tests that use it.
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <unistd.h>

extern "C" void* __libc_malloc(size_t bytes);

namespace {
size_t fail_from = size_t(-1);
__attribute__((constructor)) void read_threshold() {
    if (const char* s = std::getenv("HEARTH_FAIL_THREAD_MALLOC")) fail_from = std::strtoull(s, nullptr, 10);
}
}  // namespace

extern "C" void* malloc(size_t bytes) {
    if (bytes >= fail_from && gettid() != getpid()) {
        errno = ENOMEM;
        return nullptr;
    }
    return __libc_malloc(bytes);
}
