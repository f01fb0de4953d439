#pragma once
#include "base/platform.h"  // physical_core_count, available_memory_bytes

namespace hearth {

// libgomp reads its spin-wait settings once, when it is loaded (before main). By default a
// thread waiting at a barrier spins 300000 pause iterations before it sleeps: milliseconds on
// CPUs with a slow pause. When the machine has any other load, the spinning thread then takes
// the time slice the thread doing the work needs (generation fell from 24 to 1.4-4 tok/s with one
// busy process beside it; docs/benchmarks.md). Unless the user set OMP_WAIT_POLICY or
// GOMP_SPINCOUNT, this re-executes the program once with GOMP_SPINCOUNT=1000, which was as fast
// as the default on an idle machine. Call it first thing in main; it returns if exec fails.
void bound_openmp_spin_wait(char** argv);

}  // namespace hearth
