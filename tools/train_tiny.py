#!/usr/bin/python3
"""Train hearth's embedded default model: a tiny Llama on tiny-shakespeare.

Runs end to end on a CPU (PyTorch, float32, 2 threads):

  1. split tests/data/tinyshakespeare.txt.xz (--data; xz or plain text) by characters: first 90% is the
     training split, last 10% the held-out validation split (never trained on; the
     tokenizer never sees it either);
  2. train a SentencePiece BPE tokenizer (vocab 1024, Llama-2-like settings) on the
     training split only;
  3. train a Llama with exactly Hugging Face LlamaForCausalLM semantics (RMSNorm,
     rotate_half RoPE, grouped-query attention, SwiGLU, no biases, untied lm_head)
     for a FIXED number of steps (AdamW, warmup + cosine LR, random windows);
  4. export a Hugging Face folder: config.json, model.safetensors (F16, written by
     hand), tokenizer.model, tokenizer_config.json, special_tokens_map.json;
  5. reload the exported F16 weights into float32 and measure the train and
     validation loss of THE exported model, print samples, write a JSON summary.

Evaluation protocol (so other implementations can reproduce the numbers): the text
of a split is encoded as ONE string with the trained tokenizer (add_dummy_prefix adds
one leading "\u2581"; newlines become byte-fallback piece <0x0A>). The token stream is
cut into consecutive non-overlapping chunks of CTX tokens (the last partial chunk is
dropped). For a chunk c[0..CTX-1] the model input is [BOS, c[0], ..., c[CTX-2]] and the
targets are c[0..CTX-1], i.e. every token of the chunk is scored exactly once, with
BOS at position 0. The loss is the mean natural-log NLL per scored token; the
validation loss uses every chunk of the validation split, the train loss an evenly
spaced, fixed subset of the training chunks of the same count. Training windows use the
same BOS-prefixed layout at random offsets.

Default shape (chosen by measurement, see models/train_tiny.log): hidden 256, intermediate
512, 4 layers, 8 heads, 4 kv heads (head_dim 32), vocab 1024, ~2.9M parameters. The
suggested starting shape (intermediate 768, 6 layers, 5.2M parameters) trains at only
~1100 tokens/s on 2 cores vs ~1800 for this one, and in equal short wall-clock runs the
smaller model reached a clearly lower validation loss (3.71 vs 3.85 nats/token), so
with a ~20 minute budget the smaller model is the better model.
Default schedule: 800 steps x batch 8 x ctx 256 (1.64M tokens, ~3.7 epochs): about
16-20 minutes end to end on an idle 2-core machine; longer when the cores are shared.

Usage:  /usr/bin/python3 tools/train_tiny.py [--steps N] [--out DIR] ...
        /usr/bin/python3 tools/train_tiny.py --bench 20   # throughput only
"""

import argparse
import json
import lzma
import math
import os
import shutil
import struct
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T_START = time.time()


# --------------------------------------------------------------------------- logging

class Log:
    def __init__(self, path):
        self.f = None
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self.f = open(path, "w", encoding="utf-8")

    def __call__(self, *args):
        msg = " ".join(str(a) for a in args)
        stamp = "[%7.1fs] " % (time.time() - T_START)
        lines = msg.split("\n")
        out = "\n".join(stamp + l for l in lines)
        print(out, flush=True)
        if self.f:
            self.f.write(out + "\n")
            self.f.flush()


# --------------------------------------------------------------------------- model

class LlamaRMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, head_dim, max_pos, theta):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        t = torch.arange(max_pos, dtype=torch.float32)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)          # [max_pos, head_dim]
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, T):
        return self.cos[:T], self.sin[:T]


class LlamaAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.nh = cfg["num_attention_heads"]
        self.nkv = cfg["num_key_value_heads"]
        self.hd = cfg["hidden_size"] // self.nh
        H = cfg["hidden_size"]
        self.q_proj = nn.Linear(H, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(H, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(H, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, H, bias=False)
        self.dropout = 0.0

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.nh // self.nkv
        if rep > 1:  # HF repeat_kv: query head h uses kv head h // rep
            k = k[:, :, None].expand(B, self.nkv, rep, T, self.hd).reshape(B, self.nh, T, self.hd)
            v = v[:, :, None].expand(B, self.nkv, rep, T, self.hd).reshape(B, self.nh, T, self.hd)
        att = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(self.hd))
        att = att + mask
        att = F.softmax(att, dim=-1, dtype=torch.float32).to(q.dtype)
        if self.training and self.dropout > 0:
            att = F.dropout(att, p=self.dropout)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, self.nh * self.hd)
        return self.o_proj(y)


class LlamaMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, I = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_proj = nn.Linear(H, I, bias=False)
        self.up_proj = nn.Linear(H, I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = LlamaAttention(cfg)
        self.mlp = LlamaMLP(cfg)
        self.input_layernorm = LlamaRMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.post_attention_layernorm = LlamaRMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.resid_dropout = 0.0

    def forward(self, x, cos, sin, mask):
        a = self.self_attn(self.input_layernorm(x), cos, sin, mask)
        if self.training and self.resid_dropout > 0:
            a = F.dropout(a, p=self.resid_dropout)
        x = x + a
        m = self.mlp(self.post_attention_layernorm(x))
        if self.training and self.resid_dropout > 0:
            m = F.dropout(m, p=self.resid_dropout)
        return x + m


class LlamaModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([LlamaDecoderLayer(cfg) for _ in range(cfg["num_hidden_layers"])])
        self.norm = LlamaRMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        hd = cfg["hidden_size"] // cfg["num_attention_heads"]
        self.rotary = LlamaRotaryEmbedding(hd, cfg["max_position_embeddings"], cfg["rope_theta"])

    def forward(self, ids):
        T = ids.shape[1]
        x = self.embed_tokens(ids)
        cos, sin = self.rotary(T)
        mask = torch.full((T, T), float("-inf")).triu(1)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.model = LlamaModel(cfg)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)

    def forward(self, ids):
        return self.lm_head(self.model(ids))

    def set_dropout(self, p):
        for layer in self.model.layers:
            layer.self_attn.dropout = p
            layer.resid_dropout = p


def init_weights(model, cfg, std=0.02):
    n_layers = cfg["num_hidden_layers"]
    for name, p in model.named_parameters():
        if name.endswith("layernorm.weight") or name == "model.norm.weight":
            nn.init.ones_(p)
        elif name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
            nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layers))  # GPT-2 style
        else:
            nn.init.normal_(p, mean=0.0, std=std)


# --------------------------------------------------------------------------- safetensors

def hf_tensor_order(cfg):
    names = ["model.embed_tokens.weight"]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        names += [p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight",
                  p + "self_attn.v_proj.weight", p + "self_attn.o_proj.weight",
                  p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight",
                  p + "input_layernorm.weight", p + "post_attention_layernorm.weight"]
    names += ["model.norm.weight", "lm_head.weight"]
    return names


def write_safetensors_f16(path, tensors):
    """tensors: list of (name, float tensor). Writes F16 little-endian safetensors."""
    header = {}
    blobs = []
    off = 0
    for name, t in tensors:
        a = t.detach().to(torch.float32).cpu().numpy().astype("<f2")
        b = a.tobytes(order="C")
        header[name] = {"dtype": "F16", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((8 - len(hj) % 8) % 8)  # pad so the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Minimal reader (F16/F32/BF16) -> dict name -> float32 torch tensor."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = data[base + b:base + e]
        if info["dtype"] == "F16":
            a = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif info["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        elif info["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            a = u.view(np.float32)
        else:
            raise ValueError("unsupported dtype " + info["dtype"])
        out[name] = torch.from_numpy(a.reshape(info["shape"]).copy())
    return out


# --------------------------------------------------------------------------- data / eval

def train_tokenizer(train_text, prefix, vocab_size, log):
    import sentencepiece as spm
    tmpdir = tempfile.mkdtemp(prefix="train_tiny_")
    try:
        inp = os.path.join(tmpdir, "train.txt")
        with open(inp, "w", encoding="utf-8") as f:
            f.write(train_text)
        opts = dict(
            input=inp, model_prefix=prefix, vocab_size=vocab_size, model_type="bpe",
            byte_fallback=True, split_digits=True, character_coverage=1.0,
            unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
            normalization_rule_name="identity", remove_extra_whitespaces=False,
            add_dummy_prefix=True, allow_whitespace_only_pieces=True,
            split_by_unicode_script=True, split_by_number=True, split_by_whitespace=True,
            treat_whitespace_as_suffix=False, max_sentencepiece_length=16,
            input_sentence_size=0, shuffle_input_sentence=False, num_threads=1,
            minloglevel=2,
        )
        log("tokenizer: sentencepiece", spm.__version__, "options:",
            json.dumps({k: v for k, v in opts.items() if k not in ("input", "model_prefix")}))
        spm.SentencePieceTrainer.train(**opts)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return spm.SentencePieceProcessor(model_file=prefix + ".model")


def chunk_batches(tokens, ctx, bos, idx):
    """Non-overlapping chunks `idx` of the stream -> (inputs, targets) int64 tensors."""
    c = np.stack([tokens[i * ctx:(i + 1) * ctx] for i in idx]).astype(np.int64)
    x = np.empty_like(c)
    x[:, 0] = bos
    x[:, 1:] = c[:, :-1]
    return torch.from_numpy(x), torch.from_numpy(c)


@torch.no_grad()
def evaluate(model, tokens, ctx, bos, idx, bs=16):
    """Mean NLL per token over the chunks idx; returns (loss, n_tokens, total_nll)."""
    was = model.training
    model.eval()
    tot, n = 0.0, 0
    for s in range(0, len(idx), bs):
        x, y = chunk_batches(tokens, ctx, bos, idx[s:s + bs])
        logits = model(x)
        tot += F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1), reduction="sum").item()
        n += y.numel()
    model.train(was)
    return tot / n, n, tot


@torch.no_grad()
def generate(model, ids, n_new, ctx, temperature=0.0, top_k=0, gen=None):
    model.eval()
    ids = list(ids)
    for _ in range(n_new):
        x = torch.tensor([ids[-ctx:]], dtype=torch.long)
        logits = model(x)[0, -1].float()
        if temperature <= 0:
            nxt = int(torch.argmax(logits))
        else:
            logits = logits / temperature
            if top_k > 0:
                v, _ = torch.topk(logits, top_k)
                logits[logits < v[-1]] = float("-inf")
            p = F.softmax(logits, dim=-1)
            nxt = int(torch.multinomial(p, 1, generator=gen))
        ids.append(nxt)
    return ids


# --------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(REPO, "tests", "data", "tinyshakespeare.txt.xz"))
    ap.add_argument("--out", default=os.path.join(REPO, "build", "tiny-shakespeare-hf"))
    ap.add_argument("--log", default=os.path.join(REPO, "models", "train_tiny.log"))
    ap.add_argument("--result", default=os.path.join(REPO, "models", "train_tiny_result.json"))
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--intermediate", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=256, help="training/eval context")
    ap.add_argument("--max-pos", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-chunks", type=int, default=32, help="val chunks for periodic eval")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bench", type=int, default=0, help="only time N training steps, then exit")
    args = ap.parse_args()

    assert args.hidden % 256 == 0 and args.intermediate % 256 == 0, "hidden/intermediate: multiples of 256"
    assert args.hidden % args.heads == 0 and args.heads % args.kv_heads == 0

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    log = Log(None if args.bench else args.log)

    log("hearth tools/train_tiny.py  started", time.strftime("%Y-%m-%d %H:%M:%S"))
    log("args:", json.dumps(vars(args)))
    log("torch", torch.__version__, "numpy", np.__version__, "threads", torch.get_num_threads(),
        "cpus", os.cpu_count(), "python", sys.version.split()[0])
    # BLAS sanity check: OpenBLAS gives tens of GFLOPS here, the reference BLAS ~2-3.
    a, b = torch.randn(512, 512), torch.randn(512, 512)
    a @ b
    t0 = time.time()
    for _ in range(20):
        a @ b
    gf = 20 * 2 * 512 ** 3 / (time.time() - t0) / 1e9
    log("matmul 512x512 fp32: %.1f GFLOPS%s" % (gf, "  (LOW: reference BLAS?)" if gf < 8 else ""))

    # ---- data split
    with (lzma.open if args.data.endswith(".xz") else open)(args.data, "rt", encoding="utf-8") as f:
        text = f.read()
    n_train_chars = int(len(text) * 0.9)
    train_text, val_text = text[:n_train_chars], text[n_train_chars:]
    log("data: %s  %d chars -> train %d chars, val %d chars (last 10%%, held out)"
        % (args.data, len(text), len(train_text), len(val_text)))

    # ---- tokenizer
    os.makedirs(args.out, exist_ok=True)
    tok_dir = tempfile.mkdtemp(prefix="train_tiny_tok_")
    t0 = time.time()
    sp = train_tokenizer(train_text, os.path.join(tok_dir, "tokenizer"), args.vocab, log)
    assert sp.get_piece_size() == args.vocab
    assert (sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id()) == (0, 1, 2, -1)
    train_tok = np.array(sp.encode(train_text), dtype=np.int32)
    val_tok = np.array(sp.encode(val_text), dtype=np.int32)
    assert sp.decode(train_tok.tolist()) == train_text, "train split does not round-trip"
    assert sp.decode(val_tok.tolist()) == val_text, "val split does not round-trip"
    n_byte = int(sum(1 for i in range(args.vocab) if sp.is_byte(i)))
    log("tokenizer trained in %.1fs: vocab %d (%d byte pieces), train %d tokens (%.3f chars/token), "
        "val %d tokens (%.3f chars/token); both splits round-trip"
        % (time.time() - t0, sp.get_piece_size(), n_byte, len(train_tok), len(train_text) / len(train_tok),
           len(val_tok), len(val_text) / len(val_tok)))
    log("tokenizer example: %r -> %s" % (train_text[:40], sp.encode(train_text[:40], out_type=str)))

    # ---- model
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": args.hidden,
        "intermediate_size": args.intermediate,
        "num_hidden_layers": args.layers,
        "num_attention_heads": args.heads,
        "num_key_value_heads": args.kv_heads,
        "vocab_size": args.vocab,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "max_position_embeddings": args.max_pos,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "torch_dtype": "float16",
        "bos_token_id": 1,
        "eos_token_id": 2,
        "initializer_range": 0.02,
        "attention_bias": False,
        "pretraining_tp": 1,
        "rope_scaling": None,
        "use_cache": True,
    }
    model = LlamaForCausalLM(cfg)
    init_weights(model, cfg)
    model.set_dropout(args.dropout)
    n_params = sum(p.numel() for p in model.parameters())
    n_emb = model.model.embed_tokens.weight.numel() + model.lm_head.weight.numel()
    log("model: hidden %d, intermediate %d, layers %d, heads %d, kv heads %d, head_dim %d, vocab %d, "
        "train ctx %d, max_pos %d" % (args.hidden, args.intermediate, args.layers, args.heads, args.kv_heads,
                                      args.hidden // args.heads, args.vocab, args.ctx, args.max_pos))
    log("parameters: %d (%.2fM; %.2fM in embed_tokens+lm_head, %.2fM in layers)"
        % (n_params, n_params / 1e6, n_emb / 1e6, (n_params - n_emb) / 1e6))

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)

    def lr_at(step):  # step in [0, steps)
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        prog = (step - args.warmup) / max(1, args.steps - args.warmup)
        mn = args.lr * args.min_lr_frac
        return mn + 0.5 * (args.lr - mn) * (1 + math.cos(math.pi * min(1.0, prog)))

    # fixed evaluation chunks
    n_val_chunks = len(val_tok) // args.ctx
    n_train_chunks = len(train_tok) // args.ctx
    val_idx_all = list(range(n_val_chunks))
    val_idx_periodic = list(np.linspace(0, n_val_chunks - 1, min(args.eval_chunks, n_val_chunks)).astype(int))
    train_idx_final = list(np.linspace(0, n_train_chunks - 1, n_val_chunks).astype(int))
    train_idx_periodic = train_idx_final[::max(1, len(train_idx_final) // len(val_idx_periodic))][:len(val_idx_periodic)]
    log("eval: val has %d chunks of %d tokens (%d tokens scored); periodic eval on %d fixed val chunks "
        "and %d fixed train chunks; final train loss on %d fixed train chunks"
        % (n_val_chunks, args.ctx, n_val_chunks * args.ctx, len(val_idx_periodic), len(train_idx_periodic),
           len(train_idx_final)))

    rng = np.random.default_rng(args.seed)
    max_start = len(train_tok) - args.ctx

    def get_batch():
        starts = rng.integers(0, max_start + 1, size=args.batch)
        c = np.stack([train_tok[s:s + args.ctx] for s in starts]).astype(np.int64)
        x = np.empty_like(c)
        x[:, 0] = sp.bos_id()
        x[:, 1:] = c[:, :-1]
        return torch.from_numpy(x), torch.from_numpy(c)

    tokens_per_step = args.batch * args.ctx
    n_steps = args.bench if args.bench else args.steps
    log("training: %d steps x batch %d x ctx %d = %d tokens/step, %.2fM tokens total (%.2f epochs of train split); "
        "AdamW lr %g betas (0.9,0.95) wd %g, warmup %d, cosine to %g, clip %g, dropout %g"
        % (n_steps, args.batch, args.ctx, tokens_per_step, n_steps * tokens_per_step / 1e6,
           n_steps * tokens_per_step / len(train_tok), args.lr, args.wd, args.warmup,
           args.lr * args.min_lr_frac, args.clip, args.dropout))

    model.train()
    t_train = time.time()
    t_window, tok_window, loss_window = time.time(), 0, []
    eval_time = 0.0
    history = []
    for step in range(n_steps):
        lr = lr_at(step)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch()
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        loss_window.append(loss.item())
        tok_window += tokens_per_step
        if (step + 1) % 25 == 0 or step + 1 == n_steps or (args.bench and step < 3):
            dt = time.time() - t_window
            log("step %5d/%d  loss %.4f  lr %.2e  gnorm %.2f  %.0f tok/s"
                % (step + 1, n_steps, float(np.mean(loss_window)), lr, float(gnorm), tok_window / dt))
            t_window, tok_window, loss_window = time.time(), 0, []
        if not args.bench and ((step + 1) % args.eval_every == 0 or step + 1 == n_steps):
            te = time.time()
            vl, _, _ = evaluate(model, val_tok, args.ctx, sp.bos_id(), val_idx_periodic)
            tl, _, _ = evaluate(model, train_tok, args.ctx, sp.bos_id(), train_idx_periodic)
            eval_time += time.time() - te
            history.append({"step": step + 1, "train_loss": tl, "val_loss": vl})
            log("eval step %5d  train %.4f  val %.4f  (val ppl %.2f; fixed %d-chunk subsets, %.1fs)"
                % (step + 1, tl, vl, math.exp(vl), len(val_idx_periodic), time.time() - te))
            t_window = time.time()  # don't count eval in throughput
    train_secs = time.time() - t_train - eval_time
    throughput = n_steps * tokens_per_step / train_secs
    log("training done: %.1fs of training (+%.1fs periodic eval), %.0f tokens/s, %.2fs/step"
        % (train_secs, eval_time, throughput, train_secs / n_steps))
    if args.bench:
        return

    # ---- final eval of the float32 training model
    te = time.time()
    vl32, nv, _ = evaluate(model, val_tok, args.ctx, sp.bos_id(), val_idx_all)
    log("final fp32 model: val loss %.4f over %d tokens (%.1fs)" % (vl32, nv, time.time() - te))

    # ---- export Hugging Face folder
    sd = model.state_dict()
    names = hf_tensor_order(cfg)
    assert sorted(names) == sorted(sd.keys()), (sorted(set(names) ^ set(sd.keys())))
    st_path = os.path.join(args.out, "model.safetensors")
    write_safetensors_f16(st_path, [(n, sd[n]) for n in names])
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    shutil.copyfile(os.path.join(tok_dir, "tokenizer.model"), os.path.join(args.out, "tokenizer.model"))
    shutil.rmtree(tok_dir, ignore_errors=True)
    special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    tok_cfg = dict(special, add_bos_token=True, add_eos_token=False, clean_up_tokenization_spaces=False,
                   legacy=True, model_max_length=args.max_pos, pad_token=None, padding_side="right",
                   sp_model_kwargs={}, tokenizer_class="LlamaTokenizer")
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump(tok_cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(args.out, "special_tokens_map.json"), "w") as f:
        json.dump(special, f, indent=2)
        f.write("\n")
    with open(os.path.join(args.out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 1, "eos_token_id": 2}, f, indent=2)
        f.write("\n")
    log("exported %s: %s (model.safetensors %d bytes)"
        % (args.out, ", ".join(sorted(os.listdir(args.out))), os.path.getsize(st_path)))

    # ---- reload THE exported model (F16 -> float32) and evaluate it
    exported = LlamaForCausalLM(cfg)
    w = read_safetensors(st_path)
    exported.load_state_dict(w, strict=True)
    exported.eval()
    max_diff = max(float((w[n] - sd[n]).abs().max()) for n in names)
    te = time.time()
    vl, nv, vnll = evaluate(exported, val_tok, args.ctx, sp.bos_id(), val_idx_all)
    tl, nt, _ = evaluate(exported, train_tok, args.ctx, sp.bos_id(), train_idx_final)
    n_val_chars = len(sp.decode(val_tok[:n_val_chunks * args.ctx].tolist()))
    bpc = vnll / n_val_chars / math.log(2)
    log("EXPORTED F16 model (reloaded to fp32; max |w_f16 - w_fp32| = %.2e), %.1fs:" % (max_diff, time.time() - te))
    log("  final train loss %.4f over %d tokens (%d fixed train chunks)" % (tl, nt, len(train_idx_final)))
    log("  final val   loss %.4f over %d tokens (all %d val chunks), val ppl/token %.3f, %.4f bits/char"
        % (vl, nv, n_val_chunks, math.exp(vl), bpc))
    log("  (fp32 model before export: val loss %.4f; difference %+.5f)" % (vl32, vl - vl32))

    # ---- samples from the exported model
    samples = {}
    prompt = "ROMEO:"
    p_ids = [sp.bos_id()] + sp.encode(prompt)
    g = generate(exported, p_ids, 64, args.ctx)
    samples["greedy"] = {"prompt": prompt, "ids": g, "text": sp.decode(g[1:])}
    log("sample (greedy, 64 new tokens, ids %s):\n%s" % (g, sp.decode(g[1:])))
    gen = torch.Generator().manual_seed(args.seed)
    prompt2 = "First Citizen:"
    p2 = [sp.bos_id()] + sp.encode(prompt2)
    s2 = generate(exported, p2, 200, args.ctx, temperature=0.8, top_k=40, gen=gen)
    samples["sampled"] = {"prompt": prompt2, "temperature": 0.8, "top_k": 40, "seed": args.seed,
                          "text": sp.decode(s2[1:])}
    log("sample (temperature 0.8, top-k 40, 200 new tokens):\n%s" % sp.decode(s2[1:]))

    wall = time.time() - T_START
    result = {
        "model": {k: cfg[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers",
                                      "num_attention_heads", "num_key_value_heads", "vocab_size",
                                      "max_position_embeddings")},
        "params": n_params,
        "steps": n_steps,
        "batch": args.batch,
        "ctx": args.ctx,
        "tokens_trained": n_steps * tokens_per_step,
        "train_tokens": int(len(train_tok)),
        "val_tokens": int(len(val_tok)),
        "throughput_tokens_per_s": round(throughput, 1),
        "train_loss": round(tl, 5),
        "val_loss": round(vl, 5),
        "val_ppl_per_token": round(math.exp(vl), 4),
        "val_bits_per_char": round(bpc, 5),
        "val_loss_fp32_before_export": round(vl32, 5),
        "eval_protocol": "non-overlapping %d-token chunks of the split encoded as one string; input = "
                         "[BOS]+chunk[:-1], targets = chunk; mean NLL (nats) per token; val = all %d val "
                         "chunks, train = %d evenly spaced train chunks" % (args.ctx, n_val_chunks,
                                                                             len(train_idx_final)),
        "history": history,
        "greedy_sample": samples["greedy"],
        "wall_seconds": round(wall, 1),
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.result)), exist_ok=True)
    with open(args.result, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    log("wrote %s" % args.result)
    log("wall time %.1fs (%.1f min)" % (wall, wall / 60))


if __name__ == "__main__":
    main()
