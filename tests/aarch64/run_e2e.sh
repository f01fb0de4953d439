#!/bin/bash
# aarch64 end to end, under qemu-user: run and quantize built for arm64 (the Makefile's
# build/aarch64/run_i8mm, with dotprod and i8mm, on qemu's -cpu max; build/aarch64/run_plain,
# without, on -cpu cortex-a53; build/aarch64/quantize on either) against the host's ./run and
# ./quantize, computed here in the same run (nothing is pasted in):
#  - quantize: the q4_0 and q4_k_m files it makes of the default model are byte for byte the host's;
#  - run, greedy (--temp 0, an f32 KV cache), on each CPU: the ids of the default model equal the
#    host's; those of the q4_0 and q4_k_m files and of a llama.cpp GGUF file (tests/data/gguf-mini)
#    too, unless the first step where they differ is a near-tie on the host (its top-1 logit ahead
#    of the runner-up by less than 1e-3 of its size): the kernels add in a different order, so a
#    near-tie may go either way, and after it the texts are different texts; the comparison stops
#    there and says so. Each line shows the host's margins (top-1 minus top-2 logit, run
#    --print-margins) and how far the arm64 top-1 logits are from the host's.
# Prints "N passed, N failed" last (tools/run_tests.sh); exit code 77, with the reason, when it
# cannot run here (no qemu, or no arm64 libraries: make deps installs them on Debian).
set -u
cd "$(dirname "$0")/../.." || exit 1
QEMU=${QEMU_AARCH64:-qemu-aarch64}
skip() {
    echo "SKIP: $*"
    exit 77
}
command -v "$QEMU" >/dev/null 2>&1 || skip "no $QEMU (Debian's qemu-user: make deps installs it)"
for b in build/aarch64/run_i8mm build/aarch64/run_plain build/aarch64/quantize; do
    [ -x "$b" ] || skip "$b is not built: the Makefile builds it where the arm64 libraries are installed (make deps, on Debian)"
done
GGUF=build/tests/gguf-mini/mini-Q4_0.gguf
for f in ./run ./quantize "$GGUF"; do
    if [ ! -e "$f" ]; then
        echo "$f is missing (make test builds it)"
        echo "0 passed, 1 failed"
        exit 1
    fi
done

out=build/aarch64/e2e
rm -rf "$out"
mkdir -p "$out"
passed=0
failed=0
result() {  # result ok|fail TEXT
    echo "$1: $2"
    if [ "$1" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

# One thread each: the two CPUs' runs go side by side on the machine's two cores.
N=12
GREEDY="--temp 0 --draft 0 -ctk f32 -ctv f32 -t 1 --ignore-eos -n $N --print-ids --print-margins"
PROMPT="ROMEO: What say you, my lord?"
greedy() {  # greedy STEM MODEL PROMPT COMMAND...: the ids in STEM.ids, the margins in STEM.err
    local stem=$1 model=$2 prompt=$3
    shift 3
    # shellcheck disable=SC2086
    "$@" "$model" -p "$prompt" $GREEDY >"$stem.ids" 2>"$stem.err" || echo "exit code $?" >>"$stem.err"
}
# The models: the default one (f16 weights), its q4_0 and q4_k_m files, and a GGUF file.
MODELS="default q4_0 q4_k_m gguf"
model_file() {  # model_file NAME MAKER: the file MAKER's runs read
    case $1 in
        default) echo models/tiny-shakespeare.hearth ;;
        gguf) echo "$GGUF" ;;
        *) echo "$out/$2-$1.hearth" ;;
    esac
}
model_prompt() {
    if [ "$1" = gguf ]; then echo "Once upon a time"; else echo "$PROMPT"; fi
}

start=$SECONDS
for t in q4_0 q4_k_m; do
    ./quantize models/tiny-shakespeare.hearth "$out/host-$t.hearth" "$t" -q 2>"$out/host-quantize-$t.err"
done
for m in $MODELS; do
    greedy "$out/host-$m" "$(model_file "$m" host)" "$(model_prompt "$m")" ./run
done
# Two lanes of qemu: quantize q4_k_m (the slow one) beside q4_0 and the models that need no
# quantized file, then each CPU's runs of the quantized ones.
{
    "$QEMU" -cpu cortex-a53 build/aarch64/quantize models/tiny-shakespeare.hearth "$out/arm64-q4_k_m.hearth" q4_k_m -q \
        2>"$out/arm64-quantize-q4_k_m.err"
} &
{
    "$QEMU" -cpu max build/aarch64/quantize models/tiny-shakespeare.hearth "$out/arm64-q4_0.hearth" q4_0 -q \
        2>"$out/arm64-quantize-q4_0.err"
    for m in default gguf; do
        greedy "$out/max-$m" "$(model_file "$m" arm64)" "$(model_prompt "$m")" "$QEMU" -cpu max build/aarch64/run_i8mm
        greedy "$out/a53-$m" "$(model_file "$m" arm64)" "$(model_prompt "$m")" "$QEMU" -cpu cortex-a53 build/aarch64/run_plain
    done
} &
wait
for t in q4_0 q4_k_m; do
    if cmp -s "$out/host-$t.hearth" "$out/arm64-$t.hearth"; then
        result ok "quantize $t on arm64: the file is byte for byte the host's ($(stat -c %s "$out/host-$t.hearth") bytes)"
    else
        result fail "quantize $t on arm64: the file differs from the host's ($(cmp "$out/host-$t.hearth" "$out/arm64-$t.hearth" 2>&1 | head -n 1); $(cat "$out/arm64-quantize-$t.err"))"
    fi
done
for t in q4_0 q4_k_m; do
    greedy "$out/max-$t" "$(model_file "$t" arm64)" "$PROMPT" "$QEMU" -cpu max build/aarch64/run_i8mm &
    greedy "$out/a53-$t" "$(model_file "$t" arm64)" "$PROMPT" "$QEMU" -cpu cortex-a53 build/aarch64/run_plain &
    wait
done

# margins STEM: one line per generated id, "ID TOP1 TOP2" (run --print-margins).
margins() {
    sed -nE 's/^run: margin: id ([0-9]+) logit (\S+) runner-up [0-9]+ logit (\S+)$/\1 \2 \3/p' "$1.err"
}
# compare LABEL HOST_STEM ARM_STEM TIES: TIES=1 lets a near-tie on the host end the comparison.
compare() {
    local label=$1 host=$2 arm=$3 ties=$4 verdict
    verdict=$(paste -d ' ' <(margins "$host") <(margins "$arm") | awk -v n="$N" -v ties="$ties" '
        {
            steps++
            margin = $2 - $3
            size = $2 < 0 ? -$2 : $2
            if (size < 1) size = 1
            shown = shown sprintf(" %.3g", margin)
            if ($4 == "") { why = "the arm64 run stopped after " steps - 1 " ids"; exit }
            if ($1 != $4) {
                first = steps
                if (ties && margin < 1e-3 * size) {
                    tie = sprintf("step %d is a near-tie on the host (margin %.3g, top-1 %.6g): host %s, arm64 %s; compared up to it", steps, margin, $2, $1, $4)
                } else {
                    why = sprintf("step %d: host %s (margin %.3g), arm64 %s", steps, $1, margin, $4)
                }
                exit
            }
            d = $2 - $5
            if (d < 0) d = -d
            if (d > most) most = d
        }
        END {
            if (why == "" && tie == "" && steps != n) why = "the host run gave " steps " of " n " ids"
            if (why != "") { print "fail " why "; host margins:" shown; exit }
            if (tie != "") { print "ok " tie "; host margins:" shown; exit }
            printf "ok %d ids equal the host'"'"'s; top-1 logits within %.2g of the host'"'"'s; host margins:%s\n", steps, most, shown
        }')
    # The printed ids are the margin lines' ids (a check of the check).
    for s in "$host" "$arm"; do
        if [ "$(tr -d '\n' <"$s.ids")" != "$(margins "$s" | cut -d ' ' -f 1 | paste -s -d ,)" ]; then
            verdict="fail $s: the ids printed ($(tr -d '\n' <"$s.ids")) are not the margin lines' ($(grep -v '^run: margin' "$s.err" | head -n 3))"
        fi
    done
    result "${verdict%% *}" "$label: ${verdict#* }"
    echo "    host:  $(tr -d '\n' <"$host.ids")"
    echo "    arm64: $(tr -d '\n' <"$arm.ids")"
}
for m in $MODELS; do
    ties=1
    [ "$m" = default ] && ties=0  # f16 weights and f32 arithmetic: no near-tie excuse
    compare "aarch64 with dotprod and i8mm (qemu -cpu max), $m" "$out/host-$m" "$out/max-$m" $ties
    compare "aarch64 without dotprod (qemu -cpu cortex-a53), $m" "$out/host-$m" "$out/a53-$m" $ties
done
echo "(the comparisons took $((SECONDS - start)) s)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
