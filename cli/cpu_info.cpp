#include "cli/cpu_info.h"

#include <cstdlib>

#include "base/platform.h"

namespace hearth {

void bound_openmp_spin_wait(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
    setenv("GOMP_SPINCOUNT", "1000", 1);
    reexec_self(argv);
    // exec failed: carry on with libgomp's defaults
}

}  // namespace hearth
