#!/bin/bash
# make fuzz: replays the crash reproducers (tests/fuzz/regressions/TARGET/), then runs every
# libFuzzer target (tests/fuzz/fuzz_*.cpp, built by the Makefile into build/fuzz/ with
# AddressSanitizer and UndefinedBehaviorSanitizer) for FUZZ_SECONDS each, starting from its
# committed seed corpus (tests/fuzz/corpus/TARGET/) plus what earlier runs found
# (build/fuzz/corpus/TARGET/), with its dictionary (tests/fuzz/dict/TARGET.dict) when there is
# one. Findings land in build/fuzz/crashes/TARGET-{crash,timeout,oom,leak}-*; each one becomes a
# regression reproducer (docs/robustness.md). Ends with one line per target.
#   FUZZ_SECONDS=600 make fuzz            all targets, 10 minutes each
#   FUZZ_TARGETS="gguf metadata" make fuzz
#   tools/fuzz.sh --replay                only replay the reproducers (make fuzz-regressions)
# Settings (environment):
#   FUZZ_FORK=1      (default) libFuzzer's fork mode: a crash, a hang (-timeout) or a blow-up
#                    (-rss_limit_mb, -malloc_limit_mb) is saved and counted, and fuzzing goes on
#                    for the rest of FUZZ_SECONDS; 0: the classic mode, which stops at the first
#   FUZZ_TIMEOUT=10  seconds one input may take before it is reported as a hang
#   FUZZ_RSS_MB=4096 memory (and largest single allocation) before an input is reported as a blow-up
#   FUZZ_DICT=0      fuzz without the dictionaries (to measure what they add)
set -u
seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-$(ls tests/fuzz/fuzz_*.cpp | sed 's|tests/fuzz/fuzz_||; s|\.cpp||')}
timeout=${FUZZ_TIMEOUT:-10}
rss=${FUZZ_RSS_MB:-4096}
limits="-timeout=$timeout -rss_limit_mb=$rss -malloc_limit_mb=$rss"
mkdir -p build/fuzz/crashes
status=0

# Each reproducer alone: one that still crashes, hangs or blows up fails the run.
replay_summary=""
for t in $targets; do
    dir=tests/fuzz/regressions/$t
    [ -d "$dir" ] || continue
    for f in "$dir"/*; do
        case "$f" in *.md) continue ;; esac
        [ -f "$f" ] || continue
        log=build/fuzz/replay-$t-$(basename "$f").log
        if build/fuzz/fuzz_$t "$f" $limits > "$log" 2>&1; then
            replay_summary="${replay_summary}pass  $f\n"
        else
            why=$(grep -m1 -oE 'ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|libFuzzer): [a-z-]+( [a-z-]+)?|runtime error: .{0,60}|fuzz: .{0,60}' "$log")
            replay_summary="${replay_summary}FAIL  $f  (${why:-exit status, see $log})\n"
            status=1
        fi
    done
done
[ -n "$replay_summary" ] && printf "=== crash reproducers (tests/fuzz/regressions/)\n$replay_summary"
[ "${1:-}" = "--replay" ] && exit $status

mode="-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1"
[ "${FUZZ_FORK:-1}" = "0" ] && mode=""
summary=""
for t in $targets; do
    corpus=build/fuzz/corpus/$t
    mkdir -p "$corpus"
    log=build/fuzz/$t.log
    dict=""
    [ "${FUZZ_DICT:-1}" != "0" ] && [ -f "tests/fuzz/dict/$t.dict" ] && dict="-dict=tests/fuzz/dict/$t.dict"
    before=$(ls build/fuzz/crashes/ | grep -c "^$t-")
    echo "=== fuzz_$t for ${seconds}s ${dict:+with its dictionary }(log: $log)"
    build/fuzz/fuzz_$t "$corpus" "tests/fuzz/corpus/$t" $dict $mode $limits -max_total_time="$seconds" -max_len=262144 \
        -print_final_stats=1 -artifact_prefix="build/fuzz/crashes/$t-" > "$log" 2>&1
    rc=$?
    # Classic mode ends with stat:: lines; fork mode's last status line is "#RUNS: cov: N ft: N ...".
    runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
    [ -z "$runs" ] && runs=$(grep -oE '^#[0-9]+:' "$log" | tail -1 | tr -d '#:')
    # Coverage (edges) and features when the seeds had run, and at the end.
    cov=$(grep -oE 'cov: [0-9]+' "$log" | sed -n '1p;$p' | awk '{printf "%s%s", sep, $2; sep="->"}')
    ft=$(grep -oE 'ft: [0-9]+' "$log" | sed -n '1p;$p' | awk '{printf "%s%s", sep, $2; sep="->"}')
    found=$(ls build/fuzz/crashes/ | grep "^$t-" | sed 's/^'"$t"'-//; s/-.*//' | sort | uniq -c | awk '{printf "%s%d %s", sep, $1, $2; sep=", "}')
    new=$(( $(ls build/fuzz/crashes/ | grep -c "^$t-") - before ))
    [ $rc -ne 0 ] && tail -n 30 "$log"
    [ $rc -ne 0 ] || [ $new -ne 0 ] && status=1
    summary="$summary$(printf '%-16s %4ss  %9s runs  cov %-11s ft %-11s corpus %5s  exit %d  new findings %d (in build/fuzz/crashes: %s)' \
        "$t" "$seconds" "${runs:-?}" "${cov:-?}" "${ft:-?}" "$(ls "$corpus" | wc -l)" $rc $new "${found:-none}")\n"
done
printf "$summary"
exit $status
