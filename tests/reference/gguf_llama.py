#!/usr/bin/python3
"""Reference logits and greedy ids of a GGUF llama model, for hearth's GGUF tests.

The tensors are read and dequantized by gguf-py (llama.cpp's own Python package; it is not in
Debian: point PYTHONPATH at the gguf-py folder of a llama.cpp checkout), then run through
hf_llama.py's PyTorch forward pass in float32. GGUF stores the q/k rows of each head in the
adjacent-pair RoPE order; they are put back into Hugging Face's rotate-half order first
(the inverse of convert_hf_to_gguf's permutation), so hf_llama computes what the file means.

    PYTHONPATH=PATH/TO/llama.cpp/gguf-py /usr/bin/python3 tests/reference/gguf_llama.py \\
        FILE.gguf --ids 1,9038,2501,263,931 -n 12 -o golden.json

golden.json: prompt_ids, greedy_ids, sample_ids (every 31st vocabulary id) and
sample_logits (one row per prompt position: the logits of sample_ids), margins (top-1 minus
top-2 logit at each greedy step).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama  # noqa: E402

from gguf import GGUFReader  # noqa: E402
from gguf.quants import dequantize  # noqa: E402


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    v = f.parts[f.data[0]]
    return bytes(v).decode() if f.types[-1].name == "STRING" else v.tolist()[0]


def load(path):
    r = GGUFReader(path)
    arch = field(r, "general.architecture")
    assert arch == "llama", arch
    t = {}
    for ti in r.tensors:
        a = dequantize(ti.data, ti.tensor_type).astype(np.float32)
        t[ti.name] = torch.from_numpy(a.reshape([int(d) for d in reversed(ti.shape)]).copy())
    m = hf_llama.Model()
    m.family, m.rope_scaling, m.window = "llama", None, None  # what hf_llama.logits reads besides
    m.hidden = field(r, "llama.embedding_length")
    m.n_layers = field(r, "llama.block_count")
    m.n_heads = field(r, "llama.attention.head_count")
    m.n_kv = field(r, "llama.attention.head_count_kv", m.n_heads)
    # llama.cpp's default for a head's width (n_embd_head_k); a file says otherwise when it is not
    # (Qwen3's shapes, or a Llama whose config.json sets head_dim).
    m.head_dim = field(r, "llama.attention.key_length", m.hidden // m.n_heads)
    value_length = field(r, "llama.attention.value_length", m.head_dim)
    assert value_length == m.head_dim, f"value_length {value_length} != key_length {m.head_dim}: not a Llama hf_llama computes"
    rope_dims = field(r, "llama.rope.dimension_count", m.head_dim)
    assert rope_dims == m.head_dim, f"rope.dimension_count {rope_dims} rotates part of a head of {m.head_dim}"
    m.eps = float(field(r, "llama.attention.layer_norm_rms_epsilon"))
    m.theta = float(field(r, "llama.rope.freq_base", 10000.0))
    m.embed = t["token_embd.weight"]
    m.vocab = m.embed.shape[0]

    def to_rotate_half(w, heads):
        # GGUF row 2i+j of a head is Hugging Face row j*hd/2 + i.
        hd = w.shape[0] // heads
        idx = [h * hd + 2 * (r % (hd // 2)) + r // (hd // 2) for h in range(heads) for r in range(hd)]
        return w[idx]

    m.layers = []
    for i in range(m.n_layers):
        p = f"blk.{i}."
        m.layers.append({
            "attn_norm": t[p + "attn_norm.weight"],
            "wq": to_rotate_half(t[p + "attn_q.weight"], m.n_heads),
            "wk": to_rotate_half(t[p + "attn_k.weight"], m.n_kv),
            "wv": t[p + "attn_v.weight"],
            "wo": t[p + "attn_output.weight"],
            "mlp_norm": t[p + "ffn_norm.weight"],
            "gate": t[p + "ffn_gate.weight"],
            "up": t[p + "ffn_up.weight"],
            "down": t[p + "ffn_down.weight"],
        })
    m.norm = t["output_norm.weight"]
    m.lm_head = t.get("output.weight", m.embed)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf")
    ap.add_argument("--ids", required=True)
    ap.add_argument("-n", type=int, default=12)
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    m = load(a.gguf)
    prompt = [int(s) for s in a.ids.split(",")]
    ids, margins = list(prompt), []
    for _ in range(a.n):
        row = hf_llama.logits(m, ids)[-1]
        top = torch.topk(row, 2).values
        margins.append(float(top[0] - top[1]))
        ids.append(int(torch.argmax(row)))
    greedy = ids[len(prompt):]
    sample_ids = list(range(0, m.vocab, 31))
    lg = hf_llama.logits(m, prompt)
    out = {
        "file": os.path.basename(a.gguf),
        "prompt_ids": prompt,
        "greedy_ids": greedy,
        "margins": [round(x, 6) for x in margins],
        "sample_ids": sample_ids,
        "sample_logits": [[float("%.9g" % lg[p, v]) for v in sample_ids] for p in range(len(prompt))],
    }
    print(",".join(map(str, greedy)), "smallest margin %.4f" % min(margins), file=sys.stderr)
    if a.output:
        with open(a.output, "w") as f:
            json.dump(out, f)
    else:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
