#!/bin/bash
# tools/in_own_tree.sh DIR COMMAND [ARG...]: runs COMMAND in DIR, a tree that the tests take for
# the repository's root (they name their files from it: ./run, tests/data/, build/tests/...).
# Every entry of the root is a symbolic link there, and so is every entry of build/ but one:
# build/tests/ is a folder of its own, where only the test programs and the test data that make
# decompresses (build/tests/gguf-mini/, build/tests/bpe/) are linked. So a second test process
# (make test's second lane, tools/run_tests.sh) writes its scratch files in DIR/build/tests/
# and never over those of the first. DIR, build/NAME, is made anew each time.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1%/}
shift
if [[ ! "$dir" =~ ^build/[^/]+$ ]]; then
    echo "in_own_tree.sh: DIR must be build/NAME, not $1" >&2
    exit 2
fi
cd "$root"
rm -rf "$dir"
mkdir -p "$dir/build/tests"
shopt -s dotglob nullglob
for entry in "$root"/*; do
    [ "$(basename "$entry")" = build ] || ln -s "$entry" "$dir/"
done
for entry in "$root"/build/*; do
    case "$(basename "$entry")" in tests | "$(basename "$dir")") continue ;; esac  # not DIR itself: a loop
    ln -s "$entry" "$dir/build/"
done
for entry in "$root"/build/tests/*; do
    case "$(basename "$entry")" in
        gguf-mini | bpe) ln -s "$entry" "$dir/build/tests/" ;;
        *) if [ -f "$entry" ] && [ -x "$entry" ]; then ln -s "$entry" "$dir/build/tests/"; fi ;;
    esac
done
cd "$dir"
exec "$@"
