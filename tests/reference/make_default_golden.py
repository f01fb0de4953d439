#!/usr/bin/python3
"""Golden logits and greedy ids of the default model, from the PyTorch reference.

Runs hf_llama.py on the Hugging Face export of the default model (tools/train_tiny.py
writes it to build/tiny-shakespeare-hf) and records, like make_parity_models.py does for
the random checkpoints: the prompt ids, the logits at every prompt position, and 32
greedy ids. The prompt is chosen from a fixed list: the first whose greedy steps all have
a top-1/top-2 gap above 1e-3 x max|logit| and contain no EOS.

    /usr/bin/python3 tests/reference/make_default_golden.py build/tiny-shakespeare-hf \
        -o tests/data/default_model_golden.json
"""
import argparse
import json
import os
import sys

import sentencepiece as spm
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama  # noqa: E402

PROMPTS = [
    "ROMEO:\nBut soft, what light",
    "KING RICHARD III:\nNow is the winter",
    "First Citizen:\nWe are accounted poor citizens",
    "JULIET:\nO Romeo, Romeo",
]


def robust_greedy(model, ids, n, eos):
    ids = list(ids)
    out = []
    for _ in range(n):
        row = hf_llama.logits(model, ids)[-1]
        top2 = torch.topk(row, 2).values
        if float(top2[0] - top2[1]) <= 1e-3 * float(row.abs().max()):
            return None
        nxt = int(torch.argmax(row))
        if nxt == eos:
            return None
        ids.append(nxt)
        out.append(nxt)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    model = hf_llama.load_model(a.folder)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(a.folder, "tokenizer.model"))
    for text in PROMPTS:
        ids = [sp.bos_id()] + sp.encode(text)
        greedy = robust_greedy(model, ids, 32, sp.eos_id())
        if greedy is None:
            print(f"prompt {text!r}: a greedy step is too close to call or is EOS; trying the next", file=sys.stderr)
            continue
        logits = hf_llama.logits(model, ids)
        with open(a.out, "w") as f:
            f.write('{"prompt_text": %s,\n "prompt_ids": %s,\n "greedy_ids": %s,\n "logits": [\n' %
                    (json.dumps(text), json.dumps(ids), json.dumps(greedy)))
            rows = [",".join("%.9g" % v for v in row.tolist()) for row in logits]
            f.write(",\n".join("  [" + r + "]" for r in rows))
            f.write("\n]}\n")
        print(f"prompt {text!r}: greedy continuation {sp.decode(greedy)!r}")
        return
    sys.exit("no prompt gave a robust greedy continuation")


if __name__ == "__main__":
    main()
