#!/bin/sh
# Time to first token of every turn of a scripted 10-turn chat (docs/benchmarks.md,
# "Chat: time to first token"). Each turn evaluates only its new tokens, so the time must
# not follow the length of the history; for comparison, the last line is the time to
# evaluate turn 10's whole prompt afresh, as a chat without a kept KV cache would.
#   tools/chat_ttft.sh [MODEL] [more run options, e.g. -t 1]
# Greedy replies of exactly 64 tokens (--ignore-eos) and a context of 2048, so that no
# turn is dropped.
set -e
cd "$(dirname "$0")/.."
model=${1:-models/tiny-shakespeare.hearth}
[ $# -gt 0 ] && shift
table=$(
    i=1
    while [ $i -le 10 ]; do
        echo "Turn $i. What say you of the king, good sir, and of his crown?"
        i=$((i + 1))
    done | ./run "$model" --chat --verbose --temp 0 --ignore-eos -n 64 -c 2048 "$@" 2>&1 >/dev/null |
        awk '/first token after/ {
            n++
            match($0, /prompt: [0-9]+ new tokens \([0-9]+ reused\)/); split(substr($0, RSTART, RLENGTH), p, /[ (]+/)
            match($0, /first token after [0-9.]+ ms/); split(substr($0, RSTART, RLENGTH), f, " ")
            if (n == 1) print "turn  tokens in the cache  new tokens evaluated  time to first token"
            printf "%4d  %19d  %20d  %16.1f ms\n", n, p[5], p[2], f[4]
        }'
)
echo "$table"
whole=$(echo "$table" | awk 'END { print $2 + $3 }')
pp=$(./run "$model" --bench --bench-pp "$whole" --bench-tg 0 --bench-reps 3 "$@" | awk -F'[: ]+' '/^pp/ { print $2 }')
echo "$pp $whole" | awk '{ printf "turn 10 re-evaluating its whole prompt of %d tokens: %.1f ms (pp%d %.1f tok/s)\n", $2, $2 / $1 * 1000, $2, $1 }'
