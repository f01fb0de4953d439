#!/bin/bash
# make bench: the figures of docs/benchmarks.md.
#   1. memory read bandwidth (build/membw), 1 and 2 threads
#   2. core: default model and a random TinyLlama-1.1B-shape model, f32 and f16, 1 and 2 threads
#   3. quant: TinyLlama-1.1B and Llama-2-7B shapes, f16 q8_0 q4_0 q4_k_m, 2 threads, pp512 tg128
#   4. quality: perplexity of the default model on its held-out text, per type
#   5. tokenize: 1 MiB of text with the Llama-3 and Qwen3 byte-level BPE tokenizers
#      (run --tokenize -f), the whole process, vocabulary loading included
#   6. layout: the interleaved layouts stored in the file and used in place, against the same
#      weights in the plain layout (the file's GGUF export) that run repacks at load: TinyLlama
#      shape, q4_0 q8_0 q4_k_m, pp512 and tg128, alternated, medians of BENCH_LAYOUT_REPS (7)
#   7. peers: hearth beside llama.cpp and ik_llama.cpp on the same weights, in the same run:
#      speed, peak RSS, load time, first token (tools/bench_peers.py; needs the peers built by
#      ../shared/tools/build-peers.sh, PEERS_DIR)
#   8. server: the engine's batched generation (run --bench-seqs 1, 4, 8 after BENCH_DEPTH
#      cached positions, 128), then run --server
#      with 1, 4 and 8 concurrent streams (BENCH_SERVER_STREAMS), time to
#      first token (also of a request arriving while the others generate) and tokens/s, each
#      shape in q4_0, beside llama.cpp's llama-server on its GGUF export when LLAMA_SERVER names
#      it or PEERS_DIR has it (tools/bench_server.py)
#   9. drafts: prompt-lookup drafts against none (tools/bench_draft.sh) on a copy task and on
#      free generation: the trained copy model widened to TinyLlama's shapes
#      (tools/widen_model.py), and the random TinyLlama-shape q4_0
# Random-weight models are made here (tools/make_random_model.py) and kept in build/bench
# (never committed). Choose parts with BENCH_PARTS="core quant quality" (default: all) and
# shapes with BENCH_SHAPES="tinyllama llama2-7b". Results: stdout and build/bench/results.md.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/bench
mkdir -p "$dir"
PARTS=${BENCH_PARTS:-"core quant quality tokenize layout peers server drafts"}
SHAPES=${BENCH_SHAPES:-"tinyllama llama2-7b"}
REPS=${BENCH_REPS:-3}
out=$dir/results.md

has() { [[ " $PARTS " == *" $1 "* ]]; }

# The median of the values after the first argument, printed with that printf format (the
# lower of the two middle values for an even count).
median() {
    local fmt=$1
    shift
    printf '%s\n' "$@" | sort -g | awk -v f="$fmt" '{ a[NR] = $1 } END { printf f, a[int((NR + 1) / 2)] }'
}

# A hearth file of the given shape and type, made once.
model() {
    local shape=$1 type=$2 f="$dir/$1.$2.hearth"
    if [ ! -f "$f" ]; then
        if [ ! -f "$dir/$shape-hf/model.safetensors" ]; then
            tools/install_deps.sh --bench >&2
            /usr/bin/python3 tools/make_random_model.py "$dir/$shape-hf" --shape "$shape" >&2
        fi
        ./quantize "$dir/$shape-hf" "$f" "$type" -q >&2
    fi
    echo "$f"
}

# One ./run --bench as a table row: model label, type, threads, pp and tg sizes. The read
# bandwidth of this shared VM drifts (2x within one make bench), so it is measured again right
# before each row, with the row's thread count, and tg's weight GB/s is given as a share of it.
#
# The row's file must be in the page cache, or generation measures the disk: the files made
# here (a 13 GB f16 7B beside the others) outgrow RAM, and the kernel kept the newest file only
# partly cached (7B f16 tg ran at 1.3 tok/s, 2.6 once the file was wholly cached). So the other
# files' cached pages are dropped (dd iflag=nocache, no root needed), the row's file is read
# once, and a row whose file was not wholly cached after its runs says how much was.
cache_only() {
    local keep=$1 f
    for f in "$dir"/*.hearth "$dir"/*-hf/*.safetensors; do
        [ -f "$f" ] && [ "$f" != "$keep" ] && dd if="$f" iflag=nocache count=0 status=none
    done
    cat "$keep" > /dev/null
}
cached_note() {
    local pct
    pct=$(fincore --bytes --noheadings --output RES,SIZE "$1" 2>/dev/null | awk '{ printf "%d", 100 * $1 / $2 }')
    [ -n "$pct" ] && [ "$pct" -lt 99 ] && echo " (file ${pct}% in page cache)"
    return 0
}

bench_row() {
    local label=$1 file=$2 type=$3 threads=$4 pp=$5 tg=$6
    local r mb ppv tgv gbs bw pct
    cache_only "$file"
    bw=$(build/membw 512 | sed -nE "s/.*, $threads threads?: ([0-9.]+) GB\/s.*/\1/p")
    r=$(./run "$file" --bench --bench-pp "$pp" --bench-tg "$tg" --bench-reps "$REPS" -t "$threads")
    mb=$(echo "$r" | sed -nE 's/.*, ([0-9.]+) MB of weights.*/\1/p')
    ppv=$(echo "$r" | sed -nE 's/^pp[0-9]+: ([0-9.]+) tok\/s.*/\1/p')
    tgv=$(echo "$r" | sed -nE 's/^tg[0-9]+: ([0-9.]+) tok\/s.*/\1/p')
    gbs=$(echo "$r" | sed -nE 's/.*\(([0-9.]+) GB\/s.*/\1/p')
    pct=$(awk -v a="$gbs" -v b="$bw" 'BEGIN { if (b > 0) printf "%.0f%%", 100 * a / b; else print "?" }')
    echo "| $label$(cached_note "$file") | $type | $mb | $threads | $ppv | $tgv | $gbs | $bw | $pct |" | tee -a "$out"
}

{
    echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' 2>/dev/null || echo ' (uncommitted changes)'), $(date -u +%Y-%m-%d)"
    echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GB; medians of $REPS runs"
    echo
    build/membw 2048 | sed 's/^/    /'
    echo
} | tee "$out"

if has core; then
    f32_default="$dir/tiny-shakespeare.f32.hearth"
    [ -f "$f32_default" ] || ./quantize models/tiny-shakespeare.hearth "$f32_default" f32 -q
    echo "| model | type | MB/token | threads | pp128 tok/s | tg64 tok/s | weight GB/s | membw GB/s | tg share |" | tee -a "$out"
    echo "|---|---|---|---|---|---|---|---|---|" | tee -a "$out"
    for t in 1 2; do bench_row default models/tiny-shakespeare.hearth f16 $t 128 64; done
    for t in 1 2; do bench_row default "$f32_default" f32 $t 128 64; done
    for type in f16 f32; do
        f=$(model tinyllama $type)
        for t in 1 2; do bench_row "TinyLlama-1.1B shape" "$f" $type $t 128 64; done
    done
    echo | tee -a "$out"
fi

if has quant; then
    for shape in $SHAPES; do
        tg=128
        [ "$shape" = llama2-7b ] && tg=64
        echo "| model | type | MB/token | threads | pp512 tok/s | tg$tg tok/s | weight GB/s | membw GB/s | tg share |" | tee -a "$out"
        echo "|---|---|---|---|---|---|---|---|---|" | tee -a "$out"
        for type in f16 q8_0 q4_0 q4_k_m; do
            bench_row "$shape" "$(model "$shape" $type)" $type 2 512 $tg
        done
        echo | tee -a "$out"
    done
fi

if has quality; then
    valid=tests/data/tinyshakespeare-valid.txt
    f32_default="$dir/tiny-shakespeare.f32.hearth"
    [ -f "$f32_default" ] || ./quantize models/tiny-shakespeare.hearth "$f32_default" f32 -q
    echo "| default model | bits/weight | perplexity on held-out text (-c 256) |" | tee -a "$out"
    echo "|---|---|---|" | tee -a "$out"
    for type in f32 f16 q8_0 q6_k q4_k_m q4_0; do
        f="$dir/ppl-tiny-shakespeare.$type.hearth"
        bpw=$(./quantize "$f32_default" "$f" "$type" -q 2>&1 | sed -nE 's/.* ([0-9.]+) bits per weight/\1/p')
        ppl=$(./run "$f" --perplexity "$valid" -c 256 -t 2 2>/dev/null | sed -nE 's/^perplexity: ([0-9.]+).*/\1/p')
        echo "| $type | $bpw | $ppl |" | tee -a "$out"
    done
    echo | tee -a "$out"
fi

if has tokenize; then
    text=$dir/tokenize-1mib.txt
    while [ "$(stat -c %s "$text" 2>/dev/null || echo 0)" -lt 1048576 ]; do cat tests/data/tinyshakespeare-valid.txt >> "$text"; done
    truncate -s 1048576 "$text"
    echo "| tokenizer | 1 MiB of text: tokens | seconds, whole process (median of $REPS) | of which loading the vocabulary |" | tee -a "$out"
    echo "|---|---|---|---|" | tee -a "$out"
    for name in llama3:128256 qwen3:151936; do
        n=${name%%:*} vocab=${name##*:} f="$dir/tokenize-${name%%:*}.hearth"
        if [ ! -f "$f" ]; then
            /usr/bin/python3 tools/make_random_model.py "$dir/tokenize-$n-hf" --shape tiny --vocab "$vocab" \
                --tokenizer-json "build/tests/bpe/$n-tokenizer.json" --tokenizer-config "tests/data/bpe/$n-tokenizer_config.json" >&2
            ./quantize "$dir/tokenize-$n-hf" "$f" -q >&2
        fi
        times=() loads=()
        for _ in $(seq "$REPS"); do
            t0=$(date +%s.%N); tokens=$(./run "$f" --tokenize -f "$text" | tr ',' '\n' | wc -l); t1=$(date +%s.%N)
            t2=$(date +%s.%N); ./run "$f" --tokenize -p x > /dev/null; t3=$(date +%s.%N)
            times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')") loads+=("$(awk -v a="$t2" -v b="$t3" 'BEGIN { print b - a }')")
        done
        echo "| $n | $tokens | $(median %.2f "${times[@]}") | $(median %.2f "${loads[@]}") |" | tee -a "$out"
    done
    echo | tee -a "$out"
fi

if has layout; then
    reps=${BENCH_LAYOUT_REPS:-7}
    echo "| TinyLlama-1.1B shape, 2 threads | pp512 stored | pp512 repacked | tg128 stored | tg128 repacked | stored / repacked, pp and tg |" | tee -a "$out"
    echo "|---|---|---|---|---|---|" | tee -a "$out"
    for type in q4_0 q8_0 q4_k_m; do
        f=$(model tinyllama $type) g=$dir/tinyllama.$type.gguf
        [ -f "$g" ] || ./quantize "$f" "$g" -q >&2
        cache_only "$f"
        cat "$g" > /dev/null
        sp=() rp=() st=() rt=()
        for _ in $(seq "$reps"); do
            for which in stored repacked; do
                m=$f
                [ $which = repacked ] && m=$g
                r=$(./run "$m" --bench --bench-pp 512 --bench-tg 128 --bench-reps 1 -t 2 2>/dev/null)
                p=$(echo "$r" | sed -nE 's/^pp512: ([0-9.]+) tok\/s.*/\1/p') t=$(echo "$r" | sed -nE 's/^tg128: ([0-9.]+) tok\/s.*/\1/p')
                if [ $which = stored ]; then sp+=("$p") st+=("$t"); else rp+=("$p") rt+=("$t"); fi
            done
        done
        a=$(median %.1f "${sp[@]}") b=$(median %.1f "${rp[@]}") c=$(median %.1f "${st[@]}") d=$(median %.1f "${rt[@]}")
        echo "| $type | $a | $b | $c | $d | $(awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" 'BEGIN { printf "%.2f, %.2f", a / b, c / d }') |" | tee -a "$out"
    done
    echo | tee -a "$out"
fi

if has peers; then
    /usr/bin/python3 tools/bench_peers.py --shapes $SHAPES --reps "${BENCH_PEER_REPS:-5}" | tee -a "$out"
fi

if has server; then
    peer=${LLAMA_SERVER:-${PEERS_DIR:-$HOME/peers}/llama.cpp/build/bin/llama-server}
    [ -x "$peer" ] || peer=""
    for shape in $SHAPES; do
        f=$(model "$shape" q4_0) g=$dir/$shape.q4_0.gguf tg_batch=128
        [ "$shape" = llama2-7b ] && tg_batch=64
        [ -f "$g" ] || ./quantize "$f" "$g" -q >&2
        cache_only "$f"
        cat "$g" > /dev/null
        # Continuous batching (issue 23): aggregate tok/s at 4 and 8 streams against 1. First the
        # engine alone (run --bench-seqs: N sequences' tokens per forward_batch call, no HTTP,
        # no prompts), then the server. The sequence counts are alternated, REPS rounds of one
        # run each, and the medians compared: this host's speed drifts by a quarter within
        # minutes, and one run per count measured 3.7x at 8 sequences where an A/B minutes
        # before had 5.4x.
        # The engine's sequences start after BENCH_DEPTH cached positions (default 128), as the
        # server's replies come after its ~100-word prompts: attention then reads that much cache
        # for every token, which on the 7B (32 kv heads) is ~0.7 GB a step at 8 sequences.
        streams=${BENCH_SERVER_STREAMS:-1 4 8} depth=${BENCH_DEPTH:-128}
        declare -A runs=()
        for ((i = 0; i < REPS; i++)); do
            for n in $streams; do
                v=$(./run "$f" --bench --bench-pp 0 --bench-tg $tg_batch --bench-seqs "$n" --bench-depth "$depth" --bench-reps 1 -t 2 |
                    sed -nE 's/^tg.*: ([0-9.]+) tok\/s.*/\1/p')
                runs[$n]="${runs[$n]:-} $v"
            done
        done
        echo "| $shape q4_0, engine alone ($REPS rounds, counts alternated) | sequences | tg$tg_batch @ d$depth tok/s in all, median | runs | per sequence | in all / 1 sequence |" | tee -a "$out"
        echo "|---|---|---|---|---|---|" | tee -a "$out"
        one=""
        for n in $streams; do
            v=$(median %s ${runs[$n]})
            [ "$n" = 1 ] && one=$v
            echo "| | $n | $v |${runs[$n]} | $(awk -v a="$v" -v n="$n" 'BEGIN { printf "%.2f", a / n }') | $(awk -v a="$v" -v b="$one" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }') |" | tee -a "$out"
        done
        echo | tee -a "$out"
        # The 7B's streams generate 64 tokens, as its engine rows do: at 128, llama-server's rounds
        # of 8 streams take minutes each (a make bench on the Zen 4 host was stopped after 15
        # minutes in the 7B's server rounds).
        /usr/bin/python3 tools/bench_server.py --model "$f" --gguf "$g" --llama-server "$peer" --tokens "$tg_batch" \
            --streams ${BENCH_SERVER_STREAMS:-1 4 8} --reps "${BENCH_SERVER_REPS:-3}" | tee -a "$out"
        echo | tee -a "$out"
    done
fi

if has drafts; then
    # Prompt-lookup drafts (issue 23; tools/bench_draft.sh, greedy and sampled, --draft 0 4 8
    # alternated). The copy task needs a model that copies, and one whose weights stream from
    # memory as a real model's do, or a pass that verifies 5 tokens costs ~3 single passes
    # and what drafts save is overhead: the trained copy model (tests/data/copy-model.hearth,
    # 0.35 MB, which runs from L2) widened to TinyLlama's shapes by tools/widen_model.py, the
    # same function at ~1 GB a token. In q8_0: in q4_0 the 64-wide model's own weights lose
    # the passage after ~15 tokens. Then the random TinyLlama-shape q4_0, whose output seldom
    # repeats an n-gram of its context (so drafts are seldom proposed): what they must not do
    # there is cost speed. (The default model runs a token in ~0.15 ms, where the runs'
    # scatter hides any difference.) Greedy ids with drafts must be those without on both: a
    # verifying batch's matmuls give each token the bits it gets alone (model/generate.h), and
    # the random model, whose logits are near-ties all along (where they once parted the top
    # two were 3.5079 and 3.5054, `run --print-margins`), is the sharper test of that.
    wide=$dir/copy-wide.q8_0.hearth
    if [ ! -f "$wide" ]; then
        tools/install_deps.sh --bench >&2
        ./quantize tests/data/copy-model.hearth "$dir/copy.f32.gguf" f32 -q >&2
        /usr/bin/python3 tools/widen_model.py "$dir/copy.f32.gguf" "$dir/copy-wide.f32.bin" >&2
        ./quantize "$dir/copy-wide.f32.bin" "$wide" q8_0 -q --tokenizer tests/data/tiny-shakespeare-tokenizer.model >&2
        rm -f "$dir/copy.f32.gguf" "$dir/copy-wide.f32.bin"
    fi
    for m in "$wide" "$(model tinyllama q4_0)"; do
        cache_only "$m"
        echo '```' | tee -a "$out"
        REPS=$REPS TOKENS=200 tools/bench_draft.sh "$m" 4 8 | tee -a "$out"
        echo '```' | tee -a "$out"
        echo | tee -a "$out"
    done
fi
