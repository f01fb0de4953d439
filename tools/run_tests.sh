#!/bin/bash
# Runs test commands, given as pairs of: label, command. Prints each command's output and ends
# with one line summing the test case counts: "N passed, N failed" (", N skipped" when a test
# could not run). A command reports its counts as doctest does ("[doctest] test cases: ...") or
# as a last line "N passed, N failed" (the browser test); exit code 77 says it could not run
# here (say, chromium is not installed): counted as skipped, with its reason, never as passed.
#
# "--lane" between two pairs starts another lane. The lanes run at the same time, each its
# commands in order: most tests keep one core busy, and CI has two. Each command's output is
# printed whole when it ends, so that the lanes' outputs never interleave line by line.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/counts"
: >"$tmp/skipped"
: >"$tmp/failures"

# The names of the doctest test cases that failed in a command's output: a failing case's
# block starts with "TEST CASE:" and holds an "ERROR:" line.
failed_cases() {
    awk '/^TEST CASE:/ { name = substr($0, 13) } /(^|: )(ERROR|FATAL ERROR):/ && name != "" { print "    " name; name = "" }'
}

# Runs one command; prints its block and appends "passed failed skipped error" to the counts,
# under a lock (the lanes share stdout and the counts).
run_one() {
    local label=$1 cmd=$2 start=$SECONDS out rc line p f why counts block="$tmp/block.$BASHPID"  # this lane's
    out=$(bash -c "$cmd" 2>&1)  # a shell: commands may quote their arguments
    rc=$?
    {
        echo "=== $label: $cmd"
        echo "$out"
        echo "=== $label: $((SECONDS - start)) s"
        if [ $rc -eq 77 ]; then
            why=$(echo "$out" | grep -m1 -E '^SKIP' | sed 's/^SKIP: *//')
            why=${why:-it could not run here (exit code 77)}
            echo "=== $label: SKIPPED: $why"
            counts="0 0 1 0"
        else
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
                counts="0 1 0 1"
            else
                counts="$p $f 0 $((rc != 0))"
            fi
        fi
    } >"$block"
    (
        flock 9
        cat "$block"
        echo "$counts" >>"$tmp/counts"
        if [ $rc -eq 77 ]; then echo "skipped: $label: $why" >>"$tmp/skipped"; fi
        if [ $rc -ne 77 ] && { [ $rc -ne 0 ] || [ "${counts#* }" != "0 0 0" ]; }; then
            echo "failed: $label (exit code $rc)" >>"$tmp/failures"
            echo "$out" | failed_cases | sort -u >>"$tmp/failures"
        fi
    ) 9>"$tmp/lock"
}

run_lane() {
    while [ $# -ge 2 ]; do
        run_one "$1" "$2"
        shift 2
    done
}

lane=()
for arg in "$@"; do
    if [ "$arg" = "--lane" ]; then
        run_lane "${lane[@]}" &
        lane=()
    else
        lane+=("$arg")
    fi
done
run_lane "${lane[@]}" &
wait

passed=0
failed=0
skipped=0
status=0
while read -r p f s error; do
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
    if [ "$error" != 0 ]; then status=1; fi
done <"$tmp/counts"
# What failed is repeated last, where a log's tail shows it, with the disk's free space: the
# build and tests leave about 1.2 GB in a clean clone, and a full disk fails them in many places at once.
cat "$tmp/failures"
if [ -s "$tmp/failures" ]; then
    echo "free on this disk at the end: $(df -Pm . | awk 'NR == 2 { print $4 }') MB"
fi
if [ $skipped -gt 0 ]; then
    cat "$tmp/skipped"
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
exit $status
