#!/usr/bin/python3
"""Write the llama2.c test checkpoints and their goldens into tests/data/llama2c/.

From the real legacy checkpoint stories260K.bin (copied from ../shared/data), the same
weights in llama2.c's other formats, written as karpathy/llama2.c's export.py lays them out:
  stories260K-v1.bin        "ak42" version 1 (fp32), shared classifier
  stories260K-v2-gs64.bin   "ak42" version 2, int8 in groups of 64 (export.py's default)
  stories260K-v2-gs32.bin   "ak42" version 2, int8 in groups of 32 (= Q8_0 blocks)
and a small random-weight model with a separate classifier (vocab 512, so that the parity
tokenizer tests/data/parity/mha/tokenizer.model fits it):
  tiny-untied.bin           legacy (negative vocab_size)
  tiny-untied-v1.bin        "ak42" version 1, shared_classifier 0
  tiny-untied-v2-gs16.bin   "ak42" version 2, group size 16, wcls quantized too

goldens.json: {file name: {"prompt_ids", "logits" (one row per prompt position), "greedy_ids",
"min_margin"}}, computed by llama2c_forward.py from each file as written (for version 2, from
its dequantized int8 weights), in float64. min_margin is the smallest top-1 minus top-2 logit
gap over the greedy steps relative to the largest |logit|: how much error an implementation
may make before its greedy ids could differ.

Deterministic; run from the repository root:
    /usr/bin/python3 tests/reference/make_llama2c_data.py
"""
import json
import os
import struct
import sys

import numpy as np
import torch

torch.set_num_threads(2)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(REPO, "tests", "data", "llama2c")
sys.path.insert(0, HERE)
import llama2c_forward as ref  # noqa: E402

MAGIC = 0x616B3432
# BOS and a few ids of its 512-piece vocabulary; for the group-64 file one whose greedy steps
# all have a clear winner (with the first prompt one step's margin is 1.2e-5).
STORIES_PROMPT = [1, 403, 407, 261, 378]
STORIES_GS64_PROMPT = [1, 2, 1, 400]
STORIES_GREEDY = 200
TINY = dict(dim=32, hidden_dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=512, seq_len=128)
TINY_PROMPT = [1, 302, 75, 410, 33, 260]
TINY_GREEDY = 32
MATRICES = ("wq", "wk", "wv", "wo", "w1", "w2", "w3")


def f32_bytes(t):
    return np.ascontiguousarray(t.detach().to(torch.float32).numpy(), dtype="<f4").tobytes()


def params(c, vocab):
    return struct.pack("<7i", c["dim"], c["hidden_dim"], c["n_layers"], c["n_heads"], c["n_kv_heads"], vocab, c["seq_len"])


def rope_tables(c):
    """freq_cis_real / freq_cis_imag as the legacy file stores them: [seq_len, head_size/2]."""
    head = c["dim"] // c["n_heads"]
    freqs = 1.0 / (10000.0 ** (torch.arange(0, head, 2)[: head // 2].float() / head))
    angles = torch.outer(torch.arange(c["seq_len"]).float(), freqs)
    return torch.cos(angles), torch.sin(angles)


def write_legacy(path, c, w, shared):
    out = [params(c, c["vocab_size"] if shared else -c["vocab_size"]), f32_bytes(w["token_embedding_table"])]
    for name in ("rms_att_weight", "wq", "wk", "wv", "wo", "rms_ffn_weight", "w1", "w2", "w3"):
        out += [f32_bytes(t) for t in w[name]]
    out.append(f32_bytes(w["rms_final_weight"]))
    out += [f32_bytes(t) for t in rope_tables(c)]
    if not shared:
        out.append(f32_bytes(w["wcls"]))
    with open(path, "wb") as f:
        f.write(b"".join(out))


def ak42_header(c, version, shared, group_size=None):
    h = struct.pack("<Ii", MAGIC, version) + params(c, c["vocab_size"]) + struct.pack("<B", int(shared))
    if group_size is not None:
        h += struct.pack("<i", group_size)  # unaligned, right after the flag byte
    return h + b"\0" * (256 - len(h))


def write_v1(path, c, w, shared):
    out = [ak42_header(c, 1, shared)]
    out += [f32_bytes(t) for t in w["rms_att_weight"]] + [f32_bytes(t) for t in w["rms_ffn_weight"]]
    out += [f32_bytes(w["rms_final_weight"]), f32_bytes(w["token_embedding_table"])]
    for name in MATRICES:
        out += [f32_bytes(t) for t in w[name]]
    if not shared:
        out.append(f32_bytes(w["wcls"]))
    with open(path, "wb") as f:
        f.write(b"".join(out))


def int8_groups(t, group_size):
    """Symmetric int8 in groups of group_size consecutive values: scale = max|x| / 127,
    q = round(x / scale), computed in float32 as export.py's quantize_q80 does."""
    g = t.to(torch.float32).reshape(-1, group_size)
    scale = g.abs().max(dim=1).values / 127.0
    q = torch.round(g / scale[:, None]).to(torch.int8)
    assert bool((scale > 0).all()), "an all-zero group"
    return q.numpy().astype(np.int8).tobytes(), np.ascontiguousarray(scale.numpy(), dtype="<f4").tobytes()


def write_v2(path, c, w, shared, group_size):
    out = [ak42_header(c, 2, shared, group_size)]
    out += [f32_bytes(t) for t in w["rms_att_weight"]] + [f32_bytes(t) for t in w["rms_ffn_weight"]]
    out.append(f32_bytes(w["rms_final_weight"]))
    mats = [w["token_embedding_table"]] + [t for name in MATRICES for t in w[name]]
    if not shared:
        mats.append(w["wcls"])
    for t in mats:  # each tensor's int8 values, then its scales
        q, s = int8_groups(t, group_size)
        out += [q, s]
    with open(path, "wb") as f:
        f.write(b"".join(out))


def tiny_weights(c, seed):
    g = torch.Generator().manual_seed(seed)
    head = c["dim"] // c["n_heads"]
    q, kv, d, h = c["n_heads"] * head, c["n_kv_heads"] * head, c["dim"], c["hidden_dim"]
    rnd = lambda *shape, std: torch.randn(*shape, generator=g) * std
    L = c["n_layers"]
    return {
        "token_embedding_table": rnd(c["vocab_size"], d, std=0.5),
        "rms_att_weight": [1 + rnd(d, std=0.2) for _ in range(L)],
        "rms_ffn_weight": [1 + rnd(d, std=0.2) for _ in range(L)],
        "wq": [rnd(q, d, std=0.15) for _ in range(L)], "wk": [rnd(kv, d, std=0.15) for _ in range(L)],
        "wv": [rnd(kv, d, std=0.15) for _ in range(L)], "wo": [rnd(d, q, std=0.1) for _ in range(L)],
        "w1": [rnd(h, d, std=0.15) for _ in range(L)], "w2": [rnd(d, h, std=0.1) for _ in range(L)],
        "w3": [rnd(h, d, std=0.15) for _ in range(L)],
        "rms_final_weight": 1 + rnd(d, std=0.2),
        "wcls": rnd(c["vocab_size"], d, std=0.3),
    }


def golden(path, prompt, n):
    m = ref.load(path)
    ids, margin = ref.greedy(m, prompt, n)
    lg = ref.logits(m, prompt)
    print(f"{os.path.basename(path)}: {m.format}, {os.path.getsize(path)} bytes, min margin {margin:.3g}", flush=True)
    return {"prompt_ids": prompt, "greedy_ids": ids, "min_margin": margin,
            "logits": [[float("%.9g" % v) for v in row] for row in lg.tolist()]}


def main():
    os.makedirs(OUT, exist_ok=True)
    goldens = {}
    stories = os.path.join(OUT, "stories260K.bin")
    m = ref.load(stories)
    c, w = dict(m.config), m.weights  # float64 holding the file's float32 values exactly
    goldens["stories260K.bin"] = golden(stories, STORIES_PROMPT, STORIES_GREEDY)
    for name, write, prompt in (("stories260K-v1.bin", lambda p: write_v1(p, c, w, True), STORIES_PROMPT),
                                ("stories260K-v2-gs64.bin", lambda p: write_v2(p, c, w, True, 64), STORIES_GS64_PROMPT),
                                ("stories260K-v2-gs32.bin", lambda p: write_v2(p, c, w, True, 32), STORIES_PROMPT)):
        write(os.path.join(OUT, name))
        goldens[name] = golden(os.path.join(OUT, name), prompt, STORIES_GREEDY)

    # The random model: the first seed whose greedy steps all have a clear winner.
    for seed in range(100, 200):
        tw = tiny_weights(TINY, seed)
        tiny = os.path.join(OUT, "tiny-untied.bin")
        write_legacy(tiny, TINY, tw, False)
        g = golden(tiny, TINY_PROMPT, TINY_GREEDY)
        if g["min_margin"] > 2e-3 and len(set(g["greedy_ids"])) > 4:
            break
        print(f"seed {seed}: margin {g['min_margin']:.3g} or too repetitive, trying the next")
    goldens["tiny-untied.bin"] = g
    for name, write in (("tiny-untied-v1.bin", lambda p: write_v1(p, TINY, tw, False)),
                        ("tiny-untied-v2-gs16.bin", lambda p: write_v2(p, TINY, tw, False, 16))):
        write(os.path.join(OUT, name))
        goldens[name] = golden(os.path.join(OUT, name), TINY_PROMPT, TINY_GREEDY)

    with open(os.path.join(OUT, "goldens.json"), "w") as f:
        f.write("{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in goldens.items()) + "\n}\n")


if __name__ == "__main__":
    main()
