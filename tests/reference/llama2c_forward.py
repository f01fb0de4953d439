#!/usr/bin/python3
"""Plain PyTorch reference of karpathy/llama2.c's model (model.py's Transformer), reading
llama2.c's .bin checkpoints by itself.

Formats (little-endian), as llama2.c's export.py writes them and run.c / runq.c read them:
  legacy ("v0"): 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
      seq_len; vocab_size < 0: the classifier is not shared), then fp32 token embedding,
      rms_att (all layers), wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final,
      freq_cis_real and freq_cis_imag (seq_len * head_size/2 each, unused), [wcls].
  "ak42" v1: 256-byte header (u32 magic 0x616b3432, i32 version 1, the 7 int32,
      u8 shared_classifier), then fp32 rms_att, rms_ffn, rms_final, token embedding,
      wq, wk, wv, wo, w1, w2, w3 (each all layers), [wcls].
  "ak42" v2: as v1 plus an i32 group_size right after the shared byte (offset 37); fp32
      norms as in v1, then for each matrix of each layer in v1's order (embedding, wq of
      layer 0, 1, ..., wk ..., w3 ..., [wcls]) its int8 values followed by its fp32 scales,
      one per group of group_size consecutive values. Weight = int8 * scale.

The model (model.py): x = embedding; per layer h = x + Wo attn(RoPE(Wq n(x)), RoPE(Wk n(x)),
Wv n(x)) with n = RMSNorm(eps 1e-5); out = h + W2 (silu(W1 n(h)) * W3 n(h)); logits =
Wcls RMSNorm(x). RoPE rotates the complex pairs (x[2i], x[2i+1]) of each head by
pos * 10000^(-2i/head_dim); attention is causal softmax(q k^T / sqrt(head_dim)) v with
each kv head shared by n_heads / n_kv_heads query heads (repeat_kv). No KV cache: every
call recomputes the whole sequence.

Compute is float64 by default (the weights as stored, widened exactly), so the reference is
closer to the exact result than any float32 implementation; --float32 computes as model.py.

Library use:
    import llama2c_forward as ref
    m = ref.load("stories260K.bin")
    ref.logits(m, [1, 2, 3])      # -> torch.Tensor [3, vocab]
    ref.greedy(m, [1, 2, 3], 16)  # -> (list of 16 ids, smallest top-1 minus top-2 margin)

CLI:
    /usr/bin/python3 tests/reference/llama2c_forward.py FILE --ids 1,2,3 [-n 200] [--json OUT]
"""
import argparse
import json
import math
import struct

import numpy as np
import torch

torch.set_num_threads(2)

AK42_MAGIC = 0x616B3432


class Model:
    pass


def _header_config(values):
    dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len = values
    return dict(dim=dim, hidden_dim=hidden, n_layers=n_layers, n_heads=n_heads,
                n_kv_heads=n_kv_heads, vocab_size=vocab, seq_len=seq_len)


def _shapes(c):
    """Shapes of llama2.c's weights (per layer for the per-layer ones)."""
    head = c["dim"] // c["n_heads"]
    q, kv = c["n_heads"] * head, c["n_kv_heads"] * head
    return {
        "token_embedding_table": (c["vocab_size"], c["dim"]),
        "rms_att_weight": (c["dim"],), "rms_ffn_weight": (c["dim"],), "rms_final_weight": (c["dim"],),
        "wq": (q, c["dim"]), "wk": (kv, c["dim"]), "wv": (kv, c["dim"]), "wo": (c["dim"], q),
        "w1": (c["hidden_dim"], c["dim"]), "w2": (c["dim"], c["hidden_dim"]), "w3": (c["hidden_dim"], c["dim"]),
        "wcls": (c["vocab_size"], c["dim"]),
    }


PER_LAYER = {"rms_att_weight", "rms_ffn_weight", "wq", "wk", "wv", "wo", "w1", "w2", "w3"}


class _Reader:
    def __init__(self, data, pos):
        self.data, self.pos = data, pos

    def f32(self, shape):
        n = int(np.prod(shape))
        a = np.frombuffer(self.data, dtype="<f4", count=n, offset=self.pos)
        self.pos += 4 * n
        return torch.from_numpy(a.astype(np.float64).reshape(shape))

    def q8(self, shape, group_size):
        n = int(np.prod(shape))
        assert n % group_size == 0
        q = np.frombuffer(self.data, dtype=np.int8, count=n, offset=self.pos)
        self.pos += n
        s = np.frombuffer(self.data, dtype="<f4", count=n // group_size, offset=self.pos)
        self.pos += 4 * (n // group_size)
        # int8 * fp32 scale is exact in float64 (8 + 24 significant bits)
        w = q.astype(np.float64).reshape(-1, group_size) * s.astype(np.float64)[:, None]
        return torch.from_numpy(w.reshape(shape))


def load(path):
    """Reads a llama2.c checkpoint into a Model with float64 weights."""
    with open(path, "rb") as f:
        data = f.read()
    (magic,) = struct.unpack_from("<I", data, 0)
    m = Model()
    w = {}
    if magic == AK42_MAGIC:
        (version,) = struct.unpack_from("<i", data, 4)
        c = _header_config(struct.unpack_from("<7i", data, 8))
        shared = data[36] != 0
        group_size = struct.unpack_from("<i", data, 37)[0] if version == 2 else 0
        assert version in (1, 2), f"unknown ak42 version {version}"
        shapes = _shapes(c)
        r = _Reader(data, 256)
        L = c["n_layers"]
        for name in ("rms_att_weight", "rms_ffn_weight"):
            w[name] = [r.f32(shapes[name]) for _ in range(L)]
        w["rms_final_weight"] = r.f32(shapes["rms_final_weight"])
        read = (lambda s: r.f32(s)) if version == 1 else (lambda s: r.q8(s, group_size))
        w["token_embedding_table"] = read(shapes["token_embedding_table"])
        for name in ("wq", "wk", "wv", "wo", "w1", "w2", "w3"):
            w[name] = [read(shapes[name]) for _ in range(L)]
        w["wcls"] = w["token_embedding_table"] if shared else read(shapes["wcls"])
        m.format = f"ak42 v{version}" + (f" (group size {group_size})" if version == 2 else "")
    else:
        c = _header_config(struct.unpack_from("<7i", data, 0))
        shared = c["vocab_size"] > 0
        c["vocab_size"] = abs(c["vocab_size"])
        shapes = _shapes(c)
        r = _Reader(data, 28)
        L = c["n_layers"]
        w["token_embedding_table"] = r.f32(shapes["token_embedding_table"])
        for name in ("rms_att_weight", "wq", "wk", "wv", "wo", "rms_ffn_weight", "w1", "w2", "w3"):
            w[name] = [r.f32(shapes[name]) for _ in range(L)]
        w["rms_final_weight"] = r.f32(shapes["rms_final_weight"])
        head = c["dim"] // c["n_heads"]
        r.pos += 2 * 4 * c["seq_len"] * head // 2  # freq_cis_real, freq_cis_imag: recomputed below
        w["wcls"] = w["token_embedding_table"] if shared else r.f32(shapes["wcls"])
        m.format = "legacy"
    assert r.pos == len(data), f"{path}: {len(data)} bytes, the header implies {r.pos}"
    m.config, m.weights, m.shared = c, w, shared
    return m


def _rms_norm(x, weight, eps=1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _rope(x, cos, sin):
    """x [seq, heads, head_dim]: rotate the pairs (x[2i], x[2i+1]) as complex numbers."""
    xr, xi = x.reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
    cos, sin = cos[:, None, :], sin[:, None, :]
    return torch.stack([xr * cos - xi * sin, xr * sin + xi * cos], dim=-1).flatten(2)


def logits(m, ids, dtype=torch.float64):
    """Logits [len(ids), vocab] of every position of the sequence."""
    c, w = m.config, m.weights
    cast = lambda t: t.to(dtype)
    n, L = len(ids), c["n_layers"]
    head = c["dim"] // c["n_heads"]
    rep = c["n_heads"] // c["n_kv_heads"]
    freqs = 1.0 / (10000.0 ** (torch.arange(0, head, 2, dtype=torch.float64) / head))
    angles = torch.outer(torch.arange(n, dtype=torch.float64), freqs)
    cos, sin = cast(torch.cos(angles)), cast(torch.sin(angles))
    mask = torch.full((n, n), float("-inf"), dtype=dtype).triu(1)
    x = cast(w["token_embedding_table"])[torch.tensor(ids)]
    for l in range(L):
        h = _rms_norm(x, cast(w["rms_att_weight"][l]))
        q = (h @ cast(w["wq"][l]).T).view(n, c["n_heads"], head)
        k = (h @ cast(w["wk"][l]).T).view(n, c["n_kv_heads"], head)
        v = (h @ cast(w["wv"][l]).T).view(n, c["n_kv_heads"], head)
        q, k = _rope(q, cos, sin), _rope(k, cos, sin)
        k = k.repeat_interleave(rep, dim=1)  # query head j uses kv head j // rep
        v = v.repeat_interleave(rep, dim=1)
        scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(head) + mask
        att = torch.einsum("hqk,khd->qhd", torch.softmax(scores, dim=-1), v).reshape(n, -1)
        x = x + att @ cast(w["wo"][l]).T
        h = _rms_norm(x, cast(w["rms_ffn_weight"][l]))
        gate = h @ cast(w["w1"][l]).T
        x = x + (torch.nn.functional.silu(gate) * (h @ cast(w["w3"][l]).T)) @ cast(w["w2"][l]).T
    return _rms_norm(x, cast(w["rms_final_weight"])) @ cast(w["wcls"]).T


def greedy(m, prompt, n, dtype=torch.float64):
    """n greedy ids after the prompt (no stop at EOS), and the smallest top-1 minus top-2
    logit margin over the steps relative to the largest |logit| of that step."""
    ids, out, margin = list(prompt), [], float("inf")
    for _ in range(n):
        last = logits(m, ids, dtype)[-1]
        top = torch.topk(last, 2).values
        margin = min(margin, float((top[0] - top[1]) / last.abs().max()))
        nxt = int(torch.argmax(last))
        ids.append(nxt)
        out.append(nxt)
    return out, margin


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--ids", required=True, help="comma-separated prompt ids")
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("--float32", action="store_true", help="compute in float32 as model.py does")
    ap.add_argument("--json", help="also write {prompt_ids, logits, greedy_ids} here")
    a = ap.parse_args()
    dtype = torch.float32 if a.float32 else torch.float64
    m = load(a.file)
    prompt = [int(s) for s in a.ids.split(",")]
    ids, margin = greedy(m, prompt, a.n, dtype)
    print(f"{a.file}: {m.format}, {m.config}, shared classifier {m.shared}")
    print(f"smallest relative top-1/top-2 margin: {margin:.3g}")
    print(",".join(map(str, ids)))
    if a.json:
        lg = logits(m, prompt, dtype)
        with open(a.json, "w") as f:
            json.dump({"prompt_ids": prompt, "logits": lg.tolist(), "greedy_ids": ids}, f)


if __name__ == "__main__":
    main()
