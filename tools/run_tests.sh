#!/bin/bash
# Runs each test binary (pairs of: label, command), prints its output, and ends with
# one line summing doctest's test case counts: "N passed, N failed".
passed=0
failed=0
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
    line=$(echo "$out" | grep -E '^\[doctest\] test cases:' | tail -n 1)
    p=$(echo "$line" | sed -nE 's/.*\| *([0-9]+) passed.*/\1/p')
    f=$(echo "$line" | sed -nE 's/.*\| *([0-9]+) failed.*/\1/p')
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
echo "$passed passed, $failed failed"
exit $status
