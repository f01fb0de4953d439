// doctest's main for the kernel tests, which are also built for aarch64 and run under qemu.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
