#!/usr/bin/env python3
"""hearth's server against the chat goldens: for each family of tests/data/chat_goldens.json, the
same kind of GGUF make_chat_goldens.py serves to llama-server, served by `./run --server` (ports
18520...); every dialog is sent to POST /v1/chat/completions (max_tokens 1) and its
usage.prompt_tokens compared with the golden's id count (ids_text_markers where present). A manual
check of the whole path (request parsing, the template chosen from the file, the default system
message); the ids themselves are checked by tests/chat/test_chat_goldens.cpp. Run from the
repository root after building run and quantize:

  LLAMA_CPP=../peers/llama.cpp /usr/bin/python3 tests/reference/check_server_chat_prompts.py
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_chat_goldens as m  # noqa: E402


def main():
    families = json.load(open("tests/data/chat_goldens.json"))["families"]
    work = tempfile.mkdtemp(prefix="chat_server_")
    port, bad, total = 18520, 0, 0
    for name, fam in sorted(families.items()):
        jinja = m.jinja_text(fam["jinja"])
        gguf = m.spm_gguf(work, jinja) if fam["vocab"] == "llama2" else m.bpe_gguf(work, fam["vocab"], jinja)
        port += 1
        p = subprocess.Popen(["./run", gguf, "--server", "--port", str(port), "-c", "4096", "-t", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                    break
                except Exception:
                    time.sleep(0.2)
            for c in fam["cases"]:
                want = len(c.get("ids_text_markers", c["ids"]))
                body = {"messages": c["dialog"], "max_tokens": 1, "temperature": 0}
                req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                             data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
                try:
                    got = json.loads(urllib.request.urlopen(req, timeout=60).read())["usage"]["prompt_tokens"]
                except urllib.error.HTTPError as e:
                    got = "HTTP %d %s" % (e.code, e.read()[:200])
                total += 1
                if got != want:
                    bad += 1
                    print(name, "want", want, "got", got, json.dumps(c["dialog"])[:300])
        finally:
            p.terminate()
            p.wait()
    shutil.rmtree(work)
    print(f"{total} dialogs, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
