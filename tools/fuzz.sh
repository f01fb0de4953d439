#!/bin/bash
# make fuzz: runs every libFuzzer target (tests/fuzz/fuzz_*.cpp, built by the Makefile into
# build/fuzz/ with AddressSanitizer and UndefinedBehaviorSanitizer) for FUZZ_SECONDS each,
# starting from its committed seed corpus (tests/fuzz/corpus/TARGET/) plus what earlier runs
# found (build/fuzz/corpus/TARGET/). Crashing inputs land in build/fuzz/crashes/; each one
# becomes a regression test (docs/robustness.md). Ends with one line per target.
#   FUZZ_SECONDS=600 make fuzz            all targets, 10 minutes each
#   FUZZ_TARGETS="gguf metadata" make fuzz
set -u
seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-$(ls tests/fuzz/fuzz_*.cpp | sed 's|tests/fuzz/fuzz_||; s|\.cpp||')}
mkdir -p build/fuzz/crashes
summary=""
status=0
for t in $targets; do
    corpus=build/fuzz/corpus/$t
    mkdir -p "$corpus"
    log=build/fuzz/$t.log
    echo "=== fuzz_$t for ${seconds}s (log: $log)"
    build/fuzz/fuzz_$t "$corpus" "tests/fuzz/corpus/$t" -max_total_time="$seconds" -max_len=262144 -rss_limit_mb=4096 \
        -timeout=20 -print_final_stats=1 -artifact_prefix="build/fuzz/crashes/$t-" > "$log" 2>&1
    rc=$?
    runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
    crashes=$(ls build/fuzz/crashes/ 2>/dev/null | grep -c "^$t-")
    [ $rc -ne 0 ] && status=1 && tail -n 30 "$log"
    summary="$summary$(printf '%-18s %4ss  %10s runs  %-10s  corpus %5s  exit %d  crash files %d' "$t" "$seconds" "${runs:-?}" "${cov:-cov: ?}" "$(ls "$corpus" | wc -l)" $rc "$crashes")\n"
done
printf "$summary"
exit $status
