#!/usr/bin/python3
"""Widen a small Llama checkpoint to a big model's shapes without changing what it computes.

A benchmark fixture for prompt-lookup drafts (issue 23). The copy model that
tools/train_copy.py trains (tests/data/copy-model.hearth, 0.35 MB) copies a passage as real
models do, but it runs from L2 in ~30 us a token, so what drafts save there is overhead, not
reads of the weights. This tool embeds it into a model of a real model's shapes (by default
TinyLlama's: dim 2048, hidden 5632, 22 layers, 256-wide KV; the vocabulary stays the small
model's), so that every token reads ~1 GB of weights as TinyLlama's do, and the output stays
the small model's:

  - the residual stream's first DIM_IN dimensions are the small model's, the others stay zero:
    the embedding's and every matrix that writes into the residual (attn_output, ffn_down) are
    zero there, and their columns for the added heads and hidden units are zero too;
  - every other weight is random (normal, std 0.02): the added heads and hidden units, and 20
    added layers, compute on the real dimensions at full cost, and what they compute is thrown
    away by those zero columns;
  - the small model's heads keep their KV heads (q head h of KV head j goes to j * group + h %
    group_in); head size, RoPE and the tied embedding are the small model's;
  - RMSNorm divides by the mean square over DIM dimensions, DIM_IN of them non-zero, so the
    norm weights are scaled by sqrt(DIM_IN / DIM); that leaves the normalisation's epsilon
    DIM / DIM_IN times larger in effect, the only change to the function (greedy ids may
    differ at near-ties).

Input: a GGUF file of f32 tensors with llama's names (`./quantize MODEL.hearth IN.gguf -t
f32`). Output: a llama2.c legacy checkpoint (f32); quantize it with the small model's
tokenizer:

  ./quantize tests/data/copy-model.hearth /tmp/copy.gguf -t f32
  /usr/bin/python3 tools/widen_model.py /tmp/copy.gguf /tmp/copy-wide.bin
  ./quantize /tmp/copy-wide.bin build/bench/copy-wide.q8_0.hearth -t q8_0 \
      --tokenizer tests/data/tiny-shakespeare-tokenizer.model

(q8_0: in q4_0 the copy model's own 64-wide weights lose a passage after ~15 tokens.)

Options: --dim, --hidden, --layers, --heads, --kv-heads (the output's shapes), --seed.
Needs python3-numpy (make bench installs it); the default shapes write 3.9 GB, one matrix in
memory at a time.
"""

import argparse
import struct
import sys

import numpy as np

GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
GGUF_STRING, GGUF_ARRAY = 8, 9


def read_gguf(path):
    """(metadata dict, {name: float32 array in row-major [rows][cols]}) of an f32 GGUF file."""
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        value = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return value[0]

    def string():
        nonlocal pos
        n = take("<Q")
        pos += n
        return data[pos - n : pos].decode("utf-8", "replace")

    def value(kind):
        if kind == GGUF_STRING:
            return string()
        if kind == GGUF_ARRAY:
            item, n = take("<I"), take("<Q")
            return [value(item) for _ in range(n)]
        return take(GGUF_SCALARS[kind])

    if data[:4] != b"GGUF" or struct.unpack_from("<I", data, 4)[0] != 3:
        sys.exit(f"widen_model: {path}: not a GGUF v3 file")
    pos = 8
    n_tensors, n_kv = take("<Q"), take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("<Q") for _ in range(take("<I"))]
        kind, offset = take("<I"), take("<Q")
        if kind != 0:
            sys.exit(f"widen_model: {name}: not f32 (convert with `quantize IN OUT.gguf -t f32`)")
        infos.append((name, dims, offset))
    align = meta.get("general.alignment", 32)
    base = (pos + align - 1) // align * align
    tensors = {}
    for name, dims, offset in infos:
        count = int(np.prod(dims))
        array = np.frombuffer(data, dtype="<f4", count=count, offset=base + offset)
        tensors[name] = array.reshape(list(reversed(dims))) if len(dims) > 1 else array
    return meta, tensors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input", help="GGUF file of f32 tensors (llama architecture)")
    parser.add_argument("output", help="llama2.c legacy checkpoint to write")
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--hidden", type=int, default=5632)
    parser.add_argument("--layers", type=int, default=22)
    parser.add_argument("--heads", type=int, default=64)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    meta, t = read_gguf(args.input)
    arch = meta.get("general.architecture")
    if arch != "llama":
        sys.exit(f"widen_model: architecture {arch!r}, not llama")
    dim_in = meta["llama.embedding_length"]
    hidden_in = meta["llama.feed_forward_length"]
    layers_in = meta["llama.block_count"]
    heads_in = meta["llama.attention.head_count"]
    kv_in = meta.get("llama.attention.head_count_kv", heads_in)
    seq_len = meta.get("llama.context_length", 512)
    head = dim_in // heads_in
    vocab = t["token_embd.weight"].shape[0]
    if "output.weight" in t:
        sys.exit("widen_model: untied output matrix: not supported (the copy model ties it)")
    dim, hidden, layers, heads, kv = args.dim, args.hidden, args.layers, args.heads, args.kv_heads
    group_in, group = heads_in // kv_in, heads // kv
    if (dim != heads * head or dim < dim_in or hidden < hidden_in or layers < layers_in or kv < kv_in
            or group < group_in or heads % kv):
        sys.exit(f"widen_model: cannot widen dim {dim_in} / hidden {hidden_in} / {layers_in} layers / "
                 f"{heads_in} heads ({kv_in} KV) of {head} into dim {dim} / hidden {hidden} / {layers} "
                 f"layers / {heads} heads ({kv} KV)")
    rng = np.random.default_rng(args.seed)
    norm_scale = np.float32(np.sqrt(dim_in / dim))

    def random(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(0.02))

    # Where the small model's q heads go among the wide model's (its KV heads keep their index).
    q_rows = np.concatenate([np.arange(head) + ((h // group_in) * group + h % group_in) * head
                             for h in range(heads_in)])

    def layer(name, i):
        """Layer i's weight `name` at the wide shapes."""
        small = f"blk.{i}.{name}.weight"
        if name in ("attn_norm", "ffn_norm"):
            w = np.ones(dim, dtype=np.float32) * norm_scale
            if i < layers_in:
                w[:dim_in] = t[small] * norm_scale
            return w
        rows = {"attn_q": dim, "attn_k": kv * head, "attn_v": kv * head, "attn_output": dim,
                "ffn_gate": hidden, "ffn_up": hidden, "ffn_down": dim}[name]
        cols = hidden if name == "ffn_down" else dim
        if name in ("attn_output", "ffn_down"):  # writes into the residual: zero but the small part
            w = np.zeros((rows, cols), dtype=np.float32)
            if i < layers_in:
                s = t[small]
                if name == "attn_output":
                    w[:dim_in, q_rows] = s
                else:
                    w[:dim_in, :hidden_in] = s
            return w
        w = random(rows, cols)
        if i < layers_in:
            s = t[small]
            if name == "attn_q":
                w[q_rows, :dim_in] = s
            else:
                w[: s.shape[0], :dim_in] = s
        return w

    with open(args.output, "wb") as f:
        f.write(struct.pack("<7i", dim, hidden, layers, heads, kv, vocab, seq_len))
        emb = np.zeros((vocab, dim), dtype=np.float32)
        emb[:, :dim_in] = t["token_embd.weight"]
        f.write(emb.astype("<f4").tobytes())
        for name in ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                     "ffn_gate", "ffn_down", "ffn_up"]:
            for i in range(layers):
                f.write(layer(name, i).astype("<f4").tobytes())
        final = np.zeros(dim, dtype=np.float32)
        final[:dim_in] = t["output_norm.weight"] * norm_scale
        f.write(final.astype("<f4").tobytes())
        # The legacy file's RoPE tables (cos, sin: seq_len x head/2), which hearth recomputes.
        freqs = 1.0 / (10000.0 ** (np.arange(0, head, 2, dtype=np.float64) / head))
        angles = np.outer(np.arange(seq_len, dtype=np.float64), freqs)
        f.write(np.cos(angles).astype("<f4").tobytes())
        f.write(np.sin(angles).astype("<f4").tobytes())
    print(f"widen_model: wrote {args.output}: dim {dim}, hidden {hidden}, {layers} layers, {heads} heads "
          f"({kv} KV) of {head}, vocab {vocab}; the function of {args.input} (dim {dim_in}, {layers_in} layers)")


if __name__ == "__main__":
    main()
