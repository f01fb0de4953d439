#!/bin/bash
# Prompt-lookup drafts (issue 23): generation tok/s with --draft 0 and --draft N, alternated,
# medians, on (a) a copy task -- a passage in the prompt, then its first words again -- greedy,
# and (b) free generation from a short prompt, greedy and sampled (--temp 0.8, -s 7); the
# acceptance rate from --verbose. Greedy runs with drafts must print the ids of the --draft 0
# run: each row says in how many runs they did.
#   tools/bench_draft.sh [MODEL] [N...]      (defaults: the default model; N = 4 8)
# REPS (default 5) runs of each; TOKENS (default 200) tokens generated; COPY_PROMPT a file
# whose text replaces the copy task's prompt; THREADS (default: run's) -t.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-models/tiny-shakespeare.hearth}
shift || true
drafts=${*:-"4 8"}
reps=${REPS:-5}
tokens=${TOKENS:-200}

# The passage of tests/model/test_draft.cpp, which the copy model (tests/data/copy-model.hearth)
# repeats; a longer one (to "cast it off.", 20 more words) it does not: it was trained on
# passages of 16..60 ids.
passage="ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun. Arise, fair sun, and kill the envious moon, who is already sick and pale with grief, that thou her maid art far more fair than she."
copy_prompt="$passage
ROMEO: But soft, what light"
[ -n "${COPY_PROMPT:-}" ] && copy_prompt=$(cat "$COPY_PROMPT")
free_prompt="KING HENRY:"

# One run: prints "tok/s accepted-percent checksum-of-the-ids".
one() {
    local prompt=$1 temp=$2 n=$3 err ids
    ids=$(./run "$model" -p "$prompt" -n "$tokens" --temp "$temp" -s 7 --draft "$n" ${THREADS:+-t "$THREADS"} --verbose \
        --print-ids 2>"$errfile" | md5sum | cut -c1-12)
    err=$(cat "$errfile")
    local speed acc
    speed=$(echo "$err" | sed -n 's/.*generation [0-9]* tokens, \([0-9.]*\) tok\/s.*/\1/p')
    acc=$(echo "$err" | sed -n 's/.*accepted (\([0-9.]*\)%).*/\1/p')
    echo "$speed ${acc:--} $ids"
}
errfile=$(mktemp)
trap 'rm -f "$errfile"' EXIT

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "model $model, commit $(git rev-parse --short HEAD), $tokens tokens, ${THREADS:-default} threads, $reps runs each, alternated"
uptime
for task in copy free free-t0.8; do
    prompt=$copy_prompt temp=0
    [ "$task" != copy ] && prompt=$free_prompt
    [ "$task" = free-t0.8 ] && temp=0.8
    declare -A speeds=() accs=() same=()
    for r in $(seq "$reps"); do
        for n in 0 $drafts; do
            read -r s a ids < <(one "$prompt" "$temp" "$n")
            speeds[$n]+="$s "
            accs[$n]+="$a "
            [ "$n" = 0 ] && plain_ids=$ids
            [ "$ids" = "$plain_ids" ] && same[$n]=$((${same[$n]:-0} + 1))
        done
    done
    base=$(echo "${speeds[0]}" | tr ' ' '\n' | grep . | median)
    for n in 0 $drafts; do
        m=$(echo "${speeds[$n]}" | tr ' ' '\n' | grep . | median)
        acc=$(echo "${accs[$n]}" | tr " " "\n" | grep -v "^-$" | grep . | median || true)
        # Each run against the --draft 0 run just before it: slow changes of the machine's
        # load cancel out of these ratios better than out of the medians.
        paired=$(paste <(echo "${speeds[$n]}" | tr ' ' '\n' | grep .) <(echo "${speeds[0]}" | tr ' ' '\n' | grep .) |
            awk '{ print $1 / $2 }' | median)
        # Sampled runs draw differently with drafts (speculative sampling keeps the distribution,
        # not the draws), so only greedy runs are held to the ids of --draft 0.
        ids="-"
        [ "$temp" = 0 ] && ids="${same[$n]:-0}/$reps"
        printf "%-9s --draft %-2s median %7.1f tok/s (%5.2fx, paired %5.2fx)  acceptance %s%%  ids as --draft 0: %s  runs: %s\n" \
            "$task" "$n" "$m" "$(echo "$m / $base" | bc -l)" "$paired" "${acc:--}" "$ids" "${speeds[$n]}"
    done
    unset speeds accs same
done
uptime
