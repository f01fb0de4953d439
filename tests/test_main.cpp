// doctest's main for the unit tests. Tests run from the repository root (make test),
// where ./run, ./quantize and tests/data are.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
