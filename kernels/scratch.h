// Per-thread scratch for a kernel's per-call tables (copied or packed activations, their terms).
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace hearth {

// n elements of T in a buffer of this thread's, grown to the largest call's and kept, so that
// no call allocates after the first of its size; the contents are whatever the last call left.
// One buffer per Tag: each use names its own (a local struct will do), so that two uses of
// the same element type never share one. Aligned to Align bytes, at least T's alignment.
template <typename Tag, typename T, size_t Align = alignof(T)>
T* thread_scratch(size_t n) {
    static_assert(std::is_trivially_copyable<T>::value, "scratch holds plain data");
    static_assert(Align % alignof(T) == 0, "at least T's alignment");
    thread_local std::vector<unsigned char> buf;
    const size_t bytes = n * sizeof(T) + Align;
    if (buf.size() < bytes) buf.resize(bytes);
    const size_t skew = reinterpret_cast<uintptr_t>(buf.data()) % Align;
    return reinterpret_cast<T*>(buf.data() + (Align - skew) % Align);
}

}  // namespace hearth
