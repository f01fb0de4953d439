#!/usr/bin/python3
"""make bench, part "peers": hearth beside llama.cpp and ik_llama.cpp, in the same run, on the same
weights, 2 threads. Speed: pp/tg tok/s, the three programs alternated within each repetition,
medians and ratios. Memory and start-up: peak RSS, load time and time to first token.

    tools/bench_peers.py [--shapes tinyllama llama2-7b] [--reps 5] [--parts speed memory] [--mixes q5_k_m]

The peers come from ../shared/tools/build-peers.sh (PEERS_DIR, default ~/peers): llama.cpp's
llama-bench and llama-completion, ik_llama.cpp's llama-bench (with -rtr 1, its fastest CPU path).
Each model is a random-weight Hugging Face folder (tools/make_random_model.py) converted by
quantize into a hearth file, which is exported to GGUF for the peers: the same blocks in both.
hearth runs its own file (the interleaved layouts stored, used in place). Rows go to stdout and
build/bench/peers.md. Nothing here is committed or downloaded.
"""
import argparse
import csv
import io
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.path.join(ROOT, "build/bench")
PEERS = os.environ.get("PEERS_DIR", os.path.expanduser("~/peers"))
LLAMA = os.path.join(PEERS, "llama.cpp/build/bin")
IK = os.path.join(PEERS, "ik_llama.cpp/build/bin")
THREADS = 2
# 16 tokens with the Llama-2 vocabulary (BOS and 15 pieces), the prompt of the start-up rows.
PROMPT16 = "The quick brown fox jumps over the lazy dog by the river"

out_lines = []


def emit(line=""):
    print(line, flush=True)
    out_lines.append(line)


def sh(cmd, **kw):
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)


def model(shape, mix):
    """The hearth file and its GGUF export for a shape and type, made once."""
    hf = os.path.join(DIR, f"{shape}-hf")
    hearth = os.path.join(DIR, f"{shape}.{mix}.hearth")
    gguf = os.path.join(DIR, f"{shape}.{mix}.gguf")
    if not os.path.exists(hearth):
        # The folder only to make the hearth file: a 7B's is 13 GB, deleted once its files are made.
        if not os.path.exists(os.path.join(hf, "model.safetensors")):
            subprocess.run([sys.executable, os.path.join(ROOT, "tools/make_random_model.py"), hf, "--shape", shape], check=True)
        subprocess.run([os.path.join(ROOT, "quantize"), hf, hearth, mix, "-q"], check=True)
    if not os.path.exists(gguf):
        subprocess.run([os.path.join(ROOT, "quantize"), hearth, gguf, "-q"], check=True)
    return hearth, gguf


def in_cache(*keep):
    """Drops every other bench file's cached pages and reads these once (as bench.sh does):
    files of both 7B and TinyLlama outgrow the page cache, and a row must not measure the disk."""
    for f in os.listdir(DIR):
        p = os.path.join(DIR, f)
        if os.path.isfile(p) and p not in keep and (p.endswith(".hearth") or p.endswith(".gguf")):
            subprocess.run(["dd", f"if={p}", "iflag=nocache", "count=0", "status=none"])
    for p in keep:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def hearth_speed(path, pp, tg):
    r = sh([os.path.join(ROOT, "run"), path, "--bench", "--bench-pp", str(pp), "--bench-tg", str(tg), "--bench-reps", "1",
            "-t", str(THREADS)])
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    get = lambda what: float(re.search(rf"^{what}\d+: ([0-9.]+) tok/s", r.stdout, re.M).group(1)) if re.search(rf"^{what}\d+:", r.stdout, re.M) else None
    return get("pp"), get("tg")


def peer_speed(binary, path, pp, tg, extra):
    r = sh([binary, "-m", path, "-p", str(pp), "-n", str(tg), "-r", "1", "-t", str(THREADS), "-o", "csv"] + extra)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    ppv = tgv = None
    for row in csv.DictReader(io.StringIO(r.stdout)):
        if int(row["n_prompt"]) > 0 and int(row["n_gen"]) == 0:
            ppv = float(row["avg_ts"])
        if int(row["n_gen"]) > 0 and int(row["n_prompt"]) == 0:
            tgv = float(row["avg_ts"])
    return ppv, tgv


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, digits=1):
    return "—" if x is None else f"{x:.{digits}f}"


def ratio(a, b):
    return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def speed_row(label, hearth, gguf, pp, tg, reps):
    in_cache(hearth, gguf)
    runs = {"hearth": [], "llama.cpp": [], "ik_llama.cpp": []}
    for _ in range(reps):  # alternated, so that the machine's drift falls on all three alike
        runs["hearth"].append(hearth_speed(hearth, pp, tg))
        runs["llama.cpp"].append(peer_speed(os.path.join(LLAMA, "llama-bench"), gguf, pp, tg, []))
        runs["ik_llama.cpp"].append(peer_speed(os.path.join(IK, "llama-bench"), gguf, pp, tg, ["-rtr", "1"]))
    m = {k: (med([p for p, _ in v]), med([t for _, t in v])) for k, v in runs.items()}
    (hp, ht), (lp, lt), (ip, it) = m["hearth"], m["llama.cpp"], m["ik_llama.cpp"]
    emit(f"| {label} | {fmt(hp)} | {fmt(lp)} | {fmt(ip)} | {ratio(hp, lp)} | {ratio(hp, ip)} | "
         f"{fmt(ht)} | {fmt(lt)} | {fmt(it)} | {ratio(ht, lt)} | {ratio(ht, max(lt or 0, it or 0) or None)} |")


def timed(cmd):
    """Peak RSS (MB, 10^6 bytes, as the file sizes beside it) and wall seconds of a whole process, by GNU time (KiB)."""
    r = sh(["/usr/bin/time", "-f", "TIME %M %e"] + cmd)
    m = re.search(r"TIME (\d+) ([0-9.]+)", r.stderr)
    if r.returncode != 0 or not m:
        raise RuntimeError(r.stderr[-2000:])
    return int(m.group(1)) * 1024 / 1e6, float(m.group(2)), r.stderr


def memory_row(label, hearth, gguf, reps):
    """Start-up and memory: a 16-token prompt and one generated token with -c 4096. Load time as
    each program reports it; time to first token = the whole process; warm page cache, medians of
    reps after one run that is not counted."""
    in_cache(hearth, gguf)
    h_cmd = [os.path.join(ROOT, "run"), hearth, "-p", PROMPT16, "-n", "1", "-c", "4096", "--temp", "0", "-t", str(THREADS)]
    l_cmd = [os.path.join(LLAMA, "llama-completion"), "-m", gguf, "-p", PROMPT16, "-n", "1", "-c", "4096", "--temp", "0",
             "-t", str(THREADS), "-no-cnv", "--no-warmup"]
    res = {"hearth": [], "llama.cpp": []}
    for i in range(reps + 1):
        for name, cmd in (("hearth", h_cmd), ("llama.cpp", l_cmd)):
            rss, wall, err = timed(cmd)
            if name == "hearth":
                load = float(re.search(r"run: load ([0-9.]+) ms", err).group(1))
            else:
                load = float(re.search(r"load time =\s+([0-9.]+) ms", err).group(1))
            if i > 0:
                res[name].append((rss, load, wall))
    (hr, hl, hw), (lr, ll, lw) = [tuple(med([x[j] for x in res[k]]) for j in range(3)) for k in ("hearth", "llama.cpp")]
    size = os.path.getsize(hearth) / 1e6
    emit(f"| {label} | {size:.0f} | {fmt(hr, 0)} | {fmt(lr, 0)} | {ratio(hr, lr)} | {fmt(hl, 0)} | {fmt(ll, 0)} | {fmt(hw, 2)} | {fmt(lw, 2)} |")


def full_context_row(label, hearth, gguf):
    """Peak RSS with the whole 4096-token context filled (a 4096-token prompt), f16 cache."""
    in_cache(hearth, gguf)
    hr, hw, _ = timed([os.path.join(ROOT, "run"), hearth, "--bench", "--bench-pp", "4096", "--bench-tg", "0", "--bench-reps", "1",
                       "-t", str(THREADS)])
    lr, lw, _ = timed([os.path.join(LLAMA, "llama-bench"), "-m", gguf, "-p", "4096", "-n", "0", "-r", "1", "-t", str(THREADS)])
    emit(f"| {label} | {os.path.getsize(hearth) / 1e6:.0f} | {hr:.0f} | {lr:.0f} | {ratio(hr, lr)} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", nargs="+", default=["tinyllama", "llama2-7b"])
    ap.add_argument("--parts", nargs="+", default=["speed", "memory"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mixes", nargs="+", default=None,
                    help="types to run (default: q4_0 q8_0 q4_k_m q5_k_m for tinyllama, q4_0 for the 7B); "
                    "the pp2800 row comes with q4_0")
    a = ap.parse_args()
    missing = [b for b in (os.path.join(LLAMA, "llama-bench"), os.path.join(LLAMA, "llama-completion"), os.path.join(IK, "llama-bench"))
               if not os.access(b, os.X_OK)]
    if missing:
        print(f"bench peers: skipped, not built: {', '.join(missing)} (../shared/tools/build-peers.sh; PEERS_DIR)")
        return
    os.makedirs(DIR, exist_ok=True)
    peers = {n: sh(["git", "-C", os.path.join(PEERS, n), "log", "-1", "--format=%h %cs"]).stdout.strip() for n in ("llama.cpp", "ik_llama.cpp")}
    commit = sh(["git", "rev-parse", "--short", "HEAD"]).stdout.strip()
    emit(f"hearth {commit}; llama.cpp {peers['llama.cpp']}; ik_llama.cpp {peers['ik_llama.cpp']} (-rtr 1); "
         f"{THREADS} threads; medians of {a.reps}, the programs alternated; {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
    emit()
    if "speed" in a.parts:
        emit("| model, type | hearth pp | llama.cpp pp | ik_llama.cpp pp | vs llama.cpp | vs ik | hearth tg | llama.cpp tg | ik_llama.cpp tg | vs llama.cpp | vs faster |")
        emit("|---|---|---|---|---|---|---|---|---|---|---|")
        for shape in a.shapes:
            mixes = a.mixes or (["q4_0", "q8_0", "q4_k_m", "q5_k_m"] if shape == "tinyllama" else ["q4_0"])
            tg = 128 if shape == "tinyllama" else 64
            for mix in mixes:
                hearth, gguf = model(shape, mix)
                speed_row(f"{shape} {mix} pp512/tg{tg}", hearth, gguf, 512, tg, a.reps)
            if shape == "tinyllama" and "q4_0" in mixes:
                hearth, gguf = model(shape, "q4_0")
                speed_row(f"{shape} q4_0 pp2800", hearth, gguf, 2800, 0, max(3, a.reps // 2))
        emit()
    if "memory" in a.parts:
        emit("| model, type, -c 4096 | file MB | hearth peak RSS MB | llama.cpp peak RSS MB | RSS ratio | hearth load ms | llama.cpp load ms | hearth first token s | llama.cpp first token s |")
        emit("|---|---|---|---|---|---|---|---|---|")
        for shape in a.shapes:
            hearth, gguf = model(shape, "q4_0")
            memory_row(f"{shape} q4_0", hearth, gguf, a.reps)
        emit()
        emit("| model, 4096-token context filled (f16 cache) | file MB | hearth peak RSS MB | llama.cpp peak RSS MB | ratio |")
        emit("|---|---|---|---|---|")
        for shape in a.shapes:
            hearth, gguf = model(shape, "q4_0")
            full_context_row(f"{shape} q4_0", hearth, gguf)
        emit()
    with open(os.path.join(DIR, "peers.md"), "w") as f:
        f.write("\n".join(out_lines) + "\n")


if __name__ == "__main__":
    main()
