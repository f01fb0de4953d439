#!/usr/bin/python3
"""Make small random-weight Hugging Face Llama folders plus golden outputs.

Writes tests/data/parity/<variant>/ with config.json, model.safetensors (or two
shards + model.safetensors.index.json), tokenizer.model and golden.json.
golden.json = {"prompt_ids", "logits" (one row per prompt position),
"greedy_ids" (32 greedy continuations)}, computed in float32 by hf_llama.py
from the weights exactly as stored (i.e. after F16/BF16 rounding).

Everything is deterministic (fixed seeds, single-threaded tokenizer training).
Run from anywhere:
    /usr/bin/python3 tests/reference/make_parity_models.py [--out tests/data/parity]
"""
import argparse
import io
import json
import os
import struct
import sys

import numpy as np
import sentencepiece as spm
import torch

torch.set_num_threads(2)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import hf_llama  # noqa: E402

CORPUS = os.path.join(REPO, "..", "shared", "data", "tinyshakespeare.txt")
EOS = 2
N_GREEDY = 32

# name: shape and storage options. vocab 512 = tokenizer size unless noted.
VARIANTS = {
    "mha": dict(hidden=64, inter=128, layers=2, heads=4, kv=4, vocab=512, dtype="F32", tied=False,
                theta=10000.0, eps=1e-5, seed=1000,
                prompt="First Citizen: Before we proceed any further"),
    "gqa": dict(hidden=64, inter=172, layers=2, heads=8, kv=2, vocab=520, dtype="F32", tied=False,
                theta=10000.0, eps=1e-5, seed=2000,
                prompt="ROMEO: But, soft! what light through yonder window"),
    "tied": dict(hidden=64, inter=192, layers=3, heads=2, kv=2, vocab=512, dtype="F16", tied=True,
                 theta=10000.0, eps=1e-5, seed=3000,
                 prompt="KING RICHARD III: Now is the winter of our"),
    "theta500k": dict(hidden=64, inter=128, layers=2, heads=4, kv=2, vocab=512, dtype="F32", tied=False,
                      theta=500000.0, eps=1e-5, seed=4000,
                      prompt="HAMLET: To be, or not to be, that is"),
    "bf16": dict(hidden=96, inter=192, layers=2, heads=3, kv=3, vocab=512, dtype="BF16", tied=False,
                 theta=10000.0, eps=1e-5, seed=5000,
                 prompt="JULIET: O Romeo, Romeo! wherefore art thou"),
    "odd": dict(hidden=128, inter=172, layers=2, heads=2, kv=1, vocab=512, dtype="F16", tied=False,
                theta=10000.0, eps=1e-6, seed=6000, shards=2, explicit_head_dim=True,
                prompt="MACBETH: Is this a dagger which I see 1605"),
    # The families of today, each with what sets it apart doing real work in a short test
    # (main() checks that the greedy ids change without it), and sharper attention (qk_std)
    # so that positions matter. Llama-3.1/3.2-style: GQA, theta 500000, llama3 rope scaling
    # with a short original context (32, factor 8) so that 14 of the 16 frequencies are
    # divided by 8 and one is interpolated, tied embeddings (no lm_head), BF16.
    "llama3": dict(family="llama", hidden=128, inter=256, layers=2, heads=4, kv=2, vocab=512, dtype="BF16", tied=True,
                   theta=500000.0, eps=1e-5, seed=7000, qk_std=0.2,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
                   prompt="GLOUCESTER: Now is the winter of our discontent"),
    # Mistral-style: GQA (4 query heads on 1 kv head), a sliding window of 6 positions, shorter
    # than the prompt and the 32 greedy tokens, untied.
    "mistral": dict(family="mistral", hidden=64, inter=160, layers=2, heads=4, kv=1, vocab=512, dtype="F32", tied=False,
                    theta=10000.0, eps=1e-5, seed=8000, qk_std=0.2, sliding_window=6,
                    prompt="PROSPERO: We are such stuff as dreams are made on"),
    # Qwen3-style: head_dim 32 with dim 64 and 4 heads (not dim / heads), q_norm/k_norm with
    # weights far from 1, tied, vocabulary padded to 576 rows beyond the tokenizer's 512 pieces
    # (the padding rows larger, so that an unmasked argmax would pick them), theta 1e6.
    "qwen3": dict(family="qwen3", hidden=64, inter=192, layers=2, heads=4, kv=2, head_dim=32, vocab=576, dtype="F16", tied=True,
                  theta=1000000.0, eps=1e-6, seed=9000, qk_norm_mean=2.0, pad_rows_std=0.3,
                  prompt="LEAR: How sharper than a serpent's tooth it is"),
    # Qwen2/2.5-style: biases on q/k/v (large, so that they change the greedy ids), tied, theta
    # 1e6, and a sliding_window that applies only with use_sliding_window (false, as in
    # Qwen2.5's configs).
    "qwen2": dict(family="qwen2", hidden=64, inter=160, layers=2, heads=4, kv=2, vocab=512, dtype="BF16", tied=True,
                  theta=1000000.0, eps=1e-6, seed=10000, qk_std=0.2, bias_std=0.5,
                  prompt="OTHELLO: It is the cause, it is the cause, my soul"),
}
ARCHITECTURES = {"llama": ("LlamaForCausalLM", "llama"), "mistral": ("MistralForCausalLM", "mistral"),
                 "qwen2": ("Qwen2ForCausalLM", "qwen2"), "qwen3": ("Qwen3ForCausalLM", "qwen3")}

TORCH_DTYPE_NAME = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
TORCH_DTYPE = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


# ---------------------------------------------------------------- tokenizer

def train_tokenizer():
    with open(CORPUS, encoding="utf-8") as f:
        lines = f.read().split("\n")
    w = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=w,
        vocab_size=512, model_type="bpe", byte_fallback=True, split_digits=True,
        character_coverage=1.0, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        add_dummy_prefix=True, allow_whitespace_only_pieces=True,
        num_threads=1, minloglevel=2)
    return w.getvalue()


# ---------------------------------------------------------------- safetensors

def tensor_bytes(t, dtype):
    t = t.to(TORCH_DTYPE[dtype]).contiguous()
    if dtype == "BF16":
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    if dtype == "F16":
        return t.numpy().astype("<f2").tobytes()
    return t.numpy().astype("<f4").tobytes()


def write_safetensors(path, tensors, dtype, metadata=None):
    """tensors: ordered list of (name, float32 tensor). Returns data-section size."""
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, t in tensors:
        b = tensor_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)  # the safetensors library pads the header to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    return off


# ---------------------------------------------------------------- weights

def make_weights(v, seed):
    g = torch.Generator().manual_seed(seed)
    H, I, V = v["hidden"], v["inter"], v["vocab"]
    hd = v.get("head_dim") or H // v["heads"]
    qk_std = v.get("qk_std", 0.1)

    def rnd(*shape, std):
        return torch.randn(*shape, generator=g) * std

    def norm_w(n):
        return 1.0 + rnd(n, std=0.2)

    embed = rnd(V, H, std=0.1)
    if v.get("pad_rows_std"):  # rows past the tokenizer's pieces
        embed[512:] = rnd(V - 512, H, std=v["pad_rows_std"])
    ws = [("model.embed_tokens.weight", embed)]
    for i in range(v["layers"]):
        p = f"model.layers.{i}."
        ws += [
            (p + "input_layernorm.weight", norm_w(H)),
            (p + "self_attn.q_proj.weight", rnd(v["heads"] * hd, H, std=qk_std)),
            (p + "self_attn.k_proj.weight", rnd(v["kv"] * hd, H, std=qk_std)),
            (p + "self_attn.v_proj.weight", rnd(v["kv"] * hd, H, std=0.1)),
            (p + "self_attn.o_proj.weight", rnd(H, v["heads"] * hd, std=0.08)),
            (p + "post_attention_layernorm.weight", norm_w(H)),
            (p + "mlp.gate_proj.weight", rnd(I, H, std=0.1)),
            (p + "mlp.up_proj.weight", rnd(I, H, std=0.1)),
            (p + "mlp.down_proj.weight", rnd(H, I, std=0.08)),
        ]
        if v.get("family") == "qwen2":
            ws += [(p + "self_attn.q_proj.bias", rnd(v["heads"] * hd, std=v["bias_std"])),
                   (p + "self_attn.k_proj.bias", rnd(v["kv"] * hd, std=v["bias_std"])),
                   (p + "self_attn.v_proj.bias", rnd(v["kv"] * hd, std=v["bias_std"]))]
        if v.get("family") == "qwen3":
            m = v["qk_norm_mean"]
            ws += [(p + "self_attn.q_norm.weight", m + rnd(hd, std=0.5)),
                   (p + "self_attn.k_norm.weight", m + rnd(hd, std=0.5))]
    ws.append(("model.norm.weight", norm_w(H)))
    if not v["tied"]:
        ws.append(("lm_head.weight", rnd(V, H, std=0.15)))
    return ws


def config_for(v):
    arch, model_type = ARCHITECTURES[v.get("family", "llama")]
    c = {
        "architectures": [arch],
        "model_type": model_type,
        "hidden_size": v["hidden"],
        "intermediate_size": v["inter"],
        "num_hidden_layers": v["layers"],
        "num_attention_heads": v["heads"],
        "num_key_value_heads": v["kv"],
        "vocab_size": v["vocab"],
        "rms_norm_eps": v["eps"],
        "rope_theta": v["theta"],
        "max_position_embeddings": 256,
        "tie_word_embeddings": v["tied"],
        "hidden_act": "silu",
        "torch_dtype": TORCH_DTYPE_NAME[v["dtype"]],
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    if v.get("explicit_head_dim"):
        c["head_dim"] = v["hidden"] // v["heads"]
    if v.get("head_dim"):
        c["head_dim"] = v["head_dim"]
    if v.get("rope_scaling"):
        c["rope_scaling"] = v["rope_scaling"]
    if v.get("family") == "mistral":
        c["sliding_window"] = v["sliding_window"]
    if v.get("family") == "qwen2":  # as Qwen2.5's own configs have them
        c.update({"use_sliding_window": False, "sliding_window": 131072, "max_window_layers": v["layers"],
                  "attention_dropout": 0.0})
    if v.get("family") == "qwen3":  # as Qwen3's own configs have them
        c.update({"attention_bias": False, "use_sliding_window": False, "sliding_window": None,
                  "max_window_layers": v["layers"], "attention_dropout": 0.0})
    return c


def write_model(folder, v, weights):
    for fn in os.listdir(folder):
        if fn.endswith(".safetensors") or fn == "model.safetensors.index.json":
            os.remove(os.path.join(folder, fn))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config_for(v), f, indent=2)
        f.write("\n")
    meta = {"format": "pt"}
    nshards = v.get("shards", 1)
    if nshards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), weights, v["dtype"], meta)
        return
    # Split roughly in half by tensor count, in order; like real HF checkpoints
    # this can cut a layer in two (its attention in one shard, MLP in the next).
    per = -(-len(weights) // nshards)
    weight_map, total = {}, 0
    for s in range(nshards):
        part = weights[s * per:(s + 1) * per]
        fn = f"model-{s + 1:05d}-of-{nshards:05d}.safetensors"
        total += write_safetensors(os.path.join(folder, fn), part, v["dtype"], meta)
        for name, _ in part:
            weight_map[name] = fn
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        f.write("\n")


# ---------------------------------------------------------------- goldens

def check_greedy(model, prompt, n, tok_vocab):
    """Greedy decode; returns (ids, None) or (None, reason) if not robust. A model whose
    vocabulary is padded beyond the tokenizer's pieces picks among the pieces only, as
    hearth does (check_greedy.padded_wins counts the steps where a padding row would have won)."""
    ids = list(prompt)
    out = []
    check_greedy.min_rel_gap = float("inf")
    check_greedy.padded_wins = 0
    for step in range(n):
        full = hf_llama.logits(model, ids)[-1]
        row = full[:tok_vocab]
        if int(torch.argmax(full)) >= tok_vocab:
            check_greedy.padded_wins += 1
        top2 = torch.topk(row, 2)
        gap = float(top2.values[0] - top2.values[1])
        thr = 1e-3 * float(row.abs().max())
        nxt = int(top2.indices[0])
        check_greedy.min_rel_gap = min(check_greedy.min_rel_gap, gap / float(row.abs().max()))
        if gap <= thr:
            return None, f"step {step}: top-1/top-2 gap {gap:.3g} <= {thr:.3g}"
        if nxt == EOS:
            return None, f"step {step}: greedy picked EOS"
        if nxt >= tok_vocab:
            return None, f"step {step}: greedy picked padded-vocab id {nxt} (no tokenizer piece)"
        ids.append(nxt)
        out.append(nxt)
    return out, None


def _no_qkv_bias(m):
    for L in m.layers:
        for k in ("bq", "bk", "bv"):
            L[k] = torch.zeros_like(L[k])


def _no_qk_norm(m):
    for L in m.layers:
        L["q_norm"] = torch.ones_like(L["q_norm"])
        L["k_norm"] = torch.ones_like(L["k_norm"])


# Per variant: (feature, a change to a loaded reference model that removes it).
FEATURES = {
    "llama3": [("llama3 rope scaling", lambda m: setattr(m, "rope_scaling", None))],
    "mistral": [("the sliding window", lambda m: setattr(m, "window", None))],
    "qwen2": [("the q/k/v biases", _no_qkv_bias)],
    "qwen3": [("q_norm/k_norm's weights", _no_qk_norm)],
}


def _q8_0(w):
    """ggml's Q8_0 values: blocks of 32, scale absmax/127 rounded to fp16."""
    x = w.reshape(-1, 32)
    d = (x.abs().max(1, keepdim=True).values / 127).half().float()
    q = torch.where(d > 0, torch.round(x / torch.where(d > 0, d, torch.ones_like(d))), torch.zeros_like(x))
    return (q * d).reshape(w.shape)


def _q4_0(w):
    """ggml's Q4_0 values: blocks of 32, scale (the value of largest magnitude) / -8 in fp16."""
    x = w.reshape(-1, 32)
    mx = torch.gather(x, 1, x.abs().argmax(1, keepdim=True))
    d = mx / -8
    inv = torch.where(d != 0, 1 / torch.where(d != 0, d, torch.ones_like(d)), torch.zeros_like(d))
    q = torch.clamp(torch.floor(x * inv + 8.5), 0, 15)
    return ((q - 8) * d.half().float()).reshape(w.shape)


def quant_sensitivity(folder, prompt):
    """How far the reference's own prompt logits move when its matrices are rounded as
    quantize's q8_0 and q4_0 store them (q4_0: the output projection in Q6_K, which falls back
    to Q8_0 for these row lengths, as llama.cpp's does): max |logit - logit| / max |logit|.
    The tests bound hearth's quantized files by this, with room for the activations' rounding."""
    out = {}
    for qname, qf in (("q8_0", _q8_0), ("q4_0", _q4_0)):
        m = hf_llama.load_model(folder)
        ref = hf_llama.logits(m, prompt)
        for L in m.layers:
            for k in ("wq", "wk", "wv", "wo", "gate", "up", "down"):
                L[k] = qf(L[k])
        tied = m.lm_head is m.embed
        m.lm_head = _q8_0(m.lm_head)
        m.embed = m.lm_head if tied else qf(m.embed)
        got = hf_llama.logits(m, prompt)
        out[qname] = float((got - ref).abs().max() / ref.abs().max())
    return out


def fmt(x):
    return "%.9g" % x


def write_golden(path, prompt_text, prompt, seed, lg, greedy_ids, extra=None):
    rows = ",\n    ".join("[" + ",".join(fmt(x) for x in row.tolist()) + "]" for row in lg)
    more = "".join(f'  "{k}": {json.dumps(v)},\n' for k, v in (extra or {}).items())
    s = ("{\n"
         f'  "prompt_text": {json.dumps(prompt_text)},\n'
         f'  "seed": {seed},\n'
         + more +
         f'  "prompt_ids": {json.dumps(prompt)},\n'
         f'  "greedy_ids": {json.dumps(greedy_ids)},\n'
         f'  "logits": [\n    {rows}\n  ]\n'
         "}\n")
    json.loads(s)  # sanity
    with open(path, "w") as f:
        f.write(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "parity"))
    ap.add_argument("--only", help="comma-separated variant names")
    a = ap.parse_args()

    tok = train_tokenizer()
    sp = spm.SentencePieceProcessor(model_proto=tok)
    tok_vocab = sp.vocab_size()
    os.makedirs(a.out, exist_ok=True)

    names = a.only.split(",") if a.only else list(VARIANTS)
    for name in names:
        v = VARIANTS[name]
        folder = os.path.join(a.out, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "tokenizer.model"), "wb") as f:
            f.write(tok)
        # BOS + the first tokens of the prompt text: 8..12 ids in total.
        prompt = [1] + sp.encode(v["prompt"], out_type=int)[:11]
        assert 8 <= len(prompt) <= 12, (name, len(prompt))
        seed = v["seed"]
        while True:
            write_model(folder, v, make_weights(v, seed))
            model = hf_llama.load_model(folder)
            greedy_ids, why = check_greedy(model, prompt, N_GREEDY, tok_vocab)
            if greedy_ids is not None:
                break
            print(f"{name}: seed {seed} rejected ({why}); trying seed {seed + 1}")
            seed += 1
        assert greedy_ids == hf_llama.greedy(model, prompt, N_GREEDY, tok_vocab)
        # What sets the family apart must change the greedy ids, or the test would not see it.
        for what, off in FEATURES.get(name, []):
            plain = hf_llama.load_model(folder)
            off(plain)
            without = hf_llama.greedy(plain, prompt, N_GREEDY, tok_vocab)
            first = next((i for i, (a, b) in enumerate(zip(greedy_ids, without)) if a != b), None)
            assert first is not None, f"{name}: the greedy ids are the same without {what}"
            print(f"{name}: without {what} the greedy ids differ from step {first}")
        if check_greedy.padded_wins:
            print(f"{name}: a padding row would have won {check_greedy.padded_wins} of {N_GREEDY} steps")
        lg = hf_llama.logits(model, prompt)
        extra = {}
        if name in FEATURES:
            extra["quant_sensitivity"] = quant_sensitivity(folder, prompt)
            print(f"{name}: reference on rounded weights: {extra['quant_sensitivity']}")
        write_golden(os.path.join(folder, "golden.json"), v["prompt"], prompt, seed, lg, greedy_ids, extra)
        size = sum(os.path.getsize(os.path.join(folder, fn)) for fn in os.listdir(folder))
        print(f"{name}: seed {seed}, prompt {prompt}, greedy {greedy_ids[:8]}..., "
              f"min greedy gap/max|logit| {check_greedy.min_rel_gap:.2e}, "
              f"logit range [{float(lg.min()):.3f}, {float(lg.max()):.3f}], {size} bytes")


if __name__ == "__main__":
    main()
