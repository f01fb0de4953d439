#!/usr/bin/python3
"""make bench, part server: time to first token and generation speed of `run --server` with
1, 2 and 4 concurrent streams, and of llama.cpp's llama-server beside it when LLAMA_SERVER
names its binary (../shared/tools/build-peers.sh builds it), on the same weights (the hearth
file and its GGUF export) with the same -np, -c per slot and threads.

    tools/bench_server.py --model M.hearth [--gguf M.gguf] [--streams 1 2 4] [--tokens 128]

Each configuration gets its own server (-np N, -c N x --ctx, -t --threads) on a free loopback
port; hearth's are started at once and their rounds go through them in turn (bench_all), then
llama-server's run one at a time (main). After a warm-up request, N clients each stream one
/v1/completions request at once, each with its own prompt of about --prompt-words words (so no
slot reuses another's cache), temperature 0 and ignore_eos, so every stream generates exactly
--tokens tokens. Per stream: time to first token (from sending the request to the first text)
and generation speed (tokens after the first over the time after the first). The table gives the
median TTFT, the mean per-stream speed, the total generated tokens over the wall time of the
round (all streams, the prompts' reading included), and the decoding rate of all streams
together while all of them generate (their tokens between the last stream's first text and the
first stream's last), medians over --reps rounds. With N > 1 streams, also the TTFT of a request
that arrives while N - 1 others generate (continuous batching: it should be near the idle
server's, the 1-stream row's). Standard library only.
"""
import argparse
import http.client
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import threading
import time

WORDS = ("the fire in the hearth burns low and warm while a small model writes one word at a time "
         "on every core of an old laptop in the quiet of the night").split()


def free_port(taken=set()):
    """A loopback port free now and not given out before (the servers started earlier may not
    have bound theirs yet)."""
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port not in taken:
            taken.add(port)
            return port


def wait_ready(port, proc, seconds=600):
    end = time.time() + seconds
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the server did not become ready")


def stream_one(port, prompt, tokens, result):
    body = json.dumps({"prompt": prompt, "max_tokens": tokens, "temperature": 0, "ignore_eos": True, "stream": True,
                       "stream_options": {"include_usage": True}})
    t0 = time.time()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    result["connection"] = c  # late_ttft closes it to cancel the stream
    r = c.getresponse()
    if r.status != 200:
        result["error"] = f"HTTP {r.status}: {r.read()[:200]!r}"
        return
    first = last = None
    chunks = 0
    times = []  # when each piece of text came
    usage = None
    try:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            ev = json.loads(line[6:])
            if ev.get("usage"):
                usage = ev["usage"].get("completion_tokens")
            for ch in ev.get("choices") or []:
                if ch.get("finish_reason"):
                    result["finish_reason"] = ch["finish_reason"]
                if ch.get("text"):
                    now = time.time()
                    if first is None and "first_text" in result:
                        result["first_text"].set()
                    first = first or now
                    last = now
                    chunks += 1
                    times.append(now)
    except (OSError, ValueError, http.client.HTTPException):
        if result.get("cancelled"):  # late_ttft closed the connection: the stream's figures are not used
            return
        raise
    n = usage if usage else chunks
    result.update(ttft=(first - t0) if first else None, tokens=n,
                  speed=(n - 1) / (last - first) if first and last and last > first else None, end=time.time(),
                  times=times)


def round_of(port, n, tokens, words, seed):
    results = [{} for _ in range(n)]
    threads = []
    for i in range(n):
        threads.append(threading.Thread(target=stream_one, args=(port, prompt_of(seed, i, words), tokens, results[i])))
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    for r in results:
        if "error" in r or r.get("ttft") is None:
            raise RuntimeError(f"a stream failed: {r}")
    # While all n generate: from the last stream's first text to the first stream's last, the
    # pieces of text of all streams (one per token, nearly: a piece may wait for the rest of a
    # UTF-8 character) over that time. This is the decoding rate the batching gives, without
    # the prompts' reading, which the wall-time figure includes.
    start, stop = max(r["times"][0] for r in results), min(r["times"][-1] for r in results)
    steady = sum(sum(1 for t in r["times"] if start < t <= stop) for r in results) / (stop - start) if stop > start else None
    return (statistics.median(r["ttft"] for r in results), statistics.mean(r["speed"] for r in results),
            sum(r["tokens"] for r in results) / wall, steady)


def prompt_of(seed, i, words):
    return f"Stream {seed}-{i}: " + " ".join(WORDS[(seed * 7 + i * 13 + k * 5) % len(WORDS)] for k in range(words))


def late_ttft(port, n, tokens, words, seed):
    """Time to first token of a request that arrives while n - 1 others generate: they are
    started first, with replies long enough to outlast it, and it is sent once each of them
    has streamed its first text."""
    busy = [{"first_text": threading.Event()} for _ in range(n - 1)]
    threads = [threading.Thread(target=stream_one, args=(port, prompt_of(seed, i, words), 4 * tokens, busy[i]))
               for i in range(n - 1)]
    for t in threads:
        t.start()
    for r in busy:
        r["first_text"].wait(600)
    late = {}
    stream_one(port, prompt_of(seed, n - 1, words), tokens, late)
    still = sum(1 for r in busy if "end" not in r)
    # The others need not finish their long replies: closing their connections cancels them.
    for r in busy:
        if "end" not in r:
            r["cancelled"] = True
            try:
                r["connection"].sock.shutdown(socket.SHUT_RDWR)
            except (AttributeError, OSError):
                pass
    for t in threads:
        t.join()
    if late.get("ttft") is None or still < n - 1:
        brief = {k: v for k, v in late.items() if k not in ("times", "connection")}
        raise RuntimeError(f"the late request failed, or {n - 1 - still} of the others ended first: {brief}")
    return late["ttft"]


class Server:
    """One server under test: a configuration (name, -np) and its process, started with the others."""

    def __init__(self, name, streams, cmd, port):
        self.name, self.streams, self.port = name, streams, port
        self.rounds, self.late, self.late_note, self.failed = [], [], "", ""
        self.err = []
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        threading.Thread(target=lambda: self.err.append(self.proc.stderr.read()), daemon=True).start()

    def fail(self, e):
        self.failed = f"{e} {(self.err[0] if self.err else b'')[-400:].decode('utf-8', 'replace')!r}"
        self.stop()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def row(self):
        if self.failed or not self.rounds:
            return f"| {self.name} | {self.streams} | failed: {self.failed or 'no round ran'} | | | | |"
        r = self.rounds
        ttft, per, total = (statistics.median(x[i] for x in r) for i in range(3))
        steady = [x[3] for x in r if x[3]]
        steady = f"{statistics.median(steady):.1f}" if steady else "-"
        late_ms = (f"{statistics.median(self.late) * 1000:.0f}" if self.late else "-") + self.late_note
        return f"| {self.name} | {self.streams} | {ttft * 1000:.0f} | {late_ms} | {per:.1f} | {total:.1f} | {steady} |"


def bench_all(servers, args):
    """All servers run at once, idle but one: the rounds go through them in turn (rep by rep,
    in an order that rotates), so that every configuration meets the same phases of a shared
    machine, whose speed drifts within minutes, and the ratios between rows compare rounds run
    side by side. The late-request rounds follow, in turn the same way."""
    for sv in servers:
        try:
            wait_ready(sv.port, sv.proc)
            round_of(sv.port, 1, 8, 8, 999)  # warm-up: pages of the model in, threads started
        except Exception as e:
            sv.fail(e)
    live = [sv for sv in servers if not sv.failed]
    for rep in range(args.reps):
        for sv in live[rep % len(live):] + live[:rep % len(live)] if live else []:
            if sv.failed:
                continue
            try:
                sv.rounds.append(round_of(sv.port, sv.streams, args.tokens, args.prompt_words, rep))
            except Exception as e:
                sv.fail(e)
    for rep in range(args.reps):
        for sv in live:
            if sv.failed or sv.streams < 2:
                continue
            try:
                sv.late.append(late_ttft(sv.port, sv.streams, args.tokens, args.prompt_words, 100 + rep))
            except Exception as e:  # the column says so; the rounds' figures stand
                sv.late_note = f" (a round failed: {e})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--gguf")
    ap.add_argument("--run", default="./run")
    ap.add_argument("--llama-server", default=os.environ.get("LLAMA_SERVER", ""))
    ap.add_argument("--streams", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--prompt-words", type=int, default=100)
    ap.add_argument("--ctx", type=int, default=1024, help="context per slot")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--hearth-args", default="", help="more options for hearth's server, e.g. '--draft 0'")
    args = ap.parse_args()

    print(f"server: {os.path.basename(args.model)}, {args.threads} threads, -c {args.ctx} per slot, prompts of ~{args.prompt_words} "
          f"words, {args.tokens} tokens per stream (ignore_eos, temperature 0), medians of {args.reps} rounds, "
          f"hearth's servers' rounds alternated")
    print()
    print("| server | streams | time to first token, ms (median) | ... of one more arriving while they generate, ms | "
          "tok/s per stream | tok/s in all (wall time) | tok/s in all while all generate |")
    print("|---|---|---|---|---|---|---|")
    sys.stdout.flush()
    # hearth's servers share the model file's pages, so all of them are up at once and their
    # rounds alternated. llama-server copies the weights into its own memory (its CPU repacking):
    # three 7B copies at once left too little page cache for hearth's file, which then was read
    # from disk at every token. So its configurations run one at a time, after hearth's.
    groups = [[]]
    for n in args.streams:
        port = free_port()
        cmd = [args.run, args.model, "--server", "--port", str(port), "-np", str(n), "-c", str(n * args.ctx),
               "-t", str(args.threads)] + shlex.split(args.hearth_args)
        groups[0].append(("hearth " + args.hearth_args if args.hearth_args else "hearth", n, cmd, port))
    if args.llama_server and args.gguf:
        for n in args.streams:
            port = free_port()
            cmd = [args.llama_server, "-m", args.gguf, "--host", "127.0.0.1", "--port", str(port), "-np", str(n),
                   "-c", str(n * args.ctx), "-t", str(args.threads), "-tb", str(args.threads)]
            groups.append([("llama-server", n, cmd, port)])
    rows = {}
    for group in groups:
        servers = []
        try:
            for name, n, cmd, port in group:
                servers.append(Server(name, n, cmd, port))
            bench_all(servers, args)
        finally:
            for sv in servers:
                sv.stop()
        for sv in servers:
            rows[(sv.streams, sv.name.startswith("llama"))] = sv.row()
    for key in sorted(rows):
        print(rows[key], flush=True)
    if not (args.llama_server and args.gguf):
        print()
        print("llama-server: not run (set LLAMA_SERVER to its binary, built by ../shared/tools/build-peers.sh, and give --gguf)")


if __name__ == "__main__":
    main()
