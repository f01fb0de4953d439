#!/bin/bash
# Runs each test binary (pairs of: label, command), prints its output, and ends with
# one line summing the test case counts: "N passed, N failed" (", N skipped" when a test could
# not run). A command reports its counts as doctest does ("[doctest] test cases: ...") or as a
# last line "N passed, N failed" (the browser test); exit code 77 says it could not run here
# (say, chromium is not installed): counted as skipped, with its reason, never as passed.
passed=0
failed=0
skipped=0
skipped_why=""
status=0
while [ $# -ge 2 ]; do
    label=$1
    cmd=$2
    shift 2
    echo "=== $label: $cmd"
    start=$SECONDS
    out=$(bash -c "$cmd" 2>&1)  # a shell: commands may quote their arguments
    rc=$?
    echo "$out"
    echo "=== $label: $((SECONDS - start)) s"
    if [ $rc -eq 77 ]; then
        why=$(echo "$out" | grep -m1 -E '^SKIP' | sed 's/^SKIP: *//')
        echo "=== $label: SKIPPED: ${why:-it could not run here (exit code 77)}"
        skipped=$((skipped + 1))
        skipped_why="$skipped_why\nskipped: $label: ${why:-exit code 77}"
        continue
    fi
    line=$(echo "$out" | grep -E '^\[doctest\] test cases:' | tail -n 1)
    p=$(echo "$line" | sed -nE 's/.*\| *([0-9]+) passed.*/\1/p')
    f=$(echo "$line" | sed -nE 's/.*\| *([0-9]+) failed.*/\1/p')
    if [ -z "$line" ]; then
        line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
        p=$(echo "$line" | sed -nE 's/^([0-9]+) passed.*/\1/p')
        f=$(echo "$line" | sed -nE 's/.* ([0-9]+) failed$/\1/p')
    fi
    if [ -z "$p" ] || [ -z "$f" ]; then
        echo "=== $label did not report its results (exit code $rc)"
        failed=$((failed + 1))
        status=1
        continue
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    if [ $rc -ne 0 ]; then status=1; fi
done
if [ $skipped -gt 0 ]; then
    printf '%b\n' "${skipped_why#\\n}"
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
exit $status
