// Exceptions out of an OpenMP parallel region. One that leaves a region's structured block (a
// kernel's thread_scratch growing under `ulimit -v`, a vector in a conversion) ends the process
// in std::terminate, on any thread: an abort with libstdc++'s words, exit 134, where the same
// std::bad_alloc on the calling thread is caught by the program's main and said in one line.
// ParallelErrors carries the first one out: each thread's work goes through run(), which
// catches, and after the region rethrow() throws it again on the calling thread.
#pragma once
#include <atomic>
#include <exception>

namespace hearth {

class ParallelErrors {
public:
    // f() on this thread, inside the region; once any thread has failed, the rest of the work
    // is skipped (its output is thrown away with the exception). Each iteration of an `omp for`
    // goes through here on its own: an exception may not leave a worksharing loop either (the
    // other threads would wait for this one at its barrier).
    template <class F>
    void run(F&& f) noexcept {
        if (failed_.load(std::memory_order_relaxed)) return;
        try {
            f();
        } catch (...) {
            // The first is kept; copying an exception_ptr allocates nothing.
            if (!failed_.exchange(true)) first_ = std::current_exception();
        }
    }
    // After the region (its closing barrier orders first_'s write before this read).
    void rethrow() const {
        if (first_) std::rethrow_exception(first_);
    }

private:
    std::atomic<bool> failed_{false};
    std::exception_ptr first_;
};

}  // namespace hearth
