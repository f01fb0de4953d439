#!/bin/bash
# make bench: memory bandwidth, then prompt and generation speed of the default model and
# of a random-weight model of TinyLlama-1.1B's shape, in f32 and f16, with 1 and 2 threads.
# The random model is made here (tools/make_random_model.py) and kept in build/bench.
# Results go to stdout and build/bench/results.md, ready for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/bench
mkdir -p "$dir"
PP=${BENCH_PP:-128}
TG=${BENCH_TG:-64}
REPS=${BENCH_REPS:-3}
THREADS=${BENCH_THREADS:-"1 2"}
out=$dir/results.md

{
    echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' 2>/dev/null || echo ' (uncommitted changes)'), $(date -u +%Y-%m-%d)"
    echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GB"
    echo
    build/membw 2048 | sed 's/^/    /'
    echo
} | tee "$out"

if [ ! -f "$dir/tinyllama.f16.hearth" ] || [ ! -f "$dir/tinyllama.f32.hearth" ]; then
    if [ ! -f "$dir/tinyllama-hf/model.safetensors" ]; then
        tools/install_deps.sh --bench
        /usr/bin/python3 tools/make_random_model.py "$dir/tinyllama-hf" --shape tinyllama
    fi
    ./quantize "$dir/tinyllama-hf" "$dir/tinyllama.f16.hearth" --type f16 -q
    ./quantize "$dir/tinyllama-hf" "$dir/tinyllama.f32.hearth" --type f32 -q
fi
[ -f "$dir/tiny-shakespeare.f32.hearth" ] || ./quantize models/tiny-shakespeare.hearth "$dir/tiny-shakespeare.f32.hearth" --type f32 -q

bw2=$(build/membw 2048 | awk '/2 threads/ {print $(NF-7)}' | head -1)
{
    echo "| model | type | MB/token | threads | pp$PP tok/s | tg$TG tok/s | weight GB/s |"
    echo "|---|---|---|---|---|---|---|"
} | tee -a "$out"
for m in "default models/tiny-shakespeare.hearth f16" "default $dir/tiny-shakespeare.f32.hearth f32" \
         "TinyLlama-1.1B-shape $dir/tinyllama.f16.hearth f16" "TinyLlama-1.1B-shape $dir/tinyllama.f32.hearth f32"; do
    set -- $m
    for t in $THREADS; do
        r=$(./run "$2" --bench --bench-pp "$PP" --bench-tg "$TG" --bench-reps "$REPS" -t "$t")
        mb=$(echo "$r" | sed -nE 's/.*, ([0-9.]+) MB of weights.*/\1/p')
        pp=$(echo "$r" | sed -nE 's/^pp[0-9]+: ([0-9.]+) tok\/s.*/\1/p')
        tg=$(echo "$r" | sed -nE 's/^tg[0-9]+: ([0-9.]+) tok\/s.*/\1/p')
        gbs=$(echo "$r" | sed -nE 's/.*\(([0-9.]+) GB\/s.*/\1/p')
        echo "| $1 | $3 | $mb | $t | $pp | $tg | $gbs |" | tee -a "$out"
    done
done
echo | tee -a "$out"
echo "measured read bandwidth with 2 threads: $bw2 GB/s" | tee -a "$out"
