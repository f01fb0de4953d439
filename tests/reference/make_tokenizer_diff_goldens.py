#!/usr/bin/python3
"""llama.cpp's ids for a sample of make_tokenizer_diff_texts.py's texts, on real vocabularies.

    tests/reference/make_tokenizer_diff_goldens.py --llama-cpp ../peers/llama.cpp/build/bin \\
        --gguf llama3=L3.gguf --gguf qwen3=Q3.gguf --gguf llama2=L2.gguf \\
        -o tests/data/tokenizer_diff_goldens.json.xz

Each GGUF file is hearth's export (`quantize MODEL.hearth OUT.gguf`) of a random-weight model
around the vocabulary (tests/reference/README.md says how they are made); llama.cpp reads the
vocabulary from it. Every id comes from llama.cpp's own `llama-tokenize -f FILE --ids --no-bos
--no-parse-special --no-escape`, one process per text (never from hearth).

The texts (make_tokenizer_diff_texts.py, default seed, 4000 texts), a selection made from
the texts alone: the hand-picked edge cases; every text holding U+180E or a fill-in-the-middle
marker (<|fim_prefix|> ...) of at most 200 characters; every 20th text that NFC changes (at
most 200 characters); and every 40th text of at most 600 characters.

Qwen3's tokenizer.json normalizes to NFC, as hearth does; llama.cpp does not normalize (its
convert script drops the normalizer). Hearth keeps the tokenizer.json's behaviour, so Qwen3's
expected ids are llama-tokenize's of the text in NFC (`"nfc": true` in the entry): the ids
Hugging Face's tokenizers gives. The other vocabularies have no normalizer.

Output (xz-compressed JSON): {"llama3": [{"text", "ids", "nfc"}...], "qwen3": [...], "llama2": [...]}.
"""
import argparse
import concurrent.futures
import json
import lzma
import os
import subprocess
import sys
import tempfile
import unicodedata

sys.path.insert(0, os.path.dirname(__file__))
import make_tokenizer_diff_texts as gen  # noqa: E402

FIM = ["<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"]


def selected(texts):
    n_edge = len(gen.EDGE_CASES)
    out = []
    for i, t in enumerate(texts):
        nfc_changes = unicodedata.normalize("NFC", t) != t
        if (i < n_edge or (len(t) <= 200 and ("\u180e" in t or any(f in t for f in FIM))) or
                (nfc_changes and i % 20 == 0 and len(t) <= 200) or (i % 40 == 0 and len(t) <= 600)):
            out.append(t)
    return out


def llama_tokenize(bin_dir, gguf, text, scratch):
    with open(scratch, "wb") as f:
        f.write(text.encode("utf-8"))
    env = dict(os.environ, LD_LIBRARY_PATH=bin_dir)
    r = subprocess.run([os.path.join(bin_dir, "llama-tokenize"), "-m", gguf, "-f", scratch, "--ids", "--no-bos",
                        "--no-parse-special", "--no-escape", "--log-disable"], capture_output=True, env=env, check=True)
    line = r.stdout.decode().strip().splitlines()[-1]
    assert line.startswith("[") and line.endswith("]"), line
    return [int(x) for x in line[1:-1].split(",") if x.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp's build/bin (llama-tokenize and its libraries)")
    ap.add_argument("--gguf", action="append", required=True, help="NAME=FILE.gguf (names: llama3, qwen3, llama2)")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        texts_file = os.path.join(d, "texts.json")
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "make_tokenizer_diff_texts.py"), "-o", texts_file],
                       check=True)
        texts = selected(json.load(open(texts_file, encoding="utf-8")))
        goldens = {}
        for spec in a.gguf:
            name, gguf = spec.split("=", 1)
            nfc = name == "qwen3"

            def one(i):
                ref = unicodedata.normalize("NFC", texts[i]) if nfc else texts[i]
                return {"text": texts[i], "ids": llama_tokenize(a.llama_cpp, gguf, ref, os.path.join(d, f"{i}.txt")), "nfc": nfc}

            with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two processes at a time
                entries = list(pool.map(one, range(len(texts))))
            goldens[name] = entries
            print(f"{name}: {len(entries)} texts", file=sys.stderr)
    with lzma.open(a.out, "wt", encoding="utf-8", preset=9) as f:
        json.dump(goldens, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
