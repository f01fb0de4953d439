#!/bin/bash
# Checks that hearth's C++ follows .clang-format: every tracked .cpp and .h as clang-format 14
# (Debian 12's) formats it; other versions format some constructs differently, so with another
# version, or none, it says so and exits 77 (skipped). One check: last line "1 passed, 0 failed",
# or "0 passed, 1 failed" after the files that differ.
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-}
if [ -z "$CLANG_FORMAT" ]; then
    for c in clang-format-14 clang-format; do
        if command -v $c > /dev/null && $c --version | grep -q 'version 14\.'; then CLANG_FORMAT=$c; break; fi
    done
fi
if [ -z "$CLANG_FORMAT" ]; then
    echo "SKIP: clang-format 14 is not installed (make deps installs it on Debian 12)"
    exit 77
fi
if ! git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    echo "SKIP: not a git checkout (the files to check are git's tracked .cpp and .h)"
    exit 77
fi
bad=0
for f in $(git ls-files '*.cpp' '*.h'); do
    if ! "$CLANG_FORMAT" --dry-run --Werror "$f" > /dev/null 2>&1; then
        echo "$f: not formatted as .clang-format says (run: $CLANG_FORMAT -i $f)"
        bad=$((bad + 1))
    fi
done
if [ $bad -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; exit 1; fi
