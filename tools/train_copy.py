#!/usr/bin/python3
"""Train a tiny Llama that copies: a fixture for prompt-lookup drafts (issue 23).

The default model (tools/train_tiny.py) barely repeats a passage it was shown, so drafts
taken from the prompt are seldom right with it. This trains a 2-layer Llama to continue a
repeat from the earlier occurrence (an induction head), as real models do when they quote
or edit a text, and writes it as a llama2.c legacy checkpoint with the default model's
tokenizer:

  1. the text's ids come from the default model's tokenizer (`./run --tokenize -f`), whose
     SentencePiece model is tests/data/tiny-shakespeare-tokenizer.model;
  2. the first --copy-steps steps see only random ids repeated to the window's end: the
     copying is learned there, as a sudden drop of the loss (from ~6.3 to ~2 near step 300);
     in windows of text with one repeat alone it was not learned in 2000 steps;
  3. then windows of [BOS] + text + passage + text + the same passage + text, passages of
     16..60 ids, half of them random ids and half from elsewhere in the text;
  4. the model: dim 64, 2 layers, 2 heads of 32, hidden 192, vocab 1024 (172k parameters),
     tied embeddings, adjacent-pair RoPE (llama2.c's and hearth's order), AdamW;
  5. OUT/copy.bin (llama2.c legacy), and the copy rate measured on the trained model: the
     share of a repeated text passage's ids it predicts; then
     ./quantize OUT/copy.bin MODEL.hearth --tokenizer tests/data/tiny-shakespeare-tokenizer.model

With libopenblas0-pthread (make deps' --reference) a step of the defaults takes ~0.3 s on a
2-core machine: 2000 steps in about 10 minutes.

Usage:  /usr/bin/python3 tools/train_copy.py [--steps N] [--out DIR]   (python3-torch)
"""

import argparse
import lzma
import math
import os
import random
import struct
import subprocess
import sys
import time

# Debian's torch calls whatever libblas.so.3 is installed (libopenblas0-pthread by make deps'
# --reference; the reference BLAS without it, ~40x slower) and does not set its threads: left
# alone, OpenBLAS starts one per core beside torch's own, and on a shared 2-core machine a
# step took 5 s instead of 0.15. torch.set_num_threads below does the threading.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_adjacent(x, cos, sin):
    """x: (B, H, T, hd); rotates the pairs (x[2i], x[2i+1]) as llama2.c does."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    r0 = x0 * cos - x1 * sin
    r1 = x0 * sin + x1 * cos
    return torch.stack((r0, r1), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, dim, hidden, heads):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.attn_norm = RMSNorm(dim)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.ffn_norm = RMSNorm(dim)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x, cos, sin):
        B, T, D = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(B, T, self.heads, self.hd).transpose(1, 2)
        k = self.wk(h).view(B, T, self.heads, self.hd).transpose(1, 2)
        v = self.wv(h).view(B, T, self.heads, self.hd).transpose(1, 2)
        q, k = rope_adjacent(q, cos, sin), rope_adjacent(k, cos, sin)
        # Written out: Debian's torch 1.13 has no scaled_dot_product_attention.
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        a = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        x = x + self.wo(a.transpose(1, 2).reshape(B, T, D))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    def __init__(self, vocab, dim, hidden, layers, heads, max_pos):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, hidden, heads) for _ in range(layers))
        self.norm = RMSNorm(dim)
        hd = dim // heads
        freqs = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
        angles = torch.outer(torch.arange(max_pos).float(), freqs)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, ids):
        T = ids.shape[1]
        x = self.emb(ids)
        cos, sin = self.cos[:T], self.sin[:T]
        for b in self.blocks:
            x = b(x, cos, sin)
        return self.norm(x) @ self.emb.weight.t()  # tied classifier


def write_llama2c_legacy(path, model, args):
    dim, hd = args.dim, args.dim // args.heads

    def put(f, t):
        f.write(t.detach().float().contiguous().numpy().astype("<f4").tobytes())

    with open(path, "wb") as f:
        f.write(struct.pack("<7i", dim, args.hidden, args.layers, args.heads, args.heads, args.vocab, args.max_pos))
        put(f, model.emb.weight)
        for name in ["attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3"]:
            for b in model.blocks:
                m = getattr(b, name)
                put(f, m.weight)
        put(f, model.norm.weight)
        # The legacy file's RoPE tables, which hearth recomputes and skips.
        freqs = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
        angles = torch.outer(torch.arange(args.max_pos).float(), freqs)
        put(f, angles.cos())
        put(f, angles.sin())


def read_llama2c_legacy(path, model, args):
    """The weights write_llama2c_legacy wrote, back into model (for --evaluate)."""
    with open(path, "rb") as f:
        head = struct.unpack("<7i", f.read(28))
        if head != (args.dim, args.hidden, args.layers, args.heads, args.heads, args.vocab, args.max_pos):
            sys.exit(f"train_copy: {path} has the shape {head}, not the options' shape")

        def get(t):
            t.data.copy_(torch.frombuffer(bytearray(f.read(4 * t.numel())), dtype=torch.float32).view_as(t))

        get(model.emb.weight)
        for name in ["attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3"]:
            for b in model.blocks:
                get(getattr(b, name).weight)
        get(model.norm.weight)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(REPO, "tests", "data", "tinyshakespeare.txt.xz"),
                    help="the text (xz or plain) of the windows")
    ap.add_argument("--tokenizer-from", default=os.path.join(REPO, "models", "tiny-shakespeare.hearth"),
                    help="the model whose tokenizer gives the text's ids")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "copy-model"))
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=192)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--max-pos", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--copy-steps", type=int, default=600, help="first steps on repeated random ids only")
    ap.add_argument("--random-passages", type=float, default=0.5, help="share of windows whose passage is random ids")
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--save-every", type=int, default=0, help="write the checkpoint every N steps too")
    ap.add_argument("--evaluate", metavar="FILE", help="no training: the copy rate of this file (written by this script)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)

    if args.data.endswith(".xz"):  # run --tokenize -f reads plain text
        plain = os.path.join(args.out, os.path.basename(args.data)[:-3])
        with lzma.open(args.data, "rb") as src, open(plain, "wb") as dst:
            dst.write(src.read())
        args.data = plain
    ids_path = os.path.join(args.out, "ids.txt")
    with open(ids_path, "w") as f:
        r = subprocess.run([os.path.join(REPO, "run"), args.tokenizer_from, "--tokenize", "-f", args.data],
                           stdout=f, check=True)
    with open(ids_path) as f:
        ids = [int(x) for x in f.read().strip().split(",")]
    print("text: %d ids" % len(ids), flush=True)
    bos = 1

    def window():
        n = args.ctx
        L = rng.randint(16, max(16, min(96, (n - 8) // 2)))
        gap = rng.randint(0, max(0, n - 1 - 2 * L - 8))
        lead = rng.randint(0, max(0, n - 1 - 2 * L - gap))
        if rng.random() < args.random_passages:
            # Ids at random: nothing but the earlier occurrence predicts the repeat, so these
            # windows teach copying (the induction head) far sooner than text alone does.
            passage = [rng.randint(3, args.vocab - 1) for _ in range(L)]
        else:
            passage_at = rng.randint(0, len(ids) - L - 1)
            passage = ids[passage_at : passage_at + L]
        at = rng.randint(0, len(ids) - n - 1)
        text = ids[at : at + n]
        w = text[:lead] + passage + text[lead : lead + gap] + passage
        w += text[lead + gap : lead + gap + n]
        return [bos] + w[: n]

    def repeats():
        # Random ids repeated to the window's end: only copying predicts them, and a 2-layer
        # model learns to (an induction head) within a few hundred steps of these, where in
        # windows of text with one repeat it had not after 2000 (the copying is a sudden drop
        # of the loss, from ~6.3 to ~2, here near step 300 of batch 32).
        L = rng.randint(8, 40)
        passage = [rng.randint(3, args.vocab - 1) for _ in range(L)]
        w = [bos]
        while len(w) < args.ctx + 1:
            w += passage
        return w[: args.ctx + 1]

    model = Llama(args.vocab, args.dim, args.hidden, args.layers, args.heads, args.max_pos)
    print("params: %d" % sum(p.numel() for p in model.parameters()), flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01, betas=(0.9, 0.95))
    t0 = time.time()
    if args.evaluate:
        read_llama2c_legacy(args.evaluate, model, args)
    for step in range(0 if args.evaluate else args.steps):
        lr = args.lr * min(1.0, (step + 1) / 30) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.steps)))
        for g in opt.param_groups:
            g["lr"] = lr
        batch = torch.tensor([repeats() if step < args.copy_steps else window() for _ in range(args.batch)])
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 25 == 0 or step == args.steps - 1:
            print("step %d loss %.3f lr %.4f %.0f s" % (step, loss.item(), lr, time.time() - t0), flush=True)
        if args.save_every and (step + 1) % args.save_every == 0:  # to try the model while it trains
            write_llama2c_legacy(os.path.join(args.out, "copy.bin"), model, args)
    if not args.evaluate:
        write_llama2c_legacy(os.path.join(args.out, "copy.bin"), model, args)
        print("wrote", os.path.join(args.out, "copy.bin"), flush=True)

    # The copy rate: in windows of text where a passage of 48 ids comes back, the share of the
    # repeat's ids (after its first) that the model's most likely next id gets right, given
    # the true ids before it. Passages from the text only, none of random ids.
    model.eval()
    test_rng = random.Random(args.seed + 1000)
    hits = total = 0
    with torch.no_grad():
        for _ in range(200):
            L, lead, gap = 48, 16, 16
            at = test_rng.randint(0, len(ids) - L - lead - gap - 1)
            passage = ids[at + lead : at + lead + L]
            w = [bos] + ids[at : at + lead] + passage + ids[at + lead + L : at + lead + L + gap] + passage
            pred = model(torch.tensor([w[:-1]]))[0].argmax(-1).tolist()
            start = len(w) - L  # index in w of the repeat's first id
            for i in range(start + 1, len(w)):
                hits += pred[i - 1] == w[i]
                total += 1
    print("copy rate: %.1f%% of a repeated passage's ids predicted (greedy, 200 passages of 48 ids)" % (100.0 * hits / total),
          flush=True)


if __name__ == "__main__":
    main()
